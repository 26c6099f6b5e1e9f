/* arch_qwen35: Qwen3.5 (`qwen35`), a hybrid of gated DeltaNet layers and
 * full-attention layers, as llama.cpp's graph (src/models/qwen35.cpp):
 * per layer RMSNorm, then either the gated DeltaNet block (forward.h's
 * nc_fwd_gated_delta_net: convolution and delta-rule state per sequence)
 * or attention with a gated query (attn_q gives each head's q and its
 * gate; per-head Q/K RMSNorm; NEOX RoPE on the first n_rot dimensions;
 * the output times sigmoid(gate) before attn_output), residual; RMSNorm
 * (post_attention_norm), SwiGLU FFN, residual; final RMSNorm and the
 * output head. Which layers are recurrent: {arch}.attention.recurrent_layers
 * (a bool per layer), else every layer but each full_attention_interval-th
 * (default 4). The file's IMRoPE (rope.dimension_sections) rotates a text
 * token by its position in every section: NEOX RoPE over n_rot. MTP layers
 * ({arch}.nextn_predict_layers, after the others) run only when the model
 * is loaded with its MTP head (arch_qwen35_mtp.c): every forward then also
 * writes the head's K/V for its rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch_qwen35.h"

#include "kernels/ops.h"
#include "model/forward.h"

/* Whether layer l is recurrent; NULL rec: only checks and counts them. */
static nc_code rec_pattern(const gguf_file *f, const char *a,
                           const nc_hparams *hp, nc_layer_weights *layers,
                           int32_t *n_rec, nc_error *err) {
  char key[128];
  snprintf(key, sizeof key, "%s.attention.recurrent_layers", a);
  const int32_t n_all = hp->n_layer + hp->n_layer_nextn;
  gguf_value_type et;
  uint64_t count;
  *n_rec = 0;
  if (gguf_get_arr(f, key, &et, &count)) {
    if (count != (uint64_t)n_all)
      return nc_fail(err, NC_ERR_FORMAT,
                     "metadata '%s' has %llu entries for %d layers", key,
                     (unsigned long long)count, (int)n_all);
    for (int32_t l = 0; l < hp->n_layer; l++) {
      int64_t v;
      if (!gguf_get_arr_i64(f, key, (uint64_t)l, &v))
        return nc_fail(err, NC_ERR_FORMAT, "metadata '%s'[%d] is not a bool",
                       key, (int)l);
      if (layers) layers[l].rec = v ? *n_rec : -1;
      if (layers) layers[l].kv_layer = v ? -1 : l - *n_rec;
      *n_rec += v != 0;
    }
    return NC_OK;
  }
  int32_t every = 4, n_kv = 0;
  nc_code rc = nc_meta_int(f, a, "full_attention_interval", false, 1,
                           hp->n_layer + 1, &every, NULL, err);
  if (rc) return rc;
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const bool rec = (l + 1) % every != 0;
    if (layers) layers[l].rec = rec ? *n_rec : -1;
    if (layers) layers[l].kv_layer = rec ? -1 : n_kv;
    *n_rec += rec;
    n_kv += !rec;
  }
  return NC_OK;
}

