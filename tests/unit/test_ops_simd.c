/* ops and attention kernels: every SIMD build against the plain-C reference,
 * bit for bit (memcmp; where two NaNs can meet in one operation, NaN
 * results need only both be NaN), on random rows of every
 * length around the vector widths and on edge values: +-0, +-inf, NaNs with
 * payloads, subnormals, half overflow and underflow boundaries, exp's range
 * limits. A build this compiler or CPU lacks is skipped. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_require.h"

#include "kernels/attn_kernel.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Same bits, or both NaN: when two NaNs meet in one operation, which
 * payload survives depends on the instruction's operand order, which the
 * compiler may pick either way for a commutative operation. */
static void assert_same(const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
      fail_msg("element %lld: %a vs %a", (long long)i, (double)a[i],
               (double)b[i]);
  }
}

/* Uniform in [-a, a]. */
static float unif(float a) {
  return a * ((float)(rnd() & 0xffffff) / 8388608.0f - 1.0f);
}

static const uint32_t EDGE_BITS[] = {
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, /* zeros, infs */
    0x7fc00000, 0xffc00000, 0x7fc12345, 0xffd55555, /* quiet NaNs */
    0x7f800001, 0xff812345, 0x7fbfffff,             /* signalling NaNs */
    0x00000001, 0x807fffff, 0x00400000,             /* f32 subnormals */
    0x00800000, 0x7f7fffff, 0xff7fffff,             /* FLT_MIN, FLT_MAX */
    0x477fe000, 0x477fefff, 0x477ff000, 0x477fffff, /* 65504 .. 2^16 */
    0x47800000, 0xc77ff000, 0x33000000, 0x33000001, /* 2^-25 (+ulp) */
    0x32ffffff, 0x33800000, 0x387fc000, 0x38800000, /* half subnormals */
    0x387fe000, 0x38000000, 0xb3400000, 0x337fffff,
};
#define N_EDGE (sizeof EDGE_BITS / sizeof EDGE_BITS[0])

/* Fills x: mostly random in [-a, a], every `every`-th an edge value. */
static void fill(float *x, int64_t n, float a, int every) {
  for (int64_t i = 0; i < n; i++)
    x[i] = every && rnd() % (uint32_t)every == 0
               ? from_bits(EDGE_BITS[rnd() % N_EDGE])
               : unif(a);
}

/* The SIMD row-op builds of the backend tables this CPU runs, to check
 * against plain. */
static int simd_ops(const nc_ops_kernels *out[2]) {
  int n = 0;
  const nc_kernels *avx2 = nc_kernels_by_name("avx2");
  const nc_kernels *avx512 = nc_kernels_by_name("avx512");
  if (avx2) out[n++] = avx2->ops();
  if (avx512) out[n++] = avx512->ops();
  if (n == 0) NC_SKIP_BECAUSE("this CPU runs no SIMD build of the row ops");
  return n;
}

static void test_f16_rows(void **state) {
  (void)state;
  const nc_ops_kernels *simd[2];
  const int ns = simd_ops(simd);
  const nc_ops_kernels *plain = nc_ops_plain();
  enum { CHUNK = 4099 };
  static float x[CHUNK], ya[CHUNK], yb[CHUNK];
  static nc_fp16 ha[CHUNK], hb[CHUNK];
  /* A stride through all 2^32 bit patterns, then every edge value at each
   * position of a vector, then random. */
  for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)CHUNK * 997) {
    for (int i = 0; i < CHUNK; i++)
      x[i] = from_bits((uint32_t)(base + (uint64_t)i * 997));
    for (int s = 0; s < ns; s++) {
      plain->to_f16(x, ha, CHUNK);
      simd[s]->to_f16(x, hb, CHUNK);
      assert_memory_equal(ha, hb, sizeof ha);
      plain->round_f16(x, ya, CHUNK);
      simd[s]->round_f16(x, yb, CHUNK);
      assert_memory_equal(ya, yb, sizeof ya);
    }
  }
  for (int n = 0; n < 40; n++) {
    for (int i = 0; i < n; i++)
      x[i] = from_bits(EDGE_BITS[(size_t)(i + n) % N_EDGE]);
    for (int s = 0; s < ns; s++) {
      plain->to_f16(x, ha, n);
      simd[s]->to_f16(x, hb, n);
      assert_memory_equal(ha, hb, sizeof(nc_fp16) * (size_t)n);
      plain->round_f16(x, ya, n);
      simd[s]->round_f16(x, yb, n);
      assert_memory_equal(ya, yb, sizeof(float) * (size_t)n);
    }
  }
  /* The reference itself: round trips of every finite half. */
  for (uint32_t h = 0; h < 65536; h++) {
    const float f = nc_fp16_to_fp32((nc_fp16)h);
    if (isnan(f)) continue;
    assert_int_equal(nc_fp32_to_fp16(f), h);
  }
}

