/* kernels: the compute primitives behind one interface, with a plain-C
 * reference (ref.c) that every SIMD implementation is tested against.
 * A table (the backend: matmuls, attention, row ops and the sampler's row
 * passes) is chosen once at start-up from the CPU's features.
 *
 * Contract: activation rows given to a table's vec_dot / vec_dot_rows must
 * come from the same table's quantize_act (a table may use its own layout,
 * see private_act). Rows hold n elements, n a multiple of the block size
 * (only whole blocks are used; n <= 0 gives 0).
 *
 * Tables: "ref" follows ggml's generic C kernels (integer block sums, same
 * float order; bit-exact with them up to FMA contraction). "avx2" (AVX2,
 * FMA, F16C) reproduces llama.cpp's x86 kernels bit for bit for Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0 and Q2_K..Q6_K, and has its own F32/F16/BF16 kernels.
 * "avx512" (+ AVX-512 F/BW/VL/VNNI) has the avx2 dots except Q2_K..Q6_K,
 * which follow llama.cpp's tiled K-quant matmul (ref_tiled.c). llama.cpp
 * itself is not batch-invariant there: its x86 builds take the tiled order
 * for 8+ activation rows (prompts, batches) and vec_dot's for 1..7 (decode);
 * each of our tables keeps one order for every batch, avx512 the tiled one,
 * avx2 vec_dot's (tests/unit/test_kernels_ggml.c checks both against
 * llama.cpp's library); avx512's gemm_few gives the rows the batch marks
 * (decode, a prompt's short tail) vec_dot's order, as llama.cpp does. avx512
 * adds VNNI matmuls (gemm) for Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 and Q2_K..Q6_K,
 * bit-identical to its dots. "amx" (+ AMX-INT8) is the avx512 table but for
 * Q4_0, Q4_1, Q8_0 (per 32-block) and Q4_K, Q5_K, Q6_K (per 256-superblock),
 * which add in the order of llama.cpp's AMX build (ref_block.c), with matmuls
 * on the tile unit. avx2 and avx512 have F16 matmuls (gemm_f16.h) in their
 * F16 dot's order: widened panels and register tiles. */
#ifndef NC_KERNELS_H
#define NC_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn_flash.h"
#include "attn_kernel.h"
#include "gguf/quant.h"
#include "ops.h"

/* Dot of one weight row (type w) with one activation row already quantized
 * to w's vec_dot_type; n elements. */
typedef float (*nc_vec_dot_fn)(int64_t n, const void *w, const void *a);
typedef void (*nc_quantize_fn)(const float *src, void *dst, int64_t n);
/* Dots of one weight row with nrows activation rows (each quantized to w's
 * vec_dot_type, a_stride bytes apart): out[r * out_stride] = the dot with
 * row r. Batch invariance: each out value is bit-identical to vec_dot of
 * the same table on that row alone, whatever nrows is. The SIMD versions
 * unpack the weight row once per 16 (avx512) or 8 (K-quants) activation
 * rows; keep nrows per call around 16..64 and loop the weight rows inside,
 * so the activation rows stay in L1/L2 (at 256+ rows per call the time per
 * dot grows ~1.5x from cache misses). */
typedef void (*nc_vec_dot_rows_fn)(int64_t n, const void *w, const void *a,
                                   size_t a_stride, int nrows, float *out,
                                   size_t out_stride);

/* Many weight rows times many activation rows (prefill and batches):
 * out[a * out_stride + r] = the dot of weight row r (w + r * w_stride) with
 * activation row a (act + a * a_stride), for r in [0, nw), a in [0, na).
 * Batch invariance: each value is bit-identical to this table's vec_dot on
 * that pair alone, whatever nw and na are. The kernel blocks for the caches
 * itself (weight panels unpacked once and kept in L2, register tiles of a
 * few weight rows x a few activation rows); callers pass a thread's whole
 * range of weight rows and all activation rows in one call. NULL where a
 * table has none: callers loop vec_dot_rows. */
