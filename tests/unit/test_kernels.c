/* kernels: every vec_dot of the reference table against llama.cpp's generic
 * C kernel (bit for bit, goldens), against dequantize-then-double-dot, the
 * multi-row entry points against the single-row ones (batch invariance),
 * and every other table (SIMD) against ref. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_require.h"

#include "../reference/ref_f16_order.h"

#include "kernels/kernels.h"
#include "kernels/ref.h"
#include "kernels/sampler_simd.h"
#include "kernels/tables.h"
#include "nucleus.h"
#include "quant_golden.h"

enum { N_DOT = 512 };

static const nc_type k_weight_types[] = {
    NC_TYPE_F32,     NC_TYPE_F16,     NC_TYPE_BF16,   NC_TYPE_Q4_0,
    NC_TYPE_Q4_1,    NC_TYPE_Q5_0,    NC_TYPE_Q5_1,   NC_TYPE_Q8_0,
    NC_TYPE_Q2_K,    NC_TYPE_Q3_K,    NC_TYPE_Q4_K,   NC_TYPE_Q5_K,
    NC_TYPE_Q6_K,    NC_TYPE_IQ4_NL,  NC_TYPE_IQ4_XS, NC_TYPE_MXFP4,
    NC_TYPE_TQ1_0,   NC_TYPE_TQ2_0,   NC_TYPE_NVFP4,  NC_TYPE_Q1_0,
    NC_TYPE_Q2_0,    NC_TYPE_IQ2_XXS, NC_TYPE_IQ2_XS, NC_TYPE_IQ2_S,
    NC_TYPE_IQ3_XXS, NC_TYPE_IQ3_S,   NC_TYPE_IQ1_S,  NC_TYPE_IQ1_M,
};
#define N_WEIGHT_TYPES (sizeof k_weight_types / sizeof k_weight_types[0])

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* A small deterministic generator (xorshift64*), so tests need no state. */
static uint64_t next_u64(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

static float next_normalish(uint64_t *s) {
  /* sum of 4 uniforms in [-1, 1): roughly normal, variance 4/3 */
  float v = 0;
  for (int i = 0; i < 4; i++)
    v += (float)((next_u64(s) >> 40) * 0x1p-24) * 2.0f - 1.0f;
  return v;
}

/* Byte offsets of the fp16 scale fields per block (kept finite). */
static void half_fields(nc_type t, int off[2], int *n) {
  *n = 1;
  off[1] = 2;
  switch (t) {
  case NC_TYPE_Q4_1:
  case NC_TYPE_Q5_1:
  case NC_TYPE_Q4_K:
  case NC_TYPE_Q5_K: off[0] = 0, *n = 2; return;
  case NC_TYPE_Q2_K: off[0] = 80, off[1] = 82, *n = 2; return;
  case NC_TYPE_Q3_K: off[0] = 108; return;
  case NC_TYPE_Q6_K: off[0] = 208; return;
  case NC_TYPE_TQ1_0: off[0] = 52; return;
  case NC_TYPE_TQ2_0: off[0] = 64; return;
  case NC_TYPE_MXFP4:
  case NC_TYPE_NVFP4:
  case NC_TYPE_IQ1_M: *n = 0; return; /* E8M0, UE4M3, spread: random_row */
  default: off[0] = 0; return;
  }
}

/* A random valid weight row of n elements of type t (caller frees). */
static void *random_row(nc_type t, int64_t n, uint64_t *s) {
  size_t size = nc_row_size(t, n);
  uint8_t *row = malloc(size);
  if (t == NC_TYPE_F32 || t == NC_TYPE_F16 || t == NC_TYPE_BF16) {
    float *f = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
      f[i] = next_normalish(s);
    nc_quantize_row(t, f, row, n);
    free(f);
    return row;
  }
  for (size_t i = 0; i < size; i++)
    row[i] = (uint8_t)next_u64(s);
  const nc_type_traits *tr = nc_type_traits_of(t);
  int off[2], nf;
  half_fields(t, off, &nf);
  for (size_t b = 0; b < size / tr->type_size; b++) {
    for (int k = 0; k < nf; k++) {
      nc_fp16 h = nc_fp32_to_fp16(next_normalish(s) * 0.02f);
      memcpy(row + b * tr->type_size + off[k], &h, 2);
    }
    if (t == NC_TYPE_MXFP4) /* scale 2^-9 .. 2^-5 */
      row[b * tr->type_size] = (uint8_t)(119 + next_u64(s) % 5);
    if (t == NC_TYPE_NVFP4) /* UE4M3 exponents 1..3: 2^-7 .. 2^-4 */
      for (int k = 0; k < 4; k++)
        row[b * tr->type_size + (size_t)k] = (uint8_t)(8 + next_u64(s) % 24);
    if (t == NC_TYPE_IQ1_M) { /* the half in the scale words' top nibbles */
      const nc_fp16 h = nc_fp32_to_fp16(next_normalish(s) * 0.02f);
      uint8_t *sc = row + b * tr->type_size + offsetof(block_iq1_m, scales);
      for (int k = 0; k < 4; k++)
        sc[2 * k + 1] =
            (uint8_t)((sc[2 * k + 1] & 0x0f) | (((h >> 4 * k) & 15) << 4));
    }
  }
  return row;
}

static float *random_act(int64_t n, uint64_t *s) {
  float *a = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++)
    a[i] = 0.1f + 2 * cosf((float)i) + 0.5f * next_normalish(s);
  return a;
}

/* The types whose ref dot is in llama.cpp's x86 order (ref_nl.c). */
static bool iq_lattice(nc_type t) {
  return t == NC_TYPE_IQ2_XXS || t == NC_TYPE_IQ2_XS || t == NC_TYPE_IQ2_S ||
         t == NC_TYPE_IQ3_XXS || t == NC_TYPE_IQ3_S || t == NC_TYPE_IQ1_S ||
         t == NC_TYPE_IQ1_M;
}

static bool new_type(nc_type t) {
  return t == NC_TYPE_IQ4_NL || t == NC_TYPE_IQ4_XS || t == NC_TYPE_MXFP4 ||
         t == NC_TYPE_TQ1_0 || t == NC_TYPE_TQ2_0 || t == NC_TYPE_NVFP4 ||
         t == NC_TYPE_Q1_0 || t == NC_TYPE_Q2_0 || iq_lattice(t);
}

static const char *golden_name(nc_type t) {
  return nc_type_name(t);
}

/* ------------------------------------------------------------- goldens */

static double deq_dot(nc_type t, const void *w, nc_type at, const void *a,
                      int64_t n, double *abs_sum);

