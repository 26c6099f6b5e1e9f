/* forward_ref: an independent reference forward pass, one per architecture,
 * written from the math of the model and nothing else of the fast path:
 * weights are dequantized to f32 (nc_dequantize_row, the one shared piece),
 * activations stay f32 (no quantized activations, no F16 KV cache), each
 * attention head builds its whole causal score matrix, and one sequence runs
 * from position 0 with no KV cache, no paging, no batching, no threads and
 * no kernel tables. Small, slow and obvious, as llama2.c's forward: the
 * tests hold the fast path (src/context.c and its kernels) to it, and it to
 * llama.cpp's goldens.
 *
 * One reference per forward family (nc_arch's family): an architecture of
 * an existing family needs nothing here; a new family adds a file
 * forward_ref_<family>.c with its nc_ref_family and one line in
 * forward_ref.c's table. */
#ifndef NC_FORWARD_REF_H
#define NC_FORWARD_REF_H

#include <stdint.h>

#include "base/status.h"
#include "model/model.h"

/* Teacher-forced logits of tokens[0..n) at positions 0..n-1: n * n_vocab
 * floats, row t the logits after tokens[0..t]. */
typedef nc_code (*nc_ref_forward_fn)(const nucleus_model *m,
                                     const int32_t *tokens, int32_t n,
                                     float *logits, nc_error *err);

typedef struct nc_ref_family {
  const char *family; /* nc_arch's family */
  nc_ref_forward_fn forward;
} nc_ref_family;

extern const nc_ref_family nc_ref_family_llama;  /* forward_ref_llama.c */
extern const nc_ref_family nc_ref_family_gemma;  /* forward_ref_gemma.c */
extern const nc_ref_family nc_ref_family_gptoss; /* forward_ref_gptoss.c */
extern const nc_ref_family nc_ref_family_gemma4; /* forward_ref_gemma4.c */
extern const nc_ref_family nc_ref_family_qwen35; /* forward_ref_qwen35.c */
/* An encoder has no logits: the bert family's forward (bert, nomic-bert)
 * gives the final hidden states, n * n_embd floats (row t: position t,
 * seeing the whole sequence). */
extern const nc_ref_family nc_ref_family_bert; /* forward_ref_bert.c */

/* RoPE pair i (of n_rot / 2) at position pos, from the math: the pair's
 * frequency base^(-2i / n_rot) (divided by freq_factors[i] when given);
 * linear scaling multiplies it by scale; YaRN (hp->yarn_ext_factor != 0)
 * blends scale and 1 over the pairs by a linear ramp between the pairs
 * whose wavelength fits yarn_beta_fast and yarn_beta_slow times in the
 * original context (floor and ceil, as Hugging Face's and llama.cpp's
 * YaRN), and the magnitude is rope.scaling.attn_factor times, for YaRN,
 * 1 + 0.1 ln(1 / scale) (when scale < 1). In double. */
void nc_ref_rope_pair(const nc_hparams *hp, double base, double scale,
                      const float *freq_factors, int32_t i, int32_t pos,
                      double *theta, double *mag);

/* The reference of forward family `family`, or NULL when it has none. */
const nc_ref_family *nc_ref_family_find(const char *family);

/* The reference of the model's architecture (of its family), or NULL when
 * it has none. */
const nc_ref_family *nc_ref_arch_of(const nucleus_model *m);

/* Runs the reference of the model's architecture (see nc_ref_forward_fn);
 * NC_ERR_UNSUPPORTED when it has none. Tokens must be in [0, n_vocab) and
 * n in [1, n_ctx_train]. */
nc_code nc_forward_ref(const nucleus_model *m, const int32_t *tokens, int32_t n,
                       float *logits, nc_error *err);

/* y[t][i] = W[i] . x[t] for T positions (in double), W dequantized one row
 * at a time; a missing tensor or a shape other than {in, out} fails. */
nc_code nc_ref_matmul(const nc_weight *w, const float *x, int32_t T, int64_t in,
                      float *y, int64_t out, nc_error *err);
/* y = x / sqrt(mean(x^2) + eps) * g, over n values (in double). */
void nc_ref_rmsnorm(const float *x, const float *g, float *y, int64_t n,
                    float eps);
/* One SwiGLU FFN of width F on T rows: y = Wd (silu(Wg h) * (Wu h));
 * gate, up: scratch of T * F. */
nc_code nc_ref_swiglu_ffn(const nc_weight *wg, const nc_weight *wu,
                          const nc_weight *wd, const float *h, int32_t T,
                          int64_t E, int64_t F, float *gate, float *up,
                          float *y, nc_error *err);
/* The mixture of experts, one position at a time: x += the weighted sum
 * of its chosen experts' FFNs of h (p = softmax(Wrouter h), the
 * n_expert_used largest, weights p / their sum; gate, up: scratch of
 * n_ff_exp; y: n_embd). */
nc_code nc_ref_moe_ffn(const nc_hparams *hp, const nc_layer_weights *L,
                       const float *h, int32_t T, float *x, float *gate,
                       float *up, float *y, nc_error *err);

/* The MTP head of a qwen35-family model loaded with it (hp->mtp), from its
 * math (forward_ref_qwen35.c): tokens[0..n) fed to the model, the head's
 * logits for the token after tokens[n-1] (from tokens[n-1] and the model's
 * hidden state at n - 2), then after each drafts[j] (from it and the
 * head's own hidden state before): (1 + k) * n_vocab floats. */
nc_code nc_ref_qwen35_mtp(const nucleus_model *m, const int32_t *tokens,
                          int32_t n, const int32_t *drafts, int32_t k,
                          float *logits, nc_error *err);

#endif
