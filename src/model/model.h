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

#include "base/status.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "kv/kv_cache.h"

/* The token table (vocab.h); the model owns it. */
typedef struct nc_vocab nc_vocab;

/* The most layers of a model with two attention shapes (gemma4). */
#define NC_HP_MAX_SWA_LAYERS 256

typedef struct nc_hparams {
  int32_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim,
      head_dim_v, n_ff, n_rot;
  /* rms_eps: the norms' epsilon ({arch}.attention.layer_norm_rms_epsilon,
   * or layer_norm_epsilon for a LayerNorm model) */
  float rope_freq_base, rope_freq_scale, rms_eps;
  int rope_type;       /* NC_ROPE_NORMAL or NC_ROPE_NEOX */
  float attn_scale;    /* 1/sqrt(head_dim) */
  bool has_rope_freqs; /* rope_freqs.weight divides theta */
  /* mixture of experts ({arch}.expert_count, expert_used_count, 0 when
   * dense; n_ff_exp: one expert's FFN width); how the router's logits
   * become the chosen experts' weights and the experts' activation (set by
   * the arch: NC_MOE_GATING_*, NC_MOE_ACT_*; 0 is llama.cpp's default) */
  int32_t n_expert, n_expert_used, n_ff_exp;
  int moe_gating, moe_act;
  /* RoPE scaling, as llama.cpp reads {arch}.rope.scaling.*: the type
   * (NC_ROPE_SCALING_*; absent: linear), freq_scale_train = 1 /
   * rope.scaling.factor (else rope.scale_linear; absent or 0: 1),
   * rope_freq_scale the one in force (1 for type none);
   * rope.scaling.original_context_length (else context_length: YaRN's
   * correction range, and LongRoPE's choice of factors) and
   * rope.scaling.attn_factor (else 1). YaRN's ext_factor (1 for yarn, else
   * 0), beta_fast 32 and beta_slow 1 are llama.cpp's defaults (it reads no
   * key for them in these architectures); yarn_attn_factor is the
   * magnitude handed to the RoPE tables, as llama.cpp's context computes
   * it (the attention factor, and for YaRN its mscale divided back out,
   * since the tables multiply it in) */
  int rope_scaling;
  float rope_freq_scale_train;
  int32_t n_ctx_orig;
  float rope_attn_factor;
  float yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
  int32_t yarn_orig_ctx; /* n_ctx_orig, or the --yarn-orig-ctx override
                          * (LongRoPE's choice keeps n_ctx_orig, as
                          * llama.cpp's) */
  /* gemma: sliding window (query at p sees keys p - n_swa < j <= p on the
   * layers marked swa; 0: none), the RoPE of those layers, the query scale
   * applied to q before attention (attn_scale is then 1), and tanh soft
   * caps of attention scores and final logits (0: none) */
  int32_t n_swa;
  float rope_freq_base_swa, rope_freq_scale_swa;
  float q_scale;
  float attn_softcap, final_softcap;
  /* gemma4: the sliding-window layers' own attention shape (n_head_kv_swa
   * KV heads of head_dim_swa, n_rot_swa of them turned by RoPE; 0: the
   * others' shape), swa_layer[l] marking those layers (n_layer entries, at
   * most NC_HP_MAX_SWA_LAYERS); the first n_layer_kv layers own K/V, the
   * others read another's (nc_layer_weights.kv_layer; 0: every layer owns
   * its own; qwen35: its attention layers, the cache's layers in order);
   * n_embd_per_layer: the width of the per-layer token embeddings (0:
   * none); n_ff_max: the widest FFN of a model whose layers differ (0:
   * n_ff) */
  int32_t n_head_kv_swa, head_dim_swa, n_rot_swa;
  int32_t n_layer_kv, n_embd_per_layer, n_ff_max;
  bool swa_layer[NC_HP_MAX_SWA_LAYERS];
  /* hybrid recurrent models (qwen35): n_layer_rec of the layers are gated
   * DeltaNet layers (nc_layer_weights.rec), as llama.cpp's {arch}.ssm.*:
   * the causal convolution's kernel (conv_kernel), the key / value head
   * size (state_size), the key heads (group_count), the value heads
   * (time_step_rank) and their width (inner_size = v heads x state_size);
   * 0 for models without them. n_layer_nextn: MTP layers the file carries
   * past n_layer ({arch}.nextn_predict_layers). mtp: the first of them is
   * loaded and run (nucleus_model_params.mtp): the cache's last layer
   * (n_layer_kv counts it) holds its K/V and each sequence's state ends
   * with n_embd floats, its last row's final hidden state (arch_qwen35_mtp.c)
   */
  int32_t n_layer_rec, ssm_d_conv, ssm_d_state, ssm_n_k_heads, ssm_n_v_heads,
      ssm_d_inner, n_layer_nextn;
  bool mtp;
  /* value head h reads key head h / (v / k heads) (qwen3next: the value
   * heads grouped by key head), else h % k heads (qwen35: tiled) */
  bool ssm_k_grouped;
  /* Embeddings (docs/ADDING_AN_ARCH.md "Embedding models"). non_causal: a
   * row attends to every position of its sequence in the batch, not only
   * those up to its own (the arch's non_causal, or {arch}.attention.causal
   * false); swa_symmetric: a sliding-window layer's row at p sees the keys
   * within n_swa / 2 of p on either side (gemma-embedding), not the
   * n_swa up to p. pooling: {arch}.pooling_type (NC_POOLING_*, pooling.h;
   * NONE when absent). n_cls_out: the rank head's outputs
   * ({arch}.classifier.output_labels' count, else cls.output's rows; 0
   * without a head). n_embd_out: the width of a pooled vector after the
   * dense projections (dense_2, dense_3), n_embd without them. */
  bool non_causal, swa_symmetric;
  /* images (docs/VISION.md): an image's rows attend to every row of the
   * image on sliding-window layers only, causally on the full ones
   * (gemma4: llama.cpp's LLAMA_NON_CAUSAL_TYPE_SWA_ONLY) */
  bool image_bidir_swa_only;
  int32_t pooling, n_cls_out, n_embd_out;
  /* a shared expert beside the routed ones (qwen35moe): its FFN width
   * ({arch}.expert_shared_feed_forward_length, else n_ff); 0: none */
  int32_t n_ff_shexp;
  /* M-RoPE (qwen2vl, qwen3vl: NC_MROPE_*, kernels/ops.h; NONE: one
   * position per row): the pairs each of a row's (t, h, w, e) positions
   * turn ({arch}.rope.dimension_sections), and the layers after the first
   * that add a slice of an image row's input (Qwen3-VL's deepstack,
   * {arch}.n_deepstack_layers; 0: none) */
  int mrope;
  int32_t rope_sections[4];
  int32_t n_deepstack;
} nc_hparams;