/* ref's vec_dot on llama.cpp's own quantized activation against llama.cpp's
 * generic C kernel and its SIMD kernel (goldens). The K-quant kernels agree
 * bit for bit. The 32-block kernels agree up to FMA contraction: the golden
 * build (clang, -march=native, -ffp-contract=on) fuses sumf += x * y into
 * an fma, which gcc -std=c17 does not; compiled that way ref.c reproduces
 * every golden bit for bit (checked by hand), so the bound here is a few
 * float roundings: 1e-6 of sum |w_i a_i|. The SIMD kernels reorder float
 * additions: 1e-5 of sum |w_i a_i|. */
static void test_ref_matches_llama_cpp(void **state) {
  (void)state;
  const nc_kernels *k = nc_kernels_ref();
  for (size_t i = 0; i < N_WEIGHT_TYPES; i++) {
    nc_type t = k_weight_types[i];
    nc_type at = nc_type_traits_of(t)->vec_dot_type;
    char name[64];
    size_t wlen, alen;
    snprintf(name, sizeof name, "dot_%s.bin", golden_name(t));
    unsigned char *w = golden_read(name, &wlen);
    if (at == NC_TYPE_F32)
      snprintf(name, sizeof name, "act.f32");
    else
      snprintf(name, sizeof name, "act_%s.bin", nc_type_name(at));
    unsigned char *a = golden_read(name, &alen);
    if (!w || !a) fail_msg("golden for %s missing", nc_type_name(t));
    size_t row = nc_row_size(t, N_DOT);
    assert_int_equal(wlen, row + 2 * sizeof(float));
    assert_true(alen >= nc_row_size(at, N_DOT));
    float want[2];
    memcpy(want, w + row, sizeof want);
    float got = k->vec_dot[t](N_DOT, w, a);
    double abs_sum;
    deq_dot(t, w, at, a, N_DOT, &abs_sum);
    /* the newer types' ref follows llama.cpp's x86 order (ref_nl.c): its
     * SIMD dot (both values of their goldens), bit for bit */
    bool kquant = nc_type_traits_of(t)->block_size == QK_K || new_type(t);
    if (kquant && bits(got) != bits(want[0]))
      fail_msg("%s: ref %.9g, llama.cpp generic %.9g", nc_type_name(t), got,
               want[0]);
    if (fabs((double)got - want[0]) > 1e-6 * abs_sum)
      fail_msg("%s: ref %.9g, llama.cpp generic %.9g", nc_type_name(t), got,
               want[0]);
    if (fabs((double)got - want[1]) > 1e-5 * abs_sum)
      fail_msg("%s: ref %.9g, llama.cpp SIMD %.9g", nc_type_name(t), got,
               want[1]);
    free(w);
    free(a);
  }
}

/* ---------------------------------------- against dequantize-then-dot */

/* The dot of the dequantized rows, in double. */
static double deq_dot(nc_type t, const void *w, nc_type at, const void *a,
                      int64_t n, double *abs_sum) {
  float *fw = malloc((size_t)n * sizeof(float));
  float *fa = malloc((size_t)n * sizeof(float));
  nc_dequantize_row(t, w, fw, n);
  nc_dequantize_row(at, a, fa, n);
  double s = 0, as = 0;
  for (int64_t i = 0; i < n; i++) {
    s += (double)fw[i] * fa[i];
    as += fabs((double)fw[i] * fa[i]);
  }
  free(fw);
  free(fa);
  *abs_sum = as;
  return s;
}

/* Every vec_dot of a table equals the exact dot of the dequantized inputs
 * up to float rounding of the scales and the accumulation: a relative
 * bound of 1e-5 of sum |w_i a_i| (Q8_1's s field is a rounded half, so the
 * Q4_1/Q5_1 min term carries 2^-11 of sum |m| |sum a|: allow 1e-3 there).
 * Also test-quantize-fns' dot product error |dot_q - dot_f32| / n < 0.02
 * (0.04 for Q2_K) against the unquantized activation. */
static void check_table_vs_dequant(const nc_kernels *k) {
  uint64_t s = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < N_WEIGHT_TYPES; i++) {
    nc_type t = k_weight_types[i];
    nc_type at = nc_type_traits_of(t)->vec_dot_type;
    for (int rep = 0; rep < 4; rep++) {
      int64_t n = N_DOT * (rep + 1);
      void *w = random_row(t, n, &s);
      float *act = random_act(n, &s);
      void *qa = malloc(nc_row_size(at, n));
      void *qr = malloc(nc_row_size(at, n));
      assert_non_null(k->quantize_act[at]);
      k->quantize_act[at](act, qa, n);
      nc_quantize_row(at, act, qr, n); /* standard layout, same values */
      float got = k->vec_dot[t](n, w, qa);
      double abs_sum;
      double want = deq_dot(t, w, at, qr, n, &abs_sum);
      double tol = (at == NC_TYPE_Q8_1 ? 1e-3 : 1e-5) * abs_sum + 1e-6;
      if (fabs(got - want) > tol)
        fail_msg("%s %s n=%lld: vec_dot %.9g, dequantized dot %.9g", k->name,
                 nc_type_name(t), (long long)n, got, want);
      /* against the f32 activation */
      float *fw = malloc((size_t)n * sizeof(float));
      nc_dequantize_row(t, w, fw, n);
      double exact = 0;
      for (int64_t j = 0; j < n; j++)
        exact += (double)fw[j] * act[j];
      double lim = t == NC_TYPE_Q2_K ? 0.04 : 0.02;
      /* random-byte weights are larger than trained ones: scale the
       * threshold by the rms weight */
      double rms = 0;
      for (int64_t j = 0; j < n; j++)
        rms += (double)fw[j] * fw[j];
      rms = sqrt(rms / n);
      if (fabs(got - exact) / n > lim * (rms > 1 ? rms : 1))
        fail_msg("%s %s: dot error %g", k->name, nc_type_name(t),
                 fabs(got - exact) / n);
      free(fw);
      free(w);
      free(act);
      free(qa);
      free(qr);
    }
  }
}

static void test_ref_vs_dequant(void **state) {
  (void)state;
  check_table_vs_dequant(nc_kernels_ref());
}

/* --------------------------------------------------- batch invariance */

/* vec_dot_rows gives exactly vec_dot's value for every row, whatever the
 * number of rows and their strides. */
