/* arch_qwen35moe: Qwen3.5 / Qwen3.6 mixture of experts (`qwen35moe`, as
 * llama.cpp's src/models/qwen35moe.cpp): qwen35's hybrid layers (gated
 * DeltaNet and gated-query attention, arch_qwen35.c) with, in place of the
 * dense FFN, a softmax router over expert_count SwiGLU experts of which
 * the top expert_used_count run, their weights renormalised to sum 1, plus
 * a shared SwiGLU expert whose output is scaled by the sigmoid of one
 * logit (ffn_gate_inp_shexp) and added (nc_fwd_moe_shared). The experts'
 * gate and up may be one merged tensor (ffn_gate_up_exps). llama.cpp
 * reads no expert_weights_scale for this graph (nor an expert bias):
 * neither is read here. */
#include "arch_qwen35.h"

nc_code nc_qwen35_moe_hparams(const gguf_file *f, const nc_qwen35_pieces *pc,
                              nc_hparams *hp, nc_error *err) {
  const char *a = pc->arch;
  if (hp->n_expert < 1)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: metadata '%s.expert_count' is absent or 0: must be "
                   ">= 1",
                   a, a);
  if (hp->n_expert_used < 1)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: metadata '%s.expert_used_count' is absent or 0: must "
                   "be in [1, %d]",
                   a, a, (int)hp->n_expert);
  /* llama.cpp: expert_feed_forward_length, else n_ff / n_expert_used; the
   * shared expert's expert_shared_feed_forward_length, else n_ff */
  if (hp->n_ff_exp == 0) hp->n_ff_exp = hp->n_ff / hp->n_expert_used;
  if (hp->n_ff_exp < 1)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: no expert width: '%s.expert_feed_forward_length' is "
                   "absent and n_ff %d / %d experts used is 0",
                   a, a, (int)hp->n_ff, (int)hp->n_expert_used);
  bool found = false;
  nc_code rc = nc_meta_int(f, a, "expert_shared_feed_forward_length", false, 1,
                           1 << 24, &hp->n_ff_shexp, &found, err);
  if (rc) return rc;
  if (!found) hp->n_ff_shexp = hp->n_ff; /* (required: >= 1) */
  /* the gate and up scratch rows take the widest FFN */
  if (hp->n_ff_shexp > hp->n_ff_max) hp->n_ff_max = hp->n_ff_shexp;
  return nc_qwen35_check_hparams(f, pc, hp, err);
}

static const nc_qwen35_pieces QWEN35MOE = {.arch = "qwen35moe", .moe = true};

static nc_code qwen35moe_hparams(const gguf_file *f, nc_hparams *hp,
                                 nc_error *err) {
  return nc_qwen35_moe_hparams(f, &QWEN35MOE, hp, err);
}

static nc_code qwen35moe_load(const gguf_file *f, const nc_hparams *hp,
                              const nc_kernels *kern, nc_model_weights *w,
                              nc_error *err) {
  return nc_qwen35_family_load(f, &QWEN35MOE, hp, kern, w, err);
}

const nc_arch nc_arch_qwen35moe = {
    .name = "qwen35moe",
    .hf_class = "Qwen3_5MoeForCausalLM",
    .family = "qwen35",
    .chat_template = "chatml",
    .scratch = NC_SCRATCH_RECURRENT | NC_SCRATCH_SIDE,
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = qwen35moe_hparams,
    .load_weights = qwen35moe_load,
    .forward = nc_qwen35_family_forward,
    .forward_mtp = nc_qwen35_mtp_forward,
};
