/* Incremental detokenizer: text is released only once it can never change,
 * incomplete UTF-8 is held back, bytes that can never become valid are
 * U+FFFD at once, flush turns a dangling prefix into U+FFFD; and the
 * stream always equals sanitizing the whole decode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/unicode.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer_test_util.h"

#define FFFD "\xef\xbf\xbd"

/* A tiny SPM vocabulary whose tokens are raw byte strings: every byte
 * 0x00..0xFF as <0xNN> (ids 3..258), then the extra texts given. */
static nc_vocab *make_bytes_vocab(const char *const *extra, size_t n_extra) {
  char names[256][8]; /* the writer copies them */
  const char *toks[3 + 256 + 16];
  int32_t types[3 + 256 + 16];
  size_t n = 0;
  toks[n] = "<unk>", types[n++] = 2;
  toks[n] = "<s>", types[n++] = 3;
  toks[n] = "</s>", types[n++] = 3;
  for (int b = 0; b < 256; b++) {
    snprintf(names[b], sizeof names[b], "<0x%02X>", b);
    toks[n] = names[b], types[n++] = 6;
  }
  for (size_t i = 0; i < n_extra && i < 16; i++)
    toks[n] = extra[i], types[n++] = 1;
  spec s = {.model = "llama",
            .tokens = toks,
            .n_tokens = n,
            .types = types,
            .n_types = n,
            .bos = -1,
            .add_bos = -1,
            .add_space_prefix = 0};
  nc_vocab *v = NULL;
  nc_error err = {0};
  assert_int_equal(load_spec(&s, &v, &err), NC_OK);
  return v;
}

#define BYTE(b) (3 + (b))

/* Pushes ids one by one, checking each release against want[i] (a NULL
 * entry: do not check), then the flush against want[n]. */
static void expect_stream(const nc_vocab *v, const int32_t *ids, size_t n,
                          const char *const *want) {
  nc_detok *d = nc_detok_create(v, true);
  assert_non_null(d);
  for (size_t i = 0; i <= n; i++) {
    const char *t;
    size_t l;
    if (i < n)
      nc_detok_push(d, ids[i], &t, &l);
    else
      nc_detok_flush(d, &t, &l);
    if (want[i]) {
      if (l != strlen(want[i]) || memcmp(t, want[i], l))
        fprintf(stderr, "step %zu: got '%.*s' want '%s'\n", i, (int)l, t,
                want[i]);
      assert_int_equal(l, strlen(want[i]));
      assert_memory_equal(t, want[i], l);
    }
  }
  nc_detok_free(d);
}

static void test_three_byte_char(void **state) {
  (void)state;
  nc_vocab *v = make_bytes_vocab(NULL, 0);
  int32_t ids[] = {BYTE(0xE6), BYTE(0x97), BYTE(0xA5)};
  expect_stream(v, ids, 3, (const char *[]){"", "", "\xe6\x97\xa5", ""});
  nc_vocab_free(v);
}

/* The same on the real byte-level BPE vocab: each byte's GPT-2 char. */
static void test_three_byte_char_smollm(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  int32_t ids[3];
  const unsigned char bytes[] = {0xE6, 0x97, 0xA5};
  for (int i = 0; i < 3; i++) {
    ids[i] = v->gpt2_sid[bytes[i]];
    assert_true(ids[i] >= 0 && ids[i] < nc_vocab_n_tokens(v));
  }
  expect_stream(v, ids, 3, (const char *[]){"", "", "日", ""});
  nc_vocab_free(v);
}

/* Every split of 🦙 (F0 9F A6 99) into consecutive tokens. */
static void test_every_split_of_emoji(void **state) {
  (void)state;
  static const char *const extra[] = {"\xf0\x9f",     "\x9f\xa6",
                                      "\xa6\x99",     "\xf0\x9f\xa6",
                                      "\x9f\xa6\x99", "\xf0\x9f\xa6\x99"};
  nc_vocab *v = make_bytes_vocab(extra, 6);
  const char *emoji = "\xf0\x9f\xa6\x99";
  for (unsigned cuts = 0; cuts < 8; cuts++) { /* cut after byte 1, 2, 3 */
    int32_t ids[4];
    size_t n = 0, start = 0;
    for (size_t end = 1; end <= 4; end++) {
      if (end < 4 && !(cuts & (1u << (end - 1)))) continue;
      ids[n++] = end - start == 1
                     ? BYTE((unsigned char)emoji[start])
                     : nc_vocab_find(v, emoji + start, end - start);
      assert_true(ids[n - 1] >= 0);
      start = end;
    }
    const char *want[5];
    for (size_t i = 0; i < n; i++)
      want[i] = i + 1 < n ? "" : emoji;
    want[n] = "";
    expect_stream(v, ids, n, want);
  }
  nc_vocab_free(v);
}

