/* attn_flash_prompt_avx512: flash attention's prompt order (attn_flash.h)
 * with AVX-512 (compiled with -mavx512f -mavx2 -mfma -mf16c, see
 * mk/model.mk). Four rows at a time as llama.cpp's simd_gemm: the scores
 * with the tile's 64 keys in four registers per row (each lane one key's
 * fused multiply-add chain over d), the values with 64 of hdv in four
 * registers per row (each lane one d's chain over the keys). Every lane
 * computes the plain build's operations in its order, so the bits are the
 * plain build's. A value head not a multiple of 16 (SigLIP's 72) takes its
 * last dims in a masked vector beside the others, each lane the same fma
 * chain over the keys. */
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) &&           \
    defined(__F16C__)
#include <immintrin.h>

#include <math.h>
#include <string.h>

#include "attn_flash.h"
#include "ops.h"
#include "ops_simd.h"

enum { KT = NC_FLASH_KTILE, NV = KT / 16, RB = 4 };

static inline __mmask16 seen_mask(int32_t lo, int32_t hi, int32_t c) {
  const int32_t a = lo - 16 * c < 0 ? 0 : lo - 16 * c;
  const int32_t b = hi - 16 * c > 16 ? 16 : hi - 16 * c;
  if (b <= a) return 0;
  return (__mmask16)((((uint32_t)1 << b) - 1) & ~(((uint32_t)1 << a) - 1));
}

#define NC_INLINE static inline __attribute__((always_inline))

/* The scores of n rows, scaled (and soft-capped), into their p rows. */
static void store_scores(const nc_flash_rows *r, const int32_t *rows, int32_t n,
                         const __m512 acc[RB][NV], float *p) {
  for (int32_t a = 0; a < n; a++) {
    float *pr = p + (size_t)rows[a] * KT;
    if (r->softcap == 0.0f) {
      const __m512 sc = _mm512_set1_ps(r->scale);
      for (int32_t c = 0; c < NV; c++)
        _mm512_storeu_ps(pr + 16 * c, _mm512_mul_ps(acc[a][c], sc));
    } else {
      for (int32_t c = 0; c < NV; c++)
        _mm512_storeu_ps(pr + 16 * c, acc[a][c]);
      for (int32_t j = 0; j < KT; j++)
        pr[j] = nc_flash_score(pr[j], r->scale, r->softcap);
    }
  }
}

/* Scores of n (1..RB) rows into p: s = q.k as fma chains, scaled. */
NC_INLINE void scores(const nc_flash_rows *r, const int32_t *rows, int32_t n,
                      const float *kt, float *p) {
  __m512 acc[RB][NV];
#pragma GCC unroll 4
  for (int32_t a = 0; a < RB; a++)
#pragma GCC unroll 4
    for (int32_t c = 0; c < NV; c++)
      acc[a][c] = _mm512_setzero_ps();
  const float *q[RB];
  for (int32_t a = 0; a < RB; a++)
    q[a] = r->q[rows[a < n ? a : 0]];
  for (int32_t d = 0; d < r->hd; d++) {
    __m512 k[NV];
#pragma GCC unroll 4
    for (int32_t c = 0; c < NV; c++)
      k[c] = _mm512_loadu_ps(kt + (size_t)d * KT + 16 * c);
#pragma GCC unroll 4
    for (int32_t a = 0; a < RB; a++) {
      if (a >= n) break;
      const __m512 b = _mm512_set1_ps(q[a][d]);
#pragma GCC unroll 4
      for (int32_t c = 0; c < NV; c++)
        acc[a][c] = _mm512_fmadd_ps(k[c], b, acc[a][c]);
    }
  }
  store_scores(r, rows, n, (const __m512(*)[NV])acc, p);
}

/* The scores of n rows for key vectors [c0, c0 + nc) only, scaled (and
 * soft-capped), into their p rows: the other vectors' lanes are keys no
 * row of the group sees (softmax_row masks them without reading them). */
