/* Tokenizer unit tests: vocab loading and validation (in-memory GGUFs),
 * BPE and SPM rules on tiny vocabularies, special tokens, BOS/EOS, the
 * real vocabularies' facts, round trips, bad input, and a replay of the
 * fuzz corpus. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/unicode.h"
#include "base/unicode_stream.h"
#include "gguf_writer.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer_test_util.h"

#define NC_FUZZ_NO_MAIN
#include "../../fuzz/fuzz_tokenizer.c"

/* Tokenizes s and compares with the -1-terminated want. */
static void expect_ids(const nc_vocab *v, const char *s, bool add_special,
                       bool parse_special, const int32_t *want) {
  int32_t *ids = NULL;
  size_t n = 0;
  nc_error err = {0};
  assert_int_equal(
      nc_tokenize(v, s, strlen(s), add_special, parse_special, &ids, &n, &err),
      NC_OK);
  size_t k = 0;
  while (want[k] >= 0)
    k++;
  if (n != k) {
    fprintf(stderr, "'%s': got", s);
    for (size_t i = 0; i < n; i++)
      fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n");
  }
  assert_int_equal(n, k);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(ids[i], want[i]);
  free(ids);
}

/* Byte-level BPE vocabulary: "a" "b" "c" "ab" "bc" "abc" "Ġ" "Ġa" ... */
static const char *const k_bpe_tokens[] = {
    "a",
    "b",
    "c",
    "ab",
    "bc",
    "\xc4\xa0",
    "\xc4\xa0\x61", /* "Ġa" */
    "1",
    "2",
    "3",
    "<|end|>",
    "<|user|>",
    "abc",
    "!",
    "xyz",
    "x",
    "y",
    "z",
    "12",
};
#define N_BPE (sizeof k_bpe_tokens / sizeof k_bpe_tokens[0])
static const int32_t k_bpe_types[N_BPE] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                           3, 4, 1, 1, 1, 1, 1, 1, 1};

static spec bpe_spec(const char *const *merges, size_t n_merges) {
  spec s = {.model = "gpt2",
            .pre = "gpt-2",
            .tokens = k_bpe_tokens,
            .n_tokens = N_BPE,
            .types = k_bpe_types,
            .n_types = N_BPE,
            .merges = merges,
            .n_merges = n_merges,
            .bos = -1,
            .add_bos = -1,
            .add_space_prefix = -1};
  return s;
}

static void test_bpe_merge_order(void **state) {
  (void)state;
  nc_error err = {0};
  nc_vocab *v = NULL;
  /* "b c" ranks first: abc -> a + bc */
  static const char *const m1[] = {"b c", "a b", "ab c"};
  spec s = bpe_spec(m1, 3);
  assert_int_equal(load_spec(&s, &v, &err), NC_OK);
  expect_ids(v, "abc", false, false, (int32_t[]){0, 4, -1});
  /* space + a merges into "Ġa" when ranked */
  nc_vocab_free(v);
  /* "a b" first, then "ab c": abc is one token */
  static const char *const m2[] = {"a b", "ab c", "b c", "\xc4\xa0 a"};
  s = bpe_spec(m2, 4);
  assert_int_equal(load_spec(&s, &v, &err), NC_OK);
  expect_ids(v, "abc", false, false, (int32_t[]){12, -1});
  expect_ids(v, "abcabc", false, false, (int32_t[]){12, 12, -1});
  expect_ids(v, " a", false, false, (int32_t[]){6, -1});
  expect_ids(v, "cab", false, false, (int32_t[]){2, 3, -1});
  /* gpt-2 pre-tokenizer: digits run together; bytes missing from the vocab
   * (here 'q') are dropped as llama.cpp drops them */
  expect_ids(v, "12q", false, false, (int32_t[]){7, 8, -1});
  nc_vocab_free(v);
}