typedef void (*nc_gemm_fn)(int64_t n, const void *w, size_t w_stride,
                           int64_t nw, const void *act, size_t a_stride,
                           int64_t na, float *out, size_t out_stride);

/* Optional, for a gemm that reads the activation rows in a layout of its
 * own (the amx tiles): the layout is built once per matmul by all threads
 * (pack), then every thread's gemm_packed reads it. pack writes the part of
 * rows [r0, r1) of the na quantized rows at a (r0 a multiple of pack_rows);
 * pack_bytes(vdt, n, na) is the layout's size for rows of type vdt, 0 where
 * gemm_packed would not use one (few activation rows: the gemm's
 * single-row path). gemm_packed is
 * gemm with the layout beside the rows (the rows serve edge cases), giving
 * the same bits. */
typedef void (*nc_pack_act_fn)(int64_t n, const void *act, size_t a_stride,
                               int64_t na, int64_t r0, int64_t r1,
                               void *packed);
typedef size_t (*nc_pack_bytes_fn)(nc_type vdt, int64_t n, int64_t na);
typedef void (*nc_gemm_packed_fn)(int64_t n, const void *w, size_t w_stride,
                                  int64_t nw, const void *act, size_t a_stride,
                                  const void *packed, int64_t na, float *out,
                                  size_t out_stride);

typedef struct nc_kernels {
  const char *name;                     /* "ref", "avx2", "avx512", "amx" */
  nc_vec_dot_fn vec_dot[NC_TYPE_COUNT]; /* indexed by weight type */
  nc_vec_dot_rows_fn vec_dot_rows[NC_TYPE_COUNT]; /* same, many act rows */
  nc_gemm_fn gemm[NC_TYPE_COUNT];                 /* may be NULL */
  /* Where this table's order is llama.cpp's for micro-batches of 8 or more
   * rows and its order for fewer rows (every decode) differs (avx512: the
   * K-quants' tiled order; vec_dot's below 8): the matmul in that other
   * order, for the rows the batch marks (batch.h, NC_MM_FEW); NULL where
   * one order serves every row. Same contract as gemm. */
  nc_gemm_fn gemm_few[NC_TYPE_COUNT];
  nc_quantize_fn quantize_act[NC_TYPE_COUNT]; /* indexed by vec_dot type */
  /* true where this table's quantize_act writes its own layout (same size,
   * nc_row_size(type, n)): feed those rows only to this table's dots. */
  bool private_act[NC_TYPE_COUNT];
  /* Shared activation layouts (see nc_pack_act_fn); NULL / 0 elsewhere. */
  nc_pack_act_fn pack_act[NC_TYPE_COUNT]; /* indexed by vec_dot type */
  nc_pack_bytes_fn pack_bytes;
  int pack_rows;
  nc_gemm_packed_fn gemm_packed[NC_TYPE_COUNT]; /* indexed by weight type */
  /* The rest of the compute comes with the matmuls, so that choosing a
   * table chooses every build (ref: plain C throughout). Each build gives
   * the same bits as the others. */
  const nc_attn_kernels *(*attn)(void); /* attention loops (attn_kernel.h) */
  /* flash attention (attn_flash.h) */
  const nc_attn_flash_kernels *(*attn_flash)(void);
  const nc_ops_kernels *(*ops)(void); /* row ops (ops.h) */
  int sampler_simd; /* NC_SIMD_* level of the sampler's row passes */
} nc_kernels;

const nc_kernels *nc_kernels_ref(void);
/* The fastest table this CPU supports (ref when nothing better), unless
 * $NUCLEUS_KERNELS names another table this CPU supports. no_repack: only
 * the tables in the float order of llama.cpp without weight repacking. */
const nc_kernels *nc_kernels_best(bool no_repack);
/* A table by name ("ref", "avx2", "avx512", "amx"); NULL when the name is
 * unknown or this CPU lacks the instructions the table needs. */
const nc_kernels *nc_kernels_by_name(const char *name);

#endif