static void store_part(const nc_flash_rows *r, const int32_t *rows, int32_t n,
                       int32_t c0, int32_t nc, const __m512 acc[RB][NV],
                       float *p) {
  for (int32_t a = 0; a < n; a++) {
    float *pr = p + (size_t)rows[a] * KT + 16 * c0;
    if (r->softcap == 0.0f) {
      const __m512 sc = _mm512_set1_ps(r->scale);
      for (int32_t c = 0; c < nc; c++)
        _mm512_storeu_ps(pr + 16 * c, _mm512_mul_ps(acc[a][c], sc));
    } else {
      for (int32_t c = 0; c < nc; c++)
        _mm512_storeu_ps(pr + 16 * c, acc[a][c]);
      for (int32_t j = 0; j < 16 * nc; j++)
        pr[j] = nc_flash_score(pr[j], r->scale, r->softcap);
    }
  }
}

/* scores() over key vectors [c0, c0 + nc) (n and nc constant at the call):
 * each lane the same fma chain over d. */
NC_INLINE void scores_part(const nc_flash_rows *r, const int32_t *rows,
                           int32_t n, const float *kt, float *p, int32_t c0,
                           int32_t nc) {
  __m512 acc[RB][NV];
#pragma GCC unroll 4
  for (int32_t a = 0; a < n; a++)
#pragma GCC unroll 4
    for (int32_t c = 0; c < nc; c++)
      acc[a][c] = _mm512_setzero_ps();
  const float *q[RB];
#pragma GCC unroll 4
  for (int32_t a = 0; a < n; a++)
    q[a] = r->q[rows[a]];
  kt += 16 * c0;
  for (int32_t d = 0; d < r->hd; d++) {
    __m512 k[NV];
#pragma GCC unroll 4
    for (int32_t c = 0; c < nc; c++)
      k[c] = _mm512_loadu_ps(kt + (size_t)d * KT + 16 * c);
#pragma GCC unroll 4
    for (int32_t a = 0; a < n; a++) {
      const __m512 b = _mm512_set1_ps(q[a][d]);
#pragma GCC unroll 4
      for (int32_t c = 0; c < nc; c++)
        acc[a][c] = _mm512_fmadd_ps(k[c], b, acc[a][c]);
    }
  }
  store_part(r, rows, n, c0, nc, (const __m512(*)[NV])acc, p);
}

/* scores_part() with n (1..RB) and nc (1..NV - 1) made constants. */
static void scores_range(const nc_flash_rows *r, const int32_t *rows, int32_t n,
                         const float *kt, float *p, int32_t c0, int32_t nc) {
#define PART(N_, NC_)                                                          \
  case (N_)*8 + (NC_): scores_part(r, rows, N_, kt, p, c0, NC_); break
  switch (n * 8 + nc) {
    PART(1, 1);
    PART(1, 2);
    PART(1, 3);
    PART(2, 1);
    PART(2, 2);
    PART(2, 3);
    PART(3, 1);
    PART(3, 2);
    PART(3, 3);
    PART(4, 1);
    PART(4, 2);
    PART(4, 3);
  default: break;
  }
#undef PART
}

/* scores() with n (1..RB - 1) made a constant. */
static void scores_few(const nc_flash_rows *r, const int32_t *rows, int32_t n,
                       const float *kt, float *p) {
  if (n == 1)
    scores(r, rows, 1, kt, p);
  else if (n == 2)
    scores(r, rows, 2, kt, p);
  else
    scores(r, rows, 3, kt, p);
}

