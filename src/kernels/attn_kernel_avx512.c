/* attn_kernel_avx512: attn_kernel's loops (scores, values, softmax, lane
 * reduce) with AVX-512 (compiled with -mavx512f -mavx2 -mfma -mf16c, see
 * mk/model.mk; chosen at run time). One 512-bit register holds the 16 lanes of
 * a dot: lane l is the chain of fused multiply-adds over d = l, l + 16, ...
 * exactly as in the plain build, and the halving tree of sixteen keys runs at
 * once through shuffles that add the same operands as nc_sum16_tree, so the
 * results are identical. Each K or V row is widened once for all the queries of
 * a call. Head sizes that are not a multiple of 16 take the AVX2 build. */
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) &&           \
    defined(__F16C__)
#include <immintrin.h>

#include <math.h>
#include <string.h>

#include "attn_kernel.h"
#include "ops_simd.h"

#define MQ 4

/* The nc_sum16_tree of sixteen 16-lane accumulators a[0..15]; returns the
 * sixteen sums in order. Every add pairs the same operands as the scalar
 * tree (v[i] + v[i + 8], then + 4, + 2, + 1), several trees per add. */
static inline __m512 sum16x16_tree(const __m512 a[16]) {
  __m512 b[8], c[4], d[2];
  /* b[k] = [a_2k[i] + a_2k[i + 8] (8 lanes) | same for a_2k+1] */
  for (int k = 0; k < 8; k++)
    b[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x44),
                         _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xee));
  /* 128-bit blocks of b[k]: x0 = key 2k [0..3], x1 = key 2k [4..7], x2, x3
   * the same for key 2k+1. c[k] = four keys' [i] + [i + 4] (4 lanes each):
   * keys 4k .. 4k+3 in order. */
  for (int k = 0; k < 4; k++)
    c[k] = _mm512_add_ps(
        _mm512_shuffle_f32x4(b[2 * k], b[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
        _mm512_shuffle_f32x4(b[2 * k], b[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  /* Within each 128-bit block l: [x[0] x[1] y[0] y[1]] + [x[2] x[3] y[2]
   * y[3]] with x = key 4k+l of c[k], y = key 4(k+1)+l of c[k + 1]. */
  for (int k = 0; k < 2; k++)
    d[k] = _mm512_add_ps(
        _mm512_shuffle_ps(c[2 * k], c[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
        _mm512_shuffle_ps(c[2 * k], c[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  /* d[0] block l: [key l: c0 c1, key 4+l: c0 c1], d[1]: keys 8+l, 12+l.
   * Sum: block l = [s_l, s_4+l, s_8+l, s_12+l]: element 4l + r is key
   * l + 4r. */
  const __m512 s =
      _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i idx =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(idx, s);
}

/* Key kr's 16 lanes for M queries (a constant once inlined). */
static inline __attribute__((always_inline)) void
key_lanes(const int M, const float *qb, int32_t hd, const nc_fp16 *kr,
          __m512 acc[][16], int32_t t) {
  __m512 a[MQ];
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
    a[i] = _mm512_setzero_ps();
  for (int32_t d = 0; d < hd; d += NC_ATTN_LANES) {
    const __m512 kz =
        _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(kr + d)));
#pragma GCC unroll 4
    for (int i = 0; i < M; i++)
      a[i] = _mm512_fmadd_ps(_mm512_loadu_ps(qb + (size_t)i * (size_t)hd + d),
                             kz, a[i]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
    acc[i][t] = a[i];
}

static void scores_avx512(const float *q, int32_t m, const nc_fp16 *k,
                          size_t k_stride, int32_t n, int32_t hd,
                          const float *tab, float *out, size_t out_stride) {
  if (hd % NC_ATTN_LANES != 0) {
    nc_attn_kernels_avx2()->scores(q, m, k, k_stride, n, hd, tab, out,
                                   out_stride);
    return;
  }
  for (int32_t i0 = 0; i0 < m; i0 += MQ) {
    const int32_t mm = m - i0 < MQ ? m - i0 : MQ;
    const float *qb = q + (size_t)i0 * (size_t)hd;
    float *ob = out + (size_t)i0 * out_stride;
    __m512 acc[MQ][16];
    for (int32_t j = 0; j < n; j += 16) {
      const int32_t nk = n - j < 16 ? n - j : 16;
      for (int32_t t = 0; t < nk; t++) {
        const nc_fp16 *kr = k + (size_t)(j + t) * k_stride;
        switch (mm) {
        case 4: key_lanes(4, qb, hd, kr, acc, t); break;
        case 3: key_lanes(3, qb, hd, kr, acc, t); break;
        case 2: key_lanes(2, qb, hd, kr, acc, t); break;
        default: key_lanes(1, qb, hd, kr, acc, t); break;
        }
      }
      for (int32_t i = 0; i < mm; i++) {
        for (int32_t t = nk; t < 16; t++) /* unused trees */
          acc[i][t] = _mm512_setzero_ps();
        _mm512_mask_storeu_ps(ob + (size_t)i * out_stride + (size_t)j,
                              (__mmask16)((1u << nk) - 1),
                              sum16x16_tree(acc[i]));
      }
    }
  }
}

/* Rows [0, n) of V into the lanes of M queries (a constant once inlined:
 * the broadcast probabilities stay in registers). */
static inline __attribute__((always_inline)) void
accum_rows(const int M, const float *p, size_t p_stride, const nc_fp16 *v,
           size_t v_stride, int32_t j0, int32_t n, int32_t hdv, float *lanes,
           size_t l_stride) {
  for (int32_t j = 0; j < n; j++) {
    const nc_fp16 *vr = v + (size_t)j * v_stride;
    float *ln = lanes + (size_t)((j0 + j) % NC_ATTN_LANES) * (size_t)hdv;
    __m512 pj[MQ];
#pragma GCC unroll 4
    for (int i = 0; i < M; i++)
      pj[i] = _mm512_set1_ps(p[(size_t)i * p_stride + (size_t)j]);
    for (int32_t d = 0; d < hdv; d += NC_ATTN_LANES) {
      const __m512 vz =
          _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vr + d)));
#pragma GCC unroll 4
      for (int i = 0; i < M; i++) {
        float *li = ln + (size_t)i * l_stride + d;
        _mm512_storeu_ps(li, _mm512_fmadd_ps(pj[i], vz, _mm512_loadu_ps(li)));
      }
    }
  }
}

static void accum_v_avx512(const float *p, int32_t m, size_t p_stride,
                           const nc_fp16 *v, size_t v_stride, int32_t j0,
                           int32_t n, int32_t hdv, const float *tab,
                           float *lanes, size_t l_stride) {
  if (hdv % NC_ATTN_LANES != 0) {
    nc_attn_kernels_avx2()->accum_v(p, m, p_stride, v, v_stride, j0, n, hdv,
                                    tab, lanes, l_stride);
    return;
  }
  for (int32_t i0 = 0; i0 < m; i0 += MQ) {
    const float *pb = p + (size_t)i0 * p_stride;
    float *lb = lanes + (size_t)i0 * l_stride;
    switch (m - i0 < MQ ? m - i0 : MQ) {
    case 4:
      accum_rows(4, pb, p_stride, v, v_stride, j0, n, hdv, lb, l_stride);
      break;
    case 3:
      accum_rows(3, pb, p_stride, v, v_stride, j0, n, hdv, lb, l_stride);
      break;
    case 2:
      accum_rows(2, pb, p_stride, v, v_stride, j0, n, hdv, lb, l_stride);
      break;
    default:
      accum_rows(1, pb, p_stride, v, v_stride, j0, n, hdv, lb, l_stride);
      break;
    }
  }
}

/* One lane pass of accum_v_blocks: lane l's rows (positions j0 + j = l
 * mod 16) into M queries' lanes, DC x 16 values from d0, the lane held in
 * registers across the rows. Rows come from the F16 blocks, or (vw not
 * NULL: accum_v_wide) already widened, row j at vw + j * v_stride. */
static inline __attribute__((always_inline)) void
lane_pass(const int M, const int DC, const float *p, size_t p_stride,
          const nc_fp16 *const *blocks, const float *vw, int32_t bt,
          size_t v_stride, int32_t l, int32_t first, int32_t n, int32_t hdv,
          int32_t d0, float *lanes, size_t l_stride) {
  float *ln = lanes + (size_t)l * (size_t)hdv + (size_t)d0;
  __m512 acc[MQ][4];
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
#pragma GCC unroll 4
    for (int c = 0; c < DC; c++)
      acc[i][c] = _mm512_loadu_ps(ln + (size_t)i * l_stride + 16 * c);
  for (int32_t j = first; j < n; j += NC_ATTN_LANES) {
    __m512 vz[4];
    if (vw) {
      const float *vr = vw + (size_t)j * v_stride + (size_t)d0;
#pragma GCC unroll 4
      for (int c = 0; c < DC; c++)
        vz[c] = _mm512_loadu_ps(vr + 16 * c);
    } else {
      const nc_fp16 *vr =
          blocks[j / bt] + (size_t)(j % bt) * v_stride + (size_t)d0;
#pragma GCC unroll 4
      for (int c = 0; c < DC; c++)
        vz[c] =
            _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vr + 16 * c)));
    }
#pragma GCC unroll 4
    for (int i = 0; i < M; i++) {
      const __m512 pj = _mm512_set1_ps(p[(size_t)i * p_stride + (size_t)j]);
#pragma GCC unroll 4
      for (int c = 0; c < DC; c++)
        acc[i][c] = _mm512_fmadd_ps(pj, vz[c], acc[i][c]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < M; i++)
#pragma GCC unroll 4
    for (int c = 0; c < DC; c++)
      _mm512_storeu_ps(ln + (size_t)i * l_stride + 16 * c, acc[i][c]);
}

static inline __attribute__((always_inline)) void
lanes_blocks(const int M, const float *p, size_t p_stride,
             const nc_fp16 *const *blocks, const float *vw, int32_t bt,
             size_t v_stride, int32_t j0, int32_t n, int32_t hdv, float *lanes,
             size_t l_stride) {
  for (int32_t l = 0; l < NC_ATTN_LANES; l++) {
    /* the first row of lane l: (j0 + j) % 16 == l */
    const int32_t first =
        ((l - j0) % NC_ATTN_LANES + NC_ATTN_LANES) % NC_ATTN_LANES;
    if (first >= n) continue;
    int32_t d0 = 0;
    for (; d0 + 64 <= hdv; d0 += 64)
      lane_pass(M, 4, p, p_stride, blocks, vw, bt, v_stride, l, first, n, hdv,
                d0, lanes, l_stride);
    for (; d0 < hdv; d0 += 16)
      lane_pass(M, 1, p, p_stride, blocks, vw, bt, v_stride, l, first, n, hdv,
                d0, lanes, l_stride);
  }
}

/* The query groups of up to MQ of accum_v_blocks and accum_v_wide (hdv a
 * multiple of 16). */
static inline __attribute__((always_inline)) void
lanes_groups(const float *p, int32_t m, size_t p_stride,
             const nc_fp16 *const *blocks, const float *vw, int32_t bt,
             size_t v_stride, int32_t j0, int32_t n, int32_t hdv, float *lanes,
             size_t l_stride) {
  for (int32_t i0 = 0; i0 < m; i0 += MQ) {
    const float *pb = p + (size_t)i0 * p_stride;
    float *lb = lanes + (size_t)i0 * l_stride;
#define ROWS(M)                                                                \
  case M:                                                                      \
    lanes_blocks(M, pb, p_stride, blocks, vw, bt, v_stride, j0, n, hdv, lb,    \
                 l_stride);                                                    \
    break;
    switch (m - i0 < MQ ? m - i0 : MQ) {
      ROWS(4)
      ROWS(3)
      ROWS(2)
    default:
      lanes_blocks(1, pb, p_stride, blocks, vw, bt, v_stride, j0, n, hdv, lb,
                   l_stride);
      break;
    }
#undef ROWS
  }
}

static void accum_v_blocks_avx512(const float *p, int32_t m, size_t p_stride,
                                  const nc_fp16 *const *blocks, int32_t bt,
                                  size_t v_stride, int32_t j0, int32_t n,
                                  int32_t hdv, const float *tab, float *lanes,
                                  size_t l_stride) {
  if (hdv % NC_ATTN_LANES != 0) {
    for (int32_t j = 0; j < n; j += bt)
      accum_v_avx512(p + j, m, p_stride, blocks[j / bt], v_stride, j0 + j,
                     n - j < bt ? n - j : bt, hdv, tab, lanes, l_stride);
    return;
  }
  lanes_groups(p, m, p_stride, blocks, NULL, bt, v_stride, j0, n, hdv, lanes,
               l_stride);
}

static void accum_v_wide_avx512(const float *p, int32_t m, size_t p_stride,
                                const float *v, size_t v_stride, int32_t j0,
                                int32_t n, int32_t hdv, float *lanes,
                                size_t l_stride) {
  if (hdv % NC_ATTN_LANES != 0) { /* accum_v's arithmetic, one at a time */
    for (int32_t i = 0; i < m; i++)
      for (int32_t j = 0; j < n; j++) {
        float *ln = lanes + (size_t)i * l_stride +
                    (size_t)((j0 + j) % NC_ATTN_LANES) * (size_t)hdv;
        const float pj = p[(size_t)i * p_stride + (size_t)j];
        for (int32_t d = 0; d < hdv; d++)
          ln[d] = fmaf(pj, v[(size_t)j * v_stride + (size_t)d], ln[d]);
      }
    return;
  }
  lanes_groups(p, m, p_stride, NULL, v, 1, v_stride, j0, n, hdv, lanes,
               l_stride);
}

/* The AVX2 build's softmax with 16 lanes per instruction: one register is
 * one 16-score group of the sum. */
static void softmax_avx512(float *s, int32_t n, float scale, float sink,
                           const float *tab) {
  (void)tab;
  const __m512 vs = _mm512_set1_ps(scale);
  /* max_ps(x, m) = x > m ? x : m per lane, as the plain loop's test (only
   * which zero wins may differ; e^(s - max) is 1 for s = +-0 either way). */
  __m512 vm = _mm512_set1_ps(-INFINITY);
  int32_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(s + j), vs);
    _mm512_storeu_ps(s + j, x);
    vm = _mm512_max_ps(x, vm);
  }
  float lane[16];
  _mm512_storeu_ps(lane, vm);
  float max = -INFINITY;
  for (int i = 0; i < 16; i++)
    if (lane[i] > max) max = lane[i];
  for (; j < n; j++) {
    s[j] *= scale;
    if (s[j] > max) max = s[j];
  }
  max = nc_attn_sink_max(max, sink);
  const __m512 vmax = _mm512_set1_ps(max);
  double sum = 0.0;
  int32_t j0 = 0;
  for (; j0 + 16 <= n; j0 += 16) {
    const __m512 e =
        nc_v16_expf_ggml(_mm512_sub_ps(_mm512_loadu_ps(s + j0), vmax));
    _mm512_storeu_ps(s + j0, e);
    sum += (double)nc_v16_sum_tree(nc_v16_lo(e), nc_v16_hi(e));
  }
  if (j0 < n) {
    /* The partial group: padding lanes hold max (e^0: the fast path), then
     * are zeroed as the plain loop's. */
    const __mmask16 k = (__mmask16)((1u << (n - j0)) - 1);
    const __m512 x = _mm512_mask_loadu_ps(vmax, k, s + j0);
    const __m512 e =
        _mm512_maskz_mov_ps(k, nc_v16_expf_ggml(_mm512_sub_ps(x, vmax)));
    _mm512_mask_storeu_ps(s + j0, k, e);
    sum += (double)nc_v16_sum_tree(nc_v16_lo(e), nc_v16_hi(e));
  }
  sum += nc_attn_sink_term(max, sink);
  const float inv = (float)(1.0 / sum);
  const __m512 vi = _mm512_set1_ps(inv);
  for (j = 0; j + 16 <= n; j += 16)
    _mm512_storeu_ps(
        s + j, nc_v16_round_f16(_mm512_mul_ps(_mm512_loadu_ps(s + j), vi)));
  if (j < n) {
    const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(k, s + j);
    _mm512_mask_storeu_ps(s + j, k, nc_v16_round_f16(_mm512_mul_ps(x, vi)));
  }
}

/* nc_attn_lanes_reduce, 16 values of d per register: vertical adds in the
 * tree's order (lane l + 8, then + 4, + 2, + 1). */
static void reduce_avx512(const float *lanes, int32_t hdv, float *out) {
  if (hdv % NC_ATTN_LANES != 0) {
    nc_attn_kernels_avx2()->reduce(lanes, hdv, out);
    return;
  }
  for (int32_t d = 0; d < hdv; d += NC_ATTN_LANES) {
    __m512 a[8];
    for (int l = 0; l < 8; l++)
      a[l] = _mm512_add_ps(_mm512_loadu_ps(lanes + (size_t)l * hdv + d),
                           _mm512_loadu_ps(lanes + (size_t)(l + 8) * hdv + d));
    for (int l = 0; l < 4; l++)
      a[l] = _mm512_add_ps(a[l], a[l + 4]);
    for (int l = 0; l < 2; l++)
      a[l] = _mm512_add_ps(a[l], a[l + 2]);
    _mm512_storeu_ps(out + d, _mm512_add_ps(a[0], a[1]));
  }
}

static void scores_t_avx512(const float *q, int32_t m, const float *kt,
                            int32_t n, int32_t hd, float *out,
                            size_t out_stride) {
  /* Block-outer: a block (16 * hd floats) stays in L1 for all m queries. */
  for (int32_t j = 0; j < n; j += 16) {
    const float *kb = kt + (size_t)j * (size_t)hd; /* block j / 16 */
    const int32_t nk = n - j < 16 ? n - j : 16;
    for (int32_t i = 0; i < m; i++) {
      const float *qi = q + (size_t)i * (size_t)hd;
      __m512 acc[16];
#pragma GCC unroll 16
      for (int l = 0; l < 16; l++)
        acc[l] = _mm512_setzero_ps();
      /* acc[l], lane = key: the chain over d = l, l + 16, ... */
      for (int32_t d = 0; d < hd; d += 16) {
#pragma GCC unroll 16
        for (int l = 0; l < 16; l++)
          acc[l] = _mm512_fmadd_ps(_mm512_set1_ps(qi[d + l]),
                                   _mm512_load_ps(kb + (size_t)(d + l) * 16),
                                   acc[l]);
      }
      /* nc_sum16_tree per key: l + 8, + 4, + 2, + 1 */
#pragma GCC unroll 8
      for (int l = 0; l < 8; l++)
        acc[l] = _mm512_add_ps(acc[l], acc[l + 8]);
#pragma GCC unroll 4
      for (int l = 0; l < 4; l++)
        acc[l] = _mm512_add_ps(acc[l], acc[l + 4]);
#pragma GCC unroll 2
      for (int l = 0; l < 2; l++)
        acc[l] = _mm512_add_ps(acc[l], acc[l + 2]);
      _mm512_mask_storeu_ps(out + (size_t)i * out_stride + (size_t)j,
                            (__mmask16)((1u << nk) - 1),
                            _mm512_add_ps(acc[0], acc[1]));
    }
  }
}

static const nc_attn_kernels AVX512 = {
    .name = "avx512",
    .scores = scores_avx512,
    .scores_t = scores_t_avx512,
    .accum_v = accum_v_avx512,
    .accum_v_blocks = accum_v_blocks_avx512,
    .accum_v_wide = accum_v_wide_avx512,
    .softmax = softmax_avx512,
    .reduce = reduce_avx512,
};

const nc_attn_kernels *nc_attn_kernels_avx512(void) {
  return &AVX512;
}
#else
#include "attn_kernel.h"

const nc_attn_kernels *nc_attn_kernels_avx512(void) {
  return NULL;
}
#endif
