/* forward_ref_gemma: the reference forward pass of `gemma2` and `gemma3`
 * (forward_ref.h), from their math:
 *
 *   x_t = E[token_t] * sqrt(n_embd)
 *   per layer (local = a sliding-window layer):
 *     h   = rmsnorm(x) * attn_norm
 *     q, k, v = Wq h, Wk h, Wv h
 *     q, k: each head RMSNorm-ed * q_norm / k_norm            (gemma3)
 *     q, k: NEOX RoPE, base rope_freq_base_swa (local) or rope_freq_base
 *     q  *= q_scale                                (1/sqrt(key_length))
 *     S[t][s] = q_t . k_s for t - window < s <= t (local) or s <= t,
 *       S = cap * tanh(S / cap) (gemma2), P = softmax over s, o = P V
 *     x  += rmsnorm(Wo o) * post_attention_norm
 *     h   = rmsnorm(x) * ffn_norm
 *     x  += rmsnorm(Wdown (gelu(Wgate h) * (Wup h))) * post_ffw_norm,
 *       gelu(a) = a/2 (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))
 *   logits_t = Wout (rmsnorm(x_t) * output_norm), then
 *     cap * tanh(logits / cap) when there is a final cap
 *
 * Every value is f32 (no F16 GELU table, no F16 cache); dot products and
 * sums accumulate in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "gguf/quant.h"

/* NEOX RoPE of n_heads heads at position pos with the given base/scale. */
static void rope(float *x, int32_t n_heads, const nc_hparams *hp, double base,
                 double scale, int32_t pos) {
  const int32_t half = hp->n_rot / 2;
  for (int32_t i = 0; i < half; i++) {
    double theta, mag;
    nc_ref_rope_pair(hp, base, scale, NULL, i, pos, &theta, &mag);
    const double c = cos(theta) * mag, s = sin(theta) * mag;
    for (int32_t h = 0; h < n_heads; h++) {
      float *v = x + (int64_t)h * hp->head_dim;
      const double x0 = v[i], x1 = v[i + half];
      v[i] = (float)(x0 * c - x1 * s);
      v[i + half] = (float)(x0 * s + x1 * c);
    }
  }
}

/* Causal attention (window > 0: the last window positions only) with the
 * optional soft cap, head by head over each row's visible keys. */
static void attention(const nc_hparams *hp, const float *q, const float *k,
                      const float *v, int32_t T, int32_t window, float *row,
                      float *o) {
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  const int32_t group = hp->n_head / hp->n_head_kv;
  const double cap = hp->attn_softcap;
  for (int32_t h = 0; h < hp->n_head; h++) {
    const int32_t g = h / group;
    for (int32_t t = 0; t < T; t++) {
      const float *qt = q + t * Q + (int64_t)h * hp->head_dim;
      const int32_t s0 = window > 0 && t + 1 > window ? t + 1 - window : 0;
      double max = -INFINITY;
      for (int32_t s = s0; s <= t; s++) {
        const float *ks = k + s * K + (int64_t)g * hp->head_dim;
        double dot = 0;
        for (int32_t d = 0; d < hp->head_dim; d++)
          dot += (double)qt[d] * ks[d];
        if (cap > 0) dot = cap * tanh(dot / cap);
        row[s] = (float)dot;
        if (row[s] > max) max = row[s];
      }
      double sum = 0;
      for (int32_t s = s0; s <= t; s++)
        sum += exp((double)row[s] - max);
      float *ot = o + t * O + (int64_t)h * hp->head_dim_v;
      for (int32_t d = 0; d < hp->head_dim_v; d++) {
        double acc = 0;
        for (int32_t s = s0; s <= t; s++)
          acc += exp((double)row[s] - max) / sum *
                 v[s * Vd + (int64_t)g * hp->head_dim_v + d];
        ot[d] = (float)acc;
      }
    }
  }
}

