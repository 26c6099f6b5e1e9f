/* tables.h: the SIMD kernel tables, for dispatch.c and the tests. Each may
 * be called only when the CPU has its instructions (see nc_kernels_by_name).
 * Internal to src/kernels/. */
#ifndef NC_KERNELS_TABLES_H
#define NC_KERNELS_TABLES_H

#include "kernels.h"

const nc_kernels *nc_kernels_avx2_table(void);   /* AVX2, FMA, F16C */
const nc_kernels *nc_kernels_avx512_table(void); /* + AVX-512 F/BW/VL/VNNI */
const nc_kernels *nc_kernels_amx_table(void);    /* + AMX-TILE, AMX-INT8 */

/* avx2 kernels by name, reused by the avx512 table. */
#define NC_AVX2_DOT(name)                                                      \
  float nc_avx2_dot_##name(int64_t n, const void *w, const void *a);           \
  void nc_avx2_dot_##name##_rows(int64_t n, const void *w, const void *a,      \
                                 size_t a_stride, int nrows, float *out,       \
                                 size_t out_stride);
NC_AVX2_DOT(f32)
NC_AVX2_DOT(f16)
NC_AVX2_DOT(bf16)
NC_AVX2_DOT(q4_1)
NC_AVX2_DOT(q8_0)
NC_AVX2_DOT(q4_0)
NC_AVX2_DOT(q5_0)
NC_AVX2_DOT(q5_1)
NC_AVX2_DOT(q4_k) /* avx2_kquant.c */
NC_AVX2_DOT(q5_k)
NC_AVX2_DOT(q2_k) /* avx2_klow.c */
NC_AVX2_DOT(q3_k)
NC_AVX2_DOT(q6_k)
NC_AVX2_DOT(iq4_nl) /* avx2_nl.c */
NC_AVX2_DOT(iq4_nl_tinyblas)
NC_AVX2_DOT(mxfp4)
NC_AVX2_DOT(iq4_xs)
NC_AVX2_DOT(iq4_xs_tiled)
NC_AVX2_DOT(tq1_0)
NC_AVX2_DOT(tq2_0)
NC_AVX2_DOT(nvfp4) /* avx2_lowbit.c */
NC_AVX2_DOT(q1_0)
NC_AVX2_DOT(q2_0)
#undef NC_AVX2_DOT
/* avx2_nl.c: IQ4_NL and IQ4_XS in llama.cpp's vec_dot order as matmuls
 * (the avx512 table's gemm_few; kernels.h's nc_gemm_fn). */
void nc_avx2_gemm_iq4_nl(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *act, size_t a_stride, int64_t na,
                         float *out, size_t out_stride);
void nc_avx2_gemm_iq4_xs(int64_t n, const void *w, size_t w_stride, int64_t nw,
                         const void *act, size_t a_stride, int64_t na,
                         float *out, size_t out_stride);

/* avx2_quant.c: activation quantizers, bit-exact with nc_quantize_row. */
void nc_avx2_quant_q8_0(const float *src, void *dst, int64_t n);
void nc_avx2_quant_q8_1(const float *src, void *dst, int64_t n);
void nc_avx2_quant_q8_k(const float *src, void *dst, int64_t n);
void nc_avx2_quant_f16(const float *src, void *dst, int64_t n);

/* avx512_gemm.c: VNNI matmuls, bit-identical to the avx2 dots; and
 * avx512_gemv.c, the same products for 1..NC_AVX512_GEMV_MAX_A activation
 * rows (decode, a speculative step's rows): out[a * out_stride + r] = row r
 * of w . activation row a. */
enum { NC_AVX512_GEMV_MAX_A = 24 };
#define NC_AVX512_MATMUL(name)                                                 \
  void nc_avx512_gemm_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *a, size_t a_stride,       \
                             int64_t na, float *out, size_t out_stride);       \
  void nc_avx512_gemv_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *a, size_t a_stride,       \
                             int na, float *out, size_t out_stride);
NC_AVX512_MATMUL(q4_0)
NC_AVX512_MATMUL(q4_1)
NC_AVX512_MATMUL(q5_0)
NC_AVX512_MATMUL(q5_1)
NC_AVX512_MATMUL(q8_0)
#undef NC_AVX512_MATMUL