/* scores() for RB rows with the sixteen accumulators named. */
static void scores4(const nc_flash_rows *r, const int32_t *rows,
                    const float *kt, float *p) {
  const float *q0 = r->q[rows[0]], *q1 = r->q[rows[1]], *q2 = r->q[rows[2]],
              *q3 = r->q[rows[3]];
  __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
  __m512 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
  __m512 a20 = a00, a21 = a00, a22 = a00, a23 = a00;
  __m512 a30 = a00, a31 = a00, a32 = a00, a33 = a00;
  for (int32_t d = 0; d < r->hd; d++) {
    const float *kd = kt + (size_t)d * KT;
    const __m512 k0 = _mm512_loadu_ps(kd), k1 = _mm512_loadu_ps(kd + 16),
                 k2 = _mm512_loadu_ps(kd + 32), k3 = _mm512_loadu_ps(kd + 48);
    __m512 b = _mm512_set1_ps(q0[d]);
    a00 = _mm512_fmadd_ps(k0, b, a00);
    a01 = _mm512_fmadd_ps(k1, b, a01);
    a02 = _mm512_fmadd_ps(k2, b, a02);
    a03 = _mm512_fmadd_ps(k3, b, a03);
    b = _mm512_set1_ps(q1[d]);
    a10 = _mm512_fmadd_ps(k0, b, a10);
    a11 = _mm512_fmadd_ps(k1, b, a11);
    a12 = _mm512_fmadd_ps(k2, b, a12);
    a13 = _mm512_fmadd_ps(k3, b, a13);
    b = _mm512_set1_ps(q2[d]);
    a20 = _mm512_fmadd_ps(k0, b, a20);
    a21 = _mm512_fmadd_ps(k1, b, a21);
    a22 = _mm512_fmadd_ps(k2, b, a22);
    a23 = _mm512_fmadd_ps(k3, b, a23);
    b = _mm512_set1_ps(q3[d]);
    a30 = _mm512_fmadd_ps(k0, b, a30);
    a31 = _mm512_fmadd_ps(k1, b, a31);
    a32 = _mm512_fmadd_ps(k2, b, a32);
    a33 = _mm512_fmadd_ps(k3, b, a33);
  }
  const __m512 acc[RB][NV] = {{a00, a01, a02, a03},
                              {a10, a11, a12, a13},
                              {a20, a21, a22, a23},
                              {a30, a31, a32, a33}};
  store_scores(r, rows, RB, acc, p);
}

/* values_part() for RB rows and 64 values, the accumulators named. */
static void values4(const nc_flash_rows *r, const int32_t *rows, int32_t j0,
                    int32_t j1, const float *v, const float *p,
                    nc_flash_tstate *st, int32_t d0) {
  const size_t hdv = (size_t)r->hdv;
  float *r0 = st->acc + (size_t)rows[0] * hdv + d0,
        *r1 = st->acc + (size_t)rows[1] * hdv + d0,
        *r2 = st->acc + (size_t)rows[2] * hdv + d0,
        *r3 = st->acc + (size_t)rows[3] * hdv + d0;
  const float *p0 = p + (size_t)rows[0] * KT, *p1 = p + (size_t)rows[1] * KT,
              *p2 = p + (size_t)rows[2] * KT, *p3 = p + (size_t)rows[3] * KT;
#define LD4(row, a0, a1, a2, a3)                                               \
  __m512 a0 = _mm512_loadu_ps(row), a1 = _mm512_loadu_ps(row + 16),            \
         a2 = _mm512_loadu_ps(row + 32), a3 = _mm512_loadu_ps(row + 48)
  LD4(r0, a00, a01, a02, a03);
  LD4(r1, a10, a11, a12, a13);
  LD4(r2, a20, a21, a22, a23);
  LD4(r3, a30, a31, a32, a33);
#undef LD4
  for (int32_t j = j0; j < j1; j++) {
    const float *vr = v + (size_t)j * hdv + d0;
    const __m512 v0 = _mm512_loadu_ps(vr), v1 = _mm512_loadu_ps(vr + 16),
                 v2 = _mm512_loadu_ps(vr + 32), v3 = _mm512_loadu_ps(vr + 48);
    __m512 w = _mm512_set1_ps(p0[j]);
    a00 = _mm512_fmadd_ps(v0, w, a00);
    a01 = _mm512_fmadd_ps(v1, w, a01);
    a02 = _mm512_fmadd_ps(v2, w, a02);
    a03 = _mm512_fmadd_ps(v3, w, a03);
    w = _mm512_set1_ps(p1[j]);
    a10 = _mm512_fmadd_ps(v0, w, a10);
    a11 = _mm512_fmadd_ps(v1, w, a11);
    a12 = _mm512_fmadd_ps(v2, w, a12);
    a13 = _mm512_fmadd_ps(v3, w, a13);
    w = _mm512_set1_ps(p2[j]);
    a20 = _mm512_fmadd_ps(v0, w, a20);
    a21 = _mm512_fmadd_ps(v1, w, a21);
    a22 = _mm512_fmadd_ps(v2, w, a22);
    a23 = _mm512_fmadd_ps(v3, w, a23);
    w = _mm512_set1_ps(p3[j]);
    a30 = _mm512_fmadd_ps(v0, w, a30);
    a31 = _mm512_fmadd_ps(v1, w, a31);
    a32 = _mm512_fmadd_ps(v2, w, a32);
    a33 = _mm512_fmadd_ps(v3, w, a33);
  }
#define ST4(row, a0, a1, a2, a3)                                               \
  _mm512_storeu_ps(row, a0);                                                   \
  _mm512_storeu_ps(row + 16, a1);                                              \
  _mm512_storeu_ps(row + 32, a2);                                              \
  _mm512_storeu_ps(row + 48, a3)
  ST4(r0, a00, a01, a02, a03);
  ST4(r1, a10, a11, a12, a13);
  ST4(r2, a20, a21, a22, a23);
  ST4(r3, a30, a31, a32, a33);
#undef ST4
}

