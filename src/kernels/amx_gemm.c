/* amx_gemm: the amx table's matmuls (many weight rows x many activation
 * rows: prefill and batches) for Q4_0, Q4_1 and Q8_0 on the CPU's tile
 * matrix unit (AMX-INT8), in block order (ref_block.c), the order of
 * llama.cpp's AMX build. Fewer than NC_AMX_FEW_MIN_A activation rows go to
 * amx_gemv.c, up to NC_AMX_FEW_MAX_A to amx_few.c, which give the same bits.
 *
 * One tdpbssd multiplies a tile of 16 activation rows x one 32-block (A:
 * 16 rows x 32 signed bytes, contiguous in the activation tiles) by 16
 * weight rows' same block (B: 8 rows x 64
 * bytes, "VNNI" layout: row k holds dword k of each weight row) into C, the
 * 16 x 16 exact block sums. C goes to memory and AVX-512 runs the block's
 * float steps for 16 weight rows per vector, the accumulators of the 16
 * activation rows staying in registers across the blocks:
 *   acc[t] = fma((float)C[t], d_w * d_a[t], acc[t]) (+ fma(m_w, s_a[t], ..))
 * The tile unit computes block i + 1 while the vector units scale block i.
 *
 * Per 16 weight rows a panel is unpacked once (the B tiles of every block,
 * with d_w and m_w as floats), then every 16 activation rows run against
 * it. The activation tiles (per block the 16 rows' quants, then d_a and
 * s_a as floats) are built once per matmul: the forward pass has each
 * thread pack the tiles of the rows it quantized (nc_amx_pack_q8_0/_q8_1)
 * and every thread's gemm_packed read them all; the gemm entry packs its
 * own. The weights go in signed (Q4_1's nibbles as they are, Q4_0's minus 8,
 * Q8_0's raw), so tdpbssd gives the integer dots directly.
 *
 * The tile instructions and their configuration: amx_tiles.h. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "amx_tiles.h"
#include "avx512_pairs.h"
#include "ref.h"
#include "tables.h"

enum {
  RING = 4,          /* C buffers in memory (see tile_rows) */
  MAX_BLOCKS = 1024, /* n <= 32768: larger rows use the reference */
  PANEL_BLOCK = 8 * 64 + 2 * TILE * (int)sizeof(float), /* B tile, d_w, m_w */
  ACT_QUANTS = TILE * 32, /* an A tile: 16 rows x 32 quants */
  ACT_BLOCK = ACT_QUANTS + 2 * TILE * (int)sizeof(float), /* + d_a, s_a */
};

/* The panel of 16 weight rows: per block, the B tile (row k = dword k of
 * rows 0..15, signed quants) then d_w and m_w of the 16 rows as floats. */
static inline __attribute__((always_inline)) void
pack_panel(const uint8_t *w, size_t w_stride, int64_t nb, size_t bsize,
           nc_il_pair_fn pair, int offset_c, bool has_min, uint8_t *panel) {
  const __m512i hdr = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)w_stride));
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *bi = w + (size_t)i * bsize;
    uint8_t *pb = panel + (size_t)i * PANEL_BLOCK;
    __m512i v[8], t[8];
    for (int p = 0; p < 8; p++) {
      v[p] = pair(bi + (size_t)(2 * p) * w_stride,
                  bi + (size_t)(2 * p + 1) * w_stride);
      if (offset_c)
        v[p] = _mm512_sub_epi8(v[p], _mm512_set1_epi8((char)offset_c));
    }
    transpose_qwords(v, t);
    for (int k = 0; k < 8; k++)
      _mm512_store_si512(pb + 64 * k, t[k]);
    const __m512i h = _mm512_i32gather_epi32(hdr, bi, 1);
    float *f = (float *)(pb + 8 * 64);
    _mm512_store_ps(f, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)));
    if (has_min)
      _mm512_store_ps(f + TILE, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
                                    _mm512_srli_epi32(h, 16))));
  }
}

/* One block's float steps for the 16 activation rows of a tile: C (16 x 16
 * int32) against the panel block's d_w, m_w and the rows' d_a, s_a. */