nc_code nc_qwen35_check_hparams(const gguf_file *f, const nc_qwen35_pieces *pc,
                                nc_hparams *hp, nc_error *err) {
  const char *a = pc->arch;
  nc_code rc;
  if (!pc->moe && hp->n_expert > 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: metadata '%s.expert_count' is %d: a file with experts "
                   "is qwen35moe, this architecture has none",
                   a, a, (int)hp->n_expert);
  hp->n_layer_nextn = 0;
  if ((rc = nc_meta_int(f, a, "nextn_predict_layers", false, 0, hp->n_layer - 1,
                        &hp->n_layer_nextn, NULL, err)))
    return rc;
  hp->n_layer -= hp->n_layer_nextn;
  if (hp->head_dim_v != hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: value length %d must equal the key length %d", a,
                   (int)hp->head_dim_v, (int)hp->head_dim);
  hp->ssm_k_grouped = pc->next;
  /* IMRoPE sections: required by llama.cpp (qwen3next: not read, its RoPE
   * is NEOX); for text they all take the token's position, so they only
   * have to fit the rotated pairs */
  char sk[128];
  snprintf(sk, sizeof sk, "%s.rope.dimension_sections", a);
  gguf_value_type et;
  uint64_t count = 0;
  if (!pc->next && !gguf_get_arr(f, sk, &et, &count))
    return nc_fail(err, NC_ERR_FORMAT, "missing metadata '%s'", sk);
  if (count > 4)
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s' has %llu entries, at most 4", sk,
                   (unsigned long long)count);
  int64_t sum = 0;
  for (uint64_t i = 0; i < count; i++) {
    int64_t v;
    if (!gguf_get_arr_i64(f, sk, i, &v) || v < 0 || v > hp->n_rot)
      return nc_fail(err, NC_ERR_FORMAT,
                     "metadata '%s'[%llu]: must be an integer in [0, %d]", sk,
                     (unsigned long long)i, (int)hp->n_rot);
    sum += v;
  }
  if (sum > hp->head_dim / 2)
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s': sections of %lld pairs, over the head's %d",
                   sk, (long long)sum, (int)hp->head_dim / 2);
  struct {
    const char *key;
    int64_t lo, hi;
    int32_t *out;
  } k[] = {
      {"ssm.conv_kernel", 2, 64, &hp->ssm_d_conv},
      {"ssm.state_size", 1, 1024, &hp->ssm_d_state},
      {"ssm.group_count", 1, 1024, &hp->ssm_n_k_heads},
      {"ssm.time_step_rank", 1, 4096, &hp->ssm_n_v_heads},
      {"ssm.inner_size", 1, 1 << 22, &hp->ssm_d_inner},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if ((rc = nc_meta_int(f, a, k[i].key, true, k[i].lo, k[i].hi, k[i].out,
                          NULL, err)))
      return rc;
  if (hp->ssm_n_v_heads % hp->ssm_n_k_heads != 0 ||
      hp->ssm_d_inner != hp->ssm_n_v_heads * hp->ssm_d_state)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: %d value heads of %d (inner size %d) over %d key "
                   "heads: the value heads must be a multiple of the key "
                   "heads and the inner size their product with the state "
                   "size",
                   a, (int)hp->ssm_n_v_heads, (int)hp->ssm_d_state,
                   (int)hp->ssm_d_inner, (int)hp->ssm_n_k_heads);
  if ((rc = rec_pattern(f, a, hp, NULL, &hp->n_layer_rec, err))) return rc;
  /* the cache keeps K/V for the attention layers only */
  if (hp->n_layer_rec == hp->n_layer)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: all %d layers are recurrent: at least one must be an "
                   "attention layer",
                   a, (int)hp->n_layer);
  hp->n_layer_kv = hp->n_layer - hp->n_layer_rec;
  return NC_OK;
}

/* qwen3next's DeltaNet input: attn_qkv and attn_gate, or an older file's
 * one packed ssm_in (ssm_qkvz); whichever the file has. */
static nc_code load_qkvz(const gguf_file *f, const nc_hparams *hp,
                         const nc_kernels *kern, int32_t l, nc_layer_weights *L,
                         nc_error *err) {
  const int64_t E = hp->n_embd, C = nc_hp_ssm_conv_dim(hp),
                Vd = hp->ssm_d_inner;
  char name[GGUF_MAX_NAME];
  snprintf(name, sizeof name, "blk.%d.ssm_in.weight", (int)l);
  nc_code rc =
      nc_weight_load3(f, name, E, C + Vd, 1, false, kern, &L->ssm_qkvz, err);
  if (rc || L->ssm_qkvz.data) return rc;
  snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", (int)l);
  if (!gguf_find_tensor(f, name))
    return nc_fail(err, NC_ERR_FORMAT,
                   "missing tensor '%s' (expected shape {%lld, %lld}) or, "
                   "in older files, 'blk.%d.ssm_in.weight' {%lld, %lld}",
                   name, (long long)E, (long long)C, (int)l, (long long)E,
                   (long long)(C + Vd));
  if ((rc = nc_weight_load3(f, name, E, C, 1, true, kern, &L->ssm_in, err)))
    return rc;
  snprintf(name, sizeof name, "blk.%d.attn_gate.weight", (int)l);
  return nc_weight_load3(f, name, E, Vd, 1, true, kern, &L->ssm_z, err);
}

