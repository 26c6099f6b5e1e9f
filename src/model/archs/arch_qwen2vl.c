/* arch_qwen2vl: the language model of Qwen2-VL and Qwen2.5-VL (llama.cpp's
 * qwen2vl graph): qwen2's (Q/K/V biases) with M-RoPE: each NEOX pair turns
 * by one of the row's (t, h, w, e) positions, in the file's sections
 * (NC_MROPE_SECTIONS). A text row's position is (p, p, p, 0); an image
 * patch's is set by the vision side (batch.h's rope_pos). */
#include "arch_llama.h"
#include "kernels/ops.h"

static nc_code qwen2vl_check(const gguf_file *f, nc_hparams *hp,
                             nc_error *err) {
  nc_code rc = nc_llama_check_mrope(f, "qwen2vl", NC_MROPE_SECTIONS, hp, err);
  return rc ? rc : nc_llama_check_hparams(f, hp, err);
}

static nc_code qwen2vl_load(const gguf_file *f, const nc_hparams *hp,
                            const nc_kernels *kern, nc_model_weights *w,
                            nc_error *err) {
  const nc_llama_pieces pc = {.name = "qwen2vl", .qkv_bias = true};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

const nc_arch nc_arch_qwen2vl = {
    .name = "qwen2vl",
    .hf_class = "Qwen2VLForConditionalGeneration",
    .family = "llama",
    .chat_template = "chatml",
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = qwen2vl_check,
    .load_weights = qwen2vl_load,
    .forward = nc_llama_family_forward,
};