static void test_rmsnorm_add(void **state) {
  (void)state;
  const nc_ops_kernels *simd[2];
  const int ns = simd_ops(simd);
  const nc_ops_kernels *plain = nc_ops_plain();
  enum { MAXN = 600 };
  static float x[MAXN], w[MAXN], ya[MAXN], yb[MAXN];
  for (int round = 0; round < 200; round++) {
    const int64_t n = round < 80     ? round + 1
                      : round == 199 ? 576
                                     : (int64_t)(rnd() % MAXN) + 1;
    const int every = round % 3 == 0 ? 7 : 0;
    fill(x, n, round % 2 ? 3.0f : 1e-20f, every);
    fill(w, n, 2.0f, every);
    for (int s = 0; s < ns; s++) {
      plain->rmsnorm(x, w, ya, n, 1e-5f);
      simd[s]->rmsnorm(x, w, yb, n, 1e-5f);
      assert_same(ya, yb, n);
      plain->rmsnorm(x, NULL, ya, n, 1e-6f);
      memcpy(yb, x, sizeof(float) * (size_t)n);
      simd[s]->rmsnorm(yb, NULL, yb, n, 1e-6f); /* in place */
      assert_same(ya, yb, n);
      memcpy(ya, w, sizeof(float) * (size_t)n);
      memcpy(yb, w, sizeof(float) * (size_t)n);
      plain->add(ya, x, n);
      simd[s]->add(yb, x, n);
      assert_same(ya, yb, n);
    }
  }
}

static void test_rope(void **state) {
  (void)state;
  const nc_ops_kernels *simd[2];
  const int ns = simd_ops(simd);
  const nc_ops_kernels *plain = nc_ops_plain();
  enum { H = 5, MAXHD = 128 };
  static float x[H * MAXHD], xa[H * MAXHD], xb[H * MAXHD];
  static float c[MAXHD / 2], sn[MAXHD / 2];
  const int dims[][2] = {{64, 64}, {128, 128}, {64, 32}, {80, 80},
                         {64, 24}, {8, 8},     {6, 6},   {64, 2}};
  for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
    const int hd = dims[t][0], nrot = dims[t][1];
    for (int round = 0; round < 20; round++) {
      const nc_rope_params rp = {.n_rot = nrot,
                                 .freq_base = 10000.0f,
                                 .freq_scale = 1.0f,
                                 .attn_factor = 1.0f};
      nc_rope_cache((int32_t)(rnd() % 5000), &rp, NULL, c, sn);
      fill(x, H * hd, 4.0f, round % 4 == 0 ? 9 : 0);
      for (int neox = 0; neox < 2; neox++)
        for (int s = 0; s < ns; s++) {
          memcpy(xa, x, sizeof(float) * (size_t)(H * hd));
          memcpy(xb, x, sizeof(float) * (size_t)(H * hd));
          plain->rope_apply(xa, H, hd, nrot, neox, c, sn);
          simd[s]->rope_apply(xb, H, hd, nrot, neox, c, sn);
          assert_same(xa, xb, H * hd);
        }
    }
  }
}

/* swiglu runs ggml's exp on -gate: a sweep over exp's whole range (the
 * vector fast path, the subnormal and overflow fallbacks, saturation). */
