/* WordPiece (tokenizer.ggml.model "bert", src/tokenizer/tokenizer_wpm.c)
 * against Hugging Face tokenizers on all-MiniLM-L6-v2's vocabulary
 * (models/all-MiniLM-L6-v2.F16.gguf, scripts/fetch_minilm.sh): every string
 * of tests/data/tokenizer/corpus.hex and the first texts of
 * tests/data/embed/texts.jsonl tokenize to exactly the ids of the goldens
 * (scripts/gen_wordpiece_golden.py), under the file's normalizer
 * (lowercase, strip accents) and two others (cased; lowercase keeping
 * accents). Plus the rules one by one: [CLS] ... [SEP], ## continuations,
 * [UNK] for a word with an unknown piece and for one over 100 characters,
 * punctuation and CJK split, and the load's refusals; the fuzz seeds of
 * fuzz/corpus/wordpiece replayed through fuzz/fuzz_wordpiece.c's checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>

#include "tokenizer_test_util.h"

#define NC_FUZZ_NO_MAIN
#include "../../fuzz/fuzz_wordpiece.c"

static const char *minilm_path(void) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/models/all-MiniLM-L6-v2.F16.gguf", tt_root());
  return access(buf, R_OK) == 0 ? buf : NULL;
}

static nc_vocab *need_minilm(uint8_t lower, uint8_t strip) {
  const char *path = minilm_path();
  if (!path)
    NC_MODEL_UNAVAILABLE("models/all-MiniLM-L6-v2.F16.gguf is missing "
                         "(scripts/fetch_minilm.sh)");
  gguf_file *f = NULL;
  nc_error err = {0};
  assert_int_equal(gguf_open(path, &f, &err), NC_OK);
  nc_vocab_options opt = {.wpm_lowercase = lower, .wpm_strip_accents = strip};
  nc_vocab *v = NULL;
  nc_code rc = nc_vocab_load_ex(f, &opt, &v, &err);
  gguf_close(f);
  if (rc != NC_OK) fail_msg("vocab: %s", err.message);
  return v;
}

/* ids of text (add_special, no parse_special), as a space-separated line. */
static char *ids_line(const nc_vocab *v, const char *text, size_t len,
                      bool add_special) {
  int32_t *ids = NULL;
  size_t n = 0;
  nc_error err = {0};
  assert_int_equal(
      nc_tokenize(v, text, len, add_special, false, &ids, &n, &err), NC_OK);
  char *s = malloc(n * 12 + 1);
  size_t at = 0;
  s[0] = '\0';
  for (size_t i = 0; i < n; i++)
    at += (size_t)sprintf(s + at, i ? " %d" : "%d", ids[i]);
  free(ids);
  return s;
}

typedef struct inputs {
  char **str;
  size_t *len;
  size_t n;
} inputs;

static void add_input(inputs *in, char *s, size_t len) {
  in->str = realloc(in->str, (in->n + 1) * sizeof *in->str);
  in->len = realloc(in->len, (in->n + 1) * sizeof *in->len);
  in->str[in->n] = s;
  in->len[in->n++] = len;
}

/* corpus.hex, then texts.jsonl's strings. */
static inputs load_inputs(void) {
  inputs in = {0};
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tokenizer/corpus.hex", tt_root());
  char *data = tt_read_file(path, NULL);
  assert_non_null(data);
  for (char *p = data; *p;) {
    char *nl = strchr(p, '\n');
    assert_non_null(nl);
    char *s = malloc((size_t)(nl - p) / 2 + 1);
    long k = tt_unhex(p, (size_t)(nl - p), s);
    assert_true(k >= 0);
    add_input(&in, s, (size_t)k);
    p = nl + 1;
  }
  free(data);
  snprintf(path, sizeof path, "%s/tests/data/embed/texts.jsonl", tt_root());
  data = tt_read_file(path, NULL);
  assert_non_null(data);
  for (char *p = data; *p;) {
    char *nl = strchr(p, '\n');
    assert_non_null(nl);
    json_error_t je;
    json_t *j = json_loadb(p, (size_t)(nl - p), JSON_DECODE_ANY, &je);
    assert_true(json_is_string(j));
    size_t n = json_string_length(j);
    char *s = malloc(n + 1);
    memcpy(s, json_string_value(j), n + 1);
    add_input(&in, s, n);
    json_decref(j);
    p = nl + 1;
  }
  free(data);
  return in;
}

static void free_inputs(inputs *in) {
  for (size_t i = 0; i < in->n; i++)
    free(in->str[i]);
  free(in->str);
  free(in->len);
}

static void check_golden(const char *name, uint8_t lower, uint8_t strip) {
  nc_vocab *v = need_minilm(lower, strip);
  inputs in = load_inputs();
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tokenizer/%s", tt_root(), name);
  char *g = tt_read_file(path, NULL);
  assert_non_null(g);
  size_t line_no = 0, checked = 0, bad = 0;
  for (char *p = g; *p; line_no++) {
    char *nl = strchr(p, '\n');
    assert_non_null(nl);
    *nl = '\0';
    assert_true(line_no < in.n);
    if (strcmp(p, "-") != 0) {
      char *got = ids_line(v, in.str[line_no], in.len[line_no], false);
      if (strcmp(got, p) != 0 && bad++ < 5)
        print_message("%s line %zu:\n  want %.300s\n  got  %.300s\n", name,
                      line_no + 1, p, got);
      free(got);
      checked++;
    }
    p = nl + 1;
  }
  print_message("%s: %zu of %zu strings agree\n", name, checked - bad, checked);
  assert_int_equal(bad, 0);
  assert_true(checked > 2000);
  free(g);
  free_inputs(&in);
  nc_vocab_free(v);
}

