/* avx512: the AVX-512 (F, BW, VL) + VNNI table. Its dots are the avx2
 * table's (llama.cpp's float order, standard activation layouts) except
 * F32 and F16 (avx512_f32.c, avx512_f16.c: llamafile's tinyBLAS order, which
 * llama.cpp's AVX-512 build uses for F32 and F16 matrices), the K-quants
 * Q2_K..Q6_K and IQ4_XS (avx512_kquant.c, avx512_nl.c: the order of llama.cpp's
 * tiled matmul, which llama.cpp uses for prompts, i.e. 8+ rows at once) and
 * IQ4_NL (its llamafile GEMM's order, which it uses for 2+ rows); gemm_few has
 * them in its vec_dot order, for decode rows. MXFP4, TQ1_0 and TQ2_0 have
 * llama.cpp's one x86 order (its AVX-512 builds run the AVX2 kernels for them;
 * ours are VNNI, avx512_nl.c, in the same float order); NVFP4, Q1_0 and Q2_0
 * the avx2 table's (avx2_lowbit.c, llama.cpp's one x86 order, no kernel of
 * their own here). The amx table shares all of them (llama.cpp's AMX build has
 * an order of its own for IQ4_XS, not followed), and its matmuls (gemm) are
 * VNNI kernels bit-identical to those dots (avx512_gemm.c, avx512_kquant.c): so
 * this table gives llama.cpp's logits, only faster. The amx table (below) is
 * the same but for Q4_0, Q4_1 and Q8_0. */
#include "tables.h"

#include "gemm_f16.h"

#include "ref.h"
#include "sampler_simd.h"

#define E(t, fn) [t] = fn
/* The entries both tables share: all but Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and
 * Q6_K. */
#define SHARED_VEC_DOT                                                         \
  E(NC_TYPE_F32, nc_avx512_dot_f32), E(NC_TYPE_F16, nc_avx512_dot_f16),        \
      E(NC_TYPE_BF16, nc_avx2_dot_bf16), E(NC_TYPE_Q5_0, nc_avx2_dot_q5_0),    \
      E(NC_TYPE_Q5_1, nc_avx2_dot_q5_1),                                       \
      E(NC_TYPE_Q2_K, nc_avx512_dot_q2_k_tiled),                               \
      E(NC_TYPE_Q3_K, nc_avx512_dot_q3_k_tiled),                               \
      E(NC_TYPE_IQ4_NL, nc_avx512_dot_iq4_nl_tinyblas),                        \
      E(NC_TYPE_MXFP4, nc_avx512_dot_mxfp4),                                   \
      E(NC_TYPE_IQ4_XS, nc_avx512_dot_iq4_xs_tiled),                           \
      E(NC_TYPE_TQ1_0, nc_avx512_dot_tq1_0),                                   \
      E(NC_TYPE_TQ2_0, nc_avx512_dot_tq2_0),                                   \
      E(NC_TYPE_NVFP4, nc_avx2_dot_nvfp4), E(NC_TYPE_Q1_0, nc_avx2_dot_q1_0),  \
      E(NC_TYPE_Q2_0, nc_avx2_dot_q2_0), IQ_ENTRIES(nc_avx2_dot_, _tiled)