static void test_invalid_sequences(void **state) {
  (void)state;
  nc_vocab *v = make_bytes_vocab(NULL, 0);
  /* a truncated sequence interrupted by ASCII: one U+FFFD, then the ASCII */
  expect_stream(v, (int32_t[]){BYTE(0xE6), BYTE(0x97), BYTE('A')}, 3,
                (const char *[]){"", "", FFFD "A", ""});
  /* stray continuation byte and bytes that never start a sequence: at once */
  expect_stream(v, (int32_t[]){BYTE(0x80), BYTE(0xFF), BYTE(0xC0), BYTE(0xF5)},
                4, (const char *[]){FFFD, FFFD, FFFD, FFFD, ""});
  /* overlongs: C0 80 and E0 80 80 */
  expect_stream(v, (int32_t[]){BYTE(0xC0), BYTE(0x80)}, 2,
                (const char *[]){FFFD, FFFD, ""});
  expect_stream(v, (int32_t[]){BYTE(0xE0), BYTE(0x80), BYTE(0x80)}, 3,
                (const char *[]){"", FFFD FFFD, FFFD, ""});
  /* a surrogate (ED A0 80) and above U+10FFFF (F4 90 80 80) */
  expect_stream(v, (int32_t[]){BYTE(0xED), BYTE(0xA0), BYTE(0x80)}, 3,
                (const char *[]){"", FFFD FFFD, FFFD, ""});
  expect_stream(v, (int32_t[]){BYTE(0xF4), BYTE(0x90), BYTE(0x80), BYTE(0x80)},
                4, (const char *[]){"", FFFD FFFD, FFFD, FFFD, ""});
  /* the largest valid forms pass */
  expect_stream(v, (int32_t[]){BYTE(0xF4), BYTE(0x8F), BYTE(0xBF), BYTE(0xBF)},
                4, (const char *[]){"", "", "", "\xf4\x8f\xbf\xbf", ""});
  /* flush: a dangling prefix becomes one U+FFFD */
  expect_stream(v, (int32_t[]){BYTE('x'), BYTE(0xF0), BYTE(0x9F)}, 3,
                (const char *[]){"x", "", "", FFFD});
  /* ids out of range release nothing and change nothing */
  expect_stream(v, (int32_t[]){BYTE(0xE6), -5, 100000, BYTE(0x97), BYTE(0xA5)},
                5, (const char *[]){"", "", "", "", "\xe6\x97\xa5", ""});
  nc_vocab_free(v);
}

/* The whole-buffer policy matches Python's bytes.decode("utf-8",
 * "replace") on these (the expected strings were produced by it). */
