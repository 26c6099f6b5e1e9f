/* Exactness against llama.cpp: every corpus string (tests/data/tokenizer/
 * corpus.hex, scripts/gen_tokenizer_corpus.py) must tokenize to exactly the
 * ids llama.cpp gave (the *.ids goldens, scripts/gen_tokenizer_golden.py),
 * and detokenize to exactly the bytes llama_detokenize gave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tokenizer/detokenizer.h"
#include "tokenizer_test_util.h"

typedef struct corpus {
  char *data; /* the file */
  char **str; /* decoded strings */
  size_t *len;
  size_t n;
} corpus;

static void corpus_free(corpus *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->str[i]);
  free(c->str);
  free(c->len);
  free(c->data);
}

static corpus load_corpus(const char *file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tokenizer/%s", tt_root(), file);
  corpus c = {0};
  c.data = tt_read_file(path, NULL);
  assert_non_null(c.data);
  size_t lines = 0;
  for (char *p = c.data; *p; p++)
    lines += *p == '\n';
  c.str = calloc(lines, sizeof *c.str);
  c.len = calloc(lines, sizeof *c.len);
  for (char *p = c.data; *p;) {
    char *nl = strchr(p, '\n');
    assert_non_null(nl);
    size_t n = (size_t)(nl - p);
    c.str[c.n] = malloc(n / 2 + 1);
    long k = tt_unhex(p, n, c.str[c.n]);
    assert_true(k >= 0);
    c.len[c.n++] = (size_t)k;
    p = nl + 1;
  }
  return c;
}

/* Checks one golden file; returns the number of strings that agree. */
static size_t check_golden(const nc_vocab *v, const corpus *c, const char *name,
                           bool parse_special) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tokenizer/%s", tt_root(), name);
  char *g = tt_read_file(path, NULL);
  assert_non_null(g);
  char *line = strchr(g, '\n') + 1; /* skip the header */
  size_t agree = 0, detok_agree = 0;
  size_t cap = 1 << 16;
  int32_t *want = malloc(cap * sizeof *want);
  char *want_text = malloc(1 << 20);
  for (size_t i = 0; i < c->n; i++) {
    char *nl = strchr(line, '\n');
    assert_non_null(nl);
    *nl = '\0';
    size_t n_want = 0;
    char *p = line;
    while (*p && *p != '|') {
      char *end;
      long id = strtol(p, &end, 10);
      if (end == p) break;
      want[n_want++] = (int32_t)id;
      p = end;
      while (*p == ' ')
        p++;
    }
    while (*p == ' ')
      p++;
    const char *text = c->str[i];
    size_t text_len = c->len[i];
    if (*p == '|') {
      p += p[1] == ' ' ? 2 : 1;
      long k = tt_unhex(p, strlen(p), want_text);
      assert_true(k >= 0);
      text = want_text;
      text_len = (size_t)k;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    nc_error err = {0};
    assert_int_equal(nc_tokenize(v, c->str[i], c->len[i], false, parse_special,
                                 &ids, &n, &err),
                     NC_OK);
    bool same = n == n_want && (n == 0 || !memcmp(ids, want, n * 4));
    if (same) {
      agree++;
    } else if (agree + 20 > i) { /* print the first few differences */
      size_t k = 0;
      while (k < n && k < n_want && ids[k] == want[k])
        k++;
      fprintf(stderr,
              "%s line %zu: %zu ids (want %zu), first difference "
              "at %zu: got %d want %d\n",
              name, i + 1, n, n_want, k, k < n ? ids[k] : -1,
              k < n_want ? want[k] : -1);
    }
    char *out = NULL;
    size_t out_len = 0;
    assert_int_equal(
        nc_detokenize(v, want, n_want, false, &out, &out_len, &err), NC_OK);
    if (out_len == text_len && !memcmp(out, text, out_len))
      detok_agree++;
    else
      fprintf(stderr, "%s line %zu: detokenize differs\n", name, i + 1);
    free(out);
    free(ids);
    line = nl + 1;
  }
  fprintf(stderr, "%-20s tokenize %zu/%zu identical, detokenize %zu/%zu\n",
          name, agree, c->n, detok_agree, c->n);
  assert_int_equal(detok_agree, c->n);
  free(want);
  free(want_text);
  free(g);
  return agree;
}

static void run_file(const char *model, const char *pre, const char *name,
                     bool parse_special, const char *file) {
  nc_vocab *v = tt_need_vocab(model, strncmp(name, "gemma", 5) == 0, pre);
  corpus c = load_corpus(file);
  assert_true(c.n >= (strcmp(file, "corpus.hex") ? 6u : 2000u));
  size_t agree = check_golden(v, &c, name, parse_special);
  size_t n = c.n;
  corpus_free(&c);
  nc_vocab_free(v);
  assert_int_equal(agree, n);
}

static void run(const char *model, const char *pre, const char *name,
                bool parse_special) {
  run_file(model, pre, name, parse_special, "corpus.hex");
}

/* Words over 4096 bytes take the bucket-queue path of the BPE. */
static void test_long_words(void **s) {
  (void)s;
  run_file(tt_smollm_path(), NULL, "smollm.long.ids", false, "long.hex");
  run_file(tt_smollm_path(), "llama-bpe", "llama-bpe.long.ids", false,
           "long.hex");
}

static void test_long_words_gemma(void **s) {
  (void)s;
  run_file(tt_gemma_path(), NULL, "gemma.long.ids", false, "long.hex");
}

static void test_smollm(void **s) {
  (void)s;
  run(tt_smollm_path(), NULL, "smollm.ids", false);
}
static void test_smollm_special(void **s) {
  (void)s;
  run(tt_smollm_path(), NULL, "smollm.special.ids", true);
}
static void test_llama_bpe(void **s) {
  (void)s;
  run(tt_smollm_path(), "llama-bpe", "llama-bpe.ids", false);
}
static void test_qwen2(void **s) {
  (void)s;
  run(tt_smollm_path(), "qwen2", "qwen2.ids", false);
}
static void test_gpt2(void **s) {
  (void)s;
  run(tt_smollm_path(), "gpt-2", "gpt-2.ids", false);
}
static void test_default(void **s) {
  (void)s;
  run(tt_smollm_path(), "default", "default.ids", false);
}
static void test_gemma(void **s) {
  (void)s;
  run(tt_gemma_path(), NULL, "gemma.ids", false);
}
static void test_gemma_special(void **s) {
  (void)s;
  run(tt_gemma_path(), NULL, "gemma.special.ids", true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_smollm),
      cmocka_unit_test(test_smollm_special),
      cmocka_unit_test(test_llama_bpe),
      cmocka_unit_test(test_qwen2),
      cmocka_unit_test(test_gpt2),
      cmocka_unit_test(test_default),
      cmocka_unit_test(test_gemma),
      cmocka_unit_test(test_gemma_special),
      cmocka_unit_test(test_long_words),
      cmocka_unit_test(test_long_words_gemma),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