#define SHARED_VEC_DOT_ROWS                                                    \
  E(NC_TYPE_F32, nc_avx512_dot_f32_rows),                                      \
      E(NC_TYPE_F16, nc_avx512_dot_f16_rows),                                  \
      E(NC_TYPE_BF16, nc_avx2_dot_bf16_rows),                                  \
      E(NC_TYPE_Q5_0, nc_avx2_dot_q5_0_rows),                                  \
      E(NC_TYPE_Q5_1, nc_avx2_dot_q5_1_rows),                                  \
      E(NC_TYPE_Q2_K, nc_avx512_dot_q2_k_tiled_rows),                          \
      E(NC_TYPE_Q3_K, nc_avx512_dot_q3_k_tiled_rows),                          \
      E(NC_TYPE_IQ4_NL, nc_avx512_dot_iq4_nl_tinyblas_rows),                   \
      E(NC_TYPE_MXFP4, nc_avx512_dot_mxfp4_rows),                              \
      E(NC_TYPE_IQ4_XS, nc_avx512_dot_iq4_xs_tiled_rows),                      \
      E(NC_TYPE_TQ1_0, nc_avx512_dot_tq1_0_rows),                              \
      E(NC_TYPE_TQ2_0, nc_avx512_dot_tq2_0_rows),                              \
      E(NC_TYPE_NVFP4, nc_avx2_dot_nvfp4_rows),                                \
      E(NC_TYPE_Q1_0, nc_avx2_dot_q1_0_rows),                                  \
      E(NC_TYPE_Q2_0, nc_avx2_dot_q2_0_rows),                                  \
      IQ_ENTRIES(nc_avx2_dot_, _tiled_rows)
#define SHARED_GEMM                                                            \
  E(NC_TYPE_F16, nc_avx512_gemm_f16), E(NC_TYPE_Q5_0, nc_avx512_gemm_q5_0),    \
      E(NC_TYPE_Q5_1, nc_avx512_gemm_q5_1),                                    \
      E(NC_TYPE_Q2_K, nc_avx512_gemm_q2_k_tiled),                              \
      E(NC_TYPE_Q3_K, nc_avx512_gemm_q3_k_tiled),                              \
      E(NC_TYPE_IQ4_NL, nc_avx512_gemm_iq4_nl_tinyblas),                       \
      E(NC_TYPE_MXFP4, nc_avx512_gemm_mxfp4),                                  \
      E(NC_TYPE_TQ1_0, nc_avx512_gemm_tq1_0),                                  \
      E(NC_TYPE_TQ2_0, nc_avx512_gemm_tq2_0),                                  \
      E(NC_TYPE_IQ1_S, nc_avx512_gemm_iq1_s_tiled),                            \
      E(NC_TYPE_IQ1_M, nc_avx512_gemm_iq1_m_tiled)
