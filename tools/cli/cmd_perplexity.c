/* nucleus perplexity: placeholder until its module lands. */
#include <stdio.h>

#include "commands.h"

int cmd_perplexity(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "nucleus perplexity: not available yet\n");
  return 1;
}
