/* nucleus tokenize: placeholder until its module lands. */
#include <stdio.h>

#include "commands.h"

int cmd_tokenize(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "nucleus tokenize: not available yet\n");
  return 1;
}
