/* arch_bert: BERT encoders as llama.cpp's graph (src/models/bert.cpp):
 *
 * `bert` (BERT, MiniLM, BGE, E5, and the cross-encoder rerankers with a
 * classification head): the token's embedding plus the first token-type
 * row plus the absolute position's embedding, LayerNorm (with bias); per
 * layer Q/K/V with biases, attention over the whole sequence
 * (bidirectional), the output projection with its bias, the residual,
 * LayerNorm; the FFN up (bias), GELU, down (bias), the residual, LayerNorm.
 *
 * `nomic-bert` (nomic-embed-text): no position embeddings but NEOX RoPE
 * on q and k, Q/K/V fused (attn_qkv) and no biases, a SwiGLU FFN (gate,
 * up, down) without biases; the same LayerNorms.
 *
 * The last LayerNorm's rows are the hidden states the embedder pools
 * (model/embed.c; the rank head, cls and cls.output, is generic too). No
 * LM head: embeddings only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/arch.h"
#include "model/forward.h"

/* What tells nomic-bert from bert. */
typedef struct bert_pieces {
  const char *name;
  bool rope;      /* RoPE on q and k, no position embeddings */
  bool fused_qkv; /* attn_qkv [n_embd -> 3 n_embd], no Q/K/V biases */
  bool swiglu;    /* FFN silu(gate x) * (up x), no FFN biases; else GELU */
  bool biases;    /* Q/K/V, output and FFN biases */
} bert_pieces;

static const bert_pieces BERT = {.name = "bert", .biases = true};
static const bert_pieces NOMIC = {
    .name = "nomic-bert", .rope = true, .fused_qkv = true, .swiglu = true};

static const bert_pieces *pieces_of(const nc_hparams *hp,
                                    const nucleus_model *m) {
  (void)hp;
  return nc_model_arch(m) == &nc_arch_nomic_bert ? &NOMIC : &BERT;
}

static nc_code bert_hparams(const gguf_file *f, nc_hparams *hp, nc_error *err) {
  (void)f;
  if (hp->n_head_kv != hp->n_head)
    return nc_fail(err, NC_ERR_FORMAT,
                   "bert: %d KV heads for %d heads (must be equal)",
                   (int)hp->n_head_kv, (int)hp->n_head);
  if ((int64_t)hp->n_head * hp->head_dim != hp->n_embd ||
      hp->head_dim_v != hp->head_dim)
    return nc_fail(err, NC_ERR_FORMAT,
                   "bert: %d heads of %d (values %d) do not make n_embd %d",
                   (int)hp->n_head, (int)hp->head_dim, (int)hp->head_dim_v,
                   (int)hp->n_embd);
  hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
  return NC_OK;
}

typedef struct bert_tensor {
  const char *suffix;
  int64_t ne0, ne1;
  nc_weight *out;
} bert_tensor;

static nc_weight weight_rows(const nc_weight *w, int64_t r0, int64_t n) {
  nc_weight v = *w;
  v.data = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
  v.ne1 = n;
  return v;
}