static void test_special_partition(void **state) {
  (void)state;
  nc_error err = {0};
  nc_vocab *v = NULL;
  static const char *const m[] = {"a b"};
  spec s = bpe_spec(m, 1);
  assert_int_equal(load_spec(&s, &v, &err), NC_OK);
  /* control <|end|> (10): only with parse_special; user-defined <|user|>
   * (11): always */
  expect_ids(v, "ab<|end|>ab", false, true, (int32_t[]){3, 10, 3, -1});
  int32_t *ids = NULL;
  size_t n = 0;
  assert_int_equal(nc_tokenize(v, "ab<|end|>", 9, false, false, &ids, &n, &err),
                   NC_OK);
  for (size_t i = 0; i < n; i++)
    assert_int_not_equal(ids[i], 10);
  free(ids);
  expect_ids(v, "<|user|>ab", false, false, (int32_t[]){11, 3, -1});
  expect_ids(v, "<|user|><|end|>", false, true, (int32_t[]){11, 10, -1});
  /* control tokens are end-of-generation when their text says so */
  assert_true(nc_vocab_is_eog(v, 10));
  assert_true(nc_vocab_is_control(v, 10));
  /* no EOS key: the BPE default id 11 is EOS, hence EOG (llama.cpp) */
  assert_int_equal(nc_vocab_eos(v), 11);
  assert_true(nc_vocab_is_eog(v, 11));
  assert_false(nc_vocab_is_eog(v, 12));
  assert_false(nc_vocab_is_eog(v, -1));
  assert_false(nc_vocab_is_eog(v, (int32_t)N_BPE));
  nc_vocab_free(v);
}

static void test_bos_out_of_range(void **state) {
  (void)state;
  nc_error err = {0};
  nc_vocab *v = NULL;
  static const char *const m[] = {"a b"};
  /* 19 tokens: the BPE default BOS (11) is in range and kept when the
   * file's id is out of range (llama.cpp: "using default id") */
  spec s = bpe_spec(m, 1);
  s.bos = 1000;
  assert_int_equal(load_spec(&s, &v, &err), NC_OK);
  assert_int_equal(nc_vocab_bos(v), 11);
  nc_vocab_free(v);
  /* an in-range id is taken */
  s.bos = 5;
  assert_int_equal(load_spec(&s, &v, &err), NC_OK);
  assert_int_equal(nc_vocab_bos(v), 5);
  nc_vocab_free(v);
  /* 5 tokens: the default is out of range too, so there is no BOS */
  s.n_tokens = s.n_types = 5;
  s.bos = 1000;
  assert_int_equal(load_spec(&s, &v, &err), NC_OK);
  assert_int_equal(nc_vocab_bos(v), -1);
  assert_int_equal(nc_vocab_eos(v), -1);
  nc_vocab_free(v);
  /* ... and asking to add it is refused at load */
  s.add_bos = 1;
  assert_int_equal(load_spec(&s, &v, &err), NC_ERR_FORMAT);
  assert_null(v);
  assert_non_null(strstr(err.message, "BOS"));
}

static void test_bad_vocab(void **state) {
  (void)state;
  nc_error err = {0};
  nc_vocab *v = NULL;
  static const char *const m[] = {"a b"};
  spec s = bpe_spec(m, 1);
  s.n_types = N_BPE - 1; /* token_type shorter than tokens */
  assert_int_equal(load_spec(&s, &v, &err), NC_ERR_FORMAT);
  assert_non_null(strstr(err.message, "token_type"));
  s = bpe_spec(m, 1);
  float scores[N_BPE + 1] = {0};
  s.scores = scores;
  s.n_scores = N_BPE + 1; /* scores longer than tokens */
  assert_int_equal(load_spec(&s, &v, &err), NC_ERR_FORMAT);
  assert_non_null(strstr(err.message, "scores"));
  static const char *const dup[] = {"a", "b", "a"};
  s = bpe_spec(m, 1);
  s.tokens = dup;
  s.n_tokens = 3;
  s.types = NULL;
  assert_int_equal(load_spec(&s, &v, &err), NC_ERR_FORMAT);
  assert_non_null(strstr(err.message, "duplicate"));
  s = bpe_spec(m, 1);
  s.model = "t5"; /* unigram: not supported */
  assert_int_equal(load_spec(&s, &v, &err), NC_ERR_UNSUPPORTED);
  s = bpe_spec(m, 1);
  s.pre = "no-such-pre";
  assert_int_equal(load_spec(&s, &v, &err), NC_ERR_UNSUPPORTED);
  s = bpe_spec(NULL, 0); /* gpt2 needs merges */
  assert_int_equal(load_spec(&s, &v, &err), NC_ERR_FORMAT);
  s = bpe_spec(m, 1);
  s.n_tokens = s.n_types = 0;
  assert_int_equal(load_spec(&s, &v, &err), NC_ERR_FORMAT);
  assert_null(v);
}

