/* attn_flash: flash attention over F16 keys and values in the float order of
 * llama.cpp's CPU flash attention for one query row
 * (ggml_compute_forward_flash_attn_ext_f16_one_chunk with an F16 cache, x86
 * AVX-512 build):
 *
 *   q rounded to F16; per visible key j, in position order:
 *     s = dot(q, k_j)                 ggml_vec_dot_f16: 4 x 16 lanes, each a
 *                                     chain of fused multiply-adds over
 *                                     d = 64 i + 16 r + l; lanes r=0+2, 1+3,
 *                                     then 0+1, then the 16-lane halving tree;
 *                                     a tail past a multiple of 64 adds its
 *                                     products in double
 *     s = s * scale'                  scale' = scale / softcap with a softcap
 *     s = softcap * tanhf(s)          only with a softcap
 *     if s > M: ms = expf(M - s), M = s, acc = f16(acc * ms), vs = 1
 *     else:     ms = 1, vs = expf(s - M)
 *     acc = f16(fma(v_j, vs, acc))    the F16 value accumulator
 *     S = fma(S, ms, vs)
 *   out = f32(acc) * (S == 0 ? 0 : 1 / S)
 *
 * Keys that are masked out (past the row's position, outside a sliding
 * window) are skipped, as llama.cpp skips -INF mask entries, so the caller
 * passes only the visible keys, a tile at a time: no score row is longer
 * than a tile. The state (M, S, acc) carries from tile to tile, and every
 * result is a function of its own row only (batch and thread invariant).
 *
 * Two builds, plain C and AVX-512, give identical bits for finite inputs
 * (fmaf is exactly rounded, half <-> float conversions round to nearest
 * even in both). */
#ifndef NC_ATTN_FLASH_H
#define NC_ATTN_FLASH_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/quant.h"

/* The queries of one call: m rows of hd halves (q + i * hd), all reading the
 * same K and V (the heads of one GQA group). */
typedef struct nc_flash_query {
  const nc_fp16 *q;
  int32_t m, hd, hdv;
  float scale;   /* applied to q.k */
  float softcap; /* 0: none */
} nc_flash_query;

/* Per query: the running maximum M, sum S and the F16 accumulator of hdv
 * halves (or, for a V that is not F16, the F32 accumulator acc32).
 * nc_flash_state_init sets M = -INF, S = 0 and the accumulators that are
 * not NULL to 0. */
typedef struct nc_flash_state {
  float *M, *S; /* m each */
  nc_fp16 *acc; /* m * hdv: query i at acc + i * hdv */
  float *acc32; /* m * hdv, the same way (typed tiles, V not F16) */
} nc_flash_state;

/* ---- typed caches (llama.cpp's --cache-type-k/-v: F16, BF16, Q8_0, Q4_0)
 *
 * The one-row path of llama.cpp with other cache types (it takes that path
 * for every batch when K or V is not F16/F32: its tiled and split-key
 * paths are for F16/F32 only):
 *
 *   q converted to K's vec_dot_type (nc_flash_q_type: F16, BF16, or Q8_0
 *   as its x86 quantize_row_q8_0 rounds), s = vec_dot(k_j, q) in its x86
 *   order (nc_flash_dot_typed), score as above;
 *   V F16: the F16 accumulator as above;
 *   V other: an F32 accumulator: on a new maximum acc = acc * ms, else
 *   vs = expf(s - M); acc = fma(dequant(v_j), vs, acc) (ggml_vec_mad_f32;
 *   dequantization is exact in float); S = fma(S, ms, vs); out = acc * 1/S.
 */
typedef struct nc_flash_tquery {
  const void *q; /* m rows in nc_flash_q_type(k_type), q_bytes apart */
  size_t q_bytes;
  int32_t m, hd, hdv;
  float scale, softcap;
  nc_type k_type, v_type;
} nc_flash_tquery;

/* ---- the prompt order: llama.cpp's tiled path
 * (ggml_compute_forward_flash_attn_ext_tiled, F16 K and V), which it takes
 * for the rows of a micro-batch of 64 or more (batch.h): keys in tiles of
 * NC_FLASH_KTILE aligned to absolute positions (its cache cells), and per
 * query row and tile, in this order:
 *
 *   s_j = fma chain over d = 0..hd-1 of q[d] * f32(k_j[d]), from 0
 *         (q in F32, as the forward has it: not rounded to F16)
 *   s_j = s_j * scale' (softcap: softcap * tanhf(s_j * scale / softcap)),
 *         -INF for keys the row does not see
 *   Mt = max_j s_j; no key seen: the tile is skipped
 *   Mn = fmaxf(M, Mt); if Mn > M: ms = expf(M - Mn), acc *= ms, S *= ms
 *   M = Mn; p_j = nc_expf_ggml(s_j - M) (0 for keys not seen)
 *   S = (float)((double)S + sum over the 4 groups of 16 keys, in double,
 *       of each group's nc_sum16_tree)
 *   acc[d] = fma(f32(v_j[d]), p_j, acc[d]) for j in tile order (F32)
 *   out = acc * (S == 0 ? 0 : 1 / S)
 *
 * A row's result depends on its own q, keys and visible range only.
 * Plain C and AVX-512 builds give identical bits. */
