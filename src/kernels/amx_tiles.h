/* amx_tiles.h: the tile matrix unit (AMX-INT8) for the amx kernels
 * (amx_gemm.c, amx_few.c, amx_kquant.c): its instructions, its configuration,
 * and the qword transpose that builds B tiles in the "VNNI" layout.
 *
 * Tile instructions are written as inline asm (see TILE_LOAD): GCC 12's
 * intrinsics tell the compiler neither that tileloadd reads memory nor
 * that ldtilecfg reads the whole 64-byte configuration. */
#ifndef NC_KERNELS_AMX_TILES_H
#define NC_KERNELS_AMX_TILES_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

enum { TILE = 16 }; /* weight rows and activation rows per tile */

/* Rows of activation tile j that hold one of the na rows (16 but in the
 * last tile). */
static inline int tile_live_rows(int64_t na, int64_t j) {
  return na - j * TILE >= TILE ? TILE : (int)(na - j * TILE);
}

/* The tile instructions' memory operands are spelled out for the
 * compiler: a tile load reads (no clobber: callers put a compiler barrier
 * after writing what the loads read, see tile_rows), a tile store writes
 * the 1 KiB of C it names. A "memory" clobber on each would make GCC keep
 * the 16 accumulators in memory, a load and a store per vector per block. */
#define TILE_LOAD(t, base, stride)                                             \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t                             \
                   :                                                           \
                   : "r"(base), "r"((long)(stride)))
#define TILE_STORE_STRIDE(t, c, stride)                                        \
  __asm__ volatile("tilestored %%tmm" #t ", (%1,%2,1)"                         \
                   : "=m"(*(int32_t(*)[TILE * TILE])(c))                       \
                   : "r"(c), "r"((long)(stride)))
#define TILE_STORE(t, c) TILE_STORE_STRIDE(t, c, 64)
#define TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define TILE_DPBSSD(c, a, b)                                                   \
  __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

/* The tile pipeline of the amx gemms: steps 0 .. n - 1 alternate between
 * two tile sets (C, A, B = tmm0, tmm4, tmm6 and tmm1, tmm5, tmm7).
 * STEP(c, a, b, s) issues step s's tile loads and tdpbssd; its C goes to
 * cbuf[s % ring] and SCALE(s) reads it ring - 1 steps later: a load cannot
 * take its data from a tile store, so it waits until the store has retired
 * and written L1, and loads right after the store would stall every step. */
#define NC_TILE_PIPELINE(n, ring, cbuf, STEP, SCALE)                           \
  do {                                                                         \
    const int64_t n_ = (n), lag_ = (ring)-1;                                   \
    STEP(0, 4, 6, 0);                                                          \
    for (int64_t s_ = 0; s_ < n_; s_ += 2) {                                   \
      TILE_STORE(0, (cbuf)[s_ % (ring)]);                                      \
      if (s_ + 1 < n_) STEP(1, 5, 7, s_ + 1);                                  \
      if (s_ >= lag_) SCALE(s_ - lag_);                                        \
      if (s_ + 1 >= n_) break;                                                 \
      TILE_STORE(1, (cbuf)[(s_ + 1) % (ring)]);                                \
      if (s_ + 2 < n_) STEP(0, 4, 6, s_ + 2);                                  \
      if (s_ + 1 >= lag_) SCALE(s_ + 1 - lag_);                                \
    }                                                                          \
    for (int64_t s_ = n_ > lag_ ? n_ - lag_ : 0; s_ < n_; s_++)                \
      SCALE(s_);                                                               \
  } while (0)
/* The same with C stored at another row stride (bytes; amx_few.c: C rows
 * of 4R bytes, packed) and two products in flight: step s + 1's tdpbssd is
 * issued before step s's C is stored (the store waits for its product;
 * meanwhile the tile unit runs the next), and step s + 2 reuses step s's
 * tiles after the store. Where the float steps are few (few activation
 * rows) the tile unit bounds the loop, and the order above, which stores
 * each product right after issuing it, would wait out every product's
 * latency. */
