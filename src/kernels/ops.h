/* ops: element-wise and row operations of the forward pass, each rounding
 * as ggml's CPU backend does.
 *
 * The nc_* functions are the plain-C reference. nc_ops_kernels tables hold
 * builds of the row ops: the plain one (the same functions), an AVX2 + FMA +
 * F16C one (ops_avx2.c) and an AVX-512 one (ops_avx512.c: swiglu, the rest
 * from AVX2) that compute the same IEEE operations lane by lane, so every
 * build gives the reference's bits. The forward pass uses the build of the
 * model's backend table (kernels.h). */
#ifndef NC_OPS_H
#define NC_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "gguf/quant.h"

enum { NC_ROPE_NORMAL = 0, NC_ROPE_NEOX = 2 };

/* y = (x / sqrt(mean(x^2) + eps)) * w; the sum of squares in double, the
 * scale in float, the weight applied after (as ggml's rms_norm then mul).
 * w may be NULL (no weight). y may alias x. */
void nc_rmsnorm(const float *x, const float *w, float *y, int64_t n, float eps);
/* The scale of nc_rmsnorm: 1 / sqrt(mean(x^2) + eps), the sum of squares in
 * double in element order (one dependent chain: every build shares it). */
float nc_rms_scale(const float *x, int64_t n, float eps);

/* RoPE of one set of layers, as ggml_rope_ext takes it: n_rot dimensions
 * rotated, theta_scale = freq_base^(-2/n_rot), freq_scale (1 / the linear or
 * YaRN factor), YaRN's ext_factor (0: none; 1: the ramp between
 * interpolated and extrapolated theta over corr_dims) and attn_factor (the
 * magnitude every cos and sin is multiplied by; YaRN multiplies it by
 * 1 + 0.1 ln(1 / freq_scale) too). */
typedef struct nc_rope_params {
  int32_t n_rot;
  float freq_base, freq_scale;
  float ext_factor, attn_factor;
  float corr_dims[2];
  /* M-RoPE (NC_MROPE_*; NONE: one position per row): each pair turns by
   * one of a row's four positions (t, h, w, e), chosen by sections */
  int mrope;
  int32_t sections[4];
} nc_rope_params;

/* How M-RoPE picks the position of pair k (ggml_mrope_cache_init), with
 * sector = k % (sections[0] + ... + sections[3]):
 * - NC_MROPE_SECTIONS (ggml's MROPE, Qwen2-VL): t for the first sections[0]
 *   sectors, then h for sections[1], w for sections[2], e for the rest;
 * - NC_MROPE_INTERLEAVED (ggml's IMROPE, Qwen3-VL): h where sector % 3 == 1
 *   and sector < 3 sections[1], w where sector % 3 == 2 and sector <
 *   3 sections[2], t where sector % 3 == 0 and sector < 3 sections[0], e
 *   elsewhere.
 * The pairs are NEOX's. */
enum { NC_MROPE_NONE = 0, NC_MROPE_SECTIONS = 1, NC_MROPE_INTERLEAVED = 2 };

/* YaRN's correction range (ggml_rope_yarn_corr_dims): the pair dimensions
 * whose wavelength over n_ctx_orig positions turns beta_fast and beta_slow
 * times, floored / ceiled and clamped to [0, n_rot - 1]. */
void nc_rope_yarn_corr_dims(int32_t n_rot, int32_t n_ctx_orig, float freq_base,
                            float beta_fast, float beta_slow, float dims[2]);

/* The cos/sin table for one position: n_rot/2 pairs, as ggml's
 * rope_cache_init builds it: theta = pos, multiplied by theta_scale for
 * each pair, divided by freq_factors[k] when given (theta_extrap); times
 * freq_scale (theta_interp); with ext_factor != 0 the two mixed by YaRN's
 * ramp; cos and sin times the magnitude. */
void nc_rope_cache(int32_t pos, const nc_rope_params *p,
                   const float *freq_factors, float *cos_out, float *sin_out);
/* The same for one row of M-RoPE (p->mrope != NC_MROPE_NONE): pair k's
 * theta is pos[c] times theta_scale^k (the four thetas advance in
 * lockstep, as ggml's), c the component p->sections assign to it. */
void nc_mrope_cache(const int32_t pos[4], const nc_rope_params *p,
                    const float *freq_factors, float *cos_out, float *sin_out);
/* The component (0 t, 1 h, 2 w, 3 e) M-RoPE mode mrope with sections takes
 * for pair k. */
int nc_mrope_component(int mrope, const int32_t sections[4], int32_t k);
/* Rotates n_heads heads of head_dim values in place with a cache from
 * nc_rope_cache. NORMAL pairs (x[2k], x[2k+1]); NEOX pairs (x[k],
 * x[k+n_rot/2]). Dimensions past n_rot are left alone. Each rotated value
 * is one fused multiply-add, as llama.cpp's clang build computes it. */