enum {
  /* softmax over every expert, the top n_expert_used, their probabilities
   * divided by their sum (qwen3moe, Mixtral) */
  NC_MOE_GATING_SOFTMAX,
  /* the top n_expert_used logits, softmax over those only (gpt-oss:
   * llama.cpp's SOFTMAX_WEIGHT) */
  NC_MOE_GATING_SOFTMAX_WEIGHT
};
enum {
  NC_MOE_ACT_SILU,       /* down(silu(gate) * up) */
  NC_MOE_ACT_SWIGLU_OAI, /* gpt-oss's clamped SwiGLU (nc_fwd_swiglu_oai) */
  NC_MOE_ACT_GELU,       /* gemma4: down(gelu(gate) * up) (nc_fwd_geglu) */
};

enum {
  NC_ROPE_SCALING_NONE,
  NC_ROPE_SCALING_LINEAR,
  NC_ROPE_SCALING_YARN,
  NC_ROPE_SCALING_LONGROPE
};

/* The RoPE of the model's layers (swa: gemma's sliding-window layers, with
 * their own base and scale), as ggml_rope_ext gets it from llama.cpp. */
nc_rope_params nc_hp_rope(const nc_hparams *hp, bool swa);

/* Row widths of K and V over all KV heads. */
static inline int32_t nc_hp_n_embd_k(const nc_hparams *hp) {
  return hp->n_head_kv * hp->head_dim;
}
static inline int32_t nc_hp_n_embd_v(const nc_hparams *hp) {
  return hp->n_head_kv * hp->head_dim_v;
}
/* The layers that own K/V (the first ones; all without shared K/V). */
static inline int32_t nc_hp_n_layer_kv(const nc_hparams *hp) {
  return hp->n_layer_kv > 0 ? hp->n_layer_kv : hp->n_layer;
}
/* A recurrent layer's channels through the convolution (q, k and v), and
 * the floats of its state: the convolution's last conv_kernel - 1 inputs,
 * then one state_size x state_size matrix per value head. */
