/* arch_llama: the llama graph and loader, shared with the architectures
 * that are llama plus optional pieces (qwen2: Q/K/V biases and NEOX RoPE;
 * qwen3: per-head Q/K RMSNorm and NEOX RoPE). Each of those is its own
 * arch_<name>.c naming which pieces it requires. */
#ifndef NC_ARCH_LLAMA_H
#define NC_ARCH_LLAMA_H

#include <stdbool.h>

#include "model/arch.h"

/* What a llama-family file must carry beyond llama's tensors (absent
 * optional pieces are simply not applied). */
typedef struct nc_llama_pieces {
  const char *name; /* for messages */
  bool qkv_bias;    /* attn_{q,k,v}.bias required */
  bool qk_norm;     /* attn_{q,k}_norm.weight required */
  /* phi3: attn_qkv (rows Q, K, V) instead of attn_{q,k,v}, and ffn_up of
   * 2 * n_ff rows (gate, then up) instead of ffn_gate + ffn_up; LongRoPE
   * factors rope_factors_{short,long} */
  bool fused;
  /* the FFN is a mixture of experts (ffn_gate_inp, ffn_*_exps): required
   * (qwen3moe), or taken when the file has ffn_gate_inp (llama: Mixtral) */
  bool moe;
} nc_llama_pieces;

nc_code nc_llama_check_hparams(const gguf_file *f, nc_hparams *hp,
                               nc_error *err);
/* A mixture-of-experts file's expert_count and expert_used_count (>= 1),
 * and the experts' width: expert_feed_forward_length, else n_ff /
 * n_expert_used as llama.cpp (qwen3moe); name: the arch, for messages. */
nc_code nc_llama_check_experts(const char *name, nc_hparams *hp, nc_error *err);
/* M-RoPE files (qwen2vl, qwen3vl): hp->mrope = mrope (NC_MROPE_*) and
 * hp->rope_sections from {name}.rope.dimension_sections (1 to 4 integers
 * in [0, head_dim], missing ones 0, as llama.cpp's get_key_or_arr; t, h, w
 * not all 0; the sum at most head_dim, as ggml_rope_multi asserts). */
nc_code nc_llama_check_mrope(const gguf_file *f, const char *name, int mrope,
                             nc_hparams *hp, nc_error *err);
/* qwen3vl's keys (arch_qwen3vl.c; qwen3vlmoe too): interleaved M-RoPE
 * sections, {name}.n_deepstack_layers (0 to n_layer - 1; absent 0), then
 * nc_llama_check_hparams. */
nc_code nc_qwen3vl_check_hparams(const gguf_file *f, const char *name,
                                 nc_hparams *hp, nc_error *err);
nc_code nc_llama_family_load(const gguf_file *f, const nc_hparams *hp,
                             const nc_kernels *kern, const nc_llama_pieces *pc,
                             nc_model_weights *w, nc_error *err);
/* The graph: embeddings; per layer RMSNorm, Q/K/V (+ biases, + per-head
 * Q/K norms), RoPE, attention, output (+ bias), residual, RMSNorm, SwiGLU
 * FFN (or the mixture of experts), residual; final RMSNorm and the output
 * matrix. */
nc_code nc_llama_family_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
                                nc_error *err);

#endif
