/* nucleus info: placeholder until its module lands. */
#include <stdio.h>

#include "commands.h"

int cmd_info(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "nucleus info: not available yet\n");
  return 1;
}