static inline int64_t nc_hp_ssm_conv_dim(const nc_hparams *hp) {
  return 2 * (int64_t)hp->ssm_n_k_heads * hp->ssm_d_state + hp->ssm_d_inner;
}
/* qwen3next's packed DeltaNet projections of one row: q k v z and b a. */
static inline int64_t nc_hp_ssm_packed_width(const nc_hparams *hp) {
  return nc_hp_ssm_conv_dim(hp) + hp->ssm_d_inner +
         2 * (int64_t)hp->ssm_n_v_heads;
}
static inline int64_t nc_hp_ssm_layer_floats(const nc_hparams *hp) {
  return (int64_t)(hp->ssm_d_conv - 1) * nc_hp_ssm_conv_dim(hp) +
         (int64_t)hp->ssm_n_v_heads * hp->ssm_d_state * hp->ssm_d_state;
}
/* The shape the paged KV cache is made for: the layers that own K/V, the
 * sliding-window layers of their own shape where they have one, and the
 * recurrent state of every recurrent layer per sequence. */
static inline nc_kv_shape nc_hp_kv_shape(const nc_hparams *hp) {
  nc_kv_shape s = {.n_layer = nc_hp_n_layer_kv(hp),
                   .n_head_kv = hp->n_head_kv,
                   .head_dim = hp->head_dim,
                   .head_dim_v = hp->head_dim_v,
                   .n_swa = hp->n_swa,
                   .state_floats =
                       (hp->n_layer_rec > 0
                            ? hp->n_layer_rec * nc_hp_ssm_layer_floats(hp)
                            : 0) +
                       (hp->mtp ? hp->n_embd : 0)};
  if (hp->head_dim_swa > 0) {
    s.layer_alt = hp->swa_layer;
    s.n_head_kv_alt = hp->n_head_kv_swa;
    s.head_dim_alt = s.head_dim_v_alt = hp->head_dim_swa;
  }
  return s;
}
/* The hyperparameters a layer's attention runs with: hp, or for a
 * sliding-window layer of its own shape hp with that shape's KV heads,
 * head sizes and RoPE dimensions. */
nc_hparams nc_hp_layer(const nc_hparams *hp, bool swa);

/* A 2-D (or 1-D) weight tensor: ne0 contiguous elements per row, ne1 rows;
 * a 3-D one (experts) holds ne2 such matrices one after another. */
typedef struct nc_weight {
  const void *data; /* into the mapped file; NULL when absent (optional) */
  nc_type type;
  int64_t ne0, ne1, ne2; /* ne2: 1, or the expert count of a 3-D tensor */
  size_t row_bytes;
  const char *name; /* the tensor's name in the file (owned by the gguf) */
  /* an expert's matrix (nc_weight_expert): its index among n_experts;
   * n_experts 0 for every other weight */
  int32_t expert, n_experts;
  /* a 3-D weight: the bytes from one expert's matrix to the next; 0: its
   * own ne1 rows (more when it is one half of a merged tensor:
   * nc_weight_load_gate_up_exps) */
  size_t expert_bytes;
} nc_weight;

