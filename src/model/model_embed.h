/* model_embed: what a model file says about embeddings, for every arch:
 * whether its attention is causal, its pooling, and the heads applied
 * after pooling (nc_hparams' and nc_model_weights' embedding fields). */
#ifndef NC_MODEL_EMBED_H
#define NC_MODEL_EMBED_H

#include <stdbool.h>

#include "base/status.h"
#include "gguf/gguf.h"
#include "model.h"

/* hp->non_causal (arch_non_causal, overridden by {arch}.attention.causal)
 * and hp->pooling ({arch}.pooling_type in [0, NC_POOLING_COUNT), NONE when
 * absent). Before the arch's check_hparams, which may change them. */
nc_code nc_model_embed_hparams(const gguf_file *f, const char *arch,
                               bool arch_non_causal, nc_hparams *hp,
                               nc_error *err);
/* The optional heads (cls, cls.output, dense_2, dense_3: their shapes
 * checked against n_embd), hp->n_cls_out and hp->n_embd_out. After the
 * arch's weights. */
nc_code nc_model_embed_heads(const gguf_file *f, const char *arch,
                             const nc_kernels *kern, nc_hparams *hp,
                             nc_model_weights *w, nc_error *err);

#endif
