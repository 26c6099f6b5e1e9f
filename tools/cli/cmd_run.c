/* nucleus run: placeholder until its module lands. */
#include <stdio.h>

#include "commands.h"

int cmd_run(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "nucleus run: not available yet\n");
  return 1;
}