static void check_rows(const nc_kernels *k) {
  uint64_t s = 12345;
  enum { ROWS = 21 }; /* 16 + 4 + 1: every multi-row path */
  for (size_t i = 0; i < N_WEIGHT_TYPES; i++) {
    nc_type t = k_weight_types[i];
    nc_type at = nc_type_traits_of(t)->vec_dot_type;
    const int64_t n = 768 + (t == NC_TYPE_F32 ? 13 : 0) * 0;
    int64_t nn = n % nc_type_traits_of(t)->block_size ? 1024 : n;
    void *w = random_row(t, nn, &s);
    size_t arow = nc_row_size(at, nn);
    size_t stride = arow + 64; /* padded, to catch stride mix-ups */
    uint8_t *qa = calloc(ROWS, stride);
    for (int r = 0; r < ROWS; r++) {
      float *act = random_act(nn, &s);
      k->quantize_act[at](act, qa + (size_t)r * stride, nn);
      free(act);
    }
    float single[ROWS];
    for (int r = 0; r < ROWS; r++)
      single[r] = k->vec_dot[t](nn, w, qa + (size_t)r * stride);
    assert_non_null(k->vec_dot_rows[t]);
    for (int nrows = 1; nrows <= ROWS; nrows++) {
      for (int start = 0; start + nrows <= ROWS; start += 2) {
        float out[2 * ROWS];
        for (int r = 0; r < 2 * ROWS; r++)
          out[r] = -1234.5f;
        k->vec_dot_rows[t](nn, w, qa + (size_t)start * stride, stride, nrows,
                           out, 2);
        for (int r = 0; r < nrows; r++)
          if (bits(out[2 * r]) != bits(single[start + r]))
            fail_msg("%s %s: rows(%d) row %d = %.9g, single %.9g", k->name,
                     nc_type_name(t), nrows, r, out[2 * r], single[start + r]);
        for (int r = 0; r < nrows; r++)
          assert_true(out[2 * r + 1] == -1234.5f); /* stride respected */
      }
    }
    free(w);
    free(qa);
  }
}

static void test_ref_rows(void **state) {
  (void)state;
  check_rows(nc_kernels_ref());
}

/* Where a table shares an activation layout across threads (kernels.h's
 * nc_pack_act_fn), gemm_packed over a layout packed in two parts (as two
 * threads would) gives gemm's bits (in want). */
static void check_gemm_packed(const nc_kernels *k, nc_type t, int64_t n,
                              const uint8_t *w, size_t wstride, int64_t nw,
                              const uint8_t *qa, size_t astride, int64_t na,
                              const float *want, size_t ostride) {
  const nc_type at = nc_type_traits_of(t)->vec_dot_type;
  if (!k->gemm_packed[t]) return;
  assert_non_null(k->pack_act[at]);
  const size_t bytes = k->pack_bytes(at, n, na);
  if (!bytes) return;
  uint8_t *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
  const int64_t unit = k->pack_rows;
  const int64_t split = (na + unit - 1) / unit / 2 * unit;
  k->pack_act[at](n, qa, astride, na, split, na, packed);
  if (split > 0) k->pack_act[at](n, qa, astride, na, 0, split, packed);
  float *got = malloc(sizeof(float) * (size_t)na * ostride);
  for (size_t j = 0; j < (size_t)na * ostride; j++)
    got[j] = -1234.5f;
  k->gemm_packed[t](n, w, wstride, nw, qa, astride, packed, na, got, ostride);
  for (int64_t a = 0; a < na; a++)
    for (size_t r = 0; r < ostride; r++)
      if (bits(got[(size_t)a * ostride + r]) !=
          bits(want[(size_t)a * ostride + r]))
        fail_msg("%s %s gemm_packed n=%lld nw=%lld na=%lld: [%lld][%zu] = "
                 "%.9g, gemm %.9g",
                 k->name, nc_type_name(t), (long long)n, (long long)nw,
                 (long long)na, (long long)a, r, got[(size_t)a * ostride + r],
                 want[(size_t)a * ostride + r]);
  free(got);
  free(packed);
}

/* The lattice types' gemm_few (vec_dot's order, ref_iq.c's) and IQ4_NL's and
 * IQ4_XS's (ref_nl.c's vec_dot orders) at any count of rows, past the
 * register chunk of activation rows and the panels too: ref's vec_dot bit
 * for bit, nothing written past the rows. */
static void check_gemm_few_many(const nc_kernels *k, nc_type t, int64_t n,
                                const uint8_t *w, size_t wstride, int64_t nw,
                                const uint8_t *qa, size_t astride, int64_t na,
                                float *out, size_t ostride) {
  for (size_t j = 0; j < (size_t)na * ostride; j++)
    out[j] = -1234.5f;
  k->gemm_few[t](n, w, wstride, nw, qa, astride, na, out, ostride);
  for (int64_t a = 0; a < na; a++) {
    for (int64_t r = 0; r < nw; r++) {
      const float want = nc_kernels_ref()->vec_dot[t](
          n, w + (size_t)r * wstride, qa + (size_t)a * astride);
      const float got = out[(size_t)a * ostride + (size_t)r];
      if (bits(got) != bits(want))
        fail_msg("%s %s gemm_few n=%lld nw=%lld na=%lld: [%lld][%lld] = "
                 "%.9g, ref vec_dot %.9g",
                 k->name, nc_type_name(t), (long long)n, (long long)nw,
                 (long long)na, (long long)a, (long long)r, got, want);
    }
    for (size_t r = (size_t)nw; r < ostride; r++)
      if (out[(size_t)a * ostride + r] != -1234.5f)
        fail_msg("%s %s gemm_few wrote past its rows", k->name,
                 nc_type_name(t));
  }
}

/* A table's gemm gives, for every (weight row, activation row), the bits
 * of its vec_dot on that pair: any panel height (register tiles of 4 and 2
 * rows and a single-row tail), any number of activation rows (full and
 * partial tiles of 8, the decode rows' groups of 8 up to 24),
 * odd block counts, padded strides. */