static nc_code load_family(const gguf_file *f, const nc_hparams *hp,
                           const nc_kernels *kern, const bert_pieces *pc,
                           nc_model_weights *w, nc_error *err) {
  const int64_t E = hp->n_embd, F = hp->n_ff;
  nc_code rc;
  /* the token-type rows: as many as the file has (row 0 is used) */
  const gguf_tensor_info *tt = gguf_find_tensor(f, "token_types.weight");
  const int64_t n_types = tt && tt->n_dims == 2 ? (int64_t)tt->ne[1] : 0;
  if (n_types < 1 || n_types > 1024)
    return nc_fail(err, NC_ERR_FORMAT,
                   "%s: token_types.weight is missing or has %lld rows "
                   "(allowed 1..1024)",
                   pc->name, (long long)n_types);
  /* tables read by rows (any type) and vectors */
  const struct {
    const char *name;
    int64_t ne1;
    bool load;
    nc_weight *out;
  } top[] = {
      {"token_embd.weight", hp->n_vocab, true, &w->tok_embd},
      {"token_types.weight", n_types, true, &w->tok_types},
      {"position_embd.weight", hp->n_ctx_train, !pc->rope, &w->pos_embd},
      {"token_embd_norm.weight", 1, true, &w->tok_norm},
      {"token_embd_norm.bias", 1, true, &w->tok_norm_b},
  };
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
    if (!top[i].load) continue;
    rc = top[i].ne1 > 1 ? nc_weight_load_matrix(f, top[i].name, E, top[i].ne1,
                                                true, kern, top[i].out, err)
                        : nc_weight_load(f, top[i].name, E, 1, true, kern,
                                         top[i].out, err);
    if (rc) return rc;
  }
  w->layers = calloc((size_t)hp->n_layer, sizeof *w->layers);
  if (!w->layers)
    return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory (layers)", pc->name);
  for (int32_t l = 0; l < hp->n_layer; l++) {
    nc_layer_weights *L = &w->layers[l];
    L->kv_layer = l;
    L->rec = -1;
    const bool b = pc->biases, qkv = pc->fused_qkv;
    const struct {
      const char *suffix;
      int64_t ne0, ne1;
      bool load;
      nc_weight *out;
    } t[] = {
        {"attn_qkv.weight", E, 3 * E, qkv, &L->wq},
        {"attn_q.weight", E, E, !qkv, &L->wq},
        {"attn_q.bias", E, 1, b, &L->bq},
        {"attn_k.weight", E, E, !qkv, &L->wk},
        {"attn_k.bias", E, 1, b, &L->bk},
        {"attn_v.weight", E, E, !qkv, &L->wv},
        {"attn_v.bias", E, 1, b, &L->bv},
        {"attn_output.weight", E, E, true, &L->wo},
        {"attn_output.bias", E, 1, b, &L->bo},
        {"attn_output_norm.weight", E, 1, true, &L->attn_norm},
        {"attn_output_norm.bias", E, 1, true, &L->attn_norm_b},
        {"ffn_gate.weight", E, F, pc->swiglu, &L->ffn_gate},
        {"ffn_up.weight", E, F, true, &L->ffn_up},
        {"ffn_up.bias", F, 1, b, &L->ffn_up_b},
        {"ffn_down.weight", F, E, true, &L->ffn_down},
        {"ffn_down.bias", E, 1, b, &L->ffn_down_b},
        {"layer_output_norm.weight", E, 1, true, &L->ffn_norm},
        {"layer_output_norm.bias", E, 1, true, &L->ffn_norm_b},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
      if (!t[i].load) continue;
      char name[GGUF_MAX_NAME];
      snprintf(name, sizeof name, "blk.%d.%s", (int)l, t[i].suffix);
      if ((rc = nc_weight_load(f, name, t[i].ne0, t[i].ne1, true, kern,
                               t[i].out, err)))
        return rc;
    }
    if (qkv) { /* Q, K, V as views of the fused tensor's row ranges */
      const nc_weight all = L->wq;
      L->wq = weight_rows(&all, 0, E);
      L->wk = weight_rows(&all, E, E);
      L->wv = weight_rows(&all, 2 * E, E);
    }
  }
  return NC_OK;
}

static nc_code bert_load_weights(const gguf_file *f, const nc_hparams *hp,
                                 const nc_kernels *kern, nc_model_weights *w,
                                 nc_error *err) {
  return load_family(f, hp, kern, &BERT, w, err);
}

static nc_code nomic_load_weights(const gguf_file *f, const nc_hparams *hp,
                                  const nc_kernels *kern, nc_model_weights *w,
                                  nc_error *err) {
  return load_family(f, hp, kern, &NOMIC, w, err);
}

/* x[t] += row 0 of the type table and (without RoPE) row pos[t] of the
 * position table. */
static void add_positions(const nc_model_weights *w, const nc_batch *b,
                          float *x, float *row, int64_t E) {
  nc_dequantize_row(w->tok_types.type, w->tok_types.data, row, E);
  for (int32_t t = 0; t < b->n_tokens; t++) {
    float *xt = x + (int64_t)t * E;
    for (int64_t i = 0; i < E; i++)
      xt[i] += row[i];
  }
  for (int32_t t = 0; w->pos_embd.data && t < b->n_tokens; t++) {
    const uint8_t *p = (const uint8_t *)w->pos_embd.data +
                       (size_t)b->pos[t] * w->pos_embd.row_bytes;
    nc_dequantize_row(w->pos_embd.type, p, row, E);
    float *xt = x + (int64_t)t * E;
    for (int64_t i = 0; i < E; i++)
      xt[i] += row[i];
  }
}