static inline __attribute__((always_inline)) void
scale_block(__m512 acc[TILE], const int32_t *c, const uint8_t *pb,
            const float *da, const float *sa, bool has_min) {
  const float *f = (const float *)(pb + 8 * 64);
  const __m512 dw = _mm512_load_ps(f);
  const __m512 mw = has_min ? _mm512_load_ps(f + TILE) : dw;
#pragma GCC unroll 16
  for (int t = 0; t < TILE; t++) {
    const __m512 ci = _mm512_cvtepi32_ps(_mm512_load_si512(c + TILE * t));
    acc[t] =
        _mm512_fmadd_ps(ci, _mm512_mul_ps(dw, _mm512_set1_ps(da[t])), acc[t]);
    if (has_min) acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sa[t]), acc[t]);
  }
}

/* Activation tile j (act_tile, see pack_act_tile) x the panel:
 * out[t * out_stride + r], t < rows. */
static inline __attribute__((always_inline)) void
tile_rows(int64_t nb, const uint8_t *tile, const uint8_t *panel, bool has_min,
          int32_t (*cbuf)[TILE * TILE], float *out, size_t out_stride,
          int rows) {
  const float *da = (const float *)(tile + ACT_QUANTS * (size_t)nb);
  const float *sa = da + TILE * nb;
  /* the panel and the activation tiles are written: the tile loads below
   * read them (see TILE_LOAD) */
  __asm__ volatile("" ::: "memory");
  __m512 acc[TILE];
#pragma GCC unroll 16
  for (int t = 0; t < TILE; t++)
    acc[t] = _mm512_setzero_ps();
#define BLOCK_TILES(c, at, bt, i)                                              \
  do {                                                                         \
    TILE_LOAD(at, tile + (size_t)(i)*ACT_QUANTS, 32);                          \
    TILE_LOAD(bt, panel + (size_t)(i)*PANEL_BLOCK, 64);                        \
    TILE_ZERO(c);                                                              \
    TILE_DPBSSD(c, at, bt);                                                    \
  } while (0)
#define SCALE(k)                                                               \
  scale_block(acc, cbuf[(k) % RING], panel + (size_t)(k)*PANEL_BLOCK,          \
              da + TILE * (k), sa + TILE * (k), has_min)
  NC_TILE_PIPELINE(nb, RING, cbuf, BLOCK_TILES, SCALE);
#undef SCALE
#undef BLOCK_TILES
  for (int t = 0; t < rows; t++)
    _mm512_storeu_ps(out + (size_t)t * out_stride, acc[t]);
}

/* Activation rows a0 .. a0 + 15 (zero past na) as one activation tile:
 * per block, the 16 rows' 32 quants contiguous (the A tile, 512 bytes:
 * whole cache lines, where the rows' own blocks would fill half of 16);
 * then d_a and s_a by [block][16], one header gather per block. */
static void pack_act_tile(const uint8_t *a, size_t a_stride, int64_t a0,
                          int64_t na, int64_t nb, size_t abytes, size_t aq,
                          bool has_min, uint8_t *tile) {
  const int rows = na - a0 >= TILE ? TILE : (int)(na - a0);
  const __mmask16 live = (__mmask16)((1u << rows) - 1);
  const __m512i idx = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32((int)a_stride));
  const uint8_t *base = a + (size_t)a0 * a_stride;
  float *da = (float *)(tile + ACT_QUANTS * (size_t)nb), *sa = da + TILE * nb;
  for (int64_t i = 0; i < nb; i++) {
    const uint8_t *bi = base + (size_t)i * abytes;
    uint8_t *q = tile + (size_t)i * ACT_QUANTS;
    for (int t = 0; t < TILE; t++)
      _mm256_store_si256(
          (__m256i *)(q + 32 * t),
          t < rows ? _mm256_loadu_si256(
                         (const __m256i *)(bi + (size_t)t * a_stride + aq))
                   : _mm256_setzero_si256());
    const __m512i h =
        _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, idx, bi, 1);
    _mm512_store_ps(da + TILE * i, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)));
    _mm512_store_ps(sa + TILE * i, has_min
                                       ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(
                                             _mm512_srli_epi32(h, 16)))
                                       : _mm512_setzero_ps());
  }
}

size_t nc_amx_act_tiles_bytes(int64_t n, int64_t na) {
  const int64_t nb = n / 32;
  if (na <= NC_AMX_FEW_MAX_A || n % 32 || nb < 1 || nb > MAX_BLOCKS) return 0;
  return (size_t)ACT_BLOCK * (size_t)nb * (size_t)((na + TILE - 1) / TILE);
}

