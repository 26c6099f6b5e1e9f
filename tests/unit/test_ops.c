/* ops and threadpool: each op against a double-precision reference and
 * ggml's rounding rules; the pool runs every share exactly once. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_require.h"

#include "base/threadpool.h"
#include "kernels/attn_kernel.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "model/model.h"

static void test_rmsnorm(void **state) {
  (void)state;
  enum { N = 576 };
  float x[N], w[N], y[N], y2[N];
  for (int i = 0; i < N; i++) {
    x[i] = 0.1f + 2.0f * cosf((float)i);
    w[i] = 0.5f + 0.001f * (float)i;
  }
  nc_rmsnorm(x, w, y, N, 1e-5f);
  double ss = 0;
  for (int i = 0; i < N; i++)
    ss += (double)x[i] * x[i];
  const double sc = 1.0 / sqrt(ss / N + 1e-5);
  for (int i = 0; i < N; i++)
    assert_true(fabs(y[i] - x[i] * sc * w[i]) <=
                1e-5 * fabs(x[i] * sc * w[i]) + 1e-7);
  /* In place gives the same bits; no weight is weight 1. */
  memcpy(y2, x, sizeof x);
  nc_rmsnorm(y2, w, y2, N, 1e-5f);
  assert_memory_equal(y, y2, sizeof y);
  nc_rmsnorm(x, NULL, y2, N, 1e-5f);
  double ss2 = 0;
  for (int i = 0; i < N; i++)
    ss2 += (double)y2[i] * y2[i];
  assert_true(fabs(ss2 / N - 1.0) < 1e-4);
}

/* nc_layernorm_rows (NC_LAYERNORM_ROWS rows' sums interleaved) gives
 * nc_layernorm_row's bits on every row: block and tail rows, with and
 * without weight and bias, in place, rows of values whose magnitudes span
 * many binades (double sums that round, where any other order of the
 * additions could give other bits); and nc_layernorm_row is a layer norm. */
static void test_layernorm_rows(void **state) {
  (void)state;
  static const int64_t ns[] = {1, 5, 384, 1001};
  static const int64_t counts[] = {1, 7, 8, 9, 19, 24};
  uint64_t s = 0x9E3779B97F4A7C15ULL;
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
      const int64_t n = ns[a], rows = counts[c], len = n * rows;
      float *x = malloc(sizeof(float) * (size_t)len),
            *y = malloc(sizeof(float) * (size_t)len),
            *want = malloc(sizeof(float) * (size_t)len),
            *w = malloc(sizeof(float) * (size_t)n),
            *b = malloc(sizeof(float) * (size_t)n);
      assert_true(x && y && want && w && b);
      for (int64_t i = 0; i < len; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const double u = (double)(s >> 11) * 0x1p-53; /* [0, 1) */
        /* magnitudes 2^-30 .. 2^10, both signs, a constant offset */
        x[i] = (float)((u < 0.5 ? -1.0 : 1.0) *
                           ldexp(1.0 + u, (int)(s % 41) - 30) +
                       0.25);
      }
      for (int64_t r = 1; n >= 5 && r < rows; r += 3) {
        /* +-2^55 at the ends: the in-order double sums round (their ulp is
         * 8), another order rounds elsewhere */
        x[r * n] = 0x1p55f;
        x[r * n + n - 1] = -0x1p55f;
      }
      for (int64_t i = 0; i < n; i++) {
        w[i] = 0.5f + 0.01f * (float)(i % 17);
        b[i] = -0.1f * (float)(i % 5);
      }
      for (int wb = 0; wb < 4; wb++) {
        const float *ww = wb & 1 ? w : NULL, *bb = wb & 2 ? b : NULL;
        for (int64_t r = 0; r < rows; r++)
          nc_layernorm_row(x + r * n, ww, bb, want + r * n, n, 1e-12f);
        nc_layernorm_rows(x, ww, bb, y, rows, n, 1e-12f);
        assert_memory_equal(y, want, sizeof(float) * (size_t)len);
        memcpy(y, x, sizeof(float) * (size_t)len); /* in place */
        nc_layernorm_rows(y, ww, bb, y, rows, n, 1e-12f);
        assert_memory_equal(y, want, sizeof(float) * (size_t)len);
      }
      if (n > 100) { /* without w and b: mean 0, variance 1 */
        nc_layernorm_rows(x, NULL, NULL, y, rows, n, 0.0f);
        for (int64_t r = 0; r < rows; r++) {
          if (r % 3 == 1) continue; /* (the rows of +-2^55) */
          double m = 0, v = 0;
          for (int64_t i = 0; i < n; i++)
            m += y[r * n + i];
          m /= (double)n;
          for (int64_t i = 0; i < n; i++)
            v += (y[r * n + i] - m) * (y[r * n + i] - m);
          assert_true(fabs(m) < 1e-5 && fabs(v / (double)n - 1.0) < 1e-4);
        }
      }
      free(x), free(y), free(want), free(w), free(b);
    }
}