static void test_sanitize_matches_python(void **state) {
  (void)state;
  static const struct {
    const char *in;
    size_t n;
    const char *want;
  } cases[] = {
      {"\xe6\x97"
       "a",
       3, FFFD "a"},
      {"\xed\xa0\x80", 3, FFFD FFFD FFFD},
      {"\xf0\x9f\x98x", 4, FFFD "x"},
      {"\xc0\x80", 2, FFFD FFFD},
      {"\xe0\x80\x80", 3, FFFD FFFD FFFD},
      {"\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD},
      {"\xff\xfe", 2, FFFD FFFD},
      {"a\xf0\x9f\xa6\x99"
       "b",
       6,
       "a\xf0\x9f\xa6\x99"
       "b"},
      {"\xe6\x97\xe6\x97\xa5", 5, FFFD "\xe6\x97\xa5"},
      {"\xf1\x80\x80", 3, FFFD},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = 0;
    char *out = nc_utf8_sanitize(cases[i].in, cases[i].n, &len);
    assert_non_null(out);
    assert_string_equal(out, cases[i].want);
    assert_int_equal(len, strlen(cases[i].want));
    free(out);
  }
}

static void test_special_tokens(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  int32_t ids[] = {1, 26843, 2};
  nc_detok *d = nc_detok_create(v, true);
  const char *t;
  size_t l;
  nc_detok_push(d, ids[0], &t, &l);
  assert_int_equal(l, 0); /* <|im_start|> is control: skipped */
  nc_detok_push(d, ids[1], &t, &l);
  assert_int_equal(l, 2);
  assert_memory_equal(t, "Hi", 2);
  nc_detok_free(d);
  d = nc_detok_create(v, false);
  nc_detok_push(d, ids[2], &t, &l);
  assert_int_equal(l, 10);
  assert_memory_equal(t, "<|im_end|>", 10);
  nc_detok_free(d);
  nc_vocab_free(v);
}

/* xorshift64: deterministic test randomness */
static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Property: for random id sequences (biased to byte-ish and special
 * tokens), the stream equals sanitize(whole decode without clean-up), and
 * each release extends what was released before. */
static void property(const nc_vocab *v, uint64_t seed, int rounds) {
  int32_t n_tokens = nc_vocab_n_tokens(v);
  int32_t *pool = malloc(512 * sizeof *pool);
  size_t n_pool = 0;
  for (int b = 0; b < 256; b++) {
    if (v->gpt2_sid[b] >= 0 && v->gpt2_sid[b] < n_tokens)
      pool[n_pool++] = v->gpt2_sid[b];
    if (v->byte_token[b] >= 0) pool[n_pool++] = v->byte_token[b];
  }
  int32_t ids[64];
  for (int r = 0; r < rounds; r++) {
    size_t n = (size_t)(next_rand(&seed) % 64);
    for (size_t i = 0; i < n; i++) {
      uint64_t x = next_rand(&seed);
      if (x % 3 == 0 && n_pool)
        ids[i] = pool[(x >> 8) % n_pool];
      else if (x % 7 == 1)
        ids[i] =
            (int32_t)((x >> 8) % (uint64_t)(n_tokens < 300 ? n_tokens : 300));
      else
        ids[i] = (int32_t)((x >> 8) % (uint64_t)n_tokens);
    }
    for (int skip = 0; skip < 2; skip++) {
      char *whole = NULL;
      size_t whole_len = 0;
      nc_error err = {0};
      assert_int_equal(
          nc_detokenize_ex(v, ids, n, skip, false, &whole, &whole_len, &err),
          NC_OK);
      size_t want_len;
      char *want = nc_utf8_sanitize(whole, whole_len, &want_len);
      char *got = malloc(want_len + 1);
      size_t got_len = 0;
      nc_detok *d = nc_detok_create(v, skip);
      for (size_t i = 0; i <= n; i++) {
        const char *t;
        size_t l;
        if (i < n)
          nc_detok_push(d, ids[i], &t, &l);
        else
          nc_detok_flush(d, &t, &l);
        assert_true(got_len + l <= want_len);
        memcpy(got + got_len, t, l);
        got_len += l;
        assert_memory_equal(got, want, got_len); /* never revised */
        assert_true(nc_utf8_valid(got, got_len));
      }
      assert_int_equal(got_len, want_len);
      nc_detok_free(d);
      free(got);
      free(want);
      free(whole);
    }
  }
  free(pool);
}

static void test_property_smollm(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_smollm_path(), false, NULL);
  property(v, 0x9E3779B97F4A7C15ull, 2000);
  nc_vocab_free(v);
}

static void test_property_gemma(void **state) {
  (void)state;
  nc_vocab *v = tt_need_vocab(tt_gemma_path(), true, NULL);
  property(v, 0xD1B54A32D192ED03ull, 1000);
  nc_vocab_free(v);
}

static void test_property_bytes(void **state) {
  (void)state;
  nc_vocab *v = make_bytes_vocab(NULL, 0);
  property(v, 12345, 3000);
  nc_vocab_free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_three_byte_char),
      cmocka_unit_test(test_three_byte_char_smollm),
      cmocka_unit_test(test_every_split_of_emoji),
      cmocka_unit_test(test_invalid_sequences),
      cmocka_unit_test(test_sanitize_matches_python),
      cmocka_unit_test(test_special_tokens),
      cmocka_unit_test(test_property_bytes),
      cmocka_unit_test(test_property_smollm),
      cmocka_unit_test(test_property_gemma),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