static nc_code gemma_ref_forward(const nucleus_model *m, const int32_t *tokens,
                                 int32_t T, float *logits, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const int64_t E = hp->n_embd, F = hp->n_ff, V = hp->n_vocab;
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv)
    return nc_fail(err, NC_ERR_FORMAT, "reference: %d heads, %d KV heads",
                   (int)hp->n_head, (int)hp->n_head_kv);
  const size_t t_ = (size_t)T;
  float *x = calloc(t_ * (size_t)E, sizeof(float));
  float *h = calloc(t_ * (size_t)(E > O ? E : O), sizeof(float));
  float *q = calloc(t_ * (size_t)Q, sizeof(float));
  float *k = calloc(t_ * (size_t)K, sizeof(float));
  float *v = calloc(t_ * (size_t)Vd, sizeof(float));
  float *o = calloc(t_ * (size_t)O, sizeof(float));
  float *gate = calloc(t_ * (size_t)F, sizeof(float));
  float *up = calloc(t_ * (size_t)F, sizeof(float));
  float *row = calloc(t_, sizeof(float));
  nc_code rc = NC_OK;
  if (!x || !h || !q || !k || !v || !o || !gate || !up || !row) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  const double emb_scale = sqrt((double)E);
  for (int32_t t = 0; t < T; t++) {
    nc_dequantize_row(w->tok_embd.type,
                      (const uint8_t *)w->tok_embd.data +
                          (size_t)tokens[t] * w->tok_embd.row_bytes,
                      x + t * E, E);
    for (int64_t i = 0; i < E; i++)
      x[t * E + i] = (float)(x[t * E + i] * emb_scale);
  }
  for (int32_t l = 0; l < hp->n_layer; l++) {
    const nc_layer_weights *L = &w->layers[l];
    const double base = L->swa ? hp->rope_freq_base_swa : hp->rope_freq_base;
    const double scale = L->swa ? hp->rope_freq_scale_swa : hp->rope_freq_scale;
    for (int32_t t = 0; t < T; t++)
      nc_ref_rmsnorm(x + t * E, L->attn_norm.data, h + t * E, E, hp->rms_eps);
    if ((rc = nc_ref_matmul(&L->wq, h, T, E, q, Q, err)) ||
        (rc = nc_ref_matmul(&L->wk, h, T, E, k, K, err)) ||
        (rc = nc_ref_matmul(&L->wv, h, T, E, v, Vd, err)))
      goto done;
    for (int32_t t = 0; t < T; t++) {
      for (int32_t j = 0; L->q_norm.data && j < hp->n_head; j++)
        nc_ref_rmsnorm(q + t * Q + j * hp->head_dim, L->q_norm.data,
                       q + t * Q + j * hp->head_dim, hp->head_dim, hp->rms_eps);
      for (int32_t j = 0; L->k_norm.data && j < hp->n_head_kv; j++)
        nc_ref_rmsnorm(k + t * K + j * hp->head_dim, L->k_norm.data,
                       k + t * K + j * hp->head_dim, hp->head_dim, hp->rms_eps);
      rope(q + t * Q, hp->n_head, hp, base, scale, t);
      rope(k + t * K, hp->n_head_kv, hp, base, scale, t);
      for (int64_t i = 0; i < Q; i++)
        q[t * Q + i] *= hp->q_scale;
    }
    attention(hp, q, k, v, T, L->swa ? hp->n_swa : 0, row, o);
    if ((rc = nc_ref_matmul(&L->wo, o, T, O, h, E, err))) goto done;
    for (int32_t t = 0; t < T; t++) {
      nc_ref_rmsnorm(h + t * E, L->attn_post_norm.data, h + t * E, E,
                     hp->rms_eps);
      for (int64_t i = 0; i < E; i++)
        x[t * E + i] += h[t * E + i];
      nc_ref_rmsnorm(x + t * E, L->ffn_norm.data, h + t * E, E, hp->rms_eps);
    }
    if ((rc = nc_ref_matmul(&L->ffn_gate, h, T, E, gate, F, err)) ||
        (rc = nc_ref_matmul(&L->ffn_up, h, T, E, up, F, err)))
      goto done;
    for (int64_t i = 0; i < (int64_t)T * F; i++) {
      const double a = gate[i];
      const double g =
          0.5 * a * (1.0 + tanh(sqrt(2.0 / M_PI) * (a + 0.044715 * a * a * a)));
      gate[i] = (float)(g * up[i]);
    }
    if ((rc = nc_ref_matmul(&L->ffn_down, gate, T, F, h, E, err))) goto done;
    for (int32_t t = 0; t < T; t++) {
      nc_ref_rmsnorm(h + t * E, L->ffn_post_norm.data, h + t * E, E,
                     hp->rms_eps);
      for (int64_t i = 0; i < E; i++)
        x[t * E + i] += h[t * E + i];
    }
  }
  for (int32_t t = 0; t < T; t++)
    nc_ref_rmsnorm(x + t * E, w->output_norm.data, h + t * E, E, hp->rms_eps);
  if ((rc = nc_ref_matmul(&w->output, h, T, E, logits, V, err))) goto done;
  if (hp->final_softcap > 0) {
    const double cap = hp->final_softcap;
    for (int64_t i = 0; i < (int64_t)T * V; i++)
      logits[i] = (float)(cap * tanh(logits[i] / cap));
  }
done:
  free(x);
  free(h);
  free(q);
  free(k);
  free(v);
  free(o);
  free(gate);
  free(up);
  free(row);
  return rc;
}

/* gemma2 and gemma3 */
const nc_ref_family nc_ref_family_gemma = {.family = "gemma",
                                           .forward = gemma_ref_forward};