/* The IQ2/IQ3 lattice types' entries (their prompt matmuls differ). */
#define IQ23_ENTRIES(pre, post)                                                \
  E(NC_TYPE_IQ2_XXS, pre##iq2_xxs##post),                                      \
      E(NC_TYPE_IQ2_XS, pre##iq2_xs##post),                                    \
      E(NC_TYPE_IQ2_S, pre##iq2_s##post),                                      \
      E(NC_TYPE_IQ3_XXS, pre##iq3_xxs##post),                                  \
      E(NC_TYPE_IQ3_S, pre##iq3_s##post)
#define SHARED_QUANTIZE_ACT                                                    \
  E(NC_TYPE_F32, nc_ref_quant_f32), E(NC_TYPE_F16, nc_avx2_quant_f16),         \
      E(NC_TYPE_BF16, nc_ref_quant_bf16), E(NC_TYPE_Q8_0, nc_avx2_quant_q8_0), \
      E(NC_TYPE_Q8_1, nc_avx2_quant_q8_1), E(NC_TYPE_Q8_K, nc_avx2_quant_q8_k)

/* The shared activation layouts' sizes (kernels.h's nc_pack_bytes_fn):
 * F16 rows widened to F32 for the F16 gemm (gemm_f16.h; n % 16 == 0, else
 * its pairs take the dot), and the amx table's tiles of Q8_0 / Q8_1. */
static size_t avx512_pack_bytes(nc_type vdt, int64_t n, int64_t na) {
  return vdt == NC_TYPE_F16 && n % 16 == 0 ? nc_f16_packed_bytes(n, na) : 0;
}

static size_t amx_pack_bytes(nc_type vdt, int64_t n, int64_t na) {
  return vdt == NC_TYPE_F16 ? avx512_pack_bytes(vdt, n, na)
                            : nc_amx_act_tiles_bytes(n, na);
}

static const nc_kernels k_avx512 = {
    .name = "avx512",
    .vec_dot = {SHARED_VEC_DOT, E(NC_TYPE_Q4_0, nc_avx2_dot_q4_0),
                E(NC_TYPE_Q4_1, nc_avx2_dot_q4_1),
                E(NC_TYPE_Q8_0, nc_avx2_dot_q8_0),
                E(NC_TYPE_Q4_K, nc_avx512_dot_q4_k_tiled),
                E(NC_TYPE_Q5_K, nc_avx512_dot_q5_k_tiled),
                E(NC_TYPE_Q6_K, nc_avx512_dot_q6_k_tiled)},
    .vec_dot_rows = {SHARED_VEC_DOT_ROWS,
                     E(NC_TYPE_Q4_0, nc_avx2_dot_q4_0_rows),
                     E(NC_TYPE_Q4_1, nc_avx2_dot_q4_1_rows),
                     E(NC_TYPE_Q8_0, nc_avx2_dot_q8_0_rows),
                     E(NC_TYPE_Q4_K, nc_avx512_dot_q4_k_tiled_rows),
                     E(NC_TYPE_Q5_K, nc_avx512_dot_q5_k_tiled_rows),
                     E(NC_TYPE_Q6_K, nc_avx512_dot_q6_k_tiled_rows)},
    .gemm = {SHARED_GEMM, E(NC_TYPE_IQ4_XS, nc_avx512_gemm_iq4_xs_tiled),
             IQ23_ENTRIES(nc_avx512_gemm_, _tiled),
             E(NC_TYPE_Q4_0, nc_avx512_gemm_q4_0),
             E(NC_TYPE_Q4_1, nc_avx512_gemm_q4_1),
             E(NC_TYPE_Q8_0, nc_avx512_gemm_q8_0),
             E(NC_TYPE_Q4_K, nc_avx512_gemm_q4_k_tiled),
             E(NC_TYPE_Q5_K, nc_avx512_gemm_q5_k_tiled),
             E(NC_TYPE_Q6_K, nc_avx512_gemm_q6_k_tiled)},
    .gemm_few = {E(NC_TYPE_F32, nc_avx512_gemm_f32_vec),
                 E(NC_TYPE_F16, nc_avx512_gemm_f16_vec),
                 E(NC_TYPE_Q2_K, nc_avx512_gemm_q2_k),
                 E(NC_TYPE_Q3_K, nc_avx512_gemm_q3_k),
                 E(NC_TYPE_Q4_K, nc_avx512_gemm_q4_k),
                 E(NC_TYPE_Q5_K, nc_avx512_gemm_q5_k),
                 E(NC_TYPE_Q6_K, nc_avx512_gemm_q6_k),
                 E(NC_TYPE_IQ4_NL, nc_avx512_gemm_iq4_nl),
                 E(NC_TYPE_IQ4_XS, nc_avx512_gemm_iq4_xs),
                 IQ_ENTRIES(nc_avx512_gemm_, )},
    .quantize_act = {SHARED_QUANTIZE_ACT},
    .pack_act = {E(NC_TYPE_F16, nc_avx512_pack_f16)},
    .pack_bytes = avx512_pack_bytes,
    .pack_rows = 1,
    .gemm_packed = {E(NC_TYPE_F16, nc_avx512_gemm_packed_f16)},
    .attn = nc_attn_kernels_avx512,
    .attn_flash = nc_attn_flash_avx512,
    .ops = nc_ops_avx512,
    .sampler_simd = NC_SIMD_AVX512,
};

/* The amx table: Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and Q6_K in the order of
 * llama.cpp's AMX build (ref_block.c), with matmuls on the tile unit
 * (amx_gemm.c, amx_gemv.c, amx_kquant.c). Their single dots are the plain-C
 * reference: the model only calls the matmuls. IQ4_XS and the IQ2/IQ3
 * lattice types keep the avx512 table's orders, their prompt matmuls on the
 * tile unit too (amx_kquant.c, the same bits). */
static const nc_kernels k_amx = {
    .name = "amx",
    .vec_dot = {SHARED_VEC_DOT, E(NC_TYPE_Q4_0, nc_ref_dot_blk_q4_0),
                E(NC_TYPE_Q4_1, nc_ref_dot_blk_q4_1),
                E(NC_TYPE_Q8_0, nc_ref_dot_blk_q8_0),
                E(NC_TYPE_Q4_K, nc_ref_dot_blk_q4_k),
                E(NC_TYPE_Q5_K, nc_ref_dot_blk_q5_k),
                E(NC_TYPE_Q6_K, nc_ref_dot_blk_q6_k)},
    .vec_dot_rows = {SHARED_VEC_DOT_ROWS,
                     E(NC_TYPE_Q4_0, nc_ref_dot_blk_q4_0_rows),
                     E(NC_TYPE_Q4_1, nc_ref_dot_blk_q4_1_rows),
                     E(NC_TYPE_Q8_0, nc_ref_dot_blk_q8_0_rows),
                     E(NC_TYPE_Q4_K, nc_ref_dot_blk_q4_k_rows),
                     E(NC_TYPE_Q5_K, nc_ref_dot_blk_q5_k_rows),
                     E(NC_TYPE_Q6_K, nc_ref_dot_blk_q6_k_rows)},
    .gemm_few = {E(NC_TYPE_F32, nc_avx512_gemm_f32_vec),
                 E(NC_TYPE_F16, nc_avx512_gemm_f16_vec),
                 E(NC_TYPE_IQ4_NL, nc_avx512_gemm_iq4_nl),
                 E(NC_TYPE_IQ4_XS, nc_avx512_gemm_iq4_xs),
                 IQ_ENTRIES(nc_avx512_gemm_, )},
    .gemm = {SHARED_GEMM, E(NC_TYPE_IQ4_XS, nc_amx_gemm_iq4_xs_tiled),
             IQ23_ENTRIES(nc_amx_gemm_, _tiled),
             E(NC_TYPE_Q4_0, nc_amx_gemm_q4_0),
             E(NC_TYPE_Q4_1, nc_amx_gemm_q4_1),
             E(NC_TYPE_Q8_0, nc_amx_gemm_q8_0),
             E(NC_TYPE_Q4_K, nc_amx_gemm_q4_k),
             E(NC_TYPE_Q5_K, nc_amx_gemm_q5_k),
             E(NC_TYPE_Q6_K, nc_amx_gemm_q6_k)},
    .quantize_act = {SHARED_QUANTIZE_ACT},
    .pack_act = {E(NC_TYPE_F16, nc_avx512_pack_f16),
                 E(NC_TYPE_Q8_0, nc_amx_pack_q8_0),
                 E(NC_TYPE_Q8_1, nc_amx_pack_q8_1)},
    .pack_bytes = amx_pack_bytes,
    .pack_rows = NC_AMX_PACK_ROWS,
    .gemm_packed = {E(NC_TYPE_F16, nc_avx512_gemm_packed_f16),
                    E(NC_TYPE_Q4_0, nc_amx_gemm_packed_q4_0),
                    E(NC_TYPE_Q4_1, nc_amx_gemm_packed_q4_1),
                    E(NC_TYPE_Q8_0, nc_amx_gemm_packed_q8_0)},
    .attn = nc_attn_kernels_avx512,
    .attn_flash = nc_attn_flash_avx512,
    .ops = nc_ops_avx512,
    .sampler_simd = NC_SIMD_AVX512,
};
#undef SHARED_VEC_DOT
#undef SHARED_VEC_DOT_ROWS
#undef SHARED_GEMM
#undef SHARED_QUANTIZE_ACT
#undef IQ23_ENTRIES
#undef E

const nc_kernels *nc_kernels_avx512_table(void) {
  return &k_avx512;
}

const nc_kernels *nc_kernels_amx_table(void) {
  return &k_amx;
}