/* The amx table's Q4_0, Q4_1 and Q8_0 matmuls, in block order (ref_block.c):
 * amx_gemm.c on the tile unit, and amx_gemv.c (AVX-512 VNNI) for
 * 1..NC_AMX_GEMV_MAX_A activation rows, which amx_gemm hands to it (the
 * tile path converts the weights into tiles on every call: only worth it
 * for more rows; a draft's 5 to 9 rows over Gemma 3's 262,144-row output
 * matrix took twice the one-row time there). The K-quants' VNNI rows
 * (amx_kquant.c) hold more registers per activation row: up to
 * NC_AMX_KGEMV_MAX_A. */
enum { NC_AMX_GEMV_MAX_A = 8, NC_AMX_KGEMV_MAX_A = 4 };
/* amx_few.c: the same products for NC_AMX_FEW_MIN_A .. NC_AMX_FEW_MAX_A
 * activation rows on the tile unit, the weights as A tiles (no transpose,
 * the float steps for those rows only), 16 activation rows a B tile; amx_gemm
 * hands them over, fewer rows to amx_gemv.c. Up to 64: below that the
 * tiled gemm's weight panels (a transpose per weight block, once per call)
 * cost more than more B tiles against the same A tiles, read from the
 * cache (bench/forward_rows, one thread: the default model's forward of
 * 33 / 48 / 63 rows 61 / 69 / 85 ms on the gemm, 51 / 56 / 71 here;
 * Gemma 3, whose 262,144-row Q8_0 head took 83 ms at 17 rows where 16
 * took 49, 125 / 145 / 175 against 101 / 121 / 154). */
enum { NC_AMX_FEW_MIN_A = NC_AMX_GEMV_MAX_A + 1, NC_AMX_FEW_MAX_A = 64 };
void nc_amx_few_q4_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                     const void *a, size_t a_stride, int na, float *out,
                     size_t out_stride);
void nc_amx_few_q4_1(int64_t n, const void *w, size_t w_stride, int64_t nw,
                     const void *a, size_t a_stride, int na, float *out,
                     size_t out_stride);
void nc_amx_few_q8_0(int64_t n, const void *w, size_t w_stride, int64_t nw,
                     const void *a, size_t a_stride, int na, float *out,
                     size_t out_stride);
#define NC_AMX_MATMUL(name)                                                    \
  void nc_amx_gemm_##name(int64_t n, const void *w, size_t w_stride,           \
                          int64_t nw, const void *a, size_t a_stride,          \
                          int64_t na, float *out, size_t out_stride);          \
  void nc_amx_gemv_##name(int64_t n, const void *w, size_t w_stride,           \
                          int64_t nw, const void *a, size_t a_stride, int na,  \
                          float *out, size_t out_stride);
NC_AMX_MATMUL(q4_0)
NC_AMX_MATMUL(q4_1)
NC_AMX_MATMUL(q8_0)
#undef NC_AMX_MATMUL
/* amx_kquant.c: Q4_K, Q5_K and Q6_K in llama.cpp's AMX order (ref_block.c):
 * VNNI for up to NC_AMX_KGEMV_MAX_A activation rows, the tile unit above. */
#define NC_AMX_KGEMM(name)                                                     \
  void nc_amx_gemm_##name(int64_t n, const void *w, size_t w_stride,           \
                          int64_t nw, const void *a, size_t a_stride,          \
                          int64_t na, float *out, size_t out_stride);
NC_AMX_KGEMM(q4_k)
NC_AMX_KGEMM(q5_k)
NC_AMX_KGEMM(q6_k)
/* IQ4_XS and the IQ2/IQ3 lattice types: prompts on the tiles in the
 * tiled order, fewer rows avx512_i16_gemm.c */
NC_AMX_KGEMM(iq4_xs_tiled)
NC_AMX_KGEMM(iq2_xxs_tiled)
NC_AMX_KGEMM(iq2_xs_tiled)
NC_AMX_KGEMM(iq2_s_tiled)
NC_AMX_KGEMM(iq3_xxs_tiled)
NC_AMX_KGEMM(iq3_s_tiled)
#undef NC_AMX_KGEMM
/* amx_gemm.c's activation tiles, built once per matmul (kernels.h's
 * nc_pack_act_fn): 16 rows per tile. */
enum { NC_AMX_PACK_ROWS = 16 };
size_t nc_amx_act_tiles_bytes(int64_t n, int64_t na);
void nc_amx_pack_q8_0(int64_t n, const void *a, size_t a_stride, int64_t na,
                      int64_t r0, int64_t r1, void *tiles);
