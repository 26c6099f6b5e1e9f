/* quantize_file: the weight quantizers (src/quantize/quantize_rows.c) on
 * random rows, and nc_quantize_file on the default model: the recipe's
 * types where llama.cpp's rules put them, the metadata keys set, values
 * close to the input's. tests/e2e/test_quantize.py holds whole files to
 * llama.cpp's quantizer byte for byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gguf/gguf.h"
#include "quantize/imatrix_load.h"
#include "quantize/quantize.h"
#include "quantize/quantize_rows.h"
#include "test_require.h"
#include "tokenizer_test_util.h"

static uint64_t next_u64(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static float next_normalish(uint64_t *s) {
  float v = 0;
  for (int i = 0; i < 4; i++)
    v += (float)((next_u64(s) >> 40) * 0x1p-24) * 2.0f - 1.0f;
  return v;
}

/* Quantize then dequantize: the rms error relative to the rms value stays
 * below each type's bound, about 1.3x what these rows (small values with
 * one 80x larger every 97) measured: Q4_0 0.085, Q4_1 0.102, Q5_0/Q5_1
 * 0.059, Q8_0 0.0126, Q4_K 0.056, Q5_K 0.048, Q6_K 0.034, IQ4_NL 0.070,
 * IQ4_XS 0.099, MXFP4 0.157; a table
 * entry or a shift off by one is far above. An all-zero row comes back
 * all zero. */
static void test_rows_roundtrip(void **state) {
  (void)state;
  static const struct {
    nc_type t;
    double bound;
  } cases[] = {
      {NC_TYPE_Q4_0, 0.11},    {NC_TYPE_Q4_1, 0.13},   {NC_TYPE_Q5_0, 0.075},
      {NC_TYPE_Q5_1, 0.075},   {NC_TYPE_Q8_0, 0.016},  {NC_TYPE_Q4_K, 0.075},
      {NC_TYPE_Q5_K, 0.065},   {NC_TYPE_Q6_K, 0.045},  {NC_TYPE_F16, 1e-3},
      {NC_TYPE_IQ4_NL, 0.095}, {NC_TYPE_IQ4_XS, 0.13}, {NC_TYPE_MXFP4, 0.21},
  };
  enum { N = 1024, ROWS = 3 };
  uint64_t s = 77;
  int bad = 0;
  float *x = malloc(sizeof(float) * N * ROWS), *y = malloc(sizeof(float) * N);
  uint8_t *q = malloc(nc_row_size(NC_TYPE_F32, N) * ROWS);
  assert_non_null(x);
  assert_non_null(y);
  assert_non_null(q);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const nc_type t = cases[c].t;
    assert_true(nc_quantize_weights_supported(t));
    for (int i = 0; i < N * ROWS; i++)
      x[i] = next_normalish(&s) * (i % 97 == 0 ? 4.0f : 0.05f);
    for (int i = 0; i < N; i++)
      x[2 * N + i] = 0.0f;
    nc_quantize_weights(t, x, q, ROWS, N, NULL, NULL);
    const size_t row = nc_row_size(t, N);
    for (int r = 0; r < ROWS; r++) {
      nc_dequantize_row(t, q + (size_t)r * row, y, N);
      double err = 0, ref = 0;
      for (int i = 0; i < N; i++) {
        const double d = (double)y[i] - x[r * N + i];
        err += d * d;
        ref += (double)x[r * N + i] * x[r * N + i];
      }
      if (r == 2) {
        assert_true(err == 0.0);
        continue;
      }
      const double rel = sqrt(err / ref);
      print_message("%s row %d: relative rms error %.4f (bound %.4f)\n",
                    nc_type_name(t), r, rel, cases[c].bound);
      if (rel > cases[c].bound) bad++;
    }
  }
  assert_int_equal(bad, 0);
  assert_false(nc_quantize_weights_supported(NC_TYPE_TQ1_0));
  free(x);
  free(y);
  free(q);
}

static const gguf_tensor_info *tensor(const gguf_file *f, const char *name) {
  const gguf_tensor_info *t = gguf_find_tensor(f, name);
  if (!t) fail_msg("tensor %s missing", name);
  return t;
}