static void test_golden_file_normalizer(void **state) {
  (void)state;
  check_golden("wordpiece.ids", 0, 0);
}

static void test_golden_cased(void **state) {
  (void)state;
  check_golden("wordpiece.cased.ids", NC_WPM_OFF, NC_WPM_OFF);
}

static void test_golden_lowercase_keep_accents(void **state) {
  (void)state;
  check_golden("wordpiece.accents.ids", NC_WPM_ON, NC_WPM_OFF);
}

static void expect(const nc_vocab *v, const char *text, bool add_special,
                   const char *want) {
  char *got = ids_line(v, text, strlen(text), add_special);
  if (strcmp(got, want) != 0)
    fail_msg("'%s': want [%s], got [%s]", text, want, got);
  free(got);
}

static void test_rules(void **state) {
  (void)state;
  nc_vocab *v = need_minilm(0, 0);
  assert_int_equal(nc_vocab_get_type(v), NC_VOCAB_WPM);
  assert_int_equal(nc_vocab_bos(v), 101);
  /* [CLS] hello world [SEP] */
  expect(v, "Hello world", true, "101 7592 2088 102");
  expect(v, "", true, "101 102");
  /* ## continuation: "embeddings" is em ##bed ##ding ##s */
  expect(v, "embeddings", false, "7861 8270 4667 2015");
  /* punctuation alone, accents stripped, case folded */
  expect(v, "NAÏVE, isn't it?", false, "15743 1010 3475 1005 1056 2009 1029");
  /* CJK ideographs each a word even without spaces */
  expect(v, "中文", false, "1746 1861");
  /* a word of 100 characters is split, of 101 is [UNK] */
  char w[128];
  memset(w, 'a', 101);
  w[101] = '\0';
  expect(v, w, false, "100");
  w[100] = '\0';
  char *got = ids_line(v, w, 100, false);
  assert_true(strcmp(got, "100") != 0);
  free(got);
  /* a word with a piece the vocabulary lacks is [UNK] as a whole */
  expect(v, "x\xe2\x98\x83y hello", false, "100 7592"); /* U+2603 snowman */
  /* controls and U+FFFD vanish without splitting; invalid bytes too */
  expect(v, "hel\x01lo wor\xefld", false, "7592 2088");
  nc_vocab_free(v);
}

/* A tiny bert vocabulary written here, with CLS, SEP and UNK ids or
 * without (then llama.cpp's defaults, 101, 102, 100, are past its end). */
static nc_code load_tiny(bool ids, nc_vocab **v, nc_error *err) {
  const char *toks[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]",
                        "\xe2\x96\x81"
                        "a"};
  gw b = {0};
  gw_header(&b, 3, 0, ids ? 6 : 3);
  gw_kv_str(&b, "tokenizer.ggml.model", "bert");
  gw_kv_arr(&b, "tokenizer.ggml.tokens", 8, 5);
  for (int i = 0; i < 5; i++)
    gw_str(&b, toks[i]);
  gw_kv_arr(&b, "tokenizer.ggml.token_type", 5, 5);
  for (int i = 0; i < 5; i++)
    gw_u32(&b, i < 4 ? 3 : 1);
  if (ids) {
    gw_kv_u32(&b, "tokenizer.ggml.bos_token_id", 2);
    gw_kv_u32(&b, "tokenizer.ggml.seperator_token_id", 3);
    gw_kv_u32(&b, "tokenizer.ggml.unknown_token_id", 1);
  }
  gw_align(&b, 32);
  gguf_file *f = NULL;
  nc_code rc = gguf_open_memory(b.p, b.len, &f, err);
  if (rc == NC_OK) {
    rc = nc_vocab_load(f, v, err);
    gguf_close(f);
  }
  gw_free(&b);
  return rc;
}

static void test_load_refusals(void **state) {
  (void)state;
  nc_vocab *v = NULL;
  nc_error err = {0};
  assert_int_equal(load_tiny(false, &v, &err), NC_ERR_FORMAT);
  if (!strstr(err.message, "CLS (BOS), SEP and UNK"))
    fail_msg("%s", err.message);
  err = (nc_error){0};
  assert_int_equal(load_tiny(true, &v, &err), NC_OK);
  expect(v, "a a b", true, "2 4 4 1 3");
  nc_vocab_free(v);
}

/* Replays every committed fuzz seed through the fuzz entry point. */
static void test_fuzz_corpus_replay(void **state) {
  (void)state;
  nc_vocab *v = need_minilm(0, 0);
  nc_vocab *cased = need_minilm(NC_WPM_OFF, NC_WPM_OFF);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/fuzz/corpus/wordpiece", tt_root());
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t files = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t len = 0;
    char *data = tt_read_file(path, &len);
    assert_non_null(data);
    bool c = len && (data[0] & 8);
    nc_fuzz_wordpiece_one(c ? cased : v, !c, (const uint8_t *)data, len);
    free(data);
    files++;
  }
  closedir(d);
  assert_true(files >= 50);
  nc_vocab_free(cased);
  nc_vocab_free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_file_normalizer),
      cmocka_unit_test(test_golden_cased),
      cmocka_unit_test(test_golden_lowercase_keep_accents),
      cmocka_unit_test(test_rules),
      cmocka_unit_test(test_load_refusals),
      cmocka_unit_test(test_fuzz_corpus_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