#define NC_TILE_PIPELINE_STRIDE(n, ring, cbuf, stride, STEP, SCALE)            \
  do {                                                                         \
    const int64_t n_ = (n), lag_ = (ring)-1;                                   \
    STEP(0, 4, 6, 0);                                                          \
    if (n_ > 1) STEP(1, 5, 7, 1);                                              \
    for (int64_t s_ = 0; s_ < n_; s_ += 2) {                                   \
      TILE_STORE_STRIDE(0, (cbuf)[s_ % (ring)], stride);                       \
      if (s_ + 2 < n_) STEP(0, 4, 6, s_ + 2);                                  \
      if (s_ >= lag_) SCALE(s_ - lag_);                                        \
      if (s_ + 1 >= n_) break;                                                 \
      TILE_STORE_STRIDE(1, (cbuf)[(s_ + 1) % (ring)], stride);                 \
      if (s_ + 3 < n_) STEP(1, 5, 7, s_ + 3);                                  \
      if (s_ + 1 >= lag_) SCALE(s_ + 1 - lag_);                                \
    }                                                                          \
    for (int64_t s_ = n_ > lag_ ? n_ - lag_ : 0; s_ < n_; s_++)                \
      SCALE(s_);                                                               \
  } while (0)

/* Palette 1: tmm0, tmm1 = C (m x 16 int32), tmm4, tmm5 = A (m x k bytes),
 * tmm6, tmm7 = B (k / 4 x 64 bytes): two of each, for even and odd steps;
 * k = 32 (a 32-block) or 16 (Q6_K's 16-groups), m = 16 activation rows
 * (tiles_configure) or fewer (tiles_configure_rows: a matmul of fewer
 * rows, whose C stores and tile products then cover only those). */
typedef struct tile_config {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} tile_config;

static inline void tiles_configure_rows(int k, int m) {
  tile_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  /* tmm0..7: C, C, unused, unused, A, A, B, B */
  const uint8_t rows[8] = {
      (uint8_t)m,       (uint8_t)m,      0, 0, (uint8_t)m, (uint8_t)m,
      (uint8_t)(k / 4), (uint8_t)(k / 4)};
  const uint16_t colsb[8] = {64, 64, 0, 0, (uint16_t)k, (uint16_t)k, 64, 64};
  memcpy(cfg.rows, rows, sizeof rows);
  memcpy(cfg.colsb, colsb, sizeof colsb);
  __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

static inline void tiles_configure(int k) {
  tiles_configure_rows(k, TILE);
}

static inline void tiles_release(void) {
  __asm__ volatile("tilerelease" ::);
}

/* 8 qword vectors (v[p] = 8 qwords) -> their transpose: out[k] = qword k of
 * v[0..7]. */
static inline void transpose_qwords(const __m512i v[8], __m512i out[8]) {
  __m512i l[8], m[8];
  const __m512i lo1 = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
  const __m512i hi1 = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
  const __m512i lo2 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i hi2 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  const __m512i lo3 = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
  const __m512i hi3 = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
  for (int j = 0; j < 4; j++) { /* [v0.q0 v1.q0 v0.q1 v1.q1 ...] */
    l[2 * j] = _mm512_permutex2var_epi64(v[2 * j], lo1, v[2 * j + 1]);
    l[2 * j + 1] = _mm512_permutex2var_epi64(v[2 * j], hi1, v[2 * j + 1]);
  }
  for (int j = 0; j < 2; j++) /* l[4j + h] with l[4j + 2 + h]: 4 vectors */
    for (int h = 0; h < 2; h++) {
      m[4 * j + 2 * h] =
          _mm512_permutex2var_epi64(l[4 * j + h], lo2, l[4 * j + 2 + h]);
      m[4 * j + 2 * h + 1] =
          _mm512_permutex2var_epi64(l[4 * j + h], hi2, l[4 * j + 2 + h]);
    }
  /* m[4j + x]: qwords 2x, 2x + 1 of v[4j .. 4j + 3] */
  for (int k = 0; k < 4; k++) {
    out[2 * k] = _mm512_permutex2var_epi64(m[k], lo3, m[4 + k]);
    out[2 * k + 1] = _mm512_permutex2var_epi64(m[k], hi3, m[4 + k]);
  }
}

#endif