static void check_gemm(const nc_kernels *k) {
  static const int64_t nws[] = {1, 2, 3, 4, 5, 7, 12, 16, 33, 66};
  static const int64_t nas[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,
                                10, 11, 12, 13, 16, 17, 20, 23, 24,
                                25, 32, 33, 48, 64, 65, 70};
  uint64_t s = 2024;
  for (size_t i = 0; i < N_WEIGHT_TYPES; i++) {
    const nc_type t = k_weight_types[i];
    if (!k->gemm[t]) continue;
    const nc_type at = nc_type_traits_of(t)->vec_dot_type;
    const int64_t bs = nc_type_traits_of(t)->block_size;
    for (int rep = 0; rep < 4; rep++) {
      const int64_t n = rep == 0   ? bs
                        : rep == 1 ? 576
                        : rep == 2 ? 1536 + 32 * 5
                                   : 256 * 5;
      if (n % bs) continue;
      const size_t wrow = nc_row_size(t, n), wstride = wrow + 20;
      const size_t arow = nc_row_size(at, n), astride = arow + 36;
      const int64_t NW = 66, NA = 70; /* 70: past a panel of 64 rows */
      uint8_t *w = calloc(NW, wstride), *qa = calloc(NA, astride);
      for (int64_t r = 0; r < NW; r++) {
        void *row = random_row(t, n, &s);
        memcpy(w + (size_t)r * wstride, row, wrow);
        free(row);
      }
      for (int64_t a = 0; a < NA; a++) {
        float *act = random_act(n, &s);
        k->quantize_act[at](act, qa + (size_t)a * astride, n);
        free(act);
      }
      float *out = malloc(sizeof(float) * NW * NA * 2);
      for (size_t x = 0; x < sizeof nws / sizeof nws[0]; x++)
        for (size_t y = 0; y < sizeof nas / sizeof nas[0]; y++) {
          const int64_t nw = nws[x], na = nas[y];
          const size_t ostride = (size_t)nw + 3;
          for (int64_t j = 0; j < NW * NA * 2; j++)
            out[j] = -1234.5f;
          k->gemm[t](n, w, wstride, nw, qa, astride, na, out, ostride);
          for (int64_t a = 0; a < na; a++) {
            for (int64_t r = 0; r < nw; r++) {
              const float want = k->vec_dot[t](n, w + (size_t)r * wstride,
                                               qa + (size_t)a * astride);
              const float got = out[(size_t)a * ostride + (size_t)r];
              if (bits(got) != bits(want))
                fail_msg("%s %s gemm n=%lld nw=%lld na=%lld: [%lld][%lld] = "
                         "%.9g, vec_dot %.9g",
                         k->name, nc_type_name(t), (long long)n, (long long)nw,
                         (long long)na, (long long)a, (long long)r, got, want);
            }
            for (size_t r = (size_t)nw; r < ostride; r++)
              if (out[(size_t)a * ostride + r] != -1234.5f)
                fail_msg("%s %s gemm wrote past its rows", k->name,
                         nc_type_name(t));
          }
          check_gemm_packed(k, t, n, w, wstride, nw, qa, astride, na, out,
                            ostride);
          if ((iq_lattice(t) || t == NC_TYPE_IQ4_NL || t == NC_TYPE_IQ4_XS) &&
              k->gemm_few[t])
            check_gemm_few_many(k, t, n, w, wstride, nw, qa, astride, na, out,
                                ostride);
        }
      free(out);
      free(w);
      free(qa);
    }
  }
}

/* quantize_act entries are the activation quantizers of quant.h. */
static void test_ref_quantize_act(void **state) {
  (void)state;
  const nc_kernels *k = nc_kernels_ref();
  static const nc_type acts[] = {NC_TYPE_F32,  NC_TYPE_F16,  NC_TYPE_BF16,
                                 NC_TYPE_Q8_0, NC_TYPE_Q8_1, NC_TYPE_Q8_K};
  uint64_t s = 99;
  float *x = random_act(512, &s);
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    size_t sz = nc_row_size(acts[i], 512);
    uint8_t *a = calloc(1, sz), *b = calloc(1, sz);
    k->quantize_act[acts[i]](x, a, 512);
    nc_quantize_row(acts[i], x, b, 512);
    assert_memory_equal(a, b, sz);
    free(a);
    free(b);
  }
  free(x);
  assert_string_equal(k->name, "ref");
  /* no entries for types we cannot dot */
  assert_null(k->vec_dot[NC_TYPE_Q8_K]);
  assert_null(k->vec_dot[24 /* I8 */]);
}

/* ------------------------------------------------------- other tables */

/* A SIMD table agrees with ref: its quantizers bit for bit (unless it
 * declares a private activation layout), its dots
 * within a float reordering bound of 1e-6 of sum |w_i a_i| (the integer
 * block sums are exact; only the order of the float scaling and additions
 * differs); it passes the same dequantize and batch-invariance checks. */
static void check_table_vs_ref(const nc_kernels *k) {
  const nc_kernels *ref = nc_kernels_ref();
  uint64_t s = 777;
  for (size_t i = 0; i < N_WEIGHT_TYPES; i++) {
    nc_type t = k_weight_types[i];
    nc_type at = nc_type_traits_of(t)->vec_dot_type;
    assert_non_null(k->vec_dot[t]);
    assert_non_null(k->vec_dot_rows[t]);
    assert_non_null(k->quantize_act[at]);
    for (int rep = 0; rep < 9; rep++) {
      /* up to 2304: full and partial groups of 16 blocks, odd block counts */
      int64_t n = rep == 8 ? 576 + 32 * 17 : 256 * (rep + 1);
      if (n % nc_type_traits_of(t)->block_size) continue;
      void *w = random_row(t, n, &s);
      float *act = random_act(n, &s);
      size_t asz = nc_row_size(at, n);
      uint8_t *qa = malloc(asz), *qb = malloc(asz);
      ref->quantize_act[at](act, qa, n);
      k->quantize_act[at](act, qb, n);
      if (!k->private_act[at]) assert_memory_equal(qa, qb, asz);
      float r = ref->vec_dot[t](n, w, qa), b = k->vec_dot[t](n, w, qb);
      double abs_sum;
      deq_dot(t, w, at, qa, n, &abs_sum);
      if (fabs((double)r - b) > 1e-6 * abs_sum)
        fail_msg("%s %s n=%lld: %.9g vs ref %.9g", k->name, nc_type_name(t),
                 (long long)n, b, r);
      free(w);
      free(act);
      free(qa);
      free(qb);
    }
  }
  check_table_vs_dequant(k);
  check_rows(k);
  check_gemm(k);
}

/* Kernels that reproduce llama.cpp's x86 float order give its SIMD golden
 * value bit for bit. */
static void check_llama_order(const nc_kernels *k, nc_type t) {
  nc_type at = nc_type_traits_of(t)->vec_dot_type;
  char name[64];
  size_t wlen, alen;
  snprintf(name, sizeof name, "dot_%s.bin", nc_type_name(t));
  unsigned char *w = golden_read(name, &wlen);
  snprintf(name, sizeof name, "act_%s.bin", nc_type_name(at));
  unsigned char *a = golden_read(name, &alen);
  if (!w || !a) fail_msg("golden for %s missing", nc_type_name(t));
  float want[2];
  memcpy(want, w + nc_row_size(t, N_DOT), sizeof want);
  float got = k->vec_dot[t](N_DOT, w, a);
  if (bits(got) != bits(want[1]))
    fail_msg("%s %s: %.9g, llama.cpp x86 %.9g", k->name, nc_type_name(t), got,
             want[1]);
  free(w);
  free(a);
}