/* The default model (576-wide matrices, 30 layers) as Q4_K_M: ffn_down is
 * Q4_K, Q6_K in llama.cpp's "more bits" layers (0..2, 5, 8, ..., 26..29);
 * attn_v Q6_K there too, falling back to Q8_0 (576 columns are not whole
 * 256-blocks); the other 576-column matrices Q5_0 (Q4_K's fallback); the
 * tied token_embd Q8_0, kept; the norms kept. The sanitizer build writes
 * Q8_0 instead (the K-quant fits take minutes there; the row test covers
 * them). */
static void test_file_recipe(void **state) {
  (void)state;
  const char *in = tt_smollm_path();
  if (!in) NC_MODEL_UNAVAILABLE(tt_model_hint(false));
  const bool q8 = NC_SANITIZED;
  char out[64];
  snprintf(out, sizeof out, "/tmp/nc_quantize_%d.gguf", (int)getpid());
  nc_error err = {0};
  assert_int_equal(
      nc_quantize_file(in, out, q8 ? "q8_0" : "Q4_K", 2, NULL, &err), NC_OK);
  gguf_file *fi = NULL, *fo = NULL;
  assert_int_equal(gguf_open(in, &fi, &err), NC_OK);
  assert_int_equal(gguf_open(out, &fo, &err), NC_OK);
  assert_int_equal(gguf_tensor_count(fo), gguf_tensor_count(fi));
  assert_int_equal(gguf_kv_count(fo), gguf_kv_count(fi));
  uint64_t ft = 0;
  assert_true(gguf_get_u64(fo, "general.file_type", &ft));
  assert_int_equal(ft, q8 ? 7 : 15);
  const gguf_str last = gguf_kv_key(fo, gguf_kv_count(fo) - 1);
  assert_true(last.len == 17 && !memcmp(last.ptr, "general.file_type", 17));
  gguf_str name;
  assert_true(gguf_get_str(fo, "general.name", &name));
  for (int l = 0; l < 30; l++) {
    char n[64];
    const bool more = l < 3 || l >= 26 || (l - 3) % 3 == 2;
    snprintf(n, sizeof n, "blk.%d.ffn_down.weight", l);
    assert_int_equal(tensor(fo, n)->type, q8     ? NC_TYPE_Q8_0
                                          : more ? NC_TYPE_Q6_K
                                                 : NC_TYPE_Q4_K);
    snprintf(n, sizeof n, "blk.%d.attn_v.weight", l);
    assert_int_equal(tensor(fo, n)->type,
                     q8 || more ? NC_TYPE_Q8_0 : NC_TYPE_Q5_0);
    snprintf(n, sizeof n, "blk.%d.attn_q.weight", l);
    assert_int_equal(tensor(fo, n)->type, q8 ? NC_TYPE_Q8_0 : NC_TYPE_Q5_0);
    snprintf(n, sizeof n, "blk.%d.attn_norm.weight", l);
    assert_int_equal(tensor(fo, n)->type, NC_TYPE_F32);
  }
  /* token_embd: kept (Q8_0 in, Q8_0 out), the same bytes */
  const gguf_tensor_info *ti = tensor(fi, "token_embd.weight");
  const gguf_tensor_info *to = tensor(fo, "token_embd.weight");
  assert_int_equal(to->type, NC_TYPE_Q8_0);
  assert_memory_equal(ti->data, to->data, (size_t)ti->nbytes);
  /* a requantized matrix: close to the input's values */
  ti = tensor(fi, "blk.4.ffn_down.weight");
  to = tensor(fo, "blk.4.ffn_down.weight");
  const int64_t n = ti->ne[0];
  float *a = malloc(sizeof(float) * (size_t)n);
  float *b = malloc(sizeof(float) * (size_t)n);
  double e = 0, r = 0;
  for (int64_t row = 0; row < ti->ne[1]; row += 37) {
    nc_dequantize_row(ti->type,
                      (const uint8_t *)ti->data +
                          (size_t)row * nc_row_size(ti->type, n),
                      a, n);
    nc_dequantize_row(to->type,
                      (const uint8_t *)to->data +
                          (size_t)row * nc_row_size(to->type, n),
                      b, n);
    for (int64_t i = 0; i < n; i++) {
      e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
      r += (double)a[i] * a[i];
    }
  }
  assert_true(sqrt(e / r) < (q8 ? 0.01 : 0.15));
  free(a);
  free(b);
  gguf_close(fi);
  gguf_close(fo);
  remove(out);
}

