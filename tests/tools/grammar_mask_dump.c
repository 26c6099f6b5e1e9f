/* The grammar engine's masks for the mask oracle test
 * (tests/e2e/test_grammar_oracle.py): grammar_mask_dump MODEL GRAMMAR_FILE
 * reads lines of space-separated token ids from stdin; for each line it
 * feeds those tokens to a fresh matcher and prints the allowed ids of the
 * next step ("x" when a token does not fit), one line per input line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar_tool_load.h"

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  nc_vocab *v = NULL;
  nc_grammar *g = NULL;
  nc_grammar_vocab *gv = NULL;
  if (grammar_tool_load(argv[1], argv[2], &v, &g, &gv)) return 1;
  nc_error err = {0};
  int32_t n = nc_grammar_vocab_n_tokens(gv);
  uint64_t *mask = calloc(((size_t)n + 63) / 64, sizeof *mask);
  static char line[1 << 16];
  while (fgets(line, sizeof line, stdin)) {
    nc_grammar_matcher *m = NULL;
    if (nc_grammar_matcher_create(g, &m, &err) != NC_OK) return 1;
    bool ok = true;
    for (char *t = strtok(line, " \n"); t && ok; t = strtok(NULL, " \n")) {
      if (nc_grammar_matcher_accept_token(m, gv, atoi(t), &ok, &err) != NC_OK)
        ok = false;
    }
    if (!ok) {
      puts("x");
    } else if (nc_grammar_matcher_mask(m, gv, mask, &err) != NC_OK) {
      printf("error %s\n", err.message);
    } else {
      for (int32_t i = 0; i < n; i++)
        if ((mask[i / 64] >> (i % 64)) & 1) printf("%d ", (int)i);
      putchar('\n');
    }
    fflush(stdout);
    nc_grammar_matcher_free(m);
  }
  free(mask);
  nc_grammar_matcher_free(NULL);
  nc_grammar_vocab_free(gv);
  nc_grammar_free(g);
  nc_vocab_free(v);
  return 0;
}