enum { NC_FLASH_KTILE = 64 };

/* m query rows against one key tile; every row reads the same K and V
 * head. Row i sees tile keys [lo[i], hi[i]) (0 <= lo, hi <= NC_FLASH_KTILE;
 * lo >= hi: none, the row is left alone). */
typedef struct nc_flash_rows {
  const float *const *q; /* m pointers to hd floats */
  const int32_t *lo, *hi;
  int32_t m, hd, hdv;
  float scale, softcap;
} nc_flash_rows;

/* The state of m rows: M, S (m each), acc (m * hdv floats, row i at
 * acc + i * hdv). Start: M = -INF, S = 0, acc = 0. */
typedef struct nc_flash_tstate {
  float *M, *S, *acc;
} nc_flash_tstate;

/* ---- the prompt order taken apart, for the rows of a decode: one row's
 * work spread over threads with tile_prompt's bits (forward_flash_rows.c).
 * tile_prompt's steps per tile, in three passes over all of a row's tiles:
 *
 *   scores   per tile: the scores of its keys (tile_scores); each score is
 *            a function of its own key, so the tiles may go to any thread;
 *   weights  per query, tile after tile: Mn = fmaxf(M, the tile's maximum);
 *            ms = expf(M - Mn) when Mn > M (else 1), M = Mn; the weights
 *            p_j = nc_expf_ggml(s_j - M) and the tile's sum (tile_exps);
 *            S = (float)((double)(S * ms) + the tile's sum), S * ms only
 *            when Mn > M;
 *   values   per dim, tile after tile: acc *= ms when Mn > M, then
 *            acc = fma(v_j, p_j, acc) (tile_values); every dim is its own
 *            chain, so the dims may go to any thread.
 *
 * Values come straight from the paged F16 cache: row j of a call is at
 * blk[(j0 + j) / bt] + off + ((j0 + j) % bt) * stride halves. */
typedef struct nc_flash_paged {
  const nc_fp16 *const *blk;
  size_t off, stride;
  int32_t j0, bt;
} nc_flash_paged;

/* The values step of m queries over keys [j0, j1) of one tile (j counted
 * from the tile's start, the paged rows' j0 its first key): query i's
 * weights at p + i * p_stride (p_stride >= j1), its factor ms[i] applied
 * first when not 1; the dims [d0, d1) of its F32 accumulator at acc + i *
 * acc_stride. */
typedef struct nc_flash_tvals {
  const float *p, *ms;
  size_t p_stride;
  int32_t m, j0, j1, d0, d1;
  /* groups (>= 1) of m queries, each its KV head's: group g's weights at
   * p + g * p_group, factors at ms + g * ms_group, accumulators at acc + g
   * * acc_group, values v_group halves further along the rows (a decode
   * row's KV heads in one call: more chains to hide the fma's latency). */
  int32_t groups;
  size_t p_group, ms_group, acc_group, v_group;
} nc_flash_tvals;

