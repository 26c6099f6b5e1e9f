/* forward_ref_llama: the reference forward pass of the `llama` architecture
 * (forward_ref.h), from its math:
 *
 *   x_t = E[token_t]                                  (embedding row)
 *   per layer:
 *     h   = rmsnorm(x) * attn_norm,  rmsnorm(x) = x / sqrt(mean(x^2) + eps)
 *     q, k, v = Wq h + bq, Wk h + bk, Wv h + bv     (biases: qwen2)
 *     q, k: each head's vector RMSNorm-ed * q_norm / k_norm     (qwen3)
 *     q, k: RoPE by position p: each pair (x_a, x_b) of a head rotated by
 *       theta_i = p * freq_scale * base^(-2i / n_rot) / rope_freqs[i]
 *       (pairs (2i, 2i+1) for NORMAL RoPE, (i, i + n_rot/2) for NEOX;
 *       YaRN blends freq_scale with 1 over the pairs and scales the
 *       magnitude: nc_ref_rope_pair)
 *     per head j (KV head j / (n_head / n_head_kv)):
 *       S[t][s] = attn_scale * q_t . k_s for s <= t (causal), P = softmax
 *       over s, o_t = sum_s P[t][s] v_s
 *     x  += Wo o (+ bo)
 *     h   = rmsnorm(x) * ffn_norm
 *     x  += Wdown (silu(Wgate h) * (Wup h)),  silu(a) = a / (1 + e^-a)
 *       or, with a router (mixture of experts: qwen3moe, Mixtral):
 *       p = softmax(Wrouter h); S = the n_expert_used largest p_e;
 *       x += sum_{e in S} p_e / (sum_{S} p) * expert_e(h), each expert a
 *       SwiGLU FFN of its own
 *   logits_t = Wout (rmsnorm(x_t) * output_norm)
 *
 * M-RoPE (qwen2vl, qwen3vl, qwen3vlmoe): a text token's positions (t, h,
 * w, e) are (p, p, p, 0), and the file's sections give each pair one of
 * them (mrope_pos), so the pairs of e do not turn.
 *
 * phi3's fused tensors are loaded as views of their row ranges (so they
 * are Wq, Wk, Wv, Wgate, Wup here); its LongRoPE factors are rope_freqs
 * (short) or rope_long when the training context exceeds the original
 * one (llama.cpp's choice at its default n_ctx), and cos/sin are scaled by
 * rope.scaling.attn_factor.
 *
 * Every value is f32; dot products and softmax sums accumulate in double so
 * that the reference's own rounding stays far below the differences it is
 * used to measure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "gguf/quant.h"

/* y[t][i] = sum_j W[i][j] x[t][j] for T positions: W (out x in) one row at a
 * time dequantized to f32. */
static nc_code matmul(const nc_weight *w, const float *x, int32_t T, int64_t in,
                      float *y, int64_t out, nc_error *err) {
  if (!w->data || w->ne0 != in || w->ne1 != out)
    return nc_fail(err, NC_ERR_FORMAT,
                   "reference: tensor '%s' is %lld x %lld, expected %lld x "
                   "%lld",
                   w->name ? w->name : "?", (long long)w->ne0,
                   (long long)w->ne1, (long long)in, (long long)out);
  float *row = malloc(sizeof(float) * (size_t)in);
  if (!row) return nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
  for (int64_t i = 0; i < out; i++) {
    nc_dequantize_row(w->type, (const uint8_t *)w->data + i * w->row_bytes, row,
                      in);
    for (int32_t t = 0; t < T; t++) {
      const float *xt = x + (int64_t)t * in;
      double acc = 0;
      for (int64_t j = 0; j < in; j++)
        acc += (double)row[j] * xt[j];
      y[(int64_t)t * out + i] = (float)acc;
    }
  }
  free(row);
  return NC_OK;
}

/* x += b (when the file has the bias). */
static void add_bias(float *x, const void *b, int64_t n) {
  for (int64_t i = 0; b && i < n; i++)
    x[i] += ((const float *)b)[i];
}

/* M-RoPE (qwen2vl, qwen3vl): the position pair i of a text token at pos
 * turns by. Its positions are (t, h, w, e) = (pos, pos, pos, 0) (llama.cpp's
 * text rows); the sections, summing to n, give pair i (sector i mod n) one
 * of them: in order, s0 sectors t, s1 h, s2 w, the rest e; interleaved
 * (Qwen3-VL), sector j is h when j = 1 mod 3 and j < 3 s1, w when j = 2 mod
 * 3 and j < 3 s2, t when j = 0 mod 3 and j < 3 s0, else e. */