/* The softmax steps of row i on its scores (p row), then p = weights. */
static void softmax_row(const nc_flash_rows *r, int32_t i, float *pr,
                        nc_flash_tstate *st, int32_t c0, int32_t c1) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  __m512 s[NV];
  __mmask16 k[NV];
  __m512 mx = ninf;
  for (int32_t c = c0; c < c1; c++) {
    k[c] = seen_mask(r->lo[i], r->hi[i], c);
    s[c] = k[c] ? _mm512_mask_blend_ps(k[c], ninf, _mm512_loadu_ps(pr + 16 * c))
                : ninf;
    mx = _mm512_max_ps(mx, s[c]);
  }
  const float tmax = _mm512_reduce_max_ps(mx);
  const int32_t hdv = r->hdv;
  float *acc = st->acc + (size_t)i * (size_t)hdv;
  const float M = st->M[i], Mn = fmaxf(M, tmax);
  if (Mn > M) {
    const float ms = expf(M - Mn);
    const __m512 vms = _mm512_set1_ps(ms);
    int32_t d = 0;
    for (; d + 16 <= hdv; d += 16)
      _mm512_storeu_ps(acc + d, _mm512_mul_ps(_mm512_loadu_ps(acc + d), vms));
    for (; d < hdv; d++) /* a head size not a multiple of 16: its tail */
      acc[d] *= ms;
    st->S[i] *= ms;
  }
  st->M[i] = Mn;
  const __m512 vm = _mm512_set1_ps(Mn);
  double sum = 0.0;
  for (int32_t c = c0; c < c1; c++) {
    if (!k[c]) { /* no key seen: weights 0, nothing added to the sum */
      _mm512_storeu_ps(pr + 16 * c, _mm512_setzero_ps());
      continue;
    }
    /* unseen lanes: exp(0) computed, then zeroed (the plain build's
     * exp(-INF) = 0) */
    const __m512 x = _mm512_mask_blend_ps(k[c], vm, s[c]);
    const __m512 e =
        _mm512_maskz_mov_ps(k[c], nc_v16_expf_ggml(_mm512_sub_ps(x, vm)));
    _mm512_storeu_ps(pr + 16 * c, e);
    sum += (double)nc_v16_sum_tree(nc_v16_lo(e), nc_v16_hi(e));
  }
  st->S[i] = (float)((double)st->S[i] + sum);
}

/* acc[d0, d0 + 16 nd) += p . V for n rows over the keys [j0, j1) (n and nd
 * constant at the call: the accumulators in registers); the last of the nd
 * vectors only its lanes in last (a head size not a multiple of 16: SigLIP's
 * 72), the other lanes neither read nor written. Each lane is one dim's fma
 * chain over the keys, the plain build's. */