static void test_swiglu(void **state) {
  (void)state;
  const nc_ops_kernels *simd[2];
  const int ns = simd_ops(simd);
  const nc_ops_kernels *plain = nc_ops_plain();
  enum { MAXN = 2048 };
  static float g[MAXN], u[MAXN], ya[MAXN], yb[MAXN];
  for (int round = 0; round < 300; round++) {
    const int64_t n = round < 70     ? round + 1
                      : round == 299 ? 1536
                                     : (int64_t)(rnd() % MAXN) + 1;
    const float a = round % 5 == 0 ? 120.0f : round % 5 == 1 ? 8.0f : 95.0f;
    fill(g, n, a, round % 3 == 0 ? 11 : 0);
    fill(u, n, 2.0f, round % 7 == 0 ? 5 : 0);
    for (int s = 0; s < ns; s++) {
      plain->swiglu(g, u, ya, n);
      simd[s]->swiglu(g, u, yb, n);
      assert_same(ya, yb, n);
      memcpy(yb, g, sizeof(float) * (size_t)n);
      simd[s]->swiglu(yb, u, yb, n); /* out aliases gate */
      assert_same(ya, yb, n);
    }
  }
  /* A fine sweep of -gate over [-110, 110] in blocks of 16. */
  const int64_t n = MAXN;
  for (float x0 = -110.0f; x0 < 110.0f; x0 += 0.0171f * MAXN) {
    for (int64_t i = 0; i < n; i++) {
      g[i] = -(x0 + 0.0171f * (float)i);
      u[i] = 1.0f;
    }
    for (int s = 0; s < ns; s++) {
      plain->swiglu(g, u, ya, n);
      simd[s]->swiglu(g, u, yb, n);
      assert_memory_equal(ya, yb, sizeof(float) * (size_t)n);
    }
  }
}

/* silu runs ggml's exp on -x for every value, the tail past the vectors
 * included: random rows of every length around the widths with edge
 * values, a sweep over exp's whole range, and the plain build against
 * x / (1 + nc_expf_ggml(-x)) itself. */
static void test_silu(void **state) {
  (void)state;
  const nc_ops_kernels *simd[2];
  const int ns = simd_ops(simd);
  const nc_ops_kernels *plain = nc_ops_plain();
  enum { MAXN = 2048 };
  static float x[MAXN], ya[MAXN], yb[MAXN];
  for (int round = 0; round < 300; round++) {
    const int64_t n = round < 70 ? round + 1 : (int64_t)(rnd() % MAXN) + 1;
    const float a = round % 3 == 0 ? 120.0f : round % 3 == 1 ? 8.0f : 95.0f;
    fill(x, n, a, round % 4 == 0 ? 7 : 0);
    memcpy(ya, x, sizeof(float) * (size_t)n);
    plain->silu(ya, n);
    for (int64_t i = 0; i < n; i++) {
      const float want = x[i] / (1.0f + nc_expf_ggml(-x[i]));
      if (!(isnan(want) && isnan(ya[i])))
        assert_memory_equal(&want, &ya[i], sizeof(float));
    }
    for (int s = 0; s < ns; s++) {
      memcpy(yb, x, sizeof(float) * (size_t)n);
      simd[s]->silu(yb, n);
      assert_same(ya, yb, n);
    }
  }
  for (float x0 = -110.0f; x0 < 110.0f; x0 += 0.0171f * MAXN) {
    for (int64_t i = 0; i < MAXN; i++)
      x[i] = -(x0 + 0.0171f * (float)i);
    memcpy(ya, x, sizeof x);
    plain->silu(ya, MAXN);
    for (int s = 0; s < ns; s++) {
      memcpy(yb, x, sizeof x);
      simd[s]->silu(yb, MAXN);
      assert_memory_equal(ya, yb, sizeof x);
    }
  }
}

/* The gated delta rule (delta_net.h): every SIMD build's bits against the
 * plain build's on several steps of a random state (head sizes around the
 * 8 lanes, 128 as Qwen3.5's), and the plain build against the rule in
 * double: M = decay M; M += k (beta (v - M^T k))^T; out = scale M^T q. */