static int32_t mrope_pos(const nc_hparams *hp, int32_t i, int32_t pos) {
  const int32_t *sc = hp->rope_sections;
  const int32_t n = sc[0] + sc[1] + sc[2] + sc[3], j = i % n;
  bool e;
  if (hp->mrope == NC_MROPE_INTERLEAVED)
    e = !((j % 3 == 1 && j < 3 * sc[1]) || (j % 3 == 2 && j < 3 * sc[2]) ||
          (j % 3 == 0 && j < 3 * sc[0]));
  else
    e = j >= sc[0] + sc[1] + sc[2];
  return e ? 0 : pos;
}

/* Rotates the first n_rot dims of each of n_heads heads at position pos
 * (cos and sin times the attention factor). */
static void rope(float *x, int32_t n_heads, const nc_hparams *hp,
                 const float *freq_factors, int32_t pos) {
  const int32_t half = hp->n_rot / 2;
  const bool neox = hp->rope_type == NC_ROPE_NEOX;
  for (int32_t i = 0; i < half; i++) {
    double theta, mag;
    const int32_t p = hp->mrope ? mrope_pos(hp, i, pos) : pos;
    nc_ref_rope_pair(hp, hp->rope_freq_base, hp->rope_freq_scale, freq_factors,
                     i, p, &theta, &mag);
    const double c = cos(theta) * mag, s = sin(theta) * mag;
    for (int32_t h = 0; h < n_heads; h++) {
      float *v = x + (int64_t)h * hp->head_dim;
      const int32_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
      const double x0 = v[a], x1 = v[b];
      v[a] = (float)(x0 * c - x1 * s);
      v[b] = (float)(x0 * s + x1 * c);
    }
  }
}

/* Causal attention of all T positions, head by head, over the whole score
 * matrix: o[t] (n_head * head_dim_v) from q (n_head * head_dim per
 * position), k (n_head_kv * head_dim), v (n_head_kv * head_dim_v). */
static nc_code attention(const nc_hparams *hp, const float *q, const float *k,
                         const float *v, int32_t T, float *o, nc_error *err) {
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  const int32_t group = hp->n_head / hp->n_head_kv;
  float *S = malloc(sizeof(float) * (size_t)T * (size_t)T);
  if (!S) return nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
  for (int32_t h = 0; h < hp->n_head; h++) {
    const int32_t g = h / group;
    for (int32_t t = 0; t < T; t++) {
      const float *qt = q + t * Q + (int64_t)h * hp->head_dim;
      float *row = S + (int64_t)t * T;
      float max = -INFINITY;
      for (int32_t s = 0; s <= t; s++) {
        const float *ks = k + s * K + (int64_t)g * hp->head_dim;
        double dot = 0;
        for (int32_t d = 0; d < hp->head_dim; d++)
          dot += (double)qt[d] * ks[d];
        row[s] = (float)(dot * hp->attn_scale);
        if (row[s] > max) max = row[s];
      }
      double sum = 0;
      for (int32_t s = 0; s <= t; s++)
        sum += exp((double)row[s] - max);
      for (int32_t s = 0; s <= t; s++)
        row[s] = (float)(exp((double)row[s] - max) / sum);
      for (int32_t s = t + 1; s < T; s++)
        row[s] = 0.0f; /* masked: the future */
      float *ot = o + t * O + (int64_t)h * hp->head_dim_v;
      for (int32_t d = 0; d < hp->head_dim_v; d++) {
        double acc = 0;
        for (int32_t s = 0; s <= t; s++)
          acc += (double)row[s] * v[s * Vd + (int64_t)g * hp->head_dim_v + d];
        ot[d] = (float)acc;
      }
    }
  }
  free(S);
  return NC_OK;
}