static nc_rope_params rope_params(int32_t n_rot, float base, float scale) {
  return (nc_rope_params){.n_rot = n_rot,
                          .freq_base = base,
                          .freq_scale = scale,
                          .attn_factor = 1.0f};
}

static void test_rope_normal_and_neox(void **state) {
  (void)state;
  enum { HD = 64, H = 3, HALF = HD / 2 };
  float c[HALF], s[HALF];
  const int32_t pos = 37;
  const float base = 100000.0f;
  const nc_rope_params p1 = rope_params(HD, base, 1.0f);
  nc_rope_cache(pos, &p1, NULL, c, s);
  for (int k = 0; k < HALF; k++) {
    const double th = pos * pow(base, -2.0 * k / HD);
    assert_true(fabs(c[k] - cos(th)) < 2e-4);
    assert_true(fabs(s[k] - sin(th)) < 2e-4);
  }
  /* Position 0: the identity. */
  float c0[HALF], s0[HALF];
  nc_rope_cache(0, &p1, NULL, c0, s0);
  float x[H * HD], x0[H * HD];
  for (int i = 0; i < H * HD; i++)
    x[i] = x0[i] = sinf((float)i * 0.7f);
  nc_rope_apply(x, H, HD, HD, NC_ROPE_NORMAL, c0, s0);
  assert_memory_equal(x, x0, sizeof x);
  /* NORMAL rotates adjacent pairs, NEOX pairs k and k + half. */
  float xn[H * HD], xx[H * HD];
  memcpy(xn, x0, sizeof x0);
  memcpy(xx, x0, sizeof x0);
  nc_rope_apply(xn, H, HD, HD, NC_ROPE_NORMAL, c, s);
  nc_rope_apply(xx, H, HD, HD, NC_ROPE_NEOX, c, s);
  for (int h = 0; h < H; h++)
    for (int k = 0; k < HALF; k++) {
      const float *v = x0 + h * HD;
      const float a = v[2 * k], b = v[2 * k + 1];
      assert_float_equal(xn[h * HD + 2 * k], a * c[k] - b * s[k], 1e-6);
      assert_float_equal(xn[h * HD + 2 * k + 1], a * s[k] + b * c[k], 1e-6);
      const float p = v[k], q = v[k + HALF];
      assert_float_equal(xx[h * HD + k], p * c[k] - q * s[k], 1e-6);
      assert_float_equal(xx[h * HD + k + HALF], p * s[k] + q * c[k], 1e-6);
    }
  /* Rotation keeps each pair's norm. */
  for (int k = 0; k < HALF; k++) {
    const double n0 = hypot(x0[2 * k], x0[2 * k + 1]);
    const double n1 = hypot(xn[2 * k], xn[2 * k + 1]);
    assert_true(fabs(n0 - n1) < 1e-5);
  }
  /* Frequency factors divide theta; freq_scale multiplies it. */
  float ff[HALF], cf[HALF], sf[HALF], cs[HALF], ss[HALF];
  for (int k = 0; k < HALF; k++)
    ff[k] = 2.0f;
  const nc_rope_params half_scale = rope_params(HD, base, 0.5f);
  nc_rope_cache(pos, &p1, ff, cf, sf);
  nc_rope_cache(pos, &half_scale, NULL, cs, ss);
  for (int k = 0; k < HALF; k++) {
    assert_float_equal(cf[k], cs[k], 1e-6);
    assert_float_equal(sf[k], ss[k], 1e-6);
  }
  /* A partial rotation leaves the tail alone. */
  float xp[HD];
  memcpy(xp, x0, sizeof xp);
  nc_rope_apply(xp, 1, HD, 32, NC_ROPE_NORMAL, c, s);
  assert_memory_equal(xp + 32, x0 + 32, sizeof(float) * 32);
}

