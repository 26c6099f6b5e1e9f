/* arch_qwen3: Qwen3 (dense): the llama graph with per-head RMSNorm of q and
 * k before NEOX RoPE (llama.cpp's qwen3 graph), no biases. */
#include "arch_llama.h"
#include "kernels/ops.h"

static nc_code qwen3_load(const gguf_file *f, const nc_hparams *hp,
                          const nc_kernels *kern, nc_model_weights *w,
                          nc_error *err) {
  const nc_llama_pieces pc = {.name = "qwen3", .qk_norm = true};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

const nc_arch nc_arch_qwen3 = {
    .name = "qwen3",
    .hf_class = "Qwen3ForCausalLM",
    .family = "llama",
    .chat_template = "chatml",
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = nc_llama_check_hparams,
    .load_weights = qwen3_load,
    .forward = nc_llama_family_forward,
};
