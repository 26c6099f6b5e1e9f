/* A model's vocabulary as the grammar's token trie (grammar_mask.c). */
#include <stdlib.h>

#include "grammar.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/vocab.h"

nc_code nc_grammar_vocab_from(const nc_vocab *v, nc_grammar_vocab **out,
                              nc_error *err) {
  int32_t n = nc_vocab_n_tokens(v);
  char **pieces = calloc((size_t)n + 1, sizeof *pieces);
  size_t *lens = calloc((size_t)n + 1, sizeof *lens);
  uint8_t *kinds = calloc((size_t)n + 1, 1);
  nc_code rc = NC_OK;
  if (!pieces || !lens || !kinds)
    rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  for (int32_t i = 0; rc == NC_OK && i < n; i++) {
    if (nc_vocab_is_eog(v, i)) {
      kinds[i] = NC_GRAMMAR_TOKEN_END;
      continue;
    }
    if (nc_vocab_is_control(v, i)) continue;
    char one[1];
    size_t need = nc_token_to_piece(v, i, false, one, 0);
    if (need == 0) continue;
    pieces[i] = malloc(need);
    if (!pieces[i]) {
      rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
      break;
    }
    lens[i] = nc_token_to_piece(v, i, false, pieces[i], need);
    kinds[i] = NC_GRAMMAR_TOKEN_TEXT;
  }
  if (rc == NC_OK)
    rc = nc_grammar_vocab_create(n, (const char *const *)pieces, lens, kinds,
                                 out, err);
  for (int32_t i = 0; pieces && i < n; i++)
    free(pieces[i]);
  free(pieces);
  free(lens);
  free(kinds);
  return rc;
}
