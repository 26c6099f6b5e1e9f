/* arch_qwen3next: Qwen3-Next (`qwen3next`, Qwen3-Next-80B-A3B; llama.cpp's
 * src/models/qwen3next.cpp), the predecessor of qwen35moe, on its graph
 * (arch_qwen35.c): the same layers, norms, gates and experts beside a
 * sigmoid-gated shared expert. What differs (nc_qwen35_pieces.next):
 *  - the DeltaNet projections are packed per key head: ssm_ba holds, per
 *    key head, its value heads' beta then their alpha; older files have
 *    one ssm_in with, per key head, q, k, then its value heads' v and z
 *    (newer converters split it into attn_qkv and attn_gate);
 *  - value head h reads key head h / (value heads / key heads) (the value
 *    heads grouped by key head; qwen35's converter tiles them: h % k);
 *  - plain NEOX RoPE over rope.dimension_count (no IMRoPE sections).
 * Experts are required (llama.cpp refuses a file without); their gate and
 * up may be one merged tensor. MTP layers ({arch}.nextn_predict_layers,
 * after the others) run as qwen35's (arch_qwen35_mtp.c), when asked for. */
#include "arch_qwen35.h"

static const nc_qwen35_pieces QWEN3NEXT = {
    .arch = "qwen3next", .moe = true, .next = true};

static nc_code qwen3next_hparams(const gguf_file *f, nc_hparams *hp,
                                 nc_error *err) {
  return nc_qwen35_moe_hparams(f, &QWEN3NEXT, hp, err);
}

static nc_code qwen3next_load(const gguf_file *f, const nc_hparams *hp,
                              const nc_kernels *kern, nc_model_weights *w,
                              nc_error *err) {
  return nc_qwen35_family_load(f, &QWEN3NEXT, hp, kern, w, err);
}

const nc_arch nc_arch_qwen3next = {
    .name = "qwen3next",
    .hf_class = "Qwen3NextForCausalLM",
    .family = "qwen35",
    .chat_template = "chatml",
    .scratch = NC_SCRATCH_RECURRENT | NC_SCRATCH_SIDE | NC_SCRATCH_SSM_PACKED,
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = qwen3next_hparams,
    .load_weights = qwen3next_load,
    .forward = nc_qwen35_family_forward,
    .forward_mtp = nc_qwen35_mtp_forward,
};