/* Float rows of any length (the SIMD loops' scalar tails), and n = 0. */
static void check_odd_lengths(const nc_kernels *k) {
  static const nc_type ft[] = {NC_TYPE_F32, NC_TYPE_F16, NC_TYPE_BF16};
  static const int64_t ns[] = {1, 7, 31, 33, 100, 257};
  uint64_t s = 4242;
  for (size_t i = 0; i < sizeof ft / sizeof ft[0]; i++)
    for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
      void *w = random_row(ft[i], ns[j], &s);
      void *a = random_row(ft[i], ns[j], &s);
      float r = nc_kernels_ref()->vec_dot[ft[i]](ns[j], w, a);
      float b = k->vec_dot[ft[i]](ns[j], w, a);
      double abs_sum;
      deq_dot(ft[i], w, ft[i], a, ns[j], &abs_sum);
      if (fabs((double)r - b) > 1e-6 * abs_sum)
        fail_msg("%s %s n=%lld: %.9g vs ref %.9g", k->name, nc_type_name(ft[i]),
                 (long long)ns[j], b, r);
      free(w);
      free(a);
    }
  /* n = 0: an empty sum, for every type */
  uint8_t zero[512] = {0};
  for (size_t i = 0; i < N_WEIGHT_TYPES; i++)
    assert_true(k->vec_dot[k_weight_types[i]](0, zero, zero) == 0.0f);
}

/* The table's standard-layout quantizers equal nc_quantize_row byte for
 * byte, on the golden activation (with exact .5 ties) and on zeros, NaN,
 * infinities and huge values. */
static void check_quantizers(const nc_kernels *k) {
  enum { N = 1024 };
  size_t len;
  float *gold = (float *)golden_read("act.f32", &len);
  if (!gold || len != N * sizeof(float)) fail_msg("golden act.f32 missing");
  float *odd = calloc(N, sizeof(float));
  for (int i = 256; i < N; i++)
    odd[i] = (float)(i % 7) - 3.0f;
  odd[300] = NAN;
  odd[301] = -NAN;
  odd[600] = INFINITY;
  odd[700] = -INFINITY;
  odd[800] = 3e38f;
  odd[801] = -1e-40f; /* subnormal */
  const float *inputs[] = {gold, odd};
  static const nc_type acts[] = {NC_TYPE_F32,  NC_TYPE_F16,  NC_TYPE_BF16,
                                 NC_TYPE_Q8_0, NC_TYPE_Q8_1, NC_TYPE_Q8_K};
  for (size_t t = 0; t < sizeof acts / sizeof acts[0]; t++) {
    if (k->private_act[acts[t]]) continue;
    size_t sz = nc_row_size(acts[t], N);
    for (int in = 0; in < 2; in++) {
      uint8_t *a = calloc(1, sz), *b = calloc(1, sz);
      k->quantize_act[acts[t]](inputs[in], a, N);
      nc_quantize_row(acts[t], inputs[in], b, N);
      for (size_t i = 0; i < sz; i++)
        if (a[i] != b[i])
          fail_msg("%s quantize %s input %d: byte %zu is %d, ref %d", k->name,
                   nc_type_name(acts[t]), in, i, a[i], b[i]);
      free(a);
      free(b);
    }
  }
  free(gold);
  free(odd);
}

/* The newer types' SIMD dots are ref_nl.c's bit for bit: vec_dot and
 * vec_dot_rows of every table, gemm_few where a table has one (the avx512
 * and amx tables' IQ4_XS follows the tiled order, nc_ref_dot_iq4_xs_tiled,
 * their IQ4_NL the llamafile order, nc_ref_dot_iq4_nl_tinyblas, and
 * gemm_few has vec_dot's order); random rows of 1..71 blocks, odd counts
 * and the scalar tails of the paired 32-blocks included. */
/* The lattice types' tiled order (ref_iq.c), the avx512 table's. */
static nc_vec_dot_fn iq_tiled(nc_type t) {
  switch (t) {
  case NC_TYPE_IQ2_XXS: return nc_ref_dot_iq2_xxs_tiled;
  case NC_TYPE_IQ2_XS: return nc_ref_dot_iq2_xs_tiled;
  case NC_TYPE_IQ2_S: return nc_ref_dot_iq2_s_tiled;
  case NC_TYPE_IQ3_XXS: return nc_ref_dot_iq3_xxs_tiled;
  case NC_TYPE_IQ3_S: return nc_ref_dot_iq3_s_tiled;
  case NC_TYPE_IQ1_S: return nc_ref_dot_iq1_s_tiled;
  default: return nc_ref_dot_iq1_m_tiled;
  }
}