/* SPM: "▁" "a" "b" "ab" "▁ab" "<0x41>".. with scores */
static void test_spm(void **state) {
  (void)state;
  static const char *const toks[] = {
      "<unk>",  "<s>",    "</s>",   "\xe2\x96\x81",
      "a",      "b",      "ab",     "\xe2\x96\x81\x61\x62", /* ▁ab */
      "<0x43>", "<0xE6>", "<0x97>", "<0xA5>",
      "ba"};
  static const float scores[] = {0,     0, 0, -1, -2, -2,   -1,
                                 -0.5f, 0, 0, 0,  0,  -0.1f};
  static const int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1, 6, 6, 6, 6, 1};
  spec s = {.model = "llama",
            .tokens = toks,
            .n_tokens = 13,
            .scores = scores,
            .n_scores = 13,
            .types = types,
            .n_types = 13,
            .bos = -1,
            .add_bos = -1,
            .add_space_prefix = -1};
  nc_error err = {0};
  nc_vocab *v = NULL;
  assert_int_equal(load_spec(&s, &v, &err), NC_OK);
  assert_int_equal(nc_vocab_bos(v), 1);
  assert_true(nc_vocab_add_bos(v));
  /* space prefix: "ab" -> "▁ab" (one token) */
  expect_ids(v, "ab", false, false, (int32_t[]){7, -1});
  expect_ids(v, "ab", true, false, (int32_t[]){1, 7, -1});
  /* highest score first: "bab" -> ▁ + "ba"(-0.1) beats "ab"(-1) + b */
  expect_ids(v, "bab", false, false, (int32_t[]){3, 12, 5, -1});
  /* byte fallback: 'C' has <0x43>; 日 = E6 97 A5 */
  expect_ids(v, "C\xe6\x97\xa5", false, false,
             (int32_t[]){3, 8, 9, 10, 11, -1});
  /* pieces: byte tokens are bytes, ▁ is a space, the leading space of
   * the first piece goes away */
  char *out = NULL;
  size_t len = 0;
  int32_t ids[] = {1, 7, 8, 9, 10, 11};
  assert_int_equal(nc_detokenize(v, ids + 1, 5, false, &out, &len, &err),
                   NC_OK);
  assert_string_equal(out, "abC\xe6\x97\xa5");
  free(out);
  /* skipping a leading BOS keeps the space (llama.cpp's rule) */
  assert_int_equal(nc_detokenize(v, ids, 2, true, &out, &len, &err), NC_OK);
  assert_string_equal(out, " ab");
  free(out);
  /* with special tokens rendered, BOS takes the space removal */
  assert_int_equal(nc_detokenize(v, ids, 2, false, &out, &len, &err), NC_OK);
  assert_string_equal(out, "<s> ab");
  free(out);
  nc_vocab_free(v);
}

/* ------------------------------------------------------------- unicode */

