/* arch_qwen3vlmoe: the language model of Qwen3-VL's mixture-of-experts
 * models (llama.cpp's qwen3vlmoe graph): qwen3vl's attention (per-head Q/K
 * RMSNorm, interleaved M-RoPE) and DeepStack with qwen3moe's experts in
 * place of the FFN (softmax router, top expert_used_count of expert_count
 * SwiGLU experts, weights renormalised). */
#include "arch_llama.h"
#include "kernels/ops.h"

static nc_code qwen3vlmoe_check(const gguf_file *f, nc_hparams *hp,
                                nc_error *err) {
  nc_code rc = nc_llama_check_experts("qwen3vlmoe", hp, err);
  return rc ? rc : nc_qwen3vl_check_hparams(f, "qwen3vlmoe", hp, err);
}

static nc_code qwen3vlmoe_load(const gguf_file *f, const nc_hparams *hp,
                               const nc_kernels *kern, nc_model_weights *w,
                               nc_error *err) {
  const nc_llama_pieces pc = {
      .name = "qwen3vlmoe", .qk_norm = true, .moe = true};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

const nc_arch nc_arch_qwen3vlmoe = {
    .name = "qwen3vlmoe",
    .hf_class = "Qwen3VLMoeForConditionalGeneration",
    .family = "llama",
    .chat_template = "chatml",
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = qwen3vlmoe_check,
    .load_weights = qwen3vlmoe_load,
    .forward = nc_llama_family_forward,
};