static void check_new_types_bits(const nc_kernels *k) {
  static const nc_type types[] = {
      NC_TYPE_IQ4_NL,  NC_TYPE_IQ4_XS,  NC_TYPE_MXFP4,  NC_TYPE_TQ1_0,
      NC_TYPE_TQ2_0,   NC_TYPE_IQ2_XXS, NC_TYPE_IQ2_XS, NC_TYPE_IQ2_S,
      NC_TYPE_IQ3_XXS, NC_TYPE_IQ3_S,   NC_TYPE_IQ1_S,  NC_TYPE_IQ1_M};
  const nc_kernels *ref = nc_kernels_ref();
  uint64_t s = 31337;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    const nc_type t = types[i];
    const nc_type at = nc_type_traits_of(t)->vec_dot_type;
    const int64_t bs = nc_type_traits_of(t)->block_size;
    /* the avx512 and amx tables: llama.cpp's batch orders */
    const bool batch =
        strcmp(k->name, "avx512") == 0 || strcmp(k->name, "amx") == 0;
    const nc_vec_dot_fn want_dot =
        batch && t == NC_TYPE_IQ4_XS   ? nc_ref_dot_iq4_xs_tiled
        : batch && t == NC_TYPE_IQ4_NL ? nc_ref_dot_iq4_nl_tinyblas
        : batch && iq_lattice(t)       ? iq_tiled(t)
                                       : ref->vec_dot[t];
    static const int blocks[] = {1, 2, 3, 7, 8, 9, 17, 18, 71};
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
      const int64_t n = bs * blocks[b];
      enum { NA = 7, NW = 7 }; /* gemm_few: up to 7 rows of each */
      const size_t wrow = nc_row_size(t, n);
      uint8_t *w = malloc(wrow * NW);
      for (int r = 0; r < NW; r++) {
        void *row = random_row(t, n, &s);
        memcpy(w + (size_t)r * wrow, row, wrow);
        free(row);
      }
      const size_t arow = nc_row_size(at, n);
      uint8_t *qa = malloc(arow * NA);
      for (int a = 0; a < NA; a++) {
        float *act = random_act(n, &s);
        k->quantize_act[at](act, qa + (size_t)a * arow, n);
        free(act);
      }
      float rows[NA], want_few[NA * NW];
      k->vec_dot_rows[t](n, w, qa, arow, NA, rows, 1);
      for (int a = 0; a < NA; a++) {
        const uint8_t *ap = qa + (size_t)a * arow;
        const float want = want_dot(n, w, ap), got = k->vec_dot[t](n, w, ap);
        if (bits(got) != bits(want) || bits(rows[a]) != bits(want))
          fail_msg("%s %s n=%lld: vec_dot %.9g, rows %.9g, ref %.9g", k->name,
                   nc_type_name(t), (long long)n, got, rows[a], want);
        for (int r = 0; r < NW; r++)
          want_few[a * NW + r] = ref->vec_dot[t](n, w + (size_t)r * wrow, ap);
      }
      /* gemm_few: every decode row count 1..7 against 1..7 weight rows
       * (odd counts: a pair of rows with a single one left) */
      for (int na = 1; k->gemm_few[t] && na <= NA; na++)
        for (int nw = 1; nw <= NW; nw += nw < 3 ? 1 : 4) {
          float few[NA * (NW + 1)];
          for (int j = 0; j < NA * (NW + 1); j++)
            few[j] = -1234.5f;
          k->gemm_few[t](n, w, wrow, nw, qa, arow, na, few, NW + 1);
          for (int a = 0; a < na; a++) {
            for (int r = 0; r < nw; r++)
              if (bits(few[a * (NW + 1) + r]) != bits(want_few[a * NW + r]))
                fail_msg("%s %s n=%lld nw=%d na=%d: gemm_few [%d][%d] %.9g, "
                         "ref vec_dot %.9g",
                         k->name, nc_type_name(t), (long long)n, nw, na, a, r,
                         few[a * (NW + 1) + r], want_few[a * NW + r]);
            for (int r = nw; r < NW + 1; r++)
              if (few[a * (NW + 1) + r] != -1234.5f)
                fail_msg("%s %s gemm_few wrote past its rows", k->name,
                         nc_type_name(t));
          }
        }
      free(w);
      free(qa);
    }
  }
}

/* nucleus_type_count/name (nucleus info's list): the types with a ref dot,
 * in id order; the activation-only Q8_1 / Q8_K are not in it, issue 40's
 * types are; NULL past the end. */
static void test_type_list(void **state) {
  (void)state;
  const size_t n = nucleus_type_count();
  size_t j = 0;
  for (uint32_t t = 0; t < NC_TYPE_COUNT; t++)
    if (nc_kernels_ref()->vec_dot[t]) {
      assert_true(j < n);
      assert_string_equal(nucleus_type_name(j), nc_type_name(t));
      j++;
    }
  assert_int_equal(j, n);
  assert_null(nucleus_type_name(n));
  enum { NW = 15 };
  bool seen[NW] = {false};
  static const char *const want[NW] = {
      "IQ4_NL",  "IQ4_XS", "MXFP4", "TQ1_0",   "TQ2_0", "NVFP4", "Q1_0", "Q2_0",
      "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"};
  for (size_t i = 0; i < n; i++) {
    const char *name = nucleus_type_name(i);
    assert_true(strcmp(name, "Q8_K") && strcmp(name, "Q8_1"));
    for (int k = 0; k < NW; k++)
      seen[k] |= strcmp(name, want[k]) == 0;
  }
  for (int k = 0; k < NW; k++)
    assert_true(seen[k]);
}

/* A table's F16 entries bit for bit against the plain-C models of their
 * orders (ref_f16_order.c): the avx2 table nc_avx2_dot_f16's everywhere;
 * the avx512 and amx tables llama.cpp's AVX-512 tinyBLAS<16> (vec_dot,
 * vec_dot_rows, gemm) and ggml_vec_dot_f16 (gemm_few). test_gemm_f16 cuts
 * the matmuls' tiles and panels further. */
static void check_f16_orders(const nc_kernels *k) {
  enum { NW = 5, NA = 7 };
  static const int64_t ns[] = {16, 100, 384, 1541};
  const bool avx2 = strcmp(k->name, "avx2") == 0;
  const nc_kernels *ref = nc_kernels_ref();
  uint64_t s = 1616;
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    const int64_t n = ns[i];
    const size_t row = nc_row_size(NC_TYPE_F16, n);
    uint8_t *w = malloc(row * NW), *a = malloc(row * NA);
    for (int r = 0; r < NW; r++) {
      void *x = random_row(NC_TYPE_F16, n, &s);
      memcpy(w + (size_t)r * row, x, row);
      free(x);
    }
    for (int j = 0; j < NA; j++) {
      float *act = random_act(n, &s);
      ref->quantize_act[NC_TYPE_F16](act, a + (size_t)j * row, n);
      free(act);
    }
    float rows[NA], mm[NA * NW], few[NA * NW];
    k->gemm[NC_TYPE_F16](n, w, row, NW, a, row, NA, mm, NW);
    if (k->gemm_few[NC_TYPE_F16])
      k->gemm_few[NC_TYPE_F16](n, w, row, NW, a, row, NA, few, NW);
    for (int r = 0; r < NW; r++) {
      const nc_fp16 *wr = (const nc_fp16 *)(w + (size_t)r * row);
      k->vec_dot_rows[NC_TYPE_F16](n, wr, a, row, NA, rows, 1);
      for (int j = 0; j < NA; j++) {
        const nc_fp16 *aj = (const nc_fp16 *)(a + (size_t)j * row);
        const float want = avx2 ? nc_ref_dot_f16_lanes(n, wr, aj)
                                : nc_ref_dot_f16_tinyblas(n, wr, aj);
        const float got = k->vec_dot[NC_TYPE_F16](n, wr, aj);
        if (bits(got) != bits(want) || bits(rows[j]) != bits(want) ||
            bits(mm[j * NW + r]) != bits(want))
          fail_msg("%s F16 n=%lld: vec_dot %.9g, rows %.9g, gemm %.9g, "
                   "model %.9g",
                   k->name, (long long)n, got, rows[j], mm[j * NW + r], want);
        if (k->gemm_few[NC_TYPE_F16] &&
            bits(few[j * NW + r]) != bits(nc_ref_dot_f16_vec16(n, wr, aj)))
          fail_msg("%s F16 n=%lld: gemm_few %.9g, model %.9g", k->name,
                   (long long)n, few[j * NW + r],
                   nc_ref_dot_f16_vec16(n, wr, aj));
      }
    }
    free(w);
    free(a);
  }
}

