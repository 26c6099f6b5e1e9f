/* arch_qwen3vl: the language model of Qwen3-VL (llama.cpp's qwen3vl graph):
 * qwen3's (per-head Q/K RMSNorm) with interleaved M-RoPE (NC_MROPE_INTERLEAVED:
 * the pairs cycle t, h, w within the file's sections, the rest taking e,
 * which is 0 for a text row) and DeepStack: {arch}.n_deepstack_layers
 * (hp->n_deepstack) layers after the first add a slice of an image row's
 * input to the residual (hp->n_deepstack; a text row adds nothing). */
#include "arch_llama.h"
#include "kernels/ops.h"

nc_code nc_qwen3vl_check_hparams(const gguf_file *f, const char *name,
                                 nc_hparams *hp, nc_error *err) {
  nc_code rc;
  if ((rc = nc_llama_check_mrope(f, name, NC_MROPE_INTERLEAVED, hp, err)) ||
      (rc = nc_meta_int(f, name, "n_deepstack_layers", false, 0,
                        hp->n_layer - 1, &hp->n_deepstack, NULL, err)))
    return rc;
  return nc_llama_check_hparams(f, hp, err);
}

static nc_code qwen3vl_check(const gguf_file *f, nc_hparams *hp,
                             nc_error *err) {
  return nc_qwen3vl_check_hparams(f, "qwen3vl", hp, err);
}

static nc_code qwen3vl_load(const gguf_file *f, const nc_hparams *hp,
                            const nc_kernels *kern, nc_model_weights *w,
                            nc_error *err) {
  const nc_llama_pieces pc = {.name = "qwen3vl", .qk_norm = true};
  return nc_llama_family_load(f, hp, kern, &pc, w, err);
}

const nc_arch nc_arch_qwen3vl = {
    .name = "qwen3vl",
    .hf_class = "Qwen3VLForConditionalGeneration",
    .family = "llama",
    .chat_template = "chatml",
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = qwen3vl_check,
    .load_weights = qwen3vl_load,
    .forward = nc_llama_family_forward,
};