static nc_code bert_forward(nc_fwd *ctx, const nc_batch *b, float *out,
                            nc_error *err) {
  const nucleus_model *m = nc_fwd_model(ctx);
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const nc_fwd_bufs *s = nc_fwd_scratch(ctx);
  const bert_pieces *pc = pieces_of(hp, m);
  const int32_t T = b->n_tokens;
  const int64_t E = hp->n_embd, F = hp->n_ff;
  for (int32_t t = 0; t < T; t++)
    if (b->pos[t] >= hp->n_ctx_train)
      return nc_fail(err, NC_ERR_LIMIT,
                     "%s: position %d is past the model's context of %d",
                     pc->name, (int)b->pos[t], (int)hp->n_ctx_train);
  int32_t rows = T; /* T, then in the last layer the output rows */

  /* embeddings: token + type 0 + position (llama.cpp's order), LayerNorm */
  nc_fwd_embed(&w->tok_embd, b, s->x, E);
  add_positions(w, b, s->x, s->xn, E);
  nc_fwd_layernorm(ctx, s->x, w->tok_norm.data, w->tok_norm_b.data, s->x, T, E);
  if (pc->rope) {
    const nc_rope_params rope = nc_hp_rope(hp, false);
    nc_fwd_rope_rows(b, &rope, NULL, s->rope_cos, s->rope_sin, hp->n_rot / 2);
  }
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const nc_layer_weights *L = &w->layers[l];
    const nc_mm qkv[3] = {
        {&L->wq, s->q, E}, {&L->wk, s->k, E}, {&L->wv, s->v, E}};
    nc_fwd_matmul(ctx, s->x, E, T, qkv, 3);
    if (L->bq.data) nc_fwd_add_bias(ctx, s->q, L->bq.data, T, E);
    if (L->bk.data) nc_fwd_add_bias(ctx, s->k, L->bk.data, T, E);
    if (L->bv.data) nc_fwd_add_bias(ctx, s->v, L->bv.data, T, E);
    if (pc->rope) nc_fwd_rope(ctx, s->q, E, s->k, E, T);
    nc_fwd_attention(ctx, l, b, s->q, s->k, s->v, s->attn);
    if (l == hp->n_layer - 1) { /* the rest only for the output rows */
      nc_fwd_keep_output_rows(b, s->attn, E);
      rows = nc_fwd_keep_output_rows(b, s->x, E);
      if (rows == 0) return NC_OK;
      nc_fwd_keep_output_order(ctx, b, false);
    }
    const nc_mm wo = {&L->wo, s->xn, E};
    nc_fwd_matmul(ctx, s->attn, E, rows, &wo, 1);
    if (l == hp->n_layer - 1) nc_fwd_keep_output_order(ctx, b, true);
    /* x = LayerNorm(x + (o + bo)) */
    nc_fwd_residual_layernorm(ctx, s->x, s->xn, L->bo.data, L->attn_norm.data,
                              L->attn_norm_b.data, rows, E);
    /* x = LayerNorm(x + down(gelu(up x + b_up)) + b_down), or with
     * SwiGLU down(silu(gate x) * up x) */
    const float *h = s->up;
    if (pc->swiglu) {
      const nc_mm gu[2] = {{&L->ffn_gate, s->gate, F}, {&L->ffn_up, s->up, F}};
      nc_fwd_matmul(ctx, s->x, E, rows, gu, 2);
      nc_fwd_swiglu(ctx, s->gate, s->up, rows, F);
      h = s->gate;
    } else {
      const nc_mm up = {&L->ffn_up, s->up, F};
      nc_fwd_matmul(ctx, s->x, E, rows, &up, 1);
      if (L->ffn_up_b.data)
        nc_fwd_bias_gelu(ctx, s->up, L->ffn_up_b.data, rows, F);
      else
        nc_fwd_gelu(ctx, s->up, rows, F);
    }
    const nc_mm down = {&L->ffn_down, s->xn, E};
    nc_fwd_matmul(ctx, h, F, rows, &down, 1);
    nc_fwd_residual_layernorm(ctx, s->x, s->xn, L->ffn_down_b.data,
                              L->ffn_norm.data, L->ffn_norm_b.data, rows, E);
  }
  nc_fwd_head(ctx, s->x, rows, &w->output, out);
  return NC_OK;
}

const nc_arch nc_arch_nomic_bert = {
    .name = "nomic-bert",
    .hf_class = "NomicBertModel",
    .family = "bert",
    .rope_type = NC_ROPE_NEOX,
    .non_causal = true,
    .embedding_only = true,
    .check_hparams = bert_hparams,
    .load_weights = nomic_load_weights,
    .forward = bert_forward,
};

const nc_arch nc_arch_bert = {
    .name = "bert",
    .hf_class = "BertModel",
    .family = "bert",
    .rope_type = NC_ROPE_NORMAL,
    .non_causal = true,
    .embedding_only = true,
    .check_hparams = bert_hparams,
    .load_weights = bert_load_weights,
    .forward = bert_forward,
};