void nc_rope_apply(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                   int rope_type, const float *cos_c, const float *sin_c);

/* In place: x = softmax(x) over n values (max subtracted, sum in double). */
void nc_softmax(float *x, int64_t n);

/* e^x as ggml's vectorized CPU code computes it (ggml_v_expf: a degree-5
 * polynomial after range reduction, with fused multiply-adds), lane by lane
 * in plain C, so that results match llama.cpp's SIMD paths bit for bit.
 * Max error about 1.5 ulp; x > 88.7 gives inf, x < -103.9 gives 0. */
float nc_expf_ggml(float x);

/* Sum of 16 floats in the order of a 512-bit horizontal add (halving tree:
 * i + 8, then i + 4, i + 2, i + 1). */
float nc_sum16_tree(const float v[16]);

float nc_silu(float x);
/* out = silu(gate) * up, n values of one row (out may alias gate): blocks
 * of 16 with nc_expf_ggml and the tail with expf, as ggml's swiglu. */
void nc_swiglu(const float *gate, const float *up, float *out, int64_t n);

/* The orthonormal Walsh-Hadamard transform of each len-element piece of
 * x (n a multiple of len, len a power of two), in place, as ggml's
 * fwht (llama.cpp's rotation of a quantized KV cache): x * (1 / sqrtf(len)),
 * then butterflies (u + v, u - v) of width 1, 2, 4, ... Its own inverse. */
void nc_fwht(float *x, int64_t n, int32_t len);

/* y += x */
void nc_add(float *y, const float *x, int64_t n);

/* ggml's GeGLU table (nc_fwd_gelu_table: gelu of every half, as a half)
 * holds one entry more, 0, so that a 32-bit gather may read entry 65535. */
#define NC_GELU_TABLE_ENTRIES (65536 + 1)

/* One build of the row ops above, plus the half rounding of attention:
 * to_f16: y[i] = nc_fp32_to_fp16(x[i]); round_f16: y[i] =
 * nc_fp16_to_fp32(nc_fp32_to_fp16(x[i])) (y may alias x). rope takes
 * neox = (rope_type == NC_ROPE_NEOX). */
typedef struct nc_ops_kernels {
  const char *name;
  void (*rmsnorm)(const float *x, const float *w, float *y, int64_t n,
                  float eps);
  void (*rope_apply)(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                     bool neox, const float *cos_c, const float *sin_c);
  void (*swiglu)(const float *gate, const float *up, float *out, int64_t n);
  /* x[i] = x[i] / (1 + nc_expf_ggml(-x[i])) in place: SiLU with ggml's
   * exp on every value (the DeltaNet convolution's activation) */
  void (*silu)(float *x, int64_t n);
  void (*add)(float *y, const float *x, int64_t n);
  void (*to_f16)(const float *x, nc_fp16 *y, int64_t n);
  void (*round_f16)(const float *x, float *y, int64_t n);
  /* gate[i] = gelu(gate[i]) * up[i] as ggml's GeGLU: 0 for gate <= -10,
   * gate * up for gate >= 10, else the half of gelu from the table gelu
   * (NC_GELU_TABLE_ENTRIES) at the half of gate, times up; up NULL: times
   * 1 (ggml's GELU with its table, ggml_vec_gelu_f32) */
  void (*geglu)(float *gate, const float *up, int64_t n, const nc_fp16 *gelu);
  /* one token of the gated delta rule on one head's state (delta_net.h) */
  void (*delta_rule)(float *s, const float *q, const float *k, const float *v,
                     float decay, float beta, float scale, float *out,
                     int64_t S);
} nc_ops_kernels;

/* The builds; the backend tables (kernels.h) say which runs. */
const nc_ops_kernels *nc_ops_plain(void);
const nc_ops_kernels *nc_ops_avx2(void);   /* NULL when not built */
const nc_ops_kernels *nc_ops_avx512(void); /* NULL when not built */

/* One row of n: ggml_norm, then times w and plus b (either may be NULL),
 * in ggml's order (the layer norms of BERT and of the vision encoders). */
void nc_layernorm_row(const float *x, const float *w, const float *b, float *y,
                      int64_t n, float eps);

/* nc_layernorm_row on rows consecutive rows of n (x and y n floats a row; y
 * may be x), every row's result the same bits: up to NC_LAYERNORM_ROWS rows
 * at a time, their in-order double sums interleaved (independent chains, not
 * one latency-bound chain a row). */
enum { NC_LAYERNORM_ROWS = 8 };
void nc_layernorm_rows(const float *x, const float *w, const float *b, float *y,
                       int64_t rows, int64_t n, float eps);

#endif