/* YaRN (ggml's rope_yarn): pairs below corr_dims[0] keep the
 * extrapolated theta, pairs above corr_dims[1] the interpolated one, a
 * linear ramp between; cos and sin times attn_factor * (1 + 0.1 ln(1 /
 * freq_scale)). Checked against the formula in double. */
static void test_rope_yarn(void **state) {
  (void)state;
  enum { HD = 64, HALF = HD / 2 };
  const float base = 10000.0f, scale = 0.25f; /* factor 4 */
  const int32_t n_ctx_orig = 32, pos = 45;
  nc_rope_params p = rope_params(HD, base, scale);
  p.ext_factor = 1.0f;
  p.attn_factor = 0.9f;
  nc_rope_yarn_corr_dims(HD, n_ctx_orig, base, 32.0f, 1.0f, p.corr_dims);
  /* dims where 32 and 1 turns fit into 32 positions */
  const double d_fast =
      HD * log(n_ctx_orig / (32 * 2 * M_PI)) / (2 * log(base));
  const double d_slow = HD * log(n_ctx_orig / (1 * 2 * M_PI)) / (2 * log(base));
  assert_float_equal(p.corr_dims[0], fmax(floor(d_fast), 0), 0);
  assert_float_equal(p.corr_dims[1], fmin(ceil(d_slow), HD - 1), 0);
  assert_true(p.corr_dims[1] > p.corr_dims[0]); /* a real ramp */
  float c[HALF], s[HALF];
  nc_rope_cache(pos, &p, NULL, c, s);
  const double mag = 0.9 * (1 + 0.1 * log(4.0));
  int n_extrap = 0, n_interp = 0, n_mixed = 0;
  for (int k = 0; k < HALF; k++) {
    const double f = pow(base, -2.0 * k / HD);
    const double r = fmin(
        fmax((k - p.corr_dims[0]) / (p.corr_dims[1] - p.corr_dims[0]), 0), 1);
    const double th = pos * f * (scale * r + (1 - r));
    n_extrap += r == 0, n_interp += r == 1, n_mixed += r > 0 && r < 1;
    assert_true(fabs(c[k] - cos(th) * mag) < 1e-4);
    assert_true(fabs(s[k] - sin(th) * mag) < 1e-4);
  }
  assert_true(n_extrap > 0 && n_interp > 0 && n_mixed > 0);
  /* ext_factor 0: plain linear scaling, attn_factor as given */
  p.ext_factor = 0.0f;
  nc_rope_cache(pos, &p, NULL, c, s);
  for (int k = 0; k < HALF; k++) {
    const double th = pos * pow(base, -2.0 * k / HD) * scale;
    assert_true(fabs(c[k] - cos(th) * 0.9) < 1e-4);
  }
}

/* M-RoPE (ggml_mrope_cache_init): which of (t, h, w, e) each pair takes,
 * written out for Qwen2-VL's sections [16, 24, 24, 0] and Qwen3-VL's
 * interleaved [24, 20, 20, 0] over 64 pairs and a wrapping [4, 4, 4, 4]
 * over 32; each pair's cos/sin the bits of plain RoPE at its component's
 * position (the four thetas advance together). */
