/* nucleus serve: placeholder until the server lands. */
#include <stdio.h>

#include "../cli/commands.h"

int cmd_serve(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "nucleus serve: not available yet\n");
  return 1;
}