static nc_code llama_ref_forward(const nucleus_model *m, const int32_t *tokens,
                                 int32_t T, float *logits, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const int64_t E = hp->n_embd, V = hp->n_vocab;
  const int64_t F = hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp;
  const float *ff = w->rope_long.data && hp->n_ctx_train > hp->n_ctx_orig
                        ? w->rope_long.data
                        : w->rope_freqs.data;
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv)
    return nc_fail(err, NC_ERR_FORMAT, "reference: %d heads, %d KV heads",
                   (int)hp->n_head, (int)hp->n_head_kv);
  if (w->tok_embd.ne0 != E || w->tok_embd.ne1 != V)
    return nc_fail(err, NC_ERR_FORMAT, "reference: token_embd shape");
  const size_t t_ = (size_t)T;
  float *x = calloc(t_ * (size_t)E, sizeof(float));
  float *h = calloc(t_ * (size_t)(E > O ? E : O), sizeof(float));
  float *q = calloc(t_ * (size_t)Q, sizeof(float));
  float *k = calloc(t_ * (size_t)K, sizeof(float));
  float *v = calloc(t_ * (size_t)Vd, sizeof(float));
  float *o = calloc(t_ * (size_t)(E > O ? E : O), sizeof(float));
  float *gate = calloc(t_ * (size_t)F, sizeof(float));
  float *up = calloc(t_ * (size_t)F, sizeof(float));
  nc_code rc = NC_OK;
  if (!x || !h || !q || !k || !v || !o || !gate || !up) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  for (int32_t t = 0; t < T; t++)
    nc_dequantize_row(w->tok_embd.type,
                      (const uint8_t *)w->tok_embd.data +
                          (size_t)tokens[t] * w->tok_embd.row_bytes,
                      x + t * E, E);
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const nc_layer_weights *L = &w->layers[l];
    for (int32_t t = 0; t < T; t++)
      nc_ref_rmsnorm(x + t * E, L->attn_norm.data, h + t * E, E, hp->rms_eps);
    if ((rc = matmul(&L->wq, h, T, E, q, Q, err)) ||
        (rc = matmul(&L->wk, h, T, E, k, K, err)) ||
        (rc = matmul(&L->wv, h, T, E, v, Vd, err)))
      goto done;
    for (int32_t t = 0; t < T; t++) {
      add_bias(q + t * Q, L->bq.data, Q);
      add_bias(k + t * K, L->bk.data, K);
      add_bias(v + t * Vd, L->bv.data, Vd);
      for (int32_t j = 0; L->q_norm.data && j < hp->n_head; j++)
        nc_ref_rmsnorm(q + t * Q + j * hp->head_dim, L->q_norm.data,
                       q + t * Q + j * hp->head_dim, hp->head_dim, hp->rms_eps);
      for (int32_t j = 0; L->k_norm.data && j < hp->n_head_kv; j++)
        nc_ref_rmsnorm(k + t * K + j * hp->head_dim, L->k_norm.data,
                       k + t * K + j * hp->head_dim, hp->head_dim, hp->rms_eps);
      rope(q + t * Q, hp->n_head, hp, ff, t);
      rope(k + t * K, hp->n_head_kv, hp, ff, t);
    }
    if ((rc = attention(hp, q, k, v, T, o, err)) ||
        (rc = matmul(&L->wo, o, T, O, h, E, err)))
      goto done;
    for (int64_t i = 0; i < (int64_t)T * E; i++)
      x[i] += h[i] + (L->bo.data ? ((const float *)L->bo.data)[i % E] : 0.0f);
    for (int32_t t = 0; t < T; t++)
      nc_ref_rmsnorm(x + t * E, L->ffn_norm.data, h + t * E, E, hp->rms_eps);
    if (L->ffn_gate_inp.data) {
      if ((rc = nc_ref_moe_ffn(hp, L, h, T, x, gate, up, o, err))) goto done;
      continue;
    }
    if ((rc = nc_ref_swiglu_ffn(&L->ffn_gate, &L->ffn_up, &L->ffn_down, h, T, E,
                                hp->n_ff, gate, up, o, err)))
      goto done;
    for (int64_t i = 0; i < (int64_t)T * E; i++)
      x[i] += o[i];
  }
  for (int32_t t = 0; t < T; t++)
    nc_ref_rmsnorm(x + t * E, w->output_norm.data, h + t * E, E, hp->rms_eps);
  rc = matmul(&w->output, h, T, E, logits, V, err);
done:
  free(x);
  free(h);
  free(q);
  free(k);
  free(v);
  free(o);
  free(gate);
  free(up);
  return rc;
}

/* llama and the archs of its family (qwen2, qwen3, phi3, qwen3moe): the
 * same math, their extra pieces the optional ones above (the rope type
 * comes with the loaded model). */
const nc_ref_family nc_ref_family_llama = {.family = "llama",
                                           .forward = llama_ref_forward};