/* The activation tiles holding rows [r0, r1) of na (r0 a multiple of 16),
 * each at its place in the layout of all of them. */
static void pack_tiles(int64_t n, const uint8_t *a, size_t a_stride, int64_t na,
                       int64_t r0, int64_t r1, bool has_min, uint8_t *tiles) {
  const int64_t nb = n / 32;
  const size_t abytes = has_min ? sizeof(block_q8_1) : sizeof(block_q8_0);
  const size_t aq = has_min ? 4 : 2;
  const size_t tile_bytes = ACT_BLOCK * (size_t)nb;
  if (r1 > na) r1 = na;
  for (int64_t j = r0 / TILE; j * TILE < r1; j++)
    pack_act_tile(a, a_stride, j * TILE, na, nb, abytes, aq, has_min,
                  tiles + tile_bytes * (size_t)j);
}

void nc_amx_pack_q8_0(int64_t n, const void *a, size_t a_stride, int64_t na,
                      int64_t r0, int64_t r1, void *tiles) {
  pack_tiles(n, a, a_stride, na, r0, r1, false, tiles);
}

void nc_amx_pack_q8_1(int64_t n, const void *a, size_t a_stride, int64_t na,
                      int64_t r0, int64_t r1, void *tiles) {
  pack_tiles(n, a, a_stride, na, r0, r1, true, tiles);
}

/* Weight rows x the packed activation tiles (NULL: none, the reference
 * takes every row); rows past the last whole 16 go to the reference. */
static inline __attribute__((always_inline)) void
gemm_tiles(int64_t n, const void *wv, size_t w_stride, int64_t nw,
           const void *a, size_t a_stride, const uint8_t *tiles, int64_t na,
           float *out, size_t out_stride, size_t bsize, nc_il_pair_fn pair,
           bool has_min, int offset_c, nc_vec_dot_rows_fn fallback) {
  const int64_t nb = n / 32;
  const uint8_t *w = wv;
  const int64_t n_tiles = (na + TILE - 1) / TILE;
  const size_t panel_bytes = PANEL_BLOCK * (size_t)nb;
  const size_t tile_bytes = ACT_BLOCK * (size_t)nb;
  const size_t c_bytes = RING * sizeof(int32_t) * TILE * TILE;
  uint8_t *mem = NULL;
  int64_t r = 0;
  if (tiles && nw >= TILE) mem = aligned_alloc(64, panel_bytes + c_bytes);
  if (mem) {
    uint8_t *panel = mem;
    int32_t(*cbuf)[TILE * TILE] = (void *)(mem + panel_bytes);
    tiles_configure(32);
    for (; r + TILE <= nw; r += TILE) {
      pack_panel(w + (size_t)r * w_stride, w_stride, nb, bsize, pair, offset_c,
                 has_min, panel);
      for (int64_t j = 0; j < n_tiles; j++)
        tile_rows(nb, tiles + tile_bytes * (size_t)j, panel, has_min, cbuf,
                  out + (size_t)(j * TILE) * out_stride + (size_t)r, out_stride,
                  tile_live_rows(na, j));
    }
    tiles_release();
    free(mem);
  }
  for (; r < nw; r++)
    fallback(n, w + (size_t)r * w_stride, a, a_stride, (int)na, out + r,
             out_stride);
}

/* The gemm entry for callers without shared tiles: packs its own. */
static inline __attribute__((always_inline)) void
gemm(int64_t n, const void *w, size_t w_stride, int64_t nw, const void *a,
     size_t a_stride, int64_t na, float *out, size_t out_stride, size_t bsize,
     nc_il_pair_fn pair, bool has_min, int offset_c,
     nc_vec_dot_rows_fn fallback) {
  const size_t bytes = nw >= TILE ? nc_amx_act_tiles_bytes(n, na) : 0;
  uint8_t *tiles = bytes ? aligned_alloc(64, bytes) : NULL;
  if (tiles) pack_tiles(n, a, a_stride, na, 0, na, has_min, tiles);
  gemm_tiles(n, w, w_stride, nw, a, a_stride, tiles, na, out, out_stride, bsize,
             pair, has_min, offset_c, fallback);
  free(tiles);
}