static void test_mrope(void **state) {
  (void)state;
  enum { HD = 128, HALF = HD / 2 };
  const int32_t qwen2[4] = {16, 24, 24, 0}, qwen3[4] = {24, 20, 20, 0};
  const int32_t wrap[4] = {4, 4, 4, 4};
  for (int32_t k = 0; k < HALF; k++) {
    /* Qwen2-VL: t for pairs 0-15, h 16-39, w 40-63 */
    assert_int_equal(nc_mrope_component(NC_MROPE_SECTIONS, qwen2, k), k < 16 ? 0
                                                                      : k < 40
                                                                          ? 1
                                                                          : 2);
    /* Qwen3-VL: t h w t h w ... up to pair 59, then 60 t, 61 e, 62 e,
     * 63 t (h and w end at 3 * 20 = 60, t at 72) */
    const int want = k < 60 ? k % 3 : (k == 61 || k == 62) ? 3 : 0;
    assert_int_equal(nc_mrope_component(NC_MROPE_INTERLEAVED, qwen3, k), want);
    if (k < 32) /* sector = k % 16: t, h, w, e in blocks of 4 */
      assert_int_equal(nc_mrope_component(NC_MROPE_SECTIONS, wrap, k),
                       (k % 16) / 4);
  }
  nc_rope_params p = rope_params(HD, 5000000.0f, 1.0f);
  p.mrope = NC_MROPE_INTERLEAVED;
  memcpy(p.sections, qwen3, sizeof p.sections);
  const int32_t pos[4] = {7, 1001, 23, 0};
  float c[HALF], s[HALF], pc[4][HALF], ps[4][HALF];
  nc_mrope_cache(pos, &p, NULL, c, s);
  for (int i = 0; i < 4; i++)
    nc_rope_cache(pos[i], &p, NULL, pc[i], ps[i]);
  for (int32_t k = 0; k < HALF; k++) {
    const int i = nc_mrope_component(p.mrope, p.sections, k);
    assert_memory_equal(&c[k], &pc[i][k], sizeof(float));
    assert_memory_equal(&s[k], &ps[i][k], sizeof(float));
  }
  /* a text row (p, p, p, 0): plain RoPE but for the pairs of e, unturned */
  const int32_t text[4] = {41, 41, 41, 0};
  nc_mrope_cache(text, &p, NULL, c, s);
  nc_rope_cache(41, &p, NULL, pc[0], ps[0]);
  for (int32_t k = 0; k < HALF; k++) {
    const bool e = k == 61 || k == 62;
    assert_true(c[k] == (e ? 1.0f : pc[0][k]));
    assert_true(s[k] == (e ? 0.0f : ps[0][k]));
  }
}

static void test_softmax(void **state) {
  (void)state;
  float x[100];
  double ref[100], sum = 0;
  for (int i = 0; i < 100; i++) {
    x[i] = (float)(i % 17) * 0.9f - 3.0f + (i == 50 ? 80.0f : 0.0f);
  }
  double mx = -1e30;
  for (int i = 0; i < 100; i++)
    mx = x[i] > mx ? x[i] : mx;
  for (int i = 0; i < 100; i++)
    sum += ref[i] = exp(x[i] - mx);
  nc_softmax(x, 100);
  double tot = 0;
  for (int i = 0; i < 100; i++) {
    assert_true(fabs(x[i] - ref[i] / sum) < 1e-6);
    tot += x[i];
  }
  assert_true(fabs(tot - 1.0) < 1e-5);
  float one[1] = {-1e30f};
  nc_softmax(one, 1);
  assert_float_equal(one[0], 1.0f, 0);
}

static void test_silu_swiglu_add(void **state) {
  (void)state;
  assert_float_equal(nc_silu(0.0f), 0.0f, 0);
  assert_float_equal(nc_silu(2.0f), 2.0 / (1.0 + exp(-2.0)), 1e-6);
  assert_float_equal(nc_silu(-30.0f), -30.0 / (1.0 + exp(30.0)), 1e-9);
  float g[4] = {1, -1, 3, 0.5f}, u[4] = {2, 2, -1, 4}, o[4];
  nc_swiglu(g, u, o, 4);
  for (int i = 0; i < 4; i++)
    assert_float_equal(o[i], g[i] / (1.0 + exp(-g[i])) * u[i], 1e-6);
  nc_add(o, u, 4);
  assert_float_equal(o[1], -1.0 / (1.0 + exp(1.0)) * 2 + 2, 1e-6);
}