typedef struct nc_attn_flash_kernels {
  const char *name;
  /* n keys and values (k + j * k_stride, v + j * v_stride halves), in
   * position order, folded into every query's state; s: m * n floats of
   * scratch (the tile's scores). tab maps half bits to float. */
  void (*tile)(const nc_flash_query *fq, const nc_fp16 *k, size_t k_stride,
               const nc_fp16 *v, size_t v_stride, int32_t n, const float *tab,
               float *s, nc_flash_state *st);
  /* The same over typed rows: k + j * k_stride, v + j * v_stride bytes, in
   * fq->k_type / fq->v_type; vrow: hdv floats of scratch. */
  void (*tile_typed)(const nc_flash_tquery *fq, const uint8_t *k,
                     size_t k_stride, const uint8_t *v, size_t v_stride,
                     int32_t n, const float *tab, float *s, float *vrow,
                     nc_flash_state *st);
  /* The prompt order: one key tile folded into m rows' state. kt: the
   * tile's keys as F32, transposed (kt[d * NC_FLASH_KTILE + j], hd rows);
   * v: its values as F32 (v[j * hdv + d]); keys no row sees may hold any
   * finite values. p: m * NC_FLASH_KTILE floats of scratch. */
  void (*tile_prompt)(const nc_flash_rows *r, const float *kt, const float *v,
                      float *p, nc_flash_tstate *st);
  /* The decode passes' steps (above). tile_scores: tile_prompt's scores
   * of r's rows (kt as there) into p + i * NC_FLASH_KTILE, -INF for keys
   * the row does not see; tmax[i] = their maximum (-INF: none seen). */
  void (*tile_scores)(const nc_flash_rows *r, const float *kt, float *p,
                      float *tmax);
  /* p[j] = nc_expf_ggml(p[j] - M) for j in [lo, hi), 0 for the other j of
   * the tile; returns the tile's sum as tile_prompt adds it to S (the 4
   * groups of 16 each summed by nc_sum16_tree, the groups in double). */
  double (*tile_exps)(float *p, int32_t lo, int32_t hi, float M);
  /* The values step (nc_flash_tvals) over v's rows. */
  void (*tile_values)(const nc_flash_tvals *a, const nc_flash_paged *v,
                      const float *tab, float *acc, size_t acc_stride);
  /* The prompt order's operands: n consecutive keys and values (k + j *
   * k_stride, v + j * v_stride halves, hd and hdv each) widened to F32, key
   * j into column j of kt (kt[d * NC_FLASH_KTILE + j]) and row j of vt
   * (vt[j * hdv + d]); the caller points kt and vt at the keys' place in
   * the tile (n <= NC_FLASH_KTILE minus that column). */
  void (*tile_widen)(const nc_fp16 *k, size_t k_stride, const nc_fp16 *v,
                     size_t v_stride, int32_t n, int32_t hd, int32_t hdv,
                     const float *tab, float *kt, float *vt);
} nc_attn_flash_kernels;

const nc_attn_flash_kernels *nc_attn_flash_plain(void);
const nc_attn_flash_kernels *nc_attn_flash_avx512(void); /* NULL: not built */

void nc_flash_state_init(nc_flash_state *st, int32_t m, int32_t hdv);
/* out + i * out_stride = query i's result (hdv floats). sinks: NULL, or m
 * attention sinks (gpt-oss: a learned logit in the denominator only), one
 * per query, folded in after the keys as llama.cpp's flash paths do
 * (nc_flash_fold_sink). */
void nc_flash_finish(const nc_flash_state *st, int32_t m, int32_t hdv,
                     const float *tab, const float *sinks, float *out,
                     size_t out_stride);
/* A sink folded into a row's state (M, *S) after its keys: with sink > M,
 * ms = expf(M - sink) and vs = 1, else ms = 1 and vs = expf(sink - M);
 * *S = fma(*S, ms, vs). Returns ms, by which the row's F32 accumulator is
 * then scaled (before the division by S). */
float nc_flash_fold_sink(float sink, float M, float *S);

/* The plain prompt-order tile (attn_flash_prompt.c), for the SIMD builds'
 * fallbacks and tests; and the finish of its state. */
void nc_flash_tile_prompt_plain(const nc_flash_rows *r, const float *kt,
                                const float *v, float *p, nc_flash_tstate *st);
/* The AVX-512 build (attn_flash_prompt_avx512.c; x86 builds only). */
void nc_flash_tile_prompt_avx512(const nc_flash_rows *r, const float *kt,
                                 const float *v, float *p, nc_flash_tstate *st);
/* tile_widen's plain and AVX-512 builds: the same floats for every half
 * but a signaling NaN, which the cache never holds (vcvtph2ps quiets it). */
void nc_flash_tile_widen_plain(const nc_fp16 *k, size_t k_stride,
                               const nc_fp16 *v, size_t v_stride, int32_t n,
                               int32_t hd, int32_t hdv, const float *tab,
                               float *kt, float *vt);
void nc_flash_tile_widen_avx512(const nc_fp16 *k, size_t k_stride,
                                const nc_fp16 *v, size_t v_stride, int32_t n,
                                int32_t hd, int32_t hdv, const float *tab,
                                float *kt, float *vt);
void nc_flash_tstate_init(nc_flash_tstate *st, int32_t m, int32_t hdv);
/* The decode passes' steps, plain (attn_flash_prompt.c), for the SIMD
 * builds' fallbacks and tests; and the AVX-512 build's (x86 builds only). */
void nc_flash_tile_scores_plain(const nc_flash_rows *r, const float *kt,
                                float *p, float *tmax);