void nc_amx_gemm_q4_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int64_t na, float *out,
                      size_t out_stride) {
  if (na < NC_AMX_FEW_MIN_A && na <= NC_AMX_GEMV_MAX_A) {
    nc_amx_gemv_q4_0(n, w, w_stride, nw, a, a_stride, (int)na, out, out_stride);
    return;
  }
  if (na <= NC_AMX_FEW_MAX_A) {
    nc_amx_few_q4_0(n, w, w_stride, nw, a, a_stride, (int)na, out, out_stride);
    return;
  }
  gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q4_0),
       nc_il_pair_q4_0, false, 8, nc_ref_dot_blk_q4_0_rows);
}

void nc_amx_gemm_packed_q4_0(int64_t n, const void *w, size_t w_stride,
                             int64_t nw, const void *a, size_t a_stride,
                             const void *tiles, int64_t na, float *out,
                             size_t out_stride) {
  if (!tiles || na <= NC_AMX_FEW_MAX_A) {
    nc_amx_gemm_q4_0(n, w, w_stride, nw, a, a_stride, na, out, out_stride);
    return;
  }
  gemm_tiles(n, w, w_stride, nw, a, a_stride, tiles, na, out, out_stride,
             sizeof(block_q4_0), nc_il_pair_q4_0, false, 8,
             nc_ref_dot_blk_q4_0_rows);
}

void nc_amx_gemm_q8_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int64_t na, float *out,
                      size_t out_stride) {
  if (na < 2 && na <= NC_AMX_GEMV_MAX_A) {
    nc_amx_gemv_q8_0(n, w, w_stride, nw, a, a_stride, (int)na, out, out_stride);
    return;
  }
  if (na <= NC_AMX_FEW_MAX_A) {
    nc_amx_few_q8_0(n, w, w_stride, nw, a, a_stride, (int)na, out, out_stride);
    return;
  }
  gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q8_0),
       nc_il_pair_q8_0, false, 128, nc_ref_dot_blk_q8_0_rows);
}

void nc_amx_gemm_packed_q8_0(int64_t n, const void *w, size_t w_stride,
                             int64_t nw, const void *a, size_t a_stride,
                             const void *tiles, int64_t na, float *out,
                             size_t out_stride) {
  if (!tiles || na <= NC_AMX_FEW_MAX_A) {
    nc_amx_gemm_q8_0(n, w, w_stride, nw, a, a_stride, na, out, out_stride);
    return;
  }
  gemm_tiles(n, w, w_stride, nw, a, a_stride, tiles, na, out, out_stride,
             sizeof(block_q8_0), nc_il_pair_q8_0, false, 128,
             nc_ref_dot_blk_q8_0_rows);
}

void nc_amx_gemm_q4_1(int64_t n, const void *w, size_t w_stride, int64_t nw,
                      const void *a, size_t a_stride, int64_t na, float *out,
                      size_t out_stride) {
  if (na < NC_AMX_FEW_MIN_A && na <= NC_AMX_GEMV_MAX_A) {
    nc_amx_gemv_q4_1(n, w, w_stride, nw, a, a_stride, (int)na, out, out_stride);
    return;
  }
  if (na <= NC_AMX_FEW_MAX_A) {
    nc_amx_few_q4_1(n, w, w_stride, nw, a, a_stride, (int)na, out, out_stride);
    return;
  }
  gemm(n, w, w_stride, nw, a, a_stride, na, out, out_stride, sizeof(block_q4_1),
       nc_il_pair_q4_1, true, 0, nc_ref_dot_blk_q4_1_rows);
}

void nc_amx_gemm_packed_q4_1(int64_t n, const void *w, size_t w_stride,
                             int64_t nw, const void *a, size_t a_stride,
                             const void *tiles, int64_t na, float *out,
                             size_t out_stride) {
  if (!tiles || na <= NC_AMX_FEW_MAX_A) {
    nc_amx_gemm_q4_1(n, w, w_stride, nw, a, a_stride, na, out, out_stride);
    return;
  }
  gemm_tiles(n, w, w_stride, nw, a, a_stride, tiles, na, out, out_stride,
             sizeof(block_q4_1), nc_il_pair_q4_1, true, 0,
             nc_ref_dot_blk_q4_1_rows);
}