/* MXFP4's matmul at 1..3 activation rows against ref's vec_dot on rows
 * whose E8M0 bytes take every value 0..200 (random_row's are 2^-9 ..
 * 2^-5): d_a x 2^(e - 128) from subnormal (e = 0, 1, ...) to 2^72, where
 * a kernel that forms it otherwise than as the multiply (the one-row
 * matmul's vscalefps) would show a different rounding. */
static void check_mxfp4_exponents(const nc_kernels *k) {
  if (!k->gemm[NC_TYPE_MXFP4]) return;
  static const int64_t ns[] = {64, 576, 1056, 1120};
  enum { NW = 9, NA = 3 };
  const nc_kernels *ref = nc_kernels_ref();
  uint64_t s = 4242;
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    const int64_t n = ns[i], nb = n / 32;
    const size_t wrow = nc_row_size(NC_TYPE_MXFP4, n);
    const size_t arow = nc_row_size(NC_TYPE_Q8_0, n);
    uint8_t *w = malloc(wrow * NW), *qa = malloc(arow * NA);
    for (int r = 0; r < NW; r++) {
      uint8_t *row = random_row(NC_TYPE_MXFP4, n, &s);
      for (int64_t b = 0; b < nb; b++)
        row[(size_t)b * sizeof(block_mxfp4)] = (uint8_t)((r * nb + b) % 201);
      memcpy(w + (size_t)r * wrow, row, wrow);
      free(row);
    }
    for (int a = 0; a < NA; a++) {
      float *act = random_act(n, &s);
      k->quantize_act[NC_TYPE_Q8_0](act, qa + (size_t)a * arow, n);
      free(act);
    }
    for (int na = 1; na <= NA; na++) {
      float out[NA * NW];
      k->gemm[NC_TYPE_MXFP4](n, w, wrow, NW, qa, arow, na, out, NW);
      for (int a = 0; a < na; a++)
        for (int r = 0; r < NW; r++) {
          const float want = ref->vec_dot[NC_TYPE_MXFP4](
              n, w + (size_t)r * wrow, qa + (size_t)a * arow);
          if (bits(out[a * NW + r]) != bits(want))
            fail_msg("%s MXFP4 E8M0 0..200 n=%lld na=%d [%d][%d]: gemm "
                     "%.9g, ref vec_dot %.9g",
                     k->name, (long long)n, na, a, r, out[a * NW + r], want);
        }
    }
    free(w);
    free(qa);
  }
}

static void test_table(const char *name) {
  const nc_kernels *k = nc_kernels_by_name(name);
  if (!k) NC_SKIP_BECAUSE("this CPU lacks the %s kernel table", name);
  assert_string_equal(k->name, name);
  check_table_vs_ref(k);
  check_odd_lengths(k);
  check_quantizers(k);
  check_new_types_bits(k);
  check_f16_orders(k);
  check_mxfp4_exponents(k);
}

static void test_ref_odd_lengths(void **state) {
  (void)state;
  check_odd_lengths(nc_kernels_ref());
}

static void test_avx2(void **state) {
  (void)state;
  test_table("avx2");
  const nc_kernels *k = nc_kernels_by_name("avx2");
  check_llama_order(k, NC_TYPE_Q4_0);
  check_llama_order(k, NC_TYPE_Q4_1);
  check_llama_order(k, NC_TYPE_Q5_0);
  check_llama_order(k, NC_TYPE_Q5_1);
  check_llama_order(k, NC_TYPE_Q8_0);
  check_llama_order(k, NC_TYPE_IQ4_NL);
  check_llama_order(k, NC_TYPE_IQ4_XS);
  check_llama_order(k, NC_TYPE_MXFP4);
  check_llama_order(k, NC_TYPE_TQ1_0);
  check_llama_order(k, NC_TYPE_TQ2_0);
  check_llama_order(k, NC_TYPE_NVFP4);
  check_llama_order(k, NC_TYPE_Q1_0);
  check_llama_order(k, NC_TYPE_Q2_0);
  for (size_t i = 0; i < N_WEIGHT_TYPES; i++)
    if (iq_lattice(k_weight_types[i])) check_llama_order(k, k_weight_types[i]);
}

static void test_avx512(void **state) {
  (void)state;
  test_table("avx512");
  const nc_kernels *k = nc_kernels_by_name("avx512");
  check_llama_order(k, NC_TYPE_Q4_0);
  check_llama_order(k, NC_TYPE_Q4_1);
  check_llama_order(k, NC_TYPE_Q5_0);
  check_llama_order(k, NC_TYPE_Q5_1);
  check_llama_order(k, NC_TYPE_Q8_0);
  /* IQ4_NL, IQ4_XS: the batch orders, see check_new_types_bits */
  check_llama_order(k, NC_TYPE_MXFP4);
  check_llama_order(k, NC_TYPE_TQ1_0);
  check_llama_order(k, NC_TYPE_TQ2_0);
  check_llama_order(k, NC_TYPE_NVFP4);
  check_llama_order(k, NC_TYPE_Q1_0);
  check_llama_order(k, NC_TYPE_Q2_0);
}

/* The amx table's block-order dots are the plain-C reference (ref_block.c)
 * itself, so check_gemm holds its matmuls (tile unit and VNNI gemv) to that
 * reference bit for bit; here the reference is held to ref (a float
 * reordering bound, in check_table_vs_ref) and, bit for bit, to a second
 * spelling of llama.cpp's AMX epilogue. */
static float blk_expected(nc_type t, int64_t n, const uint8_t *w,
                          const uint8_t *a) {
  /* block bytes: Q4_0 {d, 16 nibble bytes}, Q4_1 {d, m, 16}, Q8_0 {d, 32};
   * activations Q8_0 {d, 32 quants}, Q8_1 {d, s, 32} */
  const bool q41 = t == NC_TYPE_Q4_1, q80 = t == NC_TYPE_Q8_0;
  const size_t wb = q41 ? 20 : q80 ? 34 : 18, wq = q41 ? 4 : 2;
  const size_t ab = q41 ? 36 : 34, aq = q41 ? 4 : 2;
  float acc = 0.0f;
  for (int64_t i = 0; i < n / 32; i++) {
    const uint8_t *wi = w + (size_t)i * wb, *ai = a + (size_t)i * ab;
    nc_fp16 hw[2], ha[2];
    memcpy(hw, wi, sizeof hw);
    memcpy(ha, ai, sizeof ha);
    long isum = 0;
    for (int j = 0; j < 32; j++) {
      long q;
      if (q80)
        q = (int8_t)wi[wq + j];
      else
        q = (j < 16 ? wi[wq + j] & 15 : wi[wq + j - 16] >> 4) - (q41 ? 0 : 8);
      isum += q * (int8_t)ai[aq + j];
    }
    const volatile float dd = nc_fp16_to_fp32(hw[0]) * nc_fp16_to_fp32(ha[0]);
    acc = fmaf((float)isum, dd, acc);
    if (q41) acc = fmaf(nc_fp16_to_fp32(hw[1]), nc_fp16_to_fp32(ha[1]), acc);
  }
  return acc;
}