static void test_delta_rule(void **state) {
  (void)state;
  const nc_ops_kernels *simd[2];
  const int ns = simd_ops(simd);
  const nc_ops_kernels *plain = nc_ops_plain();
  enum { MAXS = 128, STEPS = 6 };
  static float sa[MAXS * MAXS], sb[2][MAXS * MAXS], q[MAXS], k[MAXS], v[MAXS],
      oa[MAXS], ob[MAXS];
  static double m[MAXS * MAXS];
  const int64_t sizes[] = {1, 3, 7, 8, 9, 16, 31, 64, 100, 128};
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
    const int64_t S = sizes[z];
    const float scale = 1.0f / sqrtf((float)S);
    fill(sa, S * S, 1.0f, 0);
    for (int64_t i = 0; i < S * S; i++)
      m[i] = sa[i];
    for (int s = 0; s < ns; s++)
      memcpy(sb[s], sa, sizeof(float) * (size_t)(S * S));
    for (int step = 0; step < STEPS; step++) {
      fill(q, S, 1.0f, 0);
      fill(k, S, 1.0f, 0);
      fill(v, S, 2.0f, 0);
      const float decay = 0.5f + unif(0.45f), beta = 0.5f + unif(0.5f);
      plain->delta_rule(sa, q, k, v, decay, beta, scale, oa, S);
      for (int64_t j = 0; j < S; j++) { /* m transposed, as the state */
        double mk = 0, mq = 0;
        for (int64_t i = 0; i < S; i++)
          mk += (m[j * S + i] *= decay) * k[i];
        const double d = beta * (v[j] - mk);
        for (int64_t i = 0; i < S; i++)
          mq += (m[j * S + i] += k[i] * d) * q[i];
        if (fabs(mq * scale - oa[j]) > 1e-4 * (1 + fabs(mq)))
          fail_msg("S %lld step %d out[%lld]: %g, the rule in double %g",
                   (long long)S, step, (long long)j, (double)oa[j], mq * scale);
      }
      for (int s = 0; s < ns; s++) {
        simd[s]->delta_rule(sb[s], q, k, v, decay, beta, scale, ob, S);
        assert_memory_equal(oa, ob, sizeof(float) * (size_t)S);
        assert_memory_equal(sa, sb[s], sizeof(float) * (size_t)(S * S));
      }
    }
  }
}

/* geglu gathers the table's halves: a table of random finite halves (and
 * infinities; NaN entries would meet the conversions' quieting; the NaN
 * halves' entries NaN, as in gelu's table) so every
 * entry's bits show, over gates of every half (the edges: -10, 10, NaN,
 * infinities, half subnormals and overflow), lengths off the vector width,
 * and the table's last entry. */
static void test_geglu(void **state) {
  (void)state;
  const nc_ops_kernels *simd[2];
  const int ns = simd_ops(simd);
  const nc_ops_kernels *plain = nc_ops_plain();
  static nc_fp16 tab[NC_GELU_TABLE_ENTRIES];
  for (int h = 0; h < 65536; h++) {
    uint16_t v = (uint16_t)rnd();
    if ((v & 0x7c00) == 0x7c00) v &= rnd() % 8 ? 0xbbff : 0xfc00;
    /* a NaN gate's half depends on how NaNs convert: gelu's table gives
     * every NaN half a NaN */
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) v = 0x7e00;
    tab[h] = (nc_fp16)v;
  }
  enum { MAXN = 1 << 16 };
  static float g[MAXN], u[MAXN], ya[MAXN], yb[MAXN];
  /* every half as a gate, once */
  for (int h = 0; h < MAXN; h++) {
    g[h] = nc_fp16_to_fp32((nc_fp16)h);
    u[h] = unif(3.0f);
  }
  for (int s = 0; s < ns; s++) {
    memcpy(ya, g, sizeof ya);
    memcpy(yb, g, sizeof yb);
    plain->geglu(ya, u, MAXN, tab);
    simd[s]->geglu(yb, u, MAXN, tab);
    assert_same(ya, yb, MAXN);
  }
  for (int round = 0; round < 200; round++) {
    const int64_t n = round < 40 ? round + 1 : (int64_t)(rnd() % 4096) + 1;
    fill(g, n, round % 2 ? 12.0f : 4.0f, round % 3 == 0 ? 5 : 0);
    if (round == 7) g[0] = -10.0f, g[n - 1] = 10.0f;
    fill(u, n, 2.0f, round % 7 == 0 ? 5 : 0);
    for (int s = 0; s < ns; s++) {
      memcpy(ya, g, sizeof(float) * (size_t)n);
      memcpy(yb, g, sizeof(float) * (size_t)n);
      plain->geglu(ya, u, n, tab);
      simd[s]->geglu(yb, u, n, tab);
      assert_same(ya, yb, n);
    }
  }
  /* up NULL: ggml's GELU with the table (ggml_vec_gelu_f32), every half
   * and random values around the edges, every build */
  for (int round = 0; round < 2; round++) {
    if (round == 0)
      for (int h = 0; h < MAXN; h++)
        g[h] = nc_fp16_to_fp32((nc_fp16)h);
    else
      fill(g, MAXN, 12.0f, 0);
    for (int h = 0; h < MAXN; h++) {
      const float x = g[h];
      ya[h] = x <= -10.0f  ? 0.0f
              : x >= 10.0f ? x
                           : nc_fp16_to_fp32(tab[nc_fp32_to_fp16(x)]);
    }
    for (int s = -1; s < ns; s++) {
      memcpy(yb, g, sizeof yb);
      (s < 0 ? plain : simd[s])->geglu(yb, NULL, MAXN - round, tab);
      assert_same(ya, yb, MAXN - round);
    }
  }
}