static nc_code load_layer(const gguf_file *f, const nc_qwen35_pieces *pc,
                          const nc_hparams *hp, const nc_kernels *kern,
                          int32_t l, nc_layer_weights *L, nc_error *err) {
  const int64_t E = hp->n_embd, F = hp->n_ff, D = hp->head_dim;
  const int64_t Q = (int64_t)hp->n_head * D, K = nc_hp_n_embd_k(hp),
                V = nc_hp_n_embd_v(hp);
  const int64_t C = nc_hp_ssm_conv_dim(hp), Vd = hp->ssm_d_inner,
                Hv = hp->ssm_n_v_heads, S = hp->ssm_d_state;
  const int64_t NX = hp->n_expert, FX = hp->n_ff_exp, FS = hp->n_ff_shexp;
  const bool rec = L->rec >= 0, moe = NX > 0, next = pc->next;
  struct {
    const char *suffix;
    int64_t ne0, ne1, ne2;
    bool use; /* of this layer kind */
    nc_weight *out;
  } t[] = {
      {"attn_norm.weight", E, 1, 1, true, &L->attn_norm},
      {"post_attention_norm.weight", E, 1, 1, true, &L->ffn_norm},
      {"ffn_gate.weight", E, F, 1, !moe, &L->ffn_gate},
      {"ffn_up.weight", E, F, 1, !moe, &L->ffn_up},
      {"ffn_down.weight", F, E, 1, !moe, &L->ffn_down},
      {"ffn_gate_inp.weight", E, NX, 1, moe, &L->ffn_gate_inp},
      {"ffn_down_exps.weight", FX, E, NX, moe, &L->down_exps},
      {"ffn_gate_inp_shexp.weight", E, 1, 1, moe, &L->gate_inp_shexp},
      {"ffn_gate_shexp.weight", E, FS, 1, moe, &L->gate_shexp},
      {"ffn_up_shexp.weight", E, FS, 1, moe, &L->up_shexp},
      {"ffn_down_shexp.weight", FS, E, 1, moe, &L->down_shexp},
      {"attn_q.weight", E, 2 * Q, 1, !rec, &L->wq},
      {"attn_k.weight", E, K, 1, !rec, &L->wk},
      {"attn_v.weight", E, V, 1, !rec, &L->wv},
      {"attn_output.weight", Q, E, 1, !rec, &L->wo},
      {"attn_q_norm.weight", D, 1, 1, !rec, &L->q_norm},
      {"attn_k_norm.weight", D, 1, 1, !rec, &L->k_norm},
      {"attn_qkv.weight", E, C, 1, rec && !next, &L->ssm_in},
      {"attn_gate.weight", E, Vd, 1, rec && !next, &L->ssm_z},
      {"ssm_beta.weight", E, Hv, 1, rec && !next, &L->ssm_beta},
      {"ssm_alpha.weight", E, Hv, 1, rec && !next, &L->ssm_alpha},
      {"ssm_ba.weight", E, 2 * Hv, 1, rec && next, &L->ssm_ba},
      {"ssm_dt.bias", Hv, 1, 1, rec, &L->ssm_dt},
      {"ssm_a", Hv, 1, 1, rec, &L->ssm_a},
      {"ssm_norm.weight", S, 1, 1, rec, &L->ssm_norm},
      {"ssm_out.weight", Vd, E, 1, rec, &L->ssm_out},
  };
  char name[GGUF_MAX_NAME];
  nc_code rc;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (!t[i].use) continue;
    snprintf(name, sizeof name, "blk.%d.%s", (int)l, t[i].suffix);
    if ((rc = nc_weight_load3(f, name, t[i].ne0, t[i].ne1, t[i].ne2, true, kern,
                              t[i].out, err)))
      return rc;
  }
  if (moe && (rc = nc_weight_load_gate_up_exps(
                  f, l, E, FX, NX, kern, &L->gate_exps, &L->up_exps, err)))
    return rc;
  if (!rec) return NC_OK;
  if (next && (rc = load_qkvz(f, hp, kern, l, L, err))) return rc;
  /* the convolution is read element by element: F32, no dot kernel */
  snprintf(name, sizeof name, "blk.%d.ssm_conv1d.weight", (int)l);
  if ((rc = nc_weight_load(f, name, hp->ssm_d_conv, C, true, NULL, &L->ssm_conv,
                           err)))
    return rc;
  if (L->ssm_conv.type != NC_TYPE_F32)
    return nc_fail(err, NC_ERR_FORMAT, "tensor '%s' has type %s, expected F32",
                   name, nc_type_name(L->ssm_conv.type));
  return NC_OK;
}

/* The MTP head of layer n_layer (llama.cpp's load_block_mtp): an attention
 * layer with the file's FFN kind, and its nextn tensors. */