static void test_amx(void **state) {
  (void)state;
  test_table("amx");
  const nc_kernels *k = nc_kernels_by_name("amx");
  static const nc_type types[] = {NC_TYPE_Q4_0, NC_TYPE_Q4_1, NC_TYPE_Q8_0};
  uint64_t s = 31337;
  for (size_t i = 0; i < 3; i++) {
    const nc_type t = types[i], at = nc_type_traits_of(t)->vec_dot_type;
    for (int rep = 0; rep < 20; rep++) {
      const int64_t n = 32 * (1 + rep * 7);
      uint8_t *w = random_row(t, n, &s);
      float *act = random_act(n, &s);
      uint8_t *qa = malloc(nc_row_size(at, n));
      k->quantize_act[at](act, qa, n);
      const float got = k->vec_dot[t](n, w, qa),
                  want = blk_expected(t, n, w, qa);
      if (bits(got) != bits(want))
        fail_msg("amx %s n=%lld: %.9g, block order %.9g", nc_type_name(t),
                 (long long)n, got, want);
      free(w);
      free(act);
      free(qa);
    }
  }
}

/* ref_block.c's K-quant dots (llama.cpp's AMX order, per superblock) add
 * the same products as ref.c's (its --no-repack order): they agree to float
 * rounding, on rows whose scales and mins take every value. */
static void test_ref_block_kquants(void **state) {
  (void)state;
  static const struct {
    nc_type t;
    nc_vec_dot_fn blk, plain;
  } cases[] = {{NC_TYPE_Q4_K, nc_ref_dot_blk_q4_k, nc_ref_dot_q4_k},
               {NC_TYPE_Q5_K, nc_ref_dot_blk_q5_k, nc_ref_dot_q5_k},
               {NC_TYPE_Q6_K, nc_ref_dot_blk_q6_k, nc_ref_dot_q6_k}};
  uint64_t s = 4242;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int rep = 0; rep < 20; rep++) {
      const int64_t n = 256 * (1 + rep % 6);
      uint8_t *w = random_row(cases[c].t, n, &s);
      float *act = random_act(n, &s);
      uint8_t *qa = malloc(nc_row_size(NC_TYPE_Q8_K, n));
      nc_quantize_row(NC_TYPE_Q8_K, act, qa, n);
      /* the magnitude of the terms, for the tolerance */
      float *wf = malloc(sizeof(float) * (size_t)n);
      nc_dequantize_row(cases[c].t, w, wf, n);
      double mag = 0;
      for (int64_t j = 0; j < n; j++)
        mag += fabs((double)wf[j] * act[j]);
      const double got = cases[c].blk(n, w, qa),
                   want = cases[c].plain(n, w, qa);
      if (fabs(got - want) > 1e-5 * mag + 1e-6)
        fail_msg("%s n=%lld: block order %.9g, ref %.9g (terms %.3g)",
                 nc_type_name(cases[c].t), (long long)n, got, want, mag);
      free(w);
      free(act);
      free(qa);
      free(wf);
    }
}

static void test_dispatch(void **state) {
  (void)state;
  unsetenv("NUCLEUS_KERNELS");
  const nc_kernels *best = nc_kernels_best(false);
  const nc_kernels *plain = nc_kernels_best(true);
  assert_non_null(best);
  assert_non_null(plain);
  print_message("best kernel table: %s (no repack: %s)\n", best->name,
                plain->name);
  assert_ptr_equal(nc_kernels_by_name(best->name), best);
  assert_ptr_equal(nc_kernels_by_name("ref"), nc_kernels_ref());
  assert_null(nc_kernels_by_name("sse9"));
  assert_null(nc_kernels_by_name(NULL));
  /* $NUCLEUS_KERNELS overrides the choice when the table is available */
  setenv("NUCLEUS_KERNELS", "ref", 1);
  assert_ptr_equal(nc_kernels_best(false), nc_kernels_ref());
  assert_ptr_equal(nc_kernels_best(true), nc_kernels_ref());
  setenv("NUCLEUS_KERNELS", "no-such-table", 1);
  assert_ptr_equal(nc_kernels_best(false), best);
  unsetenv("NUCLEUS_KERNELS");
  /* The default is the fastest table: amx where the CPU has it, as
   * llama.cpp's default repacks for AMX. no_repack keeps to the tables in
   * the order of llama.cpp --no-repack: avx512, then avx2. */
  const char *expect_plain = nc_kernels_by_name("avx512") ? "avx512"
                             : nc_kernels_by_name("avx2") ? "avx2"
                                                          : "ref";
  assert_string_equal(plain->name, expect_plain);
  assert_string_equal(best->name,
                      nc_kernels_by_name("amx") ? "amx" : expect_plain);
}

/* One backend: a table brings its attention, row ops and sampler level,
 * and the reference table is plain C throughout. */
static void test_backend_table(void **state) {
  (void)state;
  const nc_kernels *ref = nc_kernels_ref();
  assert_ptr_equal(ref->attn(), nc_attn_kernels_plain());
  assert_ptr_equal(ref->ops(), nc_ops_plain());
  assert_int_equal(ref->sampler_simd, NC_SIMD_PORTABLE);
  static const char *const names[] = {"avx2", "avx512", "amx"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const nc_kernels *k = nc_kernels_by_name(names[i]);
    if (!k) continue;
    assert_non_null(k->attn());
    assert_non_null(k->ops());
    assert_true(k->sampler_simd > NC_SIMD_PORTABLE);
    print_message("%s: attention %s, row ops %s\n", k->name, k->attn()->name,
                  k->ops()->name);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ref_matches_llama_cpp),
      cmocka_unit_test(test_ref_vs_dequant),
      cmocka_unit_test(test_ref_rows),
      cmocka_unit_test(test_ref_quantize_act),
      cmocka_unit_test(test_ref_odd_lengths),
      cmocka_unit_test(test_dispatch),
      cmocka_unit_test(test_type_list),
      cmocka_unit_test(test_backend_table),
      cmocka_unit_test(test_avx2),
      cmocka_unit_test(test_avx512),
      cmocka_unit_test(test_amx),
      cmocka_unit_test(test_ref_block_kquants),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