void nc_amx_pack_q8_1(int64_t n, const void *a, size_t a_stride, int64_t na,
                      int64_t r0, int64_t r1, void *tiles);
#define NC_AMX_GEMM_PACKED(name)                                               \
  void nc_amx_gemm_packed_##name(int64_t n, const void *w, size_t w_stride,    \
                                 int64_t nw, const void *a, size_t a_stride,   \
                                 const void *tiles, int64_t na, float *out,    \
                                 size_t out_stride);
NC_AMX_GEMM_PACKED(q4_0)
NC_AMX_GEMM_PACKED(q4_1)
NC_AMX_GEMM_PACKED(q8_0)
#undef NC_AMX_GEMM_PACKED

/* avx512_kquant.c: Q2_K..Q6_K · Q8_K (standard Q8_K layout) in llama.cpp's
 * x86 float order, bit-identical to its AVX2 vec_dot; gemm as in kernels.h. */
#define NC_AVX512_KQUANT_DOT(name)                                             \
  float nc_avx512_dot_##name(int64_t n, const void *w, const void *a);         \
  void nc_avx512_dot_##name##_rows(int64_t n, const void *w, const void *a,    \
                                   size_t a_stride, int nrows, float *out,     \
                                   size_t out_stride);                         \
  void nc_avx512_gemm_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *act, size_t a_stride,     \
                             int64_t na, float *out, size_t out_stride);
NC_AVX512_KQUANT_DOT(q4_k)
NC_AVX512_KQUANT_DOT(q6_k)
NC_AVX512_KQUANT_DOT(q5_k)
NC_AVX512_KQUANT_DOT(q2_k)
NC_AVX512_KQUANT_DOT(q3_k)
/* The same products in the order of llama.cpp's "tiled" K-quant
 * matmul (ggml-cpu/tiled), which llama.cpp uses instead of vec_dot when 8
 * or more activation rows are multiplied at once (see avx512_kquant.c). */
NC_AVX512_KQUANT_DOT(q2_k_tiled)
NC_AVX512_KQUANT_DOT(q3_k_tiled)
NC_AVX512_KQUANT_DOT(q4_k_tiled)
NC_AVX512_KQUANT_DOT(q5_k_tiled)
NC_AVX512_KQUANT_DOT(q6_k_tiled)
#undef NC_AVX512_KQUANT_DOT
/* avx512_kq16.c: the tiled-order Q4_K, Q5_K and Q6_K gemm on 16 weight rows per
 * VNNI tile, for NC_KQ16_MIN_ROWS or more activation rows (the same bits
 * as the gemm above). False, writing nothing, for rows too long for its
 * panel (n above ~12,000). */
enum { NC_KQ16_MIN_ROWS = 8 };
bool nc_avx512_kq16_gemm_q4_k(int64_t n, const void *w, size_t w_stride,
                              int64_t nw, const void *act, size_t a_stride,
                              int64_t na, float *out, size_t out_stride);
bool nc_avx512_kq16_gemm_q5_k(int64_t n, const void *w, size_t w_stride,
                              int64_t nw, const void *act, size_t a_stride,
                              int64_t na, float *out, size_t out_stride);
bool nc_avx512_kq16_gemm_q6_k(int64_t n, const void *w, size_t w_stride,
                              int64_t nw, const void *act, size_t a_stride,
                              int64_t na, float *out, size_t out_stride);

/* avx512_nl.c: IQ4_NL, MXFP4, IQ4_XS, TQ1_0, TQ2_0 with VNNI, bit-identical
 * to ref_nl.c's orders (iq4_nl_tinyblas: llamafile's, iq4_xs_tiled: the
 * tiled matmul's, the others vec_dot's); gemm as in kernels.h (IQ4_NL's
 * and MXFP4's in avx512_nl_gemm.c and avx512_iq4nl_gemm.c). */
#define NC_AVX512_NL(name)                                                     \
  float nc_avx512_dot_##name(int64_t n, const void *w, const void *a);         \
  void nc_avx512_dot_##name##_rows(int64_t n, const void *w, const void *a,    \
                                   size_t a_stride, int nrows, float *out,     \
                                   size_t out_stride);                         \
  void nc_avx512_gemm_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *act, size_t a_stride,     \
                             int64_t na, float *out, size_t out_stride);