NC_INLINE void values_part(const nc_flash_rows *r, const int32_t *rows,
                           int32_t n, int32_t j0, int32_t j1, const float *v,
                           const float *p, nc_flash_tstate *st, int32_t d0,
                           int32_t nd, __mmask16 last) {
  const int32_t hdv = r->hdv;
  __m512 acc[RB][NV + 1];
  __mmask16 keep[NV + 1];
  float *ar[RB];
  const float *pr[RB];
#pragma GCC unroll 5
  for (int32_t c = 0; c < nd; c++)
    keep[c] = c == nd - 1 ? last : (__mmask16)0xffff;
#pragma GCC unroll 4
  for (int32_t a = 0; a < n; a++) {
    ar[a] = st->acc + (size_t)rows[a] * (size_t)hdv + d0;
    pr[a] = p + (size_t)rows[a] * KT;
#pragma GCC unroll 5
    for (int32_t c = 0; c < nd; c++)
      acc[a][c] = _mm512_maskz_loadu_ps(keep[c], ar[a] + 16 * c);
  }
  for (int32_t j = j0; j < j1; j++) {
    const float *vr = v + (size_t)j * (size_t)hdv + d0;
    __m512 vv[NV + 1];
#pragma GCC unroll 5
    for (int32_t c = 0; c < nd; c++)
      vv[c] = _mm512_maskz_loadu_ps(keep[c], vr + 16 * c);
#pragma GCC unroll 4
    for (int32_t a = 0; a < n; a++) {
      const __m512 w = _mm512_set1_ps(pr[a][j]);
#pragma GCC unroll 5
      for (int32_t c = 0; c < nd; c++)
        acc[a][c] = _mm512_fmadd_ps(vv[c], w, acc[a][c]);
    }
  }
#pragma GCC unroll 4
  for (int32_t a = 0; a < n; a++)
#pragma GCC unroll 5
    for (int32_t c = 0; c < nd; c++)
      _mm512_mask_storeu_ps(ar[a] + 16 * c, keep[c], acc[a][c]);
}

/* values_part() with n (1..RB) and nd (1..NV + 1) made constants (n = RB
 * with nd = NV and every lane: values4). */
static void values_few(const nc_flash_rows *r, const int32_t *rows, int32_t n,
                       int32_t j0, int32_t j1, const float *v, const float *p,
                       nc_flash_tstate *st, int32_t d0, int32_t nd,
                       __mmask16 last) {
#define PART(N_, ND_)                                                          \
  case (N_)*8 + (ND_):                                                         \
    values_part(r, rows, N_, j0, j1, v, p, st, d0, ND_, last);                 \
    break
  switch (n * 8 + nd) {
    PART(1, 1);
    PART(1, 2);
    PART(1, 3);
    PART(1, 4);
    PART(1, 5);
    PART(2, 1);
    PART(2, 2);
    PART(2, 3);
    PART(2, 4);
    PART(2, 5);
    PART(3, 1);
    PART(3, 2);
    PART(3, 3);
    PART(3, 4);
    PART(3, 5);
    PART(4, 1);
    PART(4, 2);
    PART(4, 3);
    PART(4, 4);
    PART(4, 5);
  default: break;
  }
#undef PART
}

/* acc += p . V, 64 of hdv at a time while more than 80 are left, then the
 * rest in one pass of up to 5 vectors (the last one masked where hdv is not
 * a multiple of 16): every row's chains in flight together. */
NC_INLINE void values(const nc_flash_rows *r, const int32_t *rows, int32_t n,
                      int32_t j0, int32_t j1, const float *v, const float *p,
                      nc_flash_tstate *st) {
  const int32_t hdv = r->hdv;
  int32_t d0 = 0;
  for (; hdv - d0 > 16 * (NV + 1); d0 += 16 * NV)
    if (n == RB)
      values4(r, rows, j0, j1, v, p, st, d0);
    else
      values_few(r, rows, n, j0, j1, v, p, st, d0, NV, (__mmask16)0xffff);
  const int32_t rest = hdv - d0, nd = (rest + 15) / 16;
  if (rest <= 0) return;
  if (n == RB && rest == 16 * NV) {
    values4(r, rows, j0, j1, v, p, st, d0);
    return;
  }
  const __mmask16 last =
      rest % 16 ? (__mmask16)(((uint32_t)1 << (rest % 16)) - 1) : 0xffff;
  values_few(r, rows, n, j0, j1, v, p, st, d0, nd, last);
}

/* r[i] (lanes: 16 dims of key i) becomes r[d] (lanes: dim d of 16 keys):
 * unpack pairs of rows, then fours, then a 4 x 4 transpose of 128-bit
 * blocks. */