static float f16tab[65536];

enum { N_ATTN = 3 };

/* The non-plain attention builds of the backend tables this CPU runs (NULL
 * where not), and the default table's. */
static void attn_tables(const nc_attn_kernels *ks[N_ATTN]) {
  const nc_kernels *avx2 = nc_kernels_by_name("avx2");
  const nc_kernels *avx512 = nc_kernels_by_name("avx512");
  ks[0] = avx2 ? avx2->attn() : NULL;
  ks[1] = avx512 ? avx512->attn() : NULL;
  ks[2] = nc_kernels_best(false)->attn();
  if (!ks[0] && !ks[1]) print_message("no SIMD attention build here\n");
}

static void test_attn_softmax(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++)
    f16tab[h] = nc_fp16_to_fp32((nc_fp16)h);
  const nc_attn_kernels *ks[N_ATTN];
  attn_tables(ks);
  const nc_attn_kernels *plain = nc_attn_kernels_plain();
  enum { MAXN = 700 };
  static float x[MAXN], ya[MAXN], yb[MAXN];
  for (int round = 0; round < 400; round++) {
    const int32_t n = round < 100 ? round + 1 : (int32_t)(rnd() % MAXN) + 1;
    const float a = round % 4 == 0 ? 2000.0f : round % 4 == 1 ? 3.0f : 60.0f;
    fill(x, n, a, round % 5 == 0 ? 13 : 0);
    if (round % 9 == 0) /* masked-out style scores */
      for (int32_t j = 0; j < n; j += 3)
        x[j] = -INFINITY;
    const float scale = round % 2 ? 0.125f : 1.0f / sqrtf(80.0f);
    /* an attention sink on two rounds of three, below and above the max */
    const float sink = round % 3 == 0 ? -INFINITY : (float)(round % 7) * a / 4;
    memcpy(ya, x, sizeof(float) * (size_t)n);
    plain->softmax(ya, n, scale, sink, f16tab);
    for (int i = 0; i < N_ATTN; i++) {
      if (!ks[i]) continue;
      memcpy(yb, x, sizeof(float) * (size_t)n);
      ks[i]->softmax(yb, n, scale, sink, f16tab);
      /* A NaN input makes the sum NaN and then every output; which NaN
       * (its sign) comes out of NaN * NaN depends on the operand order the
       * compiler picked, in the reference too. */
      assert_same(ya, yb, n);
    }
  }
  /* Sanity of the reference: a probability vector in half precision. */
  for (int32_t j = 0; j < 50; j++)
    x[j] = (float)(j % 11) - 4.0f;
  plain->softmax(x, 50, 0.5f, -INFINITY, f16tab);
  double tot = 0;
  for (int32_t j = 0; j < 50; j++) {
    assert_true(x[j] > 0.0f && x[j] < 1.0f);
    assert_int_equal(nc_fp16_to_fp32(nc_fp32_to_fp16(x[j])), x[j]);
    tot += x[j];
  }
  assert_true(fabs(tot - 1.0) < 1e-2);
  /* a sink takes its share of the denominator: four equal scores and a
   * sink equal to them leave 1/5 each; a sink far below leaves 1/4 */
  for (int32_t j = 0; j < 4; j++)
    x[j] = 2.0f;
  plain->softmax(x, 4, 0.5f, 1.0f, f16tab);
  for (int32_t j = 0; j < 4; j++)
    assert_true(x[j] == nc_fp16_to_fp32(nc_fp32_to_fp16(0.2f)));
  for (int32_t j = 0; j < 4; j++)
    x[j] = 2.0f;
  plain->softmax(x, 4, 0.5f, -200.0f, f16tab);
  for (int32_t j = 0; j < 4; j++)
    assert_true(x[j] == 0.25f);
}

