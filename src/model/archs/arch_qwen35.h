/* arch_qwen35: the Qwen3.5 hybrid graph and loader (arch_qwen35.c), shared
 * by `qwen35` (a dense FFN) and `qwen35moe` (arch_qwen35moe.c: routed
 * experts beside a gated shared expert). */
#ifndef NC_ARCH_QWEN35_H
#define NC_ARCH_QWEN35_H

#include <stdbool.h>

#include "model/arch.h"

/* Checks and completes hp from the keys {a}.* (a: general.architecture):
 * the MTP layers, the IMRoPE sections, the ssm.* shapes and the recurrent
 * layers. moe: whether experts are the FFN (else a file with experts is
 * refused). */
nc_code nc_qwen35_check_hparams(const gguf_file *f, const char *a, bool moe,
                                nc_hparams *hp, nc_error *err);
/* Every layer's tensors (the FFN's: experts and the shared expert when
 * hp->n_expert > 0, else ffn_{gate,up,down}); a names the keys. */
nc_code nc_qwen35_family_load(const gguf_file *f, const char *a,
                              const nc_hparams *hp, const nc_kernels *kern,
                              nc_model_weights *w, nc_error *err);
/* The graph (arch_qwen35.c's header comment); the FFN of a layer with a
 * router is nc_fwd_moe_shared. */
nc_code nc_qwen35_family_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
                                 nc_error *err);

#endif