NC_INLINE void transpose16(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  /* u[4g + c], block L: rows 4g..4g+3 of column 4L + c */
  __m512 u[16];
#pragma GCC unroll 4
  for (int g = 0; g < 4; g++) {
    const __m512 a = t[4 * g], b = t[4 * g + 1], c = t[4 * g + 2],
                 d = t[4 * g + 3];
    u[4 * g] = _mm512_shuffle_ps(a, c, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 1] = _mm512_shuffle_ps(a, c, _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * g + 2] = _mm512_shuffle_ps(b, d, _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 3] = _mm512_shuffle_ps(b, d, _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++) {
    const __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44),
                 x1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE),
                 x2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44),
                 x3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_f32x4(x0, x2, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(x0, x2, 0xDD);
    r[8 + c] = _mm512_shuffle_f32x4(x1, x3, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(x1, x3, 0xDD);
  }
}

/* Dims [d0, d0 + nd) of a half row (nd <= 16) widened; the lanes past nd
 * zero. */
NC_INLINE __m512 widen16(const nc_fp16 *row, int32_t d0, int32_t nd) {
  if (nd == 16)
    return _mm512_cvtph_ps(
        _mm256_loadu_si256((const __m256i *)(const void *)(row + d0)));
  /* (a masked load of halves needs AVX512BW; this build is AVX512F) */
  nc_fp16 part[16] = {0};
  memcpy(part, row + d0, sizeof(nc_fp16) * (size_t)nd);
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(void *)part));
}

void nc_flash_tile_widen_avx512(const nc_fp16 *k, size_t k_stride,
                                const nc_fp16 *v, size_t v_stride, int32_t n,
                                int32_t hd, int32_t hdv, const float *tab,
                                float *kt, float *vt) {
  (void)tab; /* vcvtph2ps gives the table's floats (attn_flash.h) */
  for (int32_t j = 0; j < n; j++) {
    const nc_fp16 *vr = v + (size_t)j * v_stride;
    float *o = vt + (size_t)j * (size_t)hdv;
    for (int32_t d = 0; d < hdv; d += 16) {
      const int32_t nd = hdv - d < 16 ? hdv - d : 16;
      _mm512_mask_storeu_ps(o + d, (__mmask16)(((uint32_t)1 << nd) - 1),
                            widen16(vr, d, nd));
    }
  }
  /* keys 16 at a time: 16 dims of each widened, transposed, stored as 16
   * columns (a last group of fewer keys with zero rows and masked stores;
   * a head size not a multiple of 16 ends with a group of fewer dims,
   * zero lanes past it, whose rows are not stored) */
  for (int32_t j0 = 0; j0 < n; j0 += 16) {
    const int32_t nk = n - j0 < 16 ? n - j0 : 16;
    const __mmask16 keep = (__mmask16)(((uint32_t)1 << nk) - 1);
    const nc_fp16 *kb = k + (size_t)j0 * k_stride;
    for (int32_t d0 = 0; d0 < hd; d0 += 16) {
      const int32_t nd = hd - d0 < 16 ? hd - d0 : 16;
      /* unrolled, so that the 16 rows stay in registers */
      __m512 r[16];
      if (nk == 16 && nd == 16) {
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++)
          r[j] = _mm512_cvtph_ps(_mm256_loadu_si256(
              (const __m256i *)(const void *)(kb + (size_t)j * k_stride + d0)));
      } else {
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++)
          r[j] = j < nk ? widen16(kb + (size_t)j * k_stride, d0, nd)
                        : _mm512_setzero_ps();
      }
      transpose16(r);
      float *o = kt + (size_t)d0 * KT + (size_t)j0;
      if (nd == 16) {
#pragma GCC unroll 16
        for (int d = 0; d < 16; d++)
          _mm512_mask_storeu_ps(o + (size_t)d * KT, keep, r[d]);
      } else {
        for (int d = 0; d < nd; d++)
          _mm512_mask_storeu_ps(o + (size_t)d * KT, keep, r[d]);
      }
    }
  }
}