/* ggml's vectorized exp: within 2 ulp of expf on its range, the documented
 * saturation outside it, and the exact bits of a few reference values
 * (from the AVX-512 formula evaluated with exact FMAs). */
static void test_expf_ggml(void **state) {
  (void)state;
  for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
    const float a = nc_expf_ggml(x), b = expf(x);
    assert_true(fabsf(a - b) <= 2.5f * (nextafterf(b, INFINITY) - b));
  }
  assert_float_equal(nc_expf_ggml(0.0f), 1.0f, 0);
  assert_true(isinf(nc_expf_ggml(200.0f)));
  assert_float_equal(nc_expf_ggml(-200.0f), 0.0f, 0);
  assert_float_equal(nc_expf_ggml(-INFINITY), 0.0f, 0);
  assert_true(isnan(nc_expf_ggml(NAN)));
  float v[16];
  for (int i = 0; i < 16; i++)
    v[i] = (float)(i + 1) * 0.1f;
  const float t = nc_sum16_tree(v);
  float a8[8], a4[4];
  for (int i = 0; i < 8; i++)
    a8[i] = v[i] + v[i + 8];
  for (int i = 0; i < 4; i++)
    a4[i] = a8[i] + a8[i + 4];
  assert_float_equal(t, (a4[0] + a4[2]) + (a4[1] + a4[3]), 0);
}

/* The attention loops on fixed data: scores and the value sums (as two KV
 * blocks) of one build. */
enum { ATTN_N = 37, ATTN_HD = 64 };
typedef struct attn_case {
  float tab[65536];
  nc_fp16 k[ATTN_N * ATTN_HD], v[ATTN_N * ATTN_HD];
  float q[ATTN_HD], p[ATTN_N];
} attn_case;

static attn_case *attn_case_new(void) {
  attn_case *c = malloc(sizeof *c);
  assert_non_null(c);
  for (uint32_t h = 0; h < 65536; h++)
    c->tab[h] = nc_fp16_to_fp32((nc_fp16)h);
  for (int i = 0; i < ATTN_N * ATTN_HD; i++) {
    c->k[i] = nc_fp32_to_fp16(sinf((float)i * 0.37f));
    c->v[i] = nc_fp32_to_fp16(cosf((float)i * 0.11f) * 3.0f);
  }
  for (int d = 0; d < ATTN_HD; d++)
    c->q[d] = c->tab[nc_fp32_to_fp16(cosf(d * 1.3f))];
  for (int j = 0; j < ATTN_N; j++)
    c->p[j] = c->tab[nc_fp32_to_fp16(1.0f / (j + 2))];
  return c;
}

static void attn_run(const attn_case *c, const nc_attn_kernels *k,
                     float s[ATTN_N], float out[ATTN_HD]) {
  enum { N = ATTN_N, HD = ATTN_HD };
  static float lanes[HD * 16];
  k->scores(c->q, 1, c->k, HD, N, HD, c->tab, s, N);
  memset(lanes, 0, sizeof lanes);
  /* Two calls (as two KV blocks) equal one. */
  k->accum_v(c->p, 1, N, c->v, HD, 0, 20, HD, c->tab, lanes, HD * 16);
  k->accum_v(c->p + 20, 1, N, c->v + 20 * HD, HD, 20, N - 20, HD, c->tab, lanes,
             HD * 16);
  nc_attn_lanes_reduce(lanes, HD, out);
}

