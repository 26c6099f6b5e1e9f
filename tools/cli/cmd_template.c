/* nucleus template: placeholder until its module lands. */
#include <stdio.h>

#include "commands.h"

int cmd_template(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "nucleus template: not available yet\n");
  return 1;
}