static void test_unicode_tables(void **state) {
  (void)state;
  static const struct {
    uint32_t cp;
    unsigned flags;
  } cases[] = {
      {'A', NC_UF_LETTER},
      {'5', NC_UF_NUMBER},
      {' ', NC_UF_SEPARATOR | NC_UF_WHITESPACE},
      {'\n', NC_UF_CONTROL | NC_UF_WHITESPACE},
      {'$', NC_UF_SYMBOL},
      {'!', NC_UF_PUNCT},
      {0x0085, NC_UF_CONTROL | NC_UF_WHITESPACE},
      {0x0301, NC_UF_MARK},
      {0x0378, 0}, /* unassigned */
      {0x0660, NC_UF_NUMBER},
      {0x0E01, NC_UF_LETTER},
      {0x2028, NC_UF_SEPARATOR | NC_UF_WHITESPACE},
      {0x200B, NC_UF_CONTROL}, /* zero width space: Cf, not \s */
      {0x2FFC, NC_UF_SYMBOL},  /* new in Unicode 15.1 */
      {0x3000, NC_UF_SEPARATOR | NC_UF_WHITESPACE},
      {0x4E00, NC_UF_LETTER},
      {0xE000, NC_UF_CONTROL}, /* private use */
      {0xFFFD, NC_UF_SYMBOL},
      {0x1F600, NC_UF_SYMBOL},
      {0x10FFFF, 0},
      {0x110000, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (nc_unicode_flags(cases[i].cp) != cases[i].flags)
      fprintf(stderr, "U+%04X: %u\n", cases[i].cp,
              nc_unicode_flags(cases[i].cp));
    assert_int_equal(nc_unicode_flags(cases[i].cp), cases[i].flags);
  }
  /* the GPT-2 byte map is a bijection onto its 256 code points */
  for (int b = 0; b < 256; b++) {
    uint32_t cp = nc_gpt2_byte_to_cp((uint8_t)b);
    assert_int_equal(nc_gpt2_cp_to_byte(cp), b);
  }
  assert_int_equal(nc_gpt2_byte_to_cp(' '), 0x120);
  assert_int_equal(nc_gpt2_byte_to_cp('\n'), 0x10A);
  assert_int_equal(nc_gpt2_byte_to_cp(0xAD), 0x143);
  assert_int_equal(nc_gpt2_cp_to_byte(0x144), -1);
  /* lenient decoding: llama.cpp's rules */
  size_t off = 0;
  assert_int_equal(nc_utf8_decode_lenient("\xc0\x80", 2, &off), 0);
  assert_int_equal(off, 2); /* overlong accepted, as llama.cpp does */
  off = 0;
  assert_int_equal(nc_utf8_decode_lenient("\xe6\x97", 2, &off), 0xFFFD);
  assert_int_equal(off, 1); /* truncated: one byte consumed */
  off = 0;
  assert_int_equal(nc_utf8_decode_lenient("\xf4\x90\x80\x80", 4, &off), 0xFFFD);
  assert_int_equal(off, 1); /* above U+10FFFF: invalid (llama.cpp aborts) */
  assert_true(nc_utf8_valid("\xf4\x8f\xbf\xbf", 4));
  assert_false(nc_utf8_valid("\xed\xa0\x80", 3));
  assert_false(nc_utf8_valid("\xc0\x80", 2));
  size_t len;
  assert_int_equal(nc_utf8_decode("\xe2\x82\xac", 3, &len), 0x20AC);
  assert_int_equal(len, 3);
  assert_int_equal(nc_utf8_decode("\xed\xa0\x80", 3, &len), -1);
  assert_int_equal(len, 1);
  assert_int_equal(nc_utf8_decode("\xe2\x82", 2, &len), -1);
}

/* The strict decoder and the stream decoder are one rule: every 1..3-byte
 * string built from interesting bytes is valid exactly when the stream
 * passes it through unchanged with nothing held back. */
static void test_utf8_strict_rules_agree(void **state) {
  (void)state;
  static const unsigned char bytes[] = {
      0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
      0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee,
      0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  const size_t nb = sizeof bytes;
  char in[4], out[3 * 4 + 8];
  for (size_t n = 1; n <= 3; n++) {
    size_t total = 1;
    for (size_t k = 0; k < n; k++)
      total *= nb;
    for (size_t idx = 0; idx < total; idx++) {
      size_t x = idx;
      for (size_t k = 0; k < n; k++, x /= nb)
        in[k] = (char)bytes[x % nb];
      nc_utf8_stream st = {0};
      size_t w = nc_utf8_stream_feed(&st, in, n, out);
      bool same =
          w == n && memcmp(in, out, n) == 0 && nc_utf8_stream_pending(&st) == 0;
      assert_int_equal(nc_utf8_valid(in, n), same);
    }
  }
}

/* ---------------------------------------------------- real vocabularies */

static void test_smollm_facts(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  assert_int_equal(nc_vocab_n_tokens(v), 49152);
  assert_int_equal(nc_vocab_get_type(v), NC_VOCAB_BPE);
  assert_int_equal(nc_vocab_pre_type(v), NC_PRE_DIGITS_GPT2);
  assert_int_equal(nc_vocab_bos(v), 1);
  assert_int_equal(nc_vocab_eos(v), 2);
  assert_false(nc_vocab_add_bos(v));
  size_t n;
  const char *t = nc_vocab_token_text(v, 1, &n);
  assert_int_equal(n, 12);
  assert_memory_equal(t, "<|im_start|>", 12);
  assert_null(nc_vocab_token_text(v, 49152, &n));
  /* EOG: <|endoftext|> (0), <|im_end|> (2), and <reponame> (4, FIM repo) */
  int n_eog = 0;
  for (int32_t id = 0; id < 49152; id++)
    n_eog += nc_vocab_is_eog(v, id);
  assert_int_equal(n_eog, 3);
  assert_true(nc_vocab_is_eog(v, 0));
  assert_true(nc_vocab_is_eog(v, 2));
  assert_true(nc_vocab_is_eog(v, 4));
  assert_false(nc_vocab_is_eog(v, 1));
  assert_true(nc_vocab_is_control(v, 1));
  expect_ids(v, "<|im_start|>user\nHi<|im_end|>", false, true,
             (int32_t[]){1, 4093, 198, 26843, 2, -1});
  /* add_bos is false for SmolLM2: add_special adds nothing */
  expect_ids(v, "Hi", true, false, (int32_t[]){26843, -1});
  nc_vocab_free(v);
}

static void test_gemma_facts(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_gemma_path(), true, NULL);
  assert_int_equal(nc_vocab_get_type(v), NC_VOCAB_SPM);
  assert_int_equal(nc_vocab_bos(v), 2);
  assert_int_equal(nc_vocab_eos(v), 1);
  assert_true(nc_vocab_add_bos(v));
  assert_false(nc_vocab_add_space_prefix(v));
  int32_t eot = nc_vocab_find(v, "<end_of_turn>", 13);
  assert_true(eot > 0);
  assert_true(nc_vocab_is_eog(v, eot));
  assert_true(nc_vocab_is_eog(v, 1));
  int32_t sot = nc_vocab_find(v, "<start_of_turn>", 15);
  assert_false(nc_vocab_is_eog(v, sot));
  int32_t *ids = NULL;
  size_t n = 0;
  nc_error err = {0};
  assert_int_equal(
      nc_tokenize(v, "<start_of_turn>user\nhi", 22, true, true, &ids, &n, &err),
      NC_OK);
  assert_true(n >= 3);
  assert_int_equal(ids[0], 2); /* BOS */
  assert_int_equal(ids[1], sot);
  free(ids);
  nc_vocab_free(v);
}

/* decode(encode(s)) == s for every valid UTF-8 corpus string. SmolLM2's
 * vocab lacks a few control bytes, which llama.cpp drops as well: a string
 * holding one is the only allowed exception (and is counted). */
static void round_trip(const char *model, bool exceptions_ok) {
  nc_vocab *v = tt_need_vocab(model, !exceptions_ok, NULL);
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/tokenizer/corpus.hex", tt_root());
  char *data = tt_read_file(path, NULL);
  assert_non_null(data);
  size_t checked = 0, excepted = 0;
  char *buf = malloc(1 << 16);
  for (char *p = data; *p;) {
    char *nl = strchr(p, '\n');
    long n = tt_unhex(p, (size_t)(nl - p), buf);
    p = nl + 1;
    if (!nc_utf8_valid(buf, (size_t)n)) continue;
    for (int ps = 0; ps < 2; ps++) {
      int32_t *ids = NULL;
      size_t n_ids = 0;
      nc_error err = {0};
      assert_int_equal(
          nc_tokenize(v, buf, (size_t)n, false, ps, &ids, &n_ids, &err), NC_OK);
      char *out = NULL;
      size_t len = 0;
      assert_int_equal(nc_detokenize(v, ids, n_ids, false, &out, &len, &err),
                       NC_OK);
      if (len != (size_t)n || memcmp(out, buf, len)) {
        bool missing = false;
        for (long i = 0; i < n; i++) {
          const nc_vocab *vv = v;
          missing |= vv->gpt2_sid[(unsigned char)buf[i]] < 0;
        }
        assert_true(exceptions_ok && missing);
        excepted++;
      }
      checked++;
      free(out);
      free(ids);
    }
  }
  fprintf(stderr,
          "round trip: %zu checked, %zu with bytes the vocab "
          "lacks\n",
          checked, excepted);
  assert_true(checked > 3000);
  free(buf);
  free(data);
  nc_vocab_free(v);
}

static void test_round_trip_smollm(void **state) {
  (void)state;
  round_trip(tt_smollm_path(), true);
}

static void test_round_trip_gemma(void **state) {
  (void)state;
  round_trip(tt_gemma_path(), false);
}

/* ------------------------------------------------------------ bad input */

static void test_bad_input(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  nc_error err = {0};
  int32_t *ids = NULL;
  size_t n = 0;
  assert_int_equal(nc_tokenize(v, NULL, 3, false, false, &ids, &n, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_int_equal(nc_tokenize(v, NULL, 0, false, false, &ids, &n, &err),
                   NC_OK);
  assert_int_equal(n, 0);
  free(ids);
  /* A 4-byte form above U+10FFFF makes llama.cpp abort; we read its lead
   * byte as invalid: the same ids as four U+FFFD. */
  int32_t *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  assert_int_equal(
      nc_tokenize(v, "\xf4\x90\x80\x80", 4, false, false, &a, &na, &err),
      NC_OK);
  assert_int_equal(nc_tokenize(v,
                               "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf"
                               "\xbd",
                               12, false, false, &b, &nb, &err),
                   NC_OK);
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, na * sizeof *a);
  free(a);
  free(b);
  /* detokenize refuses ids out of range, with the position */
  char *out = NULL;
  size_t len = 0;
  int32_t bad[] = {5, 49152};
  assert_int_equal(nc_detokenize(v, bad, 2, false, &out, &len, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "position 1"));
  assert_null(out);
  /* pieces: out of range is 0; truncation reports the full length */
  char piece[4] = {0};
  assert_int_equal(nc_token_to_piece(v, -1, true, piece, 4), 0);
  assert_int_equal(nc_token_to_piece(v, 1, true, piece, 4), 12);
  assert_memory_equal(piece, "<|im", 4);
  assert_int_equal(nc_token_to_piece(v, 1, false, piece, 4), 0);
  nc_vocab_free(v);
}

/* Replays every committed fuzz seed through the fuzz entry point. */
static void test_fuzz_corpus_replay(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  nc_vocab *g = tt_need_vocab(tt_gemma_path(), true, NULL);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/fuzz/corpus/tokenizer", tt_root());
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
    const nc_vocab *use = len && (data[0] & 8) && g ? g : v;
    nc_fuzz_tokenizer_one(use, (const uint8_t *)data, len);
    free(data);
    files++;
  }
  closedir(d);
  assert_true(files >= 50);
  nc_vocab_free(g);
  nc_vocab_free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unicode_tables),
      cmocka_unit_test(test_utf8_strict_rules_agree),
      cmocka_unit_test(test_bpe_merge_order),
      cmocka_unit_test(test_special_partition),
      cmocka_unit_test(test_bos_out_of_range),
      cmocka_unit_test(test_bad_vocab),
      cmocka_unit_test(test_spm),
      cmocka_unit_test(test_smollm_facts),
      cmocka_unit_test(test_gemma_facts),
      cmocka_unit_test(test_round_trip_smollm),
      cmocka_unit_test(test_round_trip_gemma),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_fuzz_corpus_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