/* The plain build follows the documented lane order and the math. */
static void test_attn_kernels_plain(void **state) {
  (void)state;
  enum { N = ATTN_N, HD = ATTN_HD };
  attn_case *c = attn_case_new();
  float s[N], out[HD];
  attn_run(c, nc_attn_kernels_plain(), s, out);
  for (int j = 0; j < N; j++) {
    float acc[16] = {0};
    for (int d = 0; d < HD; d++)
      acc[d % 16] = fmaf(c->q[d], c->tab[c->k[j * HD + d]], acc[d % 16]);
    assert_float_equal(s[j], nc_sum16_tree(acc), 0);
    double ref = 0;
    for (int d = 0; d < HD; d++)
      ref += (double)c->q[d] * c->tab[c->k[j * HD + d]];
    assert_true(fabs(ref - s[j]) < 1e-4);
  }
  for (int d = 0; d < HD; d++) {
    double ref = 0;
    for (int j = 0; j < N; j++)
      ref += (double)c->p[j] * c->tab[c->v[j * HD + d]];
    assert_true(fabs(ref - out[d]) < 1e-4);
  }
  free(c);
}

/* A SIMD build gives the plain build's bits. One this compiler did not make
 * (NULL) or this CPU cannot run is skipped, and says so: never compared
 * with the plain build in its place. */
static void check_attn_build(const nc_attn_kernels *k, const char *name,
                             bool cpu_ok) {
  if (!k) NC_SKIP_BECAUSE("the %s attention build was not compiled", name);
  if (!cpu_ok)
    NC_SKIP_BECAUSE("this CPU cannot run the %s attention build", name);
  assert_ptr_not_equal(k, nc_attn_kernels_plain());
  attn_case *c = attn_case_new();
  float s0[ATTN_N], o0[ATTN_HD], s1[ATTN_N], o1[ATTN_HD];
  attn_run(c, nc_attn_kernels_plain(), s0, o0);
  attn_run(c, k, s1, o1);
  assert_memory_equal(s0, s1, sizeof s0);
  assert_memory_equal(o0, o1, sizeof o0);
  free(c);
}

static bool cpu_has(const char *what) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!strcmp(what, "avx2"))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!strcmp(what, "avx512f"))
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
#endif
  return false;
}

static void test_attn_kernels_avx2(void **state) {
  (void)state;
  check_attn_build(nc_attn_kernels_avx2(), "AVX2", cpu_has("avx2"));
}

static void test_attn_kernels_avx512(void **state) {
  (void)state;
  check_attn_build(nc_attn_kernels_avx512(), "AVX-512", cpu_has("avx512f"));
}

/* The default kernel table's attention is one of the builds (the plain one
 * only on a CPU without AVX2); its bits are checked by that build's test. */
static void test_attn_kernels_best(void **state) {
  (void)state;
  const nc_attn_kernels *b = nc_kernels_best(false)->attn();
  if (b == nc_attn_kernels_plain()) {
    assert_false(cpu_has("avx2") && nc_attn_kernels_avx2());
    NC_SKIP_BECAUSE("the default attention build on this CPU is the plain one");
  }
  assert_true(b == nc_attn_kernels_avx2() || b == nc_attn_kernels_avx512());
}

typedef struct pool_arg {
  int hits[64];
  int nth_seen[64]; /* per share: no two threads write one slot */
} pool_arg;

static void pool_fn(void *p, int ith, int nth) {
  pool_arg *a = p;
  a->hits[ith]++;
  a->nth_seen[ith] = nth;
}

static void test_threadpool(void **state) {
  (void)state;
  for (int n = 1; n <= 4; n++) {
    nc_threadpool *tp;
    nucleus_error err;
    assert_int_equal(nc_threadpool_create(n, &tp, &err), NC_OK);
    assert_int_equal(nc_threadpool_size(tp), n);
    pool_arg a;
    memset(&a, 0, sizeof a);
    for (int r = 0; r < 500; r++)
      nc_threadpool_run(tp, pool_fn, &a);
    for (int i = 0; i < n; i++) {
      assert_int_equal(a.hits[i], 500);
      assert_int_equal(a.nth_seen[i], n);
    }
    assert_int_equal(a.hits[n], 0);
    nc_threadpool_free(tp);
  }
  nc_threadpool *tp;
  nucleus_error err;
  assert_int_equal(nc_threadpool_create(0, &tp, &err), NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "thread count"));
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Idle workers spin briefly and then sleep (no CPU burnt while idle), and
 * sleeping workers wake for the next run; runs from other threads' point of
 * view still happen exactly once per share. */
