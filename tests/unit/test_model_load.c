/* model loading: tiny synthetic GGUF files (no real model needed) that are
 * refused with a message naming what is wrong: unknown arch, a missing key,
 * bad head counts, a missing tensor, a wrong shape, a wrong type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gguf_writer.h"
#include "nucleus.h"

typedef struct spec {
  const char *arch;
  bool no_eps;
  uint32_t n_head_kv;
  const char *skip_tensor; /* leave this tensor out */
  const char *bad_shape;   /* give this tensor shape {32, 32} */
  const char *f16_tensor;  /* store this tensor as F16 */
} spec;

typedef struct tdef {
  const char *name;
  uint64_t ne0, ne1;
} tdef;

/* n_embd 32, 2 heads of 16, 1 KV head, n_ff 64, vocab 8, one layer. */
static const tdef TENSORS[] = {
    {"token_embd.weight", 32, 8},         {"output_norm.weight", 32, 1},
    {"blk.0.attn_norm.weight", 32, 1},    {"blk.0.attn_q.weight", 32, 32},
    {"blk.0.attn_k.weight", 32, 16},      {"blk.0.attn_v.weight", 32, 16},
    {"blk.0.attn_output.weight", 32, 32}, {"blk.0.ffn_norm.weight", 32, 1},
    {"blk.0.ffn_gate.weight", 32, 64},    {"blk.0.ffn_up.weight", 32, 64},
    {"blk.0.ffn_down.weight", 64, 32},
};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])

static void write_model(const char *path, const spec *s) {
  const char *arch = s->arch ? s->arch : "llama";
  gw b = {0};
  size_t n_t = 0;
  for (size_t i = 0; i < N_TENSORS; i++)
    if (!s->skip_tensor || strcmp(s->skip_tensor, TENSORS[i].name)) n_t++;
  gw_header(&b, 3, n_t, s->no_eps ? 8 : 9);
  char key[128];
  gw_kv_str(&b, "general.architecture", arch);
  snprintf(key, sizeof key, "%s.context_length", arch);
  gw_kv_u32(&b, key, 64);
  snprintf(key, sizeof key, "%s.embedding_length", arch);
  gw_kv_u32(&b, key, 32);
  snprintf(key, sizeof key, "%s.block_count", arch);
  gw_kv_u32(&b, key, 1);
  snprintf(key, sizeof key, "%s.feed_forward_length", arch);
  gw_kv_u32(&b, key, 64);
  snprintf(key, sizeof key, "%s.attention.head_count", arch);
  gw_kv_u32(&b, key, 2);
  snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
  gw_kv_u32(&b, key, s->n_head_kv ? s->n_head_kv : 1);
  snprintf(key, sizeof key, "%s.vocab_size", arch);
  gw_kv_u32(&b, key, 8);
  if (!s->no_eps) {
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    gw_key(&b, key, 6 /* FLOAT32 */);
    gw_f32(&b, 1e-5f);
  }
  uint64_t off = 0;
  size_t sizes[N_TENSORS];
  for (size_t i = 0; i < N_TENSORS; i++) {
    const tdef *t = &TENSORS[i];
    if (s->skip_tensor && !strcmp(s->skip_tensor, t->name)) continue;
    uint64_t ne[2] = {t->ne0, t->ne1};
    if (s->bad_shape && !strcmp(s->bad_shape, t->name)) ne[1] = 32;
    const bool f16 = s->f16_tensor && !strcmp(s->f16_tensor, t->name);
    gw_tensor(&b, t->name, ne[1] == 1 ? 1 : 2, ne, f16 ? 1 : 0, off);
    sizes[i] = (size_t)(ne[0] * ne[1] * (f16 ? 2 : 4));
    off += (sizes[i] + 31) / 32 * 32;
  }
  gw_align(&b, 32);
  for (size_t i = 0; i < N_TENSORS; i++) {
    if (s->skip_tensor && !strcmp(s->skip_tensor, TENSORS[i].name)) continue;
    gw_fill(&b, sizes[i], 0);
    gw_align(&b, 32);
  }
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b.p, 1, b.len, f), b.len);
  fclose(f);
  gw_free(&b);
}

static void expect_refused(const spec *s, nucleus_status code,
                           const char *needle) {
  char path[] = "/tmp/nc_model_load_XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  write_model(path, s);
  nucleus_model *m = (nucleus_model *)1;
  nucleus_error err;
  memset(&err, 0, sizeof err);
  const nucleus_status rc = nucleus_model_load(path, NULL, &m, &err);
  unlink(path);
  if (rc != code || !strstr(err.message, needle))
    fail_msg("expected %s with '%s', got %s: %s", nucleus_status_name(code),
             needle, nucleus_status_name(rc), err.message);
  assert_null(m);
}

static void test_unknown_arch(void **state) {
  (void)state;
  spec s = {.arch = "foo"};
  expect_refused(&s, NUCLEUS_ERR_UNSUPPORTED,
                 "architecture 'foo' is not supported");
}

static void test_missing_key(void **state) {
  (void)state;
  spec s = {.no_eps = true};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "missing metadata key "
                 "'llama.attention.layer_norm_rms_epsilon'");
}

static void test_bad_head_counts(void **state) {
  (void)state;
  spec s = {.n_head_kv = 3};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "2 attention heads are not a multiple of 3 KV heads");
}

static void test_missing_tensor(void **state) {
  (void)state;
  spec s = {.skip_tensor = "blk.0.ffn_down.weight"};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "missing tensor 'blk.0.ffn_down.weight' (expected shape "
                 "{64, 32})");
}

static void test_wrong_shape(void **state) {
  (void)state;
  spec s = {.bad_shape = "blk.0.attn_k.weight"};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'blk.0.attn_k.weight' has shape {32, 32, 1, 1}, "
                 "expected {32, 16}");
}

static void test_wrong_type(void **state) {
  (void)state;
  spec s = {.f16_tensor = "blk.0.ffn_norm.weight"};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'blk.0.ffn_norm.weight' has type F16, expected F32");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unknown_arch),
      cmocka_unit_test(test_missing_key),
      cmocka_unit_test(test_bad_head_counts),
      cmocka_unit_test(test_missing_tensor),
      cmocka_unit_test(test_wrong_shape),
      cmocka_unit_test(test_wrong_type),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