void nc_flash_tile_prompt_avx512(const nc_flash_rows *r, const float *kt,
                                 const float *v, float *p,
                                 nc_flash_tstate *st) {
  for (int32_t i0 = 0; i0 < r->m;) {
    int32_t rows[RB], n = 0;
    for (; i0 < r->m && n < RB; i0++)
      if (r->lo[i0] < r->hi[i0]) rows[n++] = i0;
    if (n == 0) continue;
    /* the keys any of the rows sees, [j0, j1), in key vectors [c0, c1):
     * the others (a short sequence's tile, a causal row's future) take no
     * work */
    int32_t j0 = KT, j1 = 0;
    for (int32_t a = 0; a < n; a++) {
      j0 = r->lo[rows[a]] < j0 ? r->lo[rows[a]] : j0;
      j1 = r->hi[rows[a]] > j1 ? r->hi[rows[a]] : j1;
    }
    const int32_t c0 = j0 / 16, c1 = (j1 + 15) / 16;
    if (c0 == 0 && c1 == NV) {
      if (n == RB)
        scores4(r, rows, kt, p);
      else
        scores_few(r, rows, n, kt, p);
    } else {
      scores_range(r, rows, n, kt, p, c0, c1 - c0);
    }
    for (int32_t a = 0; a < n; a++)
      softmax_row(r, rows[a], p + (size_t)rows[a] * KT, st, c0, c1);
    values(r, rows, n, j0, j1, v, p, st);
  }
}
/* ---- the decode passes' steps (attn_flash.h) */

void nc_flash_tile_scores_avx512(const nc_flash_rows *r, const float *kt,
                                 float *p, float *tmax) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  for (int32_t i0 = 0; i0 < r->m;) {
    int32_t rows[RB], n = 0;
    for (; i0 < r->m && n < RB; i0++) {
      if (r->lo[i0] < r->hi[i0]) {
        rows[n++] = i0;
        continue;
      }
      tmax[i0] = -INFINITY;
      for (int32_t c = 0; c < NV; c++)
        _mm512_storeu_ps(p + (size_t)i0 * KT + 16 * c, ninf);
    }
    if (n == 0) continue;
    if (n == RB)
      scores4(r, rows, kt, p);
    else
      scores_few(r, rows, n, kt, p);
    for (int32_t a = 0; a < n; a++) { /* softmax_row's masking and maximum */
      const int32_t i = rows[a];
      float *pr = p + (size_t)i * KT;
      __m512 mx = ninf;
      for (int32_t c = 0; c < NV; c++) {
        const __m512 sc =
            _mm512_mask_blend_ps(seen_mask(r->lo[i], r->hi[i], c), ninf,
                                 _mm512_loadu_ps(pr + 16 * c));
        _mm512_storeu_ps(pr + 16 * c, sc);
        mx = _mm512_max_ps(mx, sc);
      }
      tmax[i] = _mm512_reduce_max_ps(mx);
    }
  }
}

double nc_flash_tile_exps_avx512(float *p, int32_t lo, int32_t hi, float M) {
  const __m512 vm = _mm512_set1_ps(M);
  double sum = 0.0;
  for (int32_t c = 0; c < NV; c++) { /* softmax_row's weights and sum */
    const __mmask16 k = seen_mask(lo, hi, c);
    const __m512 x = _mm512_mask_blend_ps(k, vm, _mm512_loadu_ps(p + 16 * c));
    const __m512 e =
        _mm512_maskz_mov_ps(k, nc_v16_expf_ggml(_mm512_sub_ps(x, vm)));
    _mm512_storeu_ps(p + 16 * c, e);
    sum += (double)nc_v16_sum_tree(nc_v16_lo(e), nc_v16_hi(e));
  }
  return sum;
}

/* Groups [g0, g0 + ng), rows [i0, i0 + mc) and dims [d0, d0 + 16 rc) of
 * the values step, the accumulators in registers over the keys (ng * mc *
 * rc <= 16); the value rows walked block by block. */