static nc_code load_mtp(const gguf_file *f, const nc_qwen35_pieces *pc,
                        const nc_hparams *hp, const nc_kernels *kern,
                        nc_model_weights *w, nc_error *err) {
  const int64_t E = hp->n_embd, V = hp->n_vocab;
  const int32_t l = hp->n_layer;
  nc_layer_weights *L = &w->mtp_layer;
  L->rec = -1;
  L->kv_layer = nc_hp_n_layer_kv(hp) - 1;
  nc_code rc = load_layer(f, pc, hp, kern, l, L, err);
  if (rc) return rc;
  struct {
    const char *suffix;
    int64_t ne0, ne1;
    bool required;
    nc_weight *out;
  } t[] = {
      {"nextn.eh_proj.weight", 2 * E, E, true, &w->mtp_eh_proj},
      {"nextn.enorm.weight", E, 1, true, &w->mtp_enorm},
      {"nextn.hnorm.weight", E, 1, true, &w->mtp_hnorm},
      {"nextn.shared_head_norm.weight", E, 1, false, &w->mtp_head_norm},
      {"nextn.shared_head_head.weight", E, V, false, &w->mtp_head},
      {"nextn.embed_tokens.weight", E, V, false, &w->mtp_embd},
  };
  char name[GGUF_MAX_NAME];
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    snprintf(name, sizeof name, "blk.%d.%s", (int)l, t[i].suffix);
    if ((rc = nc_weight_load(f, name, t[i].ne0, t[i].ne1, t[i].required, kern,
                             t[i].out, err)))
      return rc;
  }
  if (!w->mtp_head_norm.data) w->mtp_head_norm = w->output_norm;
  if (!w->mtp_head.data) w->mtp_head = w->output;
  if (!w->mtp_embd.data) w->mtp_embd = w->tok_embd;
  return NC_OK;
}

nc_code nc_qwen35_family_load(const gguf_file *f, const nc_qwen35_pieces *pc,
                              const nc_hparams *hp, const nc_kernels *kern,
                              nc_model_weights *w, nc_error *err) {
  const char *a = pc->arch;
  const int64_t E = hp->n_embd, V = hp->n_vocab;
  nc_code rc;
  if ((rc = nc_weight_load(f, "token_embd.weight", E, V, true, kern,
                           &w->tok_embd, err)) ||
      (rc = nc_weight_load(f, "output_norm.weight", E, 1, true, kern,
                           &w->output_norm, err)) ||
      (rc = nc_weight_load(f, "output.weight", E, V, false, kern, &w->output,
                           err)))
    return rc;
  if (!w->output.data) w->output = w->tok_embd; /* tied embeddings */
  if (!kern->vec_dot[w->output.type])
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "tensor '%s': no dot-product kernel for type %s",
                   w->output.name, nc_type_name(w->output.type));
  w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
  if (!w->layers) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", a);
  int32_t n_rec;
  if ((rc = rec_pattern(f, a, hp, w->layers, &n_rec, err))) return rc;
  for (int32_t l = 0; l < hp->n_layer; l++)
    if ((rc = load_layer(f, pc, hp, kern, l, &w->layers[l], err))) return rc;
  return hp->mtp ? load_mtp(f, pc, hp, kern, w, err) : NC_OK;
}

/* attn *= sigmoid(gate), the gate the second half of each head's 2 x D
 * values of qg. */
typedef struct gate_task {
  const nc_hparams *hp;
  float *attn;
  const float *qg;
  int32_t rows;
} gate_task;

static void gate_worker(void *p, int ith, int nth) {
  const gate_task *t = p;
  const int64_t D = t->hp->head_dim, H = t->hp->n_head;
  int64_t lo, hi;
  nc_split_range((int64_t)t->rows * H, ith, nth, &lo, &hi);
  for (int64_t i = lo; i < hi; i++) {
    const float *g = t->qg + (i / H) * 2 * H * D + (i % H) * 2 * D + D;
    float *a = t->attn + i * D;
    for (int64_t d = 0; d < D; d++)
      a[d] *= 1.0f / (1.0f + expf(-g[d]));
  }
}

void nc_qwen35_attention(nc_fwd *ctx, const nc_layer_weights *L,
                         const nc_batch *b, const float *xn, float *out) {
  const nc_hparams *hp = ctx->hp;
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd, D = hp->head_dim, H = hp->n_head;
  const int64_t Q = H * D, K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const nc_mm qkv[3] = {
      {&L->wq, s->qg, 2 * Q}, {&L->wk, s->k, K}, {&L->wv, s->v, Vd}};
  nc_fwd_matmul(ctx, xn, E, T, qkv, 3);
  for (int32_t t = 0; t < T; t++) /* each head's q: its first D values */
    for (int64_t h = 0; h < H; h++)
      memcpy(s->q + t * Q + h * D, s->qg + t * 2 * Q + h * 2 * D,
             sizeof(float) * (size_t)D);
  nc_fwd_rmsnorm(ctx, s->q, L->q_norm.data, s->q, T * hp->n_head, D);
  nc_fwd_rmsnorm(ctx, s->k, L->k_norm.data, s->k, T * hp->n_head_kv, D);
  nc_fwd_rope(ctx, s->q, Q, s->k, K, T);
  nc_fwd_attention(ctx, L->kv_layer, b, s->q, s->k, s->v, s->attn);
  gate_task g = {hp, s->attn, s->qg, T};
  nc_fwd_parallel(ctx, gate_worker, &g);
  const nc_mm wo = {&L->wo, out, E};
  nc_fwd_matmul(ctx, s->attn, Q, T, &wo, 1);
}