typedef struct nc_layer_weights {
  nc_weight attn_norm, wq, wk, wv, wo, bo, ffn_norm, ffn_gate, ffn_up, ffn_down;
  nc_weight bq, bk, bv;     /* Q/K/V biases (qwen2; optional in llama) */
  nc_weight q_norm, k_norm; /* per-head RMSNorm of q and k (qwen3) */
  /* mixture of experts: router [n_embd -> n_expert] and the experts'
   * {gate,up} [n_embd -> n_ff_exp] and down [n_ff_exp -> n_embd], 3-D;
   * optional biases (gpt-oss): the router's [n_expert], the experts'
   * [n_ff_exp or n_embd, n_expert] (row e: expert e's) */
  nc_weight ffn_gate_inp, gate_exps, up_exps, down_exps;
  nc_weight ffn_gate_inp_b, gate_exps_b, up_exps_b, down_exps_b;
  nc_weight attn_sinks; /* gpt-oss: [n_head] attention sinks */
  nc_weight attn_post_norm, ffn_post_norm; /* gemma: after attn / FFN */
  bool swa; /* gemma: a sliding-window (local) layer */
  /* gemma4: the per-layer input's gate [n_embd -> n_embd_per_layer],
   * projection [n_embd_per_layer -> n_embd] and its norm; the layer's
   * output scale [1]; beside experts: the router input's scale [n_embd],
   * the experts' input norm, the norms after the dense FFN and after the
   * experts, each expert's output scale [n_expert]; kv_layer: the layer
   * whose K/V the attention reads (the layer itself when it owns them;
   * qwen35: the attention layer's index among the attention layers, -1
   * for a recurrent layer) */
  nc_weight ple_gate, ple_proj, ple_post_norm, out_scale;
  nc_weight gate_inp_scale, ffn_pre_norm_2, ffn_post_norm_1, ffn_post_norm_2,
      down_exps_scale;
  int32_t kv_layer;
  /* qwen35: a gated DeltaNet layer's index among the recurrent layers (its
   * part of the sequence's state), -1 for an attention layer; its
   * projections in (attn_qkv: q, k, v), gate (attn_gate: z), beta and
   * alpha (per value head), the convolution [conv_dim][conv_kernel] (F32),
   * the time-step bias and A (-exp(A_log)) per value head, the gated
   * RMSNorm [state_size] and the output [inner_size -> n_embd]. The
   * attention layers' wq gives q and its gate per head (2 x head_dim). */
  int32_t rec;
  nc_weight ssm_in, ssm_z, ssm_beta, ssm_alpha, ssm_conv, ssm_dt, ssm_a,
      ssm_norm, ssm_out;
  /* qwen3next's packed projections (NULL when absent): ssm_ba [n_embd ->
   * 2 x v heads], per key head g its r = v / k heads' beta then their
   * alpha (in place of ssm_beta and ssm_alpha); ssm_qkvz (older files'
   * ssm_in [n_embd -> conv_dim + inner_size]), per key head g its q (S),
   * k (S), then v and z of its r value heads (r x S each), in place of
   * ssm_in and ssm_z. Value head g r + j belongs to key head g. */
  nc_weight ssm_ba, ssm_qkvz;
  /* qwen35moe: the shared expert's gate [n_embd -> 1] (its output times
   * the sigmoid of that logit) and its SwiGLU FFN {gate,up} [n_embd ->
   * n_ff_shexp], down [n_ff_shexp -> n_embd] */
  nc_weight gate_inp_shexp, gate_shexp, up_shexp, down_shexp;
  /* LayerNorm encoders (bert): attn_norm and ffn_norm are the norms after
   * the attention and the FFN residuals (attn_output_norm,
   * layer_output_norm), these their biases; the FFN's biases */
  nc_weight attn_norm_b, ffn_norm_b, ffn_up_b, ffn_down_b;
} nc_layer_weights;