static void test_threadpool_idle(void **state) {
  (void)state;
  nc_threadpool *tp;
  nucleus_error err;
  assert_int_equal(nc_threadpool_create(3, &tp, &err), NC_OK);
  pool_arg a;
  memset(&a, 0, sizeof a);
  nc_threadpool_run(tp, pool_fn, &a);
  sleep_ms(30); /* past the spin and yield budget: the workers sleep */
  const double c0 = cpu_seconds();
  sleep_ms(100);
  const double idle = cpu_seconds() - c0;
  /* Two spinning workers would burn ~0.2 s here. */
  assert_true(idle < 0.05);
  for (int r = 0; r < 40; r++) {
    nc_threadpool_run(tp, pool_fn, &a);
    if (r % 8 == 0) sleep_ms(5);
  }
  for (int i = 0; i < 3; i++)
    assert_int_equal(a.hits[i], 41);
  nc_threadpool_free(tp);
}

typedef struct busy_arg {
  _Atomic int running[16]; /* share i being run right now */
  _Atomic int hits[16];
  _Atomic int overlap;
} busy_arg;

static void busy_fn(void *p, int ith, int nth) {
  busy_arg *a = p;
  (void)nth;
  if (atomic_exchange(&a->running[ith], 1)) atomic_store(&a->overlap, 1);
  volatile double x = 1.0;
  for (int i = 0; i < 200 * (ith + 1); i++)
    x *= 1.0000001;
  atomic_store(&a->running[ith], 0);
  atomic_fetch_add(&a->hits[ith], 1);
}

/* More threads than cores: shares are claimed once, so whichever thread
 * runs share i (its worker, or the caller taking over an unstarted one),
 * it runs exactly once per run and never twice at the same time. */
static void test_threadpool_oversubscribed(void **state) {
  (void)state;
  nc_threadpool *tp;
  nucleus_error err;
  enum { N = 12, RUNS = 1500 };
  assert_int_equal(nc_threadpool_create(N, &tp, &err), NC_OK);
  static busy_arg a;
  memset(&a, 0, sizeof a);
  for (int r = 0; r < RUNS; r++) {
    nc_threadpool_run(tp, busy_fn, &a);
    if (r % 500 == 499) sleep_ms(3); /* some workers asleep: wake path */
  }
  for (int i = 0; i < N; i++)
    assert_int_equal(atomic_load(&a.hits[i]), RUNS);
  assert_int_equal(atomic_load(&a.overlap), 0);
  nc_threadpool_free(tp);
}

static void test_split_range(void **state) {
  (void)state;
  for (int nth = 1; nth <= 7; nth++)
    for (int64_t n = 0; n < 40; n++) {
      int64_t next = 0;
      for (int i = 0; i < nth; i++) {
        int64_t lo, hi;
        nc_split_range(n, i, nth, &lo, &hi);
        assert_int_equal(lo, next);
        assert_true(hi >= lo && hi - lo <= n / nth + 1);
        next = hi;
      }
      assert_int_equal(next, n);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_layernorm_rows),
      cmocka_unit_test(test_rope_normal_and_neox),
      cmocka_unit_test(test_rope_yarn),
      cmocka_unit_test(test_mrope),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_silu_swiglu_add),
      cmocka_unit_test(test_expf_ggml),
      cmocka_unit_test(test_attn_kernels_plain),
      cmocka_unit_test(test_attn_kernels_avx2),
      cmocka_unit_test(test_attn_kernels_avx512),
      cmocka_unit_test(test_attn_kernels_best),
      cmocka_unit_test(test_threadpool),
      cmocka_unit_test(test_threadpool_idle),
      cmocka_unit_test(test_threadpool_oversubscribed),
      cmocka_unit_test(test_split_range),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
