/* nucleus chat: placeholder until its module lands. */
#include <stdio.h>

#include "commands.h"

int cmd_chat(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "nucleus chat: not available yet\n");
  return 1;
}