NC_AVX512_NL(iq4_nl)
NC_AVX512_NL(iq4_nl_tinyblas)
NC_AVX512_NL(mxfp4)
NC_AVX512_NL(iq4_xs)
NC_AVX512_NL(iq4_xs_tiled)
NC_AVX512_NL(tq1_0)
NC_AVX512_NL(tq2_0)
#undef NC_AVX512_NL

/* avx2_iq.c: the IQ1/IQ2/IQ3 lattice types, bit-identical to ref_iq.c:
 * vec_dot's order and (_tiled) the tiled matmul's, as dots, rows and
 * matmuls that unpack each weight superblock once for many rows. */
#define NC_AVX2_IQ(name)                                                       \
  NC_AVX2_DOT(name)                                                            \
  NC_AVX2_DOT(name##_tiled)                                                    \
  void nc_avx2_gemm_##name(int64_t n, const void *w, size_t w_stride,          \
                           int64_t nw, const void *act, size_t a_stride,       \
                           int64_t na, float *out, size_t out_stride);         \
  void nc_avx2_gemm_##name##_tiled(                                            \
      int64_t n, const void *w, size_t w_stride, int64_t nw, const void *act,  \
      size_t a_stride, int64_t na, float *out, size_t out_stride);
#define NC_AVX2_DOT(name)                                                      \
  float nc_avx2_dot_##name(int64_t n, const void *w, const void *a);           \
  void nc_avx2_dot_##name##_rows(int64_t n, const void *w, const void *a,      \
                                 size_t a_stride, int nrows, float *out,       \
                                 size_t out_stride);
NC_AVX2_IQ(iq2_xxs)
NC_AVX2_IQ(iq2_xs)
NC_AVX2_IQ(iq2_s)
NC_AVX2_IQ(iq3_xxs)
NC_AVX2_IQ(iq3_s)
NC_AVX2_IQ(iq1_s)
NC_AVX2_IQ(iq1_m)
#undef NC_AVX2_DOT
#undef NC_AVX2_IQ

/* avx2_iq.c: superblock i of a row of any of the seven lattice types as
 * 256 int16, each signed grid value (IQ1: 8 times it plus its offset
 * sign) times its 16's scale (2s + 1); returns the tiled step's factor
 * d_w * unit (IQ1: d_w / 8). The avx512 matmuls (avx512_i16_gemm.c) take
 * IQ4_XS's from there. */
typedef float (*nc_i16_unpack_fn)(nc_type type, const void *row, int64_t i,
                                  int16_t *dst);
float nc_avx2_iq_unpack_i16(nc_type type, const void *row, int64_t i,
                            int16_t *dst);
void nc_avx512_gemm_iq2_xxs_tiled(int64_t n, const void *w, size_t w_stride,
                                  int64_t nw, const void *act, size_t a_stride,
                                  int64_t na, float *out, size_t out_stride);
void nc_avx512_gemm_iq2_xs_tiled(int64_t n, const void *w, size_t w_stride,
                                 int64_t nw, const void *act, size_t a_stride,
                                 int64_t na, float *out, size_t out_stride);
void nc_avx512_gemm_iq2_s_tiled(int64_t n, const void *w, size_t w_stride,
                                int64_t nw, const void *act, size_t a_stride,
                                int64_t na, float *out, size_t out_stride);
void nc_avx512_gemm_iq3_xxs_tiled(int64_t n, const void *w, size_t w_stride,
                                  int64_t nw, const void *act, size_t a_stride,
                                  int64_t na, float *out, size_t out_stride);
void nc_avx512_gemm_iq3_s_tiled(int64_t n, const void *w, size_t w_stride,
                                int64_t nw, const void *act, size_t a_stride,
                                int64_t na, float *out, size_t out_stride);
void nc_avx512_gemm_iq1_s_tiled(int64_t n, const void *w, size_t w_stride,
                                int64_t nw, const void *act, size_t a_stride,
                                int64_t na, float *out, size_t out_stride);
void nc_avx512_gemm_iq1_m_tiled(int64_t n, const void *w, size_t w_stride,
                                int64_t nw, const void *act, size_t a_stride,
                                int64_t na, float *out, size_t out_stride);

/* avx512_iq.c: the lattice types' decode-row matmuls (gemm_few) in
 * ref_iq.c's vec_dot order, two weight rows per 512-bit accumulator. */
#define NC_AVX512_IQ_FEW(name)                                                 \
  void nc_avx512_gemm_##name(int64_t n, const void *w, size_t w_stride,        \
                             int64_t nw, const void *act, size_t a_stride,     \
                             int64_t na, float *out, size_t out_stride);
