/* arch_qwen2: Qwen2 and Qwen2.5: the llama graph with Q/K/V biases and NEOX
 * RoPE (llama.cpp's qwen2 graph). */
#include "arch_llama.h"
#include "kernels/ops.h"

static nc_code qwen2_load(const gguf_file *f, const nc_hparams *hp,
                          const nc_kernels *kern, nc_model_weights *w,
                          nc_error *err) {
  const nc_llama_pieces pc = {.name = "qwen2", .qkv_bias = true};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

const nc_arch nc_arch_qwen2 = {
    .name = "qwen2",
    .hf_class = "Qwen2ForCausalLM",
    .family = "llama",
    .chat_template = "chatml",
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = nc_llama_check_hparams,
    .load_weights = qwen2_load,
    .forward = nc_llama_family_forward,
};