/* Scores, values and the lane reduce for 1..6 queries at once, head sizes
 * on and off the vector widths, key counts around 8 and 16: every build
 * equals plain, and each query of a multi-query call equals a one-query
 * call. */
static void test_attn_scores_values(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++)
    f16tab[h] = nc_fp16_to_fp32((nc_fp16)h);
  const nc_attn_kernels *ks[N_ATTN];
  attn_tables(ks);
  const nc_attn_kernels *plain = nc_attn_kernels_plain();
  enum { MAXN = 40, MAXHD = 128, STRIDE = 3 * MAXHD, MAXM = 11 };
  enum { LSET = 16 * MAXHD + 16 };
  static nc_fp16 k[MAXN * STRIDE], v[MAXN * STRIDE];
  static nc_fp16 vs[(MAXN + 16) * STRIDE]; /* blocks rearranged: room for a
                                            * partial block moved last */
  static float kt[48 * MAXHD] __attribute__((aligned(64)));
  static float vwide[MAXN * (MAXHD + 5)];
  static float q[MAXM * MAXHD], p[MAXM * MAXN], sa[MAXM * MAXN],
      sb[MAXM * MAXN], la[MAXM * LSET], lb[MAXM * LSET], oa[MAXHD], ob[MAXHD];
  const int hds[] = {64, 128, 16, 32, 80, 24, 8};
  for (size_t t = 0; t < sizeof hds / sizeof hds[0]; t++) {
    const int hd = hds[t];
    /* lane sets padded (as the context does) or back to back */
    const size_t lset = (size_t)16 * (size_t)hd + (t % 2 ? 16 : 0);
    for (int32_t n = 1; n <= MAXN; n += n < 18 ? 1 : 7) {
      const int32_t m = 1 + (int32_t)(rnd() % MAXM);
      for (int i = 0; i < MAXN * STRIDE; i++) {
        k[i] = nc_fp32_to_fp16(unif(2.0f));
        v[i] = nc_fp32_to_fp16(unif(3.0f));
      }
      for (int i = 0; i < m * hd; i++)
        q[i] = f16tab[nc_fp32_to_fp16(unif(1.5f))];
      for (int i = 0; i < m * MAXN; i++)
        p[i] = f16tab[nc_fp32_to_fp16(unif(1.0f))];
      /* plain, and plain one query at a time */
      plain->scores(q, m, k, STRIDE, n, hd, f16tab, sa, MAXN);
      for (int32_t i = 0; i < m; i++) {
        plain->scores(q + i * hd, 1, k, STRIDE, n, hd, f16tab, sb, MAXN);
        assert_memory_equal(sa + i * MAXN, sb, sizeof(float) * (size_t)n);
      }
      /* Values in two calls, as two KV blocks starting at position 3. */
      const int32_t n1 = n / 2;
      memset(la, 0, sizeof la);
      plain->accum_v(p, m, MAXN, v, STRIDE, 3, n1, hd, f16tab, la, lset);
      plain->accum_v(p + n1, m, MAXN, v + (size_t)n1 * STRIDE, STRIDE, 3 + n1,
                     n - n1, hd, f16tab, la, lset);
      for (int32_t i = 0; i < m; i++) {
        memset(lb, 0, sizeof(float) * lset);
        plain->accum_v(p + i * MAXN, 1, MAXN, v, STRIDE, 3, n, hd, f16tab, lb,
                       lset);
        assert_memory_equal(la + (size_t)i * lset, lb, sizeof(float) * lset);
      }
      for (int b = 0; b < N_ATTN; b++) {
        if (!ks[b]) continue;
        ks[b]->scores(q, m, k, STRIDE, n, hd, f16tab, sb, MAXN);
        for (int32_t i = 0; i < m; i++)
          assert_memory_equal(sa + i * MAXN, sb + i * MAXN,
                              sizeof(float) * (size_t)n);
        if (ks[b]->scores_t && hd % 16 == 0) {
          /* The same keys transposed in blocks of 16 (padding: garbage,
           * which must not reach the outputs). */
          for (int32_t j = 0; j < (n + 15) / 16 * 16; j++)
            for (int d = 0; d < hd; d++)
              kt[(size_t)(j / 16) * 16 * hd + (size_t)d * 16 +
                 (size_t)(j % 16)] =
                  j < n ? f16tab[k[(size_t)j * STRIDE + (size_t)d]] : NAN;
          memset(sb, 0, sizeof sb);
          ks[b]->scores_t(q, m, kt, n, hd, sb, MAXN);
          for (int32_t i = 0; i < m; i++)
            assert_memory_equal(sa + i * MAXN, sb + i * MAXN,
                                sizeof(float) * (size_t)n);
        }
        memset(lb, 0, sizeof lb);
        ks[b]->accum_v(p, m, MAXN, v, STRIDE, 3, n1, hd, f16tab, lb, lset);
        ks[b]->accum_v(p + n1, m, MAXN, v + (size_t)n1 * STRIDE, STRIDE, 3 + n1,
                       n - n1, hd, f16tab, lb, lset);
        assert_memory_equal(la, lb, sizeof(float) * lset * (size_t)m);
        /* The same rows from blocks of bt rows stored in reverse order, in
         * one call and in two (split at a block boundary). */
        for (int32_t bt = 4; ks[b]->accum_v_blocks && bt <= 16; bt *= 4) {
          const int32_t nblk = (n + bt - 1) / bt;
          const nc_fp16 *blocks[MAXN];
          for (int32_t bi = 0; bi < nblk; bi++) {
            nc_fp16 *dst = vs + (size_t)(nblk - 1 - bi) * (size_t)bt * STRIDE;
            const int32_t rows = n - bi * bt < bt ? n - bi * bt : bt;
            memcpy(dst, v + (size_t)bi * (size_t)bt * STRIDE,
                   sizeof(nc_fp16) * (size_t)rows * STRIDE);
            blocks[bi] = dst;
          }
          memset(lb, 0, sizeof lb);
          ks[b]->accum_v_blocks(p, m, MAXN, blocks, bt, STRIDE, 3, n, hd,
                                f16tab, lb, lset);
          assert_memory_equal(la, lb, sizeof(float) * lset * (size_t)m);
          const int32_t nb1 = nblk / 2, j1 = nb1 * bt;
          memset(lb, 0, sizeof lb);
          ks[b]->accum_v_blocks(p, m, MAXN, blocks, bt, STRIDE, 3, j1, hd,
                                f16tab, lb, lset);
          ks[b]->accum_v_blocks(p + j1, m, MAXN, blocks + nb1, bt, STRIDE,
                                3 + j1, n - j1, hd, f16tab, lb, lset);
          assert_memory_equal(la, lb, sizeof(float) * lset * (size_t)m);
        }
        /* The same rows widened to float (a padded row stride), in one
         * call and in two. */
        if (ks[b]->accum_v_wide) {
          const size_t ws = (size_t)hd + 5;
          for (int32_t j = 0; j < n; j++)
            for (int d = 0; d < hd; d++)
              vwide[(size_t)j * ws + (size_t)d] =
                  f16tab[v[(size_t)j * STRIDE + (size_t)d]];
          memset(lb, 0, sizeof lb);
          ks[b]->accum_v_wide(p, m, MAXN, vwide, ws, 3, n, hd, lb, lset);
          assert_memory_equal(la, lb, sizeof(float) * lset * (size_t)m);
          memset(lb, 0, sizeof lb);
          ks[b]->accum_v_wide(p, m, MAXN, vwide, ws, 3, n1, hd, lb, lset);
          ks[b]->accum_v_wide(p + n1, m, MAXN, vwide + (size_t)n1 * ws, ws,
                              3 + n1, n - n1, hd, lb, lset);
          assert_memory_equal(la, lb, sizeof(float) * lset * (size_t)m);
        }
        for (int32_t i = 0; i < m; i++) {
          nc_attn_lanes_reduce(la + (size_t)i * lset, hd, oa);
          ks[b]->reduce(la + (size_t)i * lset, hd, ob);
          assert_memory_equal(oa, ob, sizeof(float) * (size_t)hd);
        }
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_rows),
      cmocka_unit_test(test_rmsnorm_add),
      cmocka_unit_test(test_rope),
      cmocka_unit_test(test_swiglu),
      cmocka_unit_test(test_silu),
      cmocka_unit_test(test_geglu),
      cmocka_unit_test(test_delta_rule),
      cmocka_unit_test(test_attn_softmax),
      cmocka_unit_test(test_attn_scores_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
