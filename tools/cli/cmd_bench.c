/* nucleus bench: placeholder until its module lands. */
#include <stdio.h>

#include "commands.h"

int cmd_bench(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "nucleus bench: not available yet\n");
  return 1;
}
