/* libFuzzer target: the WordPiece tokenizer (tokenizer.ggml.model "bert")
 * over all-MiniLM-L6-v2's vocabulary (models/all-MiniLM-L6-v2.F16.gguf,
 * scripts/fetch_minilm.sh), as the file has it (lowercase, strip accents)
 * or cased. Input: one flag byte, then the text.
 *   flags bit 0: add_special   bit 1: parse_special   bit 2: skip_special
 *   bit 3: the cased vocabulary (lowercase off, accents kept)
 * Checks: fuzz_tokenizer.c's (tokenize never fails, ids in range, the
 * streaming detokenizer equals the whole decode); with add_special the ids
 * are [CLS] ... [SEP]; without parse_special no control token but [UNK]
 * comes from text; spaces around ASCII punctuation change nothing (it is a
 * word alone anyway); under lowercase, ASCII capitals change nothing.
 *
 * tests/unit/test_tokenizer_wpm.c replays fuzz/corpus/wordpiece through
 * nc_fuzz_wordpiece_one (it includes this file with NC_FUZZ_NO_MAIN).
 *
 * Build and run: make fuzz-wordpiece, then from the repository root
 *   build/fuzz/fuzz_wordpiece -max_total_time=600 fuzz/corpus-run/wordpiece \
 *     fuzz/corpus/wordpiece
 */
#define NC_FUZZ_NO_MAIN_TOKENIZER
#include "fuzz_tokenizer.c"

static int32_t *wp_ids(const nc_vocab *v, const char *text, size_t len,
                       bool add_special, bool parse_special, size_t *n) {
  int32_t *ids = NULL;
  nc_error err = {0};
  FUZZ_CHECK(nc_tokenize(v, text, len, add_special, parse_special, &ids, n,
                         &err) == NC_OK);
  return ids;
}

static bool same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

static bool ascii_punct(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') ||
         (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

int nc_fuzz_wordpiece_one(const nc_vocab *v, bool lowercase,
                          const uint8_t *data, size_t size) {
  nc_fuzz_tokenizer_one(v, data, size);
  if (size < 1) return 0;
  bool add_special = data[0] & 1, parse_special = data[0] & 2;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  size_t n = 0;
  int32_t *ids = wp_ids(v, text, len, add_special, parse_special, &n);
  int32_t cls = nc_vocab_bos(v), unk = nc_vocab_find(v, "[UNK]", 5);
  if (add_special) {
    FUZZ_CHECK(n >= 2 && ids[0] == cls);
    FUZZ_CHECK(ids[n - 1] == nc_vocab_find(v, "[SEP]", 5));
  }
  if (!parse_special)
    for (size_t i = add_special; i + add_special < n; i++)
      FUZZ_CHECK(!nc_vocab_is_control(v, ids[i]) || ids[i] == unk);
  /* spaces around ASCII punctuation */
  char *spaced = malloc(3 * len + 1);
  FUZZ_CHECK(spaced);
  size_t m = 0;
  for (size_t i = 0; i < len; i++) {
    bool p = ascii_punct(text[i]);
    if (p) spaced[m++] = ' ';
    spaced[m++] = text[i];
    if (p) spaced[m++] = ' ';
  }
  size_t n2 = 0;
  int32_t *ids2 = wp_ids(v, spaced, m, add_special, false, &n2);
  if (!parse_special) FUZZ_CHECK(same_ids(ids, n, ids2, n2));
  free(ids2);
  /* ASCII capitals */
  if (lowercase && !parse_special) {
    for (size_t i = 0; i < len; i++)
      spaced[i] =
          text[i] >= 'a' && text[i] <= 'z' ? (char)(text[i] - 32) : text[i];
    ids2 = wp_ids(v, spaced, len, add_special, false, &n2);
    FUZZ_CHECK(same_ids(ids, n, ids2, n2));
    free(ids2);
  }
  free(spaced);
  free(ids);
  return 0;
}

#ifndef NC_FUZZ_NO_MAIN
typedef struct wp_state {
  nc_vocab *v[2]; /* the file's normalizer; cased */
} wp_state;

static nc_vocab *wp_load(uint8_t lower, uint8_t strip) {
  const char *path = "models/all-MiniLM-L6-v2.F16.gguf";
  gguf_file *f = NULL;
  nc_error err = {0};
  if (gguf_open(path, &f, &err) != NC_OK) {
    fprintf(stderr,
            "fuzz_wordpiece: run from the repository root with "
            "models/ fetched (scripts/fetch_minilm.sh): %s\n",
            err.message);
    abort();
  }
  nc_vocab_options opt = {.wpm_lowercase = lower, .wpm_strip_accents = strip};
  nc_vocab *v = NULL;
  if (nc_vocab_load_ex(f, &opt, &v, &err) != NC_OK) {
    fprintf(stderr, "fuzz_wordpiece: %s: %s\n", path, err.message);
    abort();
  }
  gguf_close(f);
  return v;
}

/* libFuzzer gives the entry point no context argument: the loaded vocabs
 * live here for the process's life. */
static wp_state *wp(void) {
  static wp_state s;
  if (!s.v[0]) {
    s.v[0] = wp_load(0, 0);
    s.v[1] = wp_load(NC_WPM_OFF, NC_WPM_OFF);
  }
  return &s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  wp_state *s = wp();
  bool cased = size && (data[0] & 8);
  return nc_fuzz_wordpiece_one(s->v[cased], !cased, data, size);
}
#endif