void nc_qwen35_ffn(nc_fwd *ctx, const nc_layer_weights *L, int32_t T) {
  const nc_hparams *hp = ctx->hp;
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const int64_t E = hp->n_embd, F = hp->n_ff;
  if (L->ffn_gate_inp.data) {
    nc_fwd_moe_shared(ctx, L, s->xn, T);
    return;
  }
  const nc_mm gu[2] = {{&L->ffn_gate, s->gate, F}, {&L->ffn_up, s->up, F}};
  nc_fwd_matmul(ctx, s->xn, E, T, gu, 2);
  nc_fwd_swiglu(ctx, s->gate, s->up, T, F);
  const nc_mm down = {&L->ffn_down, s->xn, E};
  nc_fwd_matmul(ctx, s->gate, F, T, &down, 1);
}

nc_code nc_qwen35_family_forward(nc_fwd *ctx, const nc_batch *b, float *logits,
                                 nc_error *err) {
  (void)err;
  const nucleus_model *m = nc_fwd_model(ctx);
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const nc_ops_kernels *op = nc_fwd_ops(ctx);
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd;
  const int32_t half = hp->n_rot / 2;
  const nc_rope_params rope = nc_hp_rope(hp, false);

  nc_fwd_embed(&w->tok_embd, b, s->x, E);
  nc_fwd_rope_rows(b, &rope, NULL, s->rope_cos, s->rope_sin, half);
  /* Every row runs every layer (llama.cpp drops the rows without logits
   * only after the final norm, unless its MTP head is on). */
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const nc_layer_weights *L = &w->layers[l];
    nc_fwd_rmsnorm(ctx, s->x, L->attn_norm.data, s->xn, T, E);
    if (L->rec >= 0)
      nc_fwd_gated_delta_net(ctx, L, b, s->xn, s->xn);
    else
      nc_qwen35_attention(ctx, L, b, s->xn, s->xn);
    nc_fwd_residual(ctx, s->x, s->xn, NULL, T, E);
    nc_fwd_rmsnorm(ctx, s->x, L->ffn_norm.data, s->xn, T, E);
    nc_qwen35_ffn(ctx, L, T);
    nc_fwd_residual(ctx, s->x, s->xn, NULL, T, E);
  }
  /* the MTP head's K/V of these rows, from every row's final state */
  if (hp->mtp) nc_qwen35_mtp_absorb(ctx, b);
  const int32_t rows = nc_fwd_keep_output_rows(b, s->x, E);
  if (rows == 0) return NC_OK;
  nc_fwd_keep_output_order(ctx, b, true);
  for (int32_t t = 0; t < rows; t++)
    op->rmsnorm(s->x + t * E, w->output_norm.data, s->xn + t * E, E,
                hp->rms_eps);
  nc_fwd_head(ctx, s->xn, rows, &w->output, logits);
  return NC_OK;
}

static const nc_qwen35_pieces QWEN35 = {.arch = "qwen35"};

static nc_code qwen35_hparams(const gguf_file *f, nc_hparams *hp,
                              nc_error *err) {
  return nc_qwen35_check_hparams(f, &QWEN35, hp, err);
}

static nc_code qwen35_load(const gguf_file *f, const nc_hparams *hp,
                           const nc_kernels *kern, nc_model_weights *w,
                           nc_error *err) {
  return nc_qwen35_family_load(f, &QWEN35, hp, kern, w, err);
}

const nc_arch nc_arch_qwen35 = {
    .name = "qwen35",
    .hf_class = "Qwen3_5ForCausalLM",
    .family = "qwen35",
    .chat_template = "chatml",
    .scratch = NC_SCRATCH_RECURRENT,
    .rope_type = NC_ROPE_NEOX,
    .check_hparams = qwen35_hparams,
    .load_weights = qwen35_load,
    .forward = nc_qwen35_family_forward,
    .forward_mtp = nc_qwen35_mtp_forward,
};