double nc_flash_tile_exps_plain(float *p, int32_t lo, int32_t hi, float M);
void nc_flash_tile_values_plain(const nc_flash_tvals *a,
                                const nc_flash_paged *v, const float *tab,
                                float *acc, size_t acc_stride);
void nc_flash_tile_scores_avx512(const nc_flash_rows *r, const float *kt,
                                 float *p, float *tmax);
double nc_flash_tile_exps_avx512(float *p, int32_t lo, int32_t hi, float M);
void nc_flash_tile_values_avx512(const nc_flash_tvals *a,
                                 const nc_flash_paged *v, const float *tab,
                                 float *acc, size_t acc_stride);
/* Row j of paged rows (nc_flash_paged). */
static inline const nc_fp16 *nc_flash_paged_row(const nc_flash_paged *pg,
                                                int32_t j) {
  const int32_t p = pg->j0 + j;
  return pg->blk[p / pg->bt] + pg->off + (size_t)(p % pg->bt) * pg->stride;
}

/* ---- the split prompt order: the prompt order's steps over each chunk of
 * NC_FLASH_SPLIT_KEYS keys aligned to absolute positions, from a fresh
 * state (M = -INF, S = 0, acc = 0), the chunks' states then folded into
 * the row's in position order:
 *
 *   a chunk that saw no key (Mc = -INF): nothing;
 *   the first that saw one: M, S, acc = its own;
 *   else Mn = fmaxf(M, Mc), a = expf(M - Mn), b = expf(Mc - Mn),
 *        S = S * a + Sc * b, acc[d] = acc[d] * a + acc_c[d] * b (each
 *        product rounded, then the sum: no fused multiply-add), M = Mn.
 *
 * So a row's chunks may be computed anywhere (other threads, other work
 * items) and its bits stay a function of its own keys; a row whose keys lie
 * in one chunk gets the prompt order's bits. */
enum { NC_FLASH_SPLIT_KEYS = 4 * NC_FLASH_KTILE };

/* Folds rows [0, m) of part (one chunk's state) into st, as above. */
void nc_flash_tstate_fold(const nc_flash_tstate *st,
                          const nc_flash_tstate *part, int32_t m, int32_t hdv);
void nc_flash_tfinish(const nc_flash_tstate *st, int32_t m, int32_t hdv,
                      const float *sinks, float *const *out);

/* Typed caches (attn_flash_typed.c). The format q takes for a K type. */
nc_type nc_flash_q_type(nc_type k_type);
/* vec_dot(k, q) of hd elements in llama.cpp's x86 order for k_type (q in
 * nc_flash_q_type(k_type)): F16 as nc_flash_dot_f16; Q8_0 and Q4_0 per
 * 32-block 8 int32 lanes (elements 4l..4l+3) fused-multiply-added with
 * d_k * d_q, lanes summed (l + l+4), (0+2, 1+3), then the two; BF16 as
 * AVX512-BF16's vdpbf16ps (lane l: odd pair product, then even, each one
 * rounding; two 16-lane accumulators over halves of 64, each summed by
 * the 16-lane tree into a double). */
float nc_flash_dot_typed(nc_type k_type, const void *k, const void *q,
                         int32_t hd, const float *tab);
/* The AVX-512 typed tile (attn_flash_typed_avx512.c; x86 builds only):
 * Q8_0/Q4_0 keys and values, the rest through the plain one. */
void nc_flash_tile_typed_avx512(const nc_flash_tquery *fq, const uint8_t *k,
                                size_t k_stride, const uint8_t *v,
                                size_t v_stride, int32_t n, const float *tab,
                                float *s, float *vrow, nc_flash_state *st);
/* The finish for a typed tile's state (acc32 unless v_type is F16). */
void nc_flash_finish_typed(const nc_flash_state *st, nc_type v_type, int32_t m,
                           int32_t hdv, const float *tab, const float *sinks,
                           float *out, size_t out_stride);
/* The plain typed tile, for the SIMD builds' fallbacks and tests. */
void nc_flash_tile_typed_plain(const nc_flash_tquery *fq, const uint8_t *k,
                               size_t k_stride, const uint8_t *v,
                               size_t v_stride, int32_t n, const float *tab,
                               float *s, float *vrow, nc_flash_state *st);

/* The steps of the plain build, for the SIMD builds' tails and tests. */
float nc_flash_dot_f16(const nc_fp16 *x, const nc_fp16 *y, int32_t n,
                       const float *tab);
float nc_flash_score(float dot, float scale, float softcap);

#endif
