/* model: hyperparameters and weights of a loaded GGUF model.
 *
 * A nucleus_model owns the mapped gguf_file, the hyperparameters, the weight
 * descriptors (pointers straight into the mapping, never copies), the vocab,
 * the chosen kernel table, the thread count and the chat-template override.
 * The architecture-specific parts (which tensors, which forward graph) live
 * in arch_<name>.c behind nc_arch. */
#ifndef NC_MODEL_H
#define NC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "quant.h"
#include "status.h"

/* The token table (vocab.h); the model owns it. */
typedef struct nc_vocab nc_vocab;

typedef struct nc_hparams {
  int32_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim,
      head_dim_v, n_ff, n_rot;
  float rope_freq_base, rope_freq_scale, rms_eps;
  int rope_type;       /* NC_ROPE_NORMAL or NC_ROPE_NEOX */
  float attn_scale;    /* 1/sqrt(head_dim) */
  bool has_rope_freqs; /* rope_freqs.weight divides theta */
} nc_hparams;

/* Row widths of K and V over all KV heads. */
static inline int32_t nc_hp_n_embd_k(const nc_hparams *hp) {
  return hp->n_head_kv * hp->head_dim;
}
static inline int32_t nc_hp_n_embd_v(const nc_hparams *hp) {
  return hp->n_head_kv * hp->head_dim_v;
}

/* A 2-D (or 1-D) weight tensor: ne0 contiguous elements per row, ne1 rows. */
typedef struct nc_weight {
  const void *data; /* into the mapped file; NULL when absent (optional) */
  nc_type type;
  int64_t ne0, ne1;
  size_t row_bytes;
  const char *name; /* the tensor's name in the file (owned by the gguf) */
} nc_weight;

typedef struct nc_layer_weights {
  nc_weight attn_norm, wq, wk, wv, wo, bo, ffn_norm, ffn_gate, ffn_up, ffn_down;
  nc_weight bq, bk, bv;     /* Q/K/V biases (qwen2; optional in llama) */
  nc_weight q_norm, k_norm; /* per-head RMSNorm of q and k (qwen3) */
} nc_layer_weights;

typedef struct nc_model_weights {
  nc_weight tok_embd, output_norm, output, rope_freqs;
  nc_layer_weights *layers; /* [n_layer], owned by the model */
} nc_model_weights;

typedef struct nucleus_model nucleus_model;

/* Loads a model (the body of nucleus_model_load). */
nc_code nc_model_load(const char *path, const nucleus_model_params *params,
                      nucleus_model **out, nc_error *err);
void nc_model_free(nucleus_model *m);

const nc_hparams *nc_model_hparams(const nucleus_model *m);
const nc_model_weights *nc_model_weights_of(const nucleus_model *m);
const gguf_file *nc_model_gguf(const nucleus_model *m);
const nc_vocab *nc_model_vocab(const nucleus_model *m);
const nc_kernels *nc_model_kernels(const nucleus_model *m);
/* Switches the kernel table (tests, benchmarks): refused, with nothing
 * changed, when it lacks a dot kernel for one of the model's weights. Not
 * while a context of the model is running. */
nc_code nc_model_set_kernels(nucleus_model *m, const nc_kernels *k,
                             nc_error *err);
/* The chat template given in nucleus_model_params, or NULL. */
const char *nc_model_chat_template_override(const nucleus_model *m);
int nc_model_n_threads(const nucleus_model *m);
/* What flash_attn auto means: llama.cpp's CPU default is on. */
#define NC_FLASH_ATTN_AUTO_ON false
/* Whether the model's contexts run flash attention (forward_flash.c). */
bool nc_model_flash_attn(const nucleus_model *m);
const char *nc_model_arch_name(const nucleus_model *m);
const char *nc_model_name_str(const nucleus_model *m); /* general.name or "" */

#endif
