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
 * hp->n_expert > 0, else ffn_{gate,up,down}). MTP layers (past n_layer)
 * are not loaded. */
nc_code nc_qwen35_family_load(const gguf_file *f, const nc_qwen35_pieces *pc,
                              const nc_hparams *hp, const nc_kernels *kern,
                              nc_model_weights *w, nc_error *err);
/* The graph (arch_qwen35.c's header comment); the FFN of a layer with a
 * router is nc_fwd_moe_shared. */
nc_code nc_qwen35_family_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
                                 nc_error *err);

#endif
