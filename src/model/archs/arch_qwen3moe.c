/* arch_qwen3moe: Qwen3 mixture of experts (llama.cpp's qwen3moe graph):
 * qwen3's attention (per-head Q/K RMSNorm before NEOX RoPE) and, in place
 * of the FFN, a router (ffn_gate_inp) whose softmax picks the top
 * expert_used_count of expert_count SwiGLU experts (ffn_{gate,up,down}_exps),
 * their weights renormalised to sum 1 (nc_fwd_moe). */
#include "arch_llama.h"
#include "kernels/ops.h"

static nc_code qwen3moe_check(const gguf_file *f, nc_hparams *hp,
                              nc_error *err) {
  nc_code rc = nc_llama_check_experts("qwen3moe", hp, err);
  return rc ? rc : nc_llama_check_hparams(f, hp, err);
}

static nc_code qwen3moe_load(const gguf_file *f, const nc_hparams *hp,
                             const nc_kernels *kern, nc_model_weights *w,
                             nc_error *err) {
  const nc_llama_pieces pc = {.name = "qwen3moe", .qk_norm = true, .moe = true};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

const nc_arch nc_arch_qwen3moe = {
    .name = "qwen3moe",
    .hf_class = "Qwen3MoeForCausalLM",
    .family = "llama",
    .chat_template = "chatml",
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = qwen3moe_check,
    .load_weights = qwen3moe_load,
    .forward = nc_llama_family_forward,
};
