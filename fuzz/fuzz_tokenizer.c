/* libFuzzer target: tokenize, detokenize and the incremental detokenizer
 * over the real vocabularies (SmolLM2's byte-level BPE; Gemma 3's SPM when
 * models/ has it). Input: one flag byte, then the text.
 *   flags bit 0: add_special   bit 1: parse_special   bit 2: skip_special
 *   bit 3: use the second vocab (Gemma) when it is loaded
 * Checks: tokenize never fails on any bytes; the ids are in range; the
 * incremental detokenizer's stream equals sanitizing the whole decode; the
 * text bytes read as token ids decode the same way.
 *
 * tests/unit/test_tokenizer.c replays fuzz/corpus/tokenizer through
 * nc_fuzz_tokenizer_one (it includes this file with NC_FUZZ_NO_MAIN).
 *
 * Build and run: make fuzz-tokenizer, then e.g.
 *   build/fuzz/fuzz_tokenizer -max_total_time=600 fuzz/corpus-run/tokenizer \
 *     fuzz/corpus/tokenizer
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/vocab.h"

#define FUZZ_CHECK(c)                                                          \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_tokenizer: check failed: %s (line %d)\n", #c,      \
              __LINE__);                                                       \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* Streams ids through nc_detok and compares with the whole decode. */
static void check_stream(const nc_vocab *v, const int32_t *ids, size_t n,
                         bool skip_special) {
  char *whole = NULL;
  size_t whole_len = 0;
  nc_error err = {0};
  FUZZ_CHECK(nc_detokenize_ex(v, ids, n, skip_special, false, &whole,
                              &whole_len, &err) == NC_OK);
  size_t want_len = 0;
  char *want = nc_utf8_sanitize(whole, whole_len, &want_len);
  FUZZ_CHECK(want);
  nc_detok *d = nc_detok_create(v, skip_special);
  FUZZ_CHECK(d);
  char *got = malloc(want_len + 1);
  FUZZ_CHECK(got);
  size_t got_len = 0;
  for (size_t i = 0; i <= n; i++) {
    const char *t;
    size_t l;
    if (i < n)
      nc_detok_push(d, ids[i], &t, &l);
    else
      nc_detok_flush(d, &t, &l);
    FUZZ_CHECK(got_len + l <= want_len);
    memcpy(got + got_len, t, l);
    got_len += l;
    /* never revised: what was released is a prefix of the final text */
    FUZZ_CHECK(memcmp(got, want, got_len) == 0);
  }
  FUZZ_CHECK(got_len == want_len);
  nc_detok_free(d);
  free(got);
  free(want);
  free(whole);
}

int nc_fuzz_tokenizer_one(const nc_vocab *v, const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t flags = data[0];
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  int32_t *ids = NULL;
  size_t n = 0;
  nc_error err = {0};
  FUZZ_CHECK(nc_tokenize(v, text, len, flags & 1, flags & 2, &ids, &n, &err) ==
             NC_OK);
  int32_t n_tokens = nc_vocab_n_tokens(v);
  for (size_t i = 0; i < n; i++)
    FUZZ_CHECK(ids[i] >= 0 && ids[i] < n_tokens);
  char *out = NULL;
  size_t out_len = 0;
  FUZZ_CHECK(nc_detokenize(v, ids, n, flags & 4, &out, &out_len, &err) ==
             NC_OK);
  FUZZ_CHECK(out[out_len] == '\0');
  free(out);
  check_stream(v, ids, n, flags & 4);
  free(ids);
  /* The text as little-endian ids (mapped into range). */
  size_t m = len / 4;
  int32_t *raw = malloc((m ? m : 1) * sizeof *raw);
  FUZZ_CHECK(raw);
  for (size_t i = 0; i < m; i++) {
    uint32_t u;
    memcpy(&u, text + 4 * i, 4);
    raw[i] = (int32_t)(u % (uint32_t)n_tokens);
  }
  check_stream(v, raw, m, flags & 4);
  for (size_t i = 0; i < m && i < 16; i++) {
    char piece[8]; /* small on purpose: truncation must be safe */
    size_t need = nc_token_to_piece(v, raw[i], flags & 4, piece, sizeof piece);
    FUZZ_CHECK(need < ((size_t)1 << 30));
  }
  free(raw);
  return 0;
}

/* NC_FUZZ_NO_MAIN_TOKENIZER: included by another fuzz target
 * (fuzz_wordpiece.c) for nc_fuzz_tokenizer_one alone. */
#if !defined(NC_FUZZ_NO_MAIN) && !defined(NC_FUZZ_NO_MAIN_TOKENIZER)
typedef struct fuzz_state {
  nc_vocab *v[2];
} fuzz_state;

static nc_vocab *load(const char *path) {
  gguf_file *f = NULL;
  nc_error err = {0};
  if (gguf_open(path, &f, &err) != NC_OK) return NULL;
  nc_vocab *v = NULL;
  if (nc_vocab_load(f, &v, &err) != NC_OK)
    fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path, err.message);
  gguf_close(f);
  return v;
}

/* libFuzzer gives the entry point no context argument: the loaded vocabs
 * live here for the process's life. */
static fuzz_state *state(void) {
  static fuzz_state s;
  static int loaded;
  if (!loaded) {
    loaded = 1;
    const char *smol = getenv("NUCLEUS_MODEL");
    s.v[0] =
        load(smol && *smol ? smol : "models/SmolLM2-135M-Instruct.Q4_1.gguf");
    s.v[1] = load("models/gemma-3-270m-q4_k_m.gguf");
    if (!s.v[0]) {
      fprintf(stderr, "fuzz_tokenizer: run from the repository root with "
                      "models/ fetched\n");
      abort();
    }
  }
  return &s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_state *s = state();
  const nc_vocab *v = size && (data[0] & 8) && s->v[1] ? s->v[1] : s->v[0];
  return nc_fuzz_tokenizer_one(v, data, size);
}
#endif
