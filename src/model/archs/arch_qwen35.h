/* arch_qwen35: the Qwen3.5 hybrid graph and loader (arch_qwen35.c), shared
 * by `qwen35` (a dense FFN), `qwen35moe` (arch_qwen35moe.c: routed experts
 * beside a gated shared expert) and `qwen3next` (arch_qwen3next.c: the
 * experts, packed DeltaNet projections, key heads grouped). */
#ifndef NC_ARCH_QWEN35_H
#define NC_ARCH_QWEN35_H

#include <stdbool.h>

#include "model/arch.h"

/* What sets the family's archs apart. */
typedef struct nc_qwen35_pieces {
  const char *arch; /* general.architecture: the keys' prefix */
  bool moe;         /* experts are the FFN (else a file with them is refused) */
  /* qwen3next: no IMRoPE sections (plain NEOX RoPE over n_rot); DeltaNet
   * projections packed per key head (ssm_ba, and ssm_in in older files;
   * nc_layer_weights) and value head h reading key head h / (v / k heads)
   * (hp->ssm_k_grouped) */
  bool next;
} nc_qwen35_pieces;

/* Checks and completes hp from the keys {arch}.*: the MTP layers, the
 * IMRoPE sections, the ssm.* shapes and the recurrent layers. */
nc_code nc_qwen35_check_hparams(const gguf_file *f, const nc_qwen35_pieces *pc,
                                nc_hparams *hp, nc_error *err);
/* nc_qwen35_check_hparams after the expert keys (count, used, widths) of
 * a file whose FFN is experts beside a shared expert. */
nc_code nc_qwen35_moe_hparams(const gguf_file *f, const nc_qwen35_pieces *pc,
                              nc_hparams *hp, nc_error *err);
/* Every layer's tensors (the FFN's: experts and the shared expert when
 * hp->n_expert > 0, else ffn_{gate,up,down}); with hp->mtp the first MTP
 * layer's (nc_model_weights' mtp_*), else no MTP layer's. */
nc_code nc_qwen35_family_load(const gguf_file *f, const nc_qwen35_pieces *pc,
                              const nc_hparams *hp, const nc_kernels *kern,
                              nc_model_weights *w, nc_error *err);
/* The graph (arch_qwen35.c's header comment); the FFN of a layer with a
 * router is nc_fwd_moe_shared. */
nc_code nc_qwen35_family_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
                                 nc_error *err);
/* An attention layer (its K/V: the cache's layer L->kv_layer): from the
 * normed rows xn to attn_output in out (the RoPE tables of the scratch). */
void nc_qwen35_attention(nc_fwd *ctx, const nc_layer_weights *L,
                         const nc_batch *b, const float *xn, float *out);
/* Layer L's FFN in place on the scratch's xn (T rows): SwiGLU, or
 * nc_fwd_moe_shared for a layer with a router. */
void nc_qwen35_ffn(nc_fwd *ctx, const nc_layer_weights *L, int32_t T);

/* arch_qwen35_mtp.c: the MTP head. After the last layer, the scratch's x
 * holding every row's residual: the head's K/V of each row (its token with
 * the final normed hidden state of the position before: the row before,
 * or the sequence's state for its first row), and each sequence's state
 * takes its last row's (snapshots too). */
void nc_qwen35_mtp_absorb(nc_fwd *ctx, const nc_batch *b);
/* The arch's forward_mtp (arch.h). */
nc_code nc_qwen35_mtp_forward(nc_fwd *ctx, const nc_batch *b, const float *h_in,
                              float *h_out, float *logits, nc_error *err);

#endif
