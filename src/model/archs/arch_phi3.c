/* arch_phi3: Phi-3 (llama.cpp's phi3 graph): the llama graph with NEOX
 * RoPE, a fused attn_qkv (rows Q, K, V), a fused ffn_up of 2 * n_ff rows
 * (the first half the SiLU gate, the second up) and LongRoPE: the
 * rope_factors_short / rope_factors_long tensors divide the per-pair
 * frequencies (long when a sequence may run past
 * rope.scaling.original_context_length), and rope.scaling.attn_factor
 * scales the rotation. Q's 1/sqrt(head_dim) is the attention's scale. */
#include "arch_llama.h"
#include "kernels/ops.h"

static nc_code phi3_check(const gguf_file *f, nc_hparams *hp, nc_error *err) {
  if ((int64_t)hp->n_head * hp->head_dim != hp->n_embd)
    return nc_fail(err, NC_ERR_FORMAT,
                   "phi3: %d heads of %d must make n_embd %d", (int)hp->n_head,
                   (int)hp->head_dim, (int)hp->n_embd);
  if (hp->n_expert > 0)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "phi3: mixture-of-experts files (phi3.expert_count) are "
                   "not supported");
  return nc_llama_check_hparams(f, hp, err);
}

static nc_code phi3_load(const gguf_file *f, const nc_hparams *hp,
                         const nc_kernels *kern, nc_model_weights *w,
                         nc_error *err) {
  const nc_llama_pieces pc = {.name = "phi3", .fused = true};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

const nc_arch nc_arch_phi3 = {
    .name = "phi3",
    .hf_class = "Phi3ForCausalLM",
    .family = "llama",
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = phi3_check,
    .load_weights = phi3_load,
    .forward = nc_llama_family_forward,
};