NC_INLINE void tvalues_pass(const nc_flash_tvals *a, const nc_flash_paged *v,
                            int32_t g0, const int ng, int32_t i0, const int mc,
                            int32_t d0, const int rc, float *acc,
                            size_t acc_stride) {
  __m512 ac[2][RB][4];
  const float *pw[2][RB];
#pragma GCC unroll 2
  for (int g = 0; g < ng; g++)
#pragma GCC unroll 4
    for (int i = 0; i < mc; i++) {
      const size_t gi = (size_t)(g0 + g), ii = (size_t)(i0 + i);
      float *ar = acc + gi * a->acc_group + ii * acc_stride + d0;
      pw[g][i] = a->p + gi * a->p_group + ii * a->p_stride;
      const float ms = a->ms[gi * a->ms_group + ii];
#pragma GCC unroll 4
      for (int c = 0; c < rc; c++) {
        ac[g][i][c] = _mm512_loadu_ps(ar + 16 * c);
        if (ms != 1.0f)
          ac[g][i][c] = _mm512_mul_ps(ac[g][i][c], _mm512_set1_ps(ms));
      }
    }
  const int32_t pos = v->j0 + a->j0;
  int32_t bi = pos / v->bt, in = pos % v->bt;
  const size_t off = v->off + (size_t)g0 * a->v_group + (size_t)d0;
  const nc_fp16 *row = v->blk[bi] + off + (size_t)in * v->stride;
  for (int32_t j = a->j0; j < a->j1; j++) {
    if (in == v->bt) {
      in = 0;
      row = v->blk[++bi] + off;
    }
#pragma GCC unroll 2
    for (int g = 0; g < ng; g++) {
      __m512 vv[4];
#pragma GCC unroll 4
      for (int c = 0; c < rc; c++)
        vv[c] = _mm512_cvtph_ps(_mm256_loadu_si256(
            (const __m256i *)(const void *)(row + (size_t)g * a->v_group +
                                            16 * c)));
#pragma GCC unroll 4
      for (int i = 0; i < mc; i++) {
        const __m512 w = _mm512_set1_ps(pw[g][i][j]);
#pragma GCC unroll 4
        for (int c = 0; c < rc; c++)
          ac[g][i][c] = _mm512_fmadd_ps(vv[c], w, ac[g][i][c]);
      }
    }
    row += v->stride;
    in++;
  }
#pragma GCC unroll 2
  for (int g = 0; g < ng; g++)
#pragma GCC unroll 4
    for (int i = 0; i < mc; i++)
#pragma GCC unroll 4
      for (int c = 0; c < rc; c++)
        _mm512_storeu_ps(acc + (size_t)(g0 + g) * a->acc_group +
                             (size_t)(i0 + i) * acc_stride + d0 + 16 * c,
                         ac[g][i][c]);
}

void nc_flash_tile_values_avx512(const nc_flash_tvals *a,
                                 const nc_flash_paged *v, const float *tab,
                                 float *acc, size_t acc_stride) {
  if ((a->d1 - a->d0) % 16 != 0) {
    nc_flash_tile_values_plain(a, v, tab, acc, acc_stride);
    return;
  }
  const int32_t nr = (a->d1 - a->d0) / 16;
  for (int32_t g0 = 0; g0 < a->groups;) {
    /* two groups at a time where one has few chains (m * nr <= 8) */
    const int32_t ng = a->groups - g0 >= 2 && a->m * nr <= 8 ? 2 : 1;
    for (int32_t i0 = 0; i0 < a->m; i0 += RB) {
      const int32_t mc = a->m - i0 < RB ? a->m - i0 : RB;
      for (int32_t d = a->d0; d < a->d1;) {
        const int32_t rc = (a->d1 - d) / 16 < 4 ? (a->d1 - d) / 16 : 4;
#define PASS(G_, M_, R_)                                                       \
  case (G_)*64 + (M_)*8 + (R_):                                                \
    tvalues_pass(a, v, g0, G_, i0, M_, d, R_, acc, acc_stride);                \
    break
        switch (ng * 64 + mc * 8 + rc) {
          PASS(1, 1, 1);
          PASS(1, 1, 2);
          PASS(1, 1, 3);
          PASS(1, 1, 4);
          PASS(1, 2, 1);
          PASS(1, 2, 2);
          PASS(1, 2, 3);
          PASS(1, 2, 4);
          PASS(1, 3, 1);
          PASS(1, 3, 2);
          PASS(1, 3, 3);
          PASS(1, 3, 4);
          PASS(1, 4, 1);
          PASS(1, 4, 2);
          PASS(1, 4, 3);
          PASS(1, 4, 4);
          PASS(2, 1, 1);
          PASS(2, 1, 2);
          PASS(2, 1, 3);
          PASS(2, 1, 4);
          PASS(2, 2, 1);
          PASS(2, 2, 2);
          PASS(2, 2, 3);
          PASS(2, 2, 4);
          PASS(2, 3, 1);
          PASS(2, 3, 2);
          PASS(2, 4, 1);
          PASS(2, 4, 2);
        default: break;
        }
#undef PASS
        d += 16 * rc;
      }
    }
    g0 += ng;
  }
}
#endif
