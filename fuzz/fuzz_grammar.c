/* libFuzzer target for the grammar: the input up to its first NUL byte is
 * GBNF; when it compiles, the bytes after the NUL are fed one at a time
 * (a refused byte is skipped), with a token mask over a small vocabulary
 * (every byte, and some multi-byte pieces, three longer than 16 bytes)
 * checked at each step against feeding each token to a copy of the
 * matcher (a mask refused by the per-token budget must say so). The
 * corpus holds the bounded-repetition family of issue 38 (bounded_repeat_*:
 * eight .{0,1024} in a row, JSON strings, nested and nullable bodies),
 * whose masks drop dominated stacks. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"

static const char *const k_multi[] = {
    "ab", "\"}", "{\"", "\xc3\xa9", "\xc3", "\xa9x", "true", " ", "\n", "123",
    /* longer than NC_GRAMMAR_CANON_DEPTH: fed from the real state */
    "aaaaaaaaaaaaaaaaaaaa", "abcdefghijklmnopq\"}", "0123456789012345678"};
#define N_MULTI (sizeof k_multi / sizeof k_multi[0])
#define N_TOK (256 + N_MULTI + 1)

static nc_grammar_vocab *small_vocab(void) {
  static char bytes[256];
  const char *pieces[N_TOK];
  size_t lens[N_TOK];
  uint8_t kinds[N_TOK];
  for (int i = 0; i < 256; i++) {
    bytes[i] = (char)i;
    pieces[i] = bytes + i;
    lens[i] = 1;
    kinds[i] = NC_GRAMMAR_TOKEN_TEXT;
  }
  for (size_t i = 0; i < N_MULTI; i++) {
    pieces[256 + i] = k_multi[i];
    lens[256 + i] = strlen(k_multi[i]);
    kinds[256 + i] = NC_GRAMMAR_TOKEN_TEXT;
  }
  pieces[N_TOK - 1] = "";
  lens[N_TOK - 1] = 0;
  kinds[N_TOK - 1] = NC_GRAMMAR_TOKEN_END;
  nc_grammar_vocab *gv = NULL;
  nc_grammar_vocab_create(N_TOK, pieces, lens, kinds, &gv, NULL);
  return gv;
}

static void check_mask(nc_grammar_matcher *m, const nc_grammar_vocab *gv) {
  uint64_t mask[(N_TOK + 63) / 64];
  nc_error err = {0};
  if (nc_grammar_matcher_mask(m, gv, mask, &err) != NC_OK) {
    if (!err.message[0]) abort(); /* the per-token budget says so */
    return;
  }
  for (int32_t t = 0; t < (int32_t)N_TOK; t++) {
    nc_grammar_matcher *c = NULL;
    if (nc_grammar_matcher_clone(m, &c, NULL) != NC_OK) abort();
    bool ok = false;
    nc_code rc = nc_grammar_matcher_accept_token(c, gv, t, &ok, NULL);
    nc_grammar_matcher_free(c);
    if (rc != NC_OK) continue;
    if (ok != ((mask[t / 64] >> (t % 64)) & 1))
      abort(); /* the mask disagrees with feeding the token */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  const uint8_t *nul = memchr(data, 0, size);
  size_t glen = nul ? (size_t)(nul - data) : size;
  nc_grammar *g = NULL;
  nc_error err = {0};
  if (nc_grammar_parse((const char *)data, glen, NULL, &g, &err) != NC_OK) {
    if (!err.message[0]) abort(); /* every refusal says why */
    return 0;
  }
  nc_grammar_matcher *m = NULL;
  if (nc_grammar_matcher_create(g, &m, &err) == NC_OK) {
    nc_grammar_vocab *gv = small_vocab();
    const uint8_t *in = nul ? nul + 1 : data + size;
    size_t n = nul ? size - glen - 1 : 0;
    if (n > 64) n = 64;
    check_mask(m, gv);
    for (size_t i = 0; i < n; i++) {
      bool ok;
      if (nc_grammar_matcher_accept(m, (const char *)in + i, 1, &ok, &err) !=
          NC_OK)
        break;
      if (ok && i % 8 == 7) check_mask(m, gv);
    }
    if (nc_grammar_matcher_complete(m) && !nc_grammar_matcher_accepting(m))
      abort();
    nc_grammar_vocab_free(gv);
    nc_grammar_matcher_free(m);
  }
  nc_grammar_free(g);
  return 0;
}