/* Refusals name the value and what is allowed; no output file is left. */
static void test_errors(void **state) {
  (void)state;
  nc_error err = {0};
  char out[64];
  snprintf(out, sizeof out, "/tmp/nc_quantize_err_%d.gguf", (int)getpid());
  assert_int_equal(nc_quantize_file("in.gguf", out, "Q7_K", 2, NULL, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "unknown quantization type 'Q7_K' "
                                      "(allowed: Q4_0, Q4_1, Q5_0"));
  assert_int_equal(nc_quantize_file("in.gguf", out, "Q4_0", 0, NULL, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "threads 0 is outside [1, 256]"));
  assert_int_equal(
      nc_quantize_file("/nonexistent/in.gguf", out, "Q4_0", 1, NULL, &err),
      NC_ERR_IO);
  assert_int_equal(access(out, F_OK), -1);
  const char *in = tt_smollm_path();
  if (!in) return;
  assert_int_equal(
      nc_quantize_file(in, "/nonexistent/dir/out.gguf", "Q8_0", 1, NULL, &err),
      NC_ERR_IO);
  assert_non_null(strstr(err.message, "/nonexistent/dir/out.gguf"));
}

static void load_seed(const char *name, nc_imatrix *m, nc_code want) {
  char full[1024];
  snprintf(full, sizeof full, "%s/fuzz/corpus/imatrix/%s", tt_root(), name);
  nc_error err = {0};
  const nc_code c = nc_imatrix_load(full, m, &err);
  if (c != want)
    fail_msg("%s: code %d, want %d (%s)", name, c, want, err.message);
  if (c) {
    assert_non_null(strstr(err.message, full));
    assert_int_equal(m->n_entries, 0);
  }
}

/* The importance-matrix seeds (scripts/gen_imatrix_seeds.py): the valid
 * ones load normalised as llama-quantize normalises them, the broken ones
 * are refused naming the file. */
static void test_imatrix_seeds(void **state) {
  (void)state;
  nc_imatrix m;
  load_seed("valid_legacy.dat", &m, NC_OK);
  assert_int_equal(m.n_entries, 2); /* a repeated name: the later wins */
  const nc_imatrix_entry *q = nc_imatrix_find(&m, "blk.0.attn_q.weight");
  assert_non_null(q);
  assert_int_equal(q->n, 4);
  for (int i = 0; i < 4; i++)
    assert_float_equal(q->values[i], 1.0f, 0.0f); /* sums / ncall 1 */
  const nc_imatrix_entry *d = nc_imatrix_find(&m, "blk.0.ffn_down.weight");
  assert_non_null(d); /* ncall 0: the sums as they are */
  assert_float_equal(d->values[1], 2.5f, 0.0f);
  assert_string_equal(m.dataset, "calib");
  assert_int_equal(m.chunks, 3);
  assert_null(nc_imatrix_find(&m, "blk.0.attn_k.weight"));
  nc_imatrix_free(&m);
  load_seed("valid_legacy_no_tail.dat", &m, NC_OK);
  assert_null(m.dataset);
  assert_float_equal(m.entries[0].values[0], 1.0f, 0.0f); /* 4 / 4 */
  nc_imatrix_free(&m);
  load_seed("valid.gguf", &m, NC_OK);
  q = nc_imatrix_find(&m, "blk.0.attn_q.weight");
  assert_non_null(q);
  assert_int_equal(q->n, 4);                      /* two experts of 2 */
  const float want[4] = {2.0f, 4.0f, 1.0f, 1.0f}; /* count 0: weight 1 */
  for (int i = 0; i < 4; i++)
    assert_float_equal(q->values[i], want[i], 0.0f);
  assert_string_equal(m.dataset, "calib.txt");
  assert_int_equal(m.chunks, 4);
  nc_imatrix_free(&m);
  const char *bad[] = {"bad_legacy_cut.dat",           "bad_legacy_nan.dat",
                       "bad_legacy_count.dat",         "bad_no_metadata.gguf",
                       "bad_sums_without_counts.gguf", "bad_uneven.gguf"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    load_seed(bad[i], &m, NC_ERR_FORMAT);
  nc_error err = {0};
  assert_int_equal(nc_imatrix_load("/nonexistent/imatrix.dat", &m, &err),
                   NC_ERR_IO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_roundtrip),
      cmocka_unit_test(test_file_recipe),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_imatrix_seeds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