typedef struct nc_model_weights {
  nc_weight tok_embd, output_norm, output, rope_freqs;
  /* gemma4's per-layer token embeddings [n_layer * n_embd_per_layer per
   * token] (rows read only for the batch's tokens), their projection from
   * the embedding and its norm */
  nc_weight ple_tok_embd, ple_model_proj, ple_proj_norm;
  /* LongRoPE (phi3): rope_freqs holds rope_factors_short; these, used when
   * the context per sequence exceeds n_ctx_orig, rope_factors_long */
  nc_weight rope_long;
  /* Heads after pooling (every arch; loaded by model.c when the file has
   * them, as llama.cpp names them): the rank head cls [n_embd -> n_embd]
   * (+ cls_b, then tanh) and cls_out [n_embd -> n_cls_out] (+ cls_out_b);
   * sentence-transformers' dense projections dense_2 [n_embd -> d]
   * (+ dense_2_b) and dense_3 [d -> n_embd_out]. */
  nc_weight cls, cls_b, cls_out, cls_out_b, dense_2, dense_2_b, dense_3;
  /* bert: the token-type embeddings [n_embd, types] (row 0 added to every
   * token), the absolute position embeddings [n_embd, n_ctx_train] and the
   * embeddings' LayerNorm (token_embd_norm) with its bias */
  nc_weight tok_types, pos_embd, tok_norm, tok_norm_b;
  nc_layer_weights *layers; /* [n_layer], owned by the model */
  /* The MTP head (hp->mtp; DeepSeek-V3's and Qwen3-Next's next-token
   * prediction block, llama.cpp's nextn tensors of layer n_layer): the
   * norms of the token's embedding and of the hidden state, their
   * projection eh_proj [2 n_embd -> n_embd] (the embedding's half first),
   * one decoder layer (mtp_layer: an attention layer, kv_layer the cache's
   * last), the head's norm (shared_head_norm, else output_norm) and the
   * head (shared_head_head, else output); the embedding table
   * (nextn.embed_tokens, else tok_embd). */
  nc_weight mtp_enorm, mtp_hnorm, mtp_eh_proj, mtp_head_norm, mtp_head,
      mtp_embd;
  nc_layer_weights mtp_layer;
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
/* Expert e of a 3-D weight, as a 2-D weight (a view into the same data). */
nc_weight nc_weight_expert(const nc_weight *w, int64_t e);
/* Switches the kernel table (tests, benchmarks): refused, with nothing
 * changed, when it lacks a dot kernel for one of the model's weights. Not
 * while a context of the model is running. */
nc_code nc_model_set_kernels(nucleus_model *m, const nc_kernels *k,
                             nc_error *err);
/* The chat template given in nucleus_model_params, or NULL. */
const char *nc_model_chat_template_override(const nucleus_model *m);
int nc_model_n_threads(const nucleus_model *m);
/* What flash_attn auto means: llama.cpp's CPU default is on. */
#define NC_FLASH_ATTN_AUTO_ON true
/* Whether the model's contexts run flash attention (forward_flash.c). */
bool nc_model_flash_attn(const nucleus_model *m);
/* The element types of the KV caches of the model's contexts
 * (nucleus_model_params.cache_type_k, _v): F16, BF16, Q8_0 or Q4_0; any
 * but F16 comes with flash attention. */
nc_type nc_model_cache_type_k(const nucleus_model *m);
nc_type nc_model_cache_type_v(const nucleus_model *m);
/* Both, as the cache takes them. */
static inline nc_kv_types nc_model_kv_types(const nucleus_model *m) {
  return (nc_kv_types){nc_model_cache_type_k(m), nc_model_cache_type_v(m)};
}
const char *nc_model_arch_name(const nucleus_model *m);
const char *nc_model_name_str(const nucleus_model *m); /* general.name or "" */

#endif
