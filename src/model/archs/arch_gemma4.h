/* arch_gemma4: what Gemma 4's loader (arch_gemma4_load.c) and graph
 * (arch_gemma4.c) share. */
#ifndef NC_ARCH_GEMMA4_H
#define NC_ARCH_GEMMA4_H

#include "model/arch.h"

/* Reads and checks the gemma4.* keys into hp (nc_arch.check_hparams). */
nc_code nc_gemma4_hparams(const gguf_file *f, nc_hparams *hp, nc_error *err);
/* Loads and shape-checks every tensor (nc_arch.load_weights). */
nc_code nc_gemma4_load(const gguf_file *f, const nc_hparams *hp,
                       const nc_kernels *kern, nc_model_weights *w,
                       nc_error *err);
/* The layer whose K/V layer l reads: l itself when it owns K/V, else the
 * last owner of its kind (sliding or full); -1 when there is none. */
int32_t nc_gemma4_kv_layer(const nc_hparams *hp, int32_t l);
/* Layer l's FFN width (feed_forward_length may be a per-layer array;
 * checked by nc_gemma4_hparams). */
int32_t nc_gemma4_ff_of(const gguf_file *f, const nc_hparams *hp, int32_t l);

#endif