NC_AVX512_IQ_FEW(iq2_xxs)
NC_AVX512_IQ_FEW(iq2_xs)
NC_AVX512_IQ_FEW(iq2_s)
NC_AVX512_IQ_FEW(iq3_xxs)
NC_AVX512_IQ_FEW(iq3_s)
NC_AVX512_IQ_FEW(iq1_s)
NC_AVX512_IQ_FEW(iq1_m)
#undef NC_AVX512_IQ_FEW
/* avx512_iq.c: nc_avx2_iq_unpack_i16's result for IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS and IQ3_S, from the AVX-512 unpacking. */
float nc_avx512_iq_unpack_i16(nc_type type, const void *row, int64_t i,
                              int16_t *dst);
/* avx512_iq.c: the same as signed bytes (element order) and one int32 scale
 * per 16, for the tile unit (amx_kquant.c); returns d_w * unit. */
float nc_avx512_iq_unpack_i8(nc_type type, const void *row, int64_t i,
                             int8_t *q, int32_t *scale);
/* avx512_iq.c: the tiled order's matmul for 1..3 activation rows (the
 * prompt matmuls of avx512_i16_gemm.c hand them over) of IQ4_XS and the
 * IQ2/IQ3 types. */
#define NC_AVX512_TILED_FEW(name)                                              \
  void nc_avx512_gemm_##name##_tiled_few(                                      \
      int64_t n, const void *w, size_t w_stride, int64_t nw, const void *act,  \
      size_t a_stride, int64_t na, float *out, size_t out_stride);
NC_AVX512_TILED_FEW(iq4_xs)
NC_AVX512_TILED_FEW(iq2_xxs)
NC_AVX512_TILED_FEW(iq2_xs)
NC_AVX512_TILED_FEW(iq2_s)
NC_AVX512_TILED_FEW(iq3_xxs)
NC_AVX512_TILED_FEW(iq3_s)
#undef NC_AVX512_TILED_FEW

/* The seven IQ1/IQ2/IQ3 lattice types' entries of a table, for functions
 * named pre##iq2_xxs##post etc. (E as the tables define it). */
#define IQ_ENTRIES(pre, post)                                                  \
  E(NC_TYPE_IQ2_XXS, pre##iq2_xxs##post),                                      \
      E(NC_TYPE_IQ2_XS, pre##iq2_xs##post),                                    \
      E(NC_TYPE_IQ2_S, pre##iq2_s##post),                                      \
      E(NC_TYPE_IQ3_XXS, pre##iq3_xxs##post),                                  \
      E(NC_TYPE_IQ3_S, pre##iq3_s##post), E(NC_TYPE_IQ1_S, pre##iq1_s##post),  \
      E(NC_TYPE_IQ1_M, pre##iq1_m##post)

/* avx512_f32.c: F32 in the orders of llama.cpp's AVX-512 build: its
 * tinyBLAS (dot, rows) and, for one row, ggml_vec_dot_f32 (dot_f32_vec;
 * gemm_f32_vec for gemm_few). */
float nc_avx512_dot_f32(int64_t n, const void *w, const void *a);
void nc_avx512_dot_f32_rows(int64_t n, const void *w, const void *a,
                            size_t a_stride, int nrows, float *out,
                            size_t out_stride);
float nc_avx512_dot_f32_vec(int64_t n, const void *w, const void *a);
void nc_avx512_gemm_f32_vec(int64_t n, const void *w, size_t w_stride,
                            int64_t nw, const void *act, size_t a_stride,
                            int64_t na, float *out, size_t out_stride);

/* avx512_f16.c: F16 in the orders of llama.cpp's AVX-512 build: its
 * tinyBLAS<16> (dot, rows; gemm_f16.h's gemm) and, for one row or n % 16
 * != 0, ggml_vec_dot_f16 (dot_f16_vec; gemm_f16_vec for gemm_few). */
float nc_avx512_dot_f16(int64_t n, const void *w, const void *a);
void nc_avx512_dot_f16_rows(int64_t n, const void *w, const void *a,
                            size_t a_stride, int nrows, float *out,
                            size_t out_stride);
float nc_avx512_dot_f16_vec(int64_t n, const void *w, const void *a);
void nc_avx512_gemm_f16_vec(int64_t n, const void *w, size_t w_stride,
                            int64_t nw, const void *act, size_t a_stride,
                            int64_t na, float *out, size_t out_stride);

#endif
