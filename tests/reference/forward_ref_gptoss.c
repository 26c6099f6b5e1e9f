/* forward_ref_gptoss: the reference forward pass of `gpt-oss`
 * (forward_ref.h), from its math:
 *
 *   x_t = E[token_t]
 *   per layer (local = a sliding-window layer):
 *     h   = rmsnorm(x) * attn_norm
 *     q, k, v = Wq h + bq, Wk h + bk, Wv h + bv
 *     q, k: NEOX RoPE (YaRN from the file: nc_ref_rope_pair)
 *     per head j: S[t][s] = attn_scale * q_t . k_s for t - window < s <= t
 *       (local) or s <= t; P[t][s] = e^S[t][s] / (e^sink_j + sum_s
 *       e^S[t][s]) (the sink: a logit with no value); o_t = sum_s P v_s
 *     x  += Wo o + bo
 *     h   = rmsnorm(x) * post_attention_norm
 *     r   = Wrouter h + brouter; C = the n_expert_used largest r_e;
 *     w_e = e^r_e / sum_{C} e^r   (softmax over the chosen only)
 *     x  += sum_{e in C} w_e (Wdown_e a + bdown_e), where
 *       g = min(Wgate_e h + bgate_e, 7), u = clamp(Wup_e h + bup_e, -7, 7),
 *       a = g sigmoid(1.702 g) (u + 1)
 *   logits_t = Wout (rmsnorm(x_t) * output_norm)
 *
 * f32 values, sums in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "gguf/quant.h"

/* x[t] += b for T rows of n. */
static void add_rows(float *x, const float *b, int32_t T, int64_t n) {
  for (int32_t t = 0; t < T; t++)
    for (int64_t i = 0; i < n; i++)
      x[(int64_t)t * n + i] += b[i];
}

/* NEOX RoPE of n_heads heads at position pos. */
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

/* Causal attention with sinks (window > 0: the last window positions). */
static void attention(const nc_hparams *hp, const float *q, const float *k,
                      const float *v, const float *sinks, int32_t T,
                      int32_t window, float *o, double *p) {
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  const int32_t group = hp->n_head / hp->n_head_kv;
  for (int32_t h = 0; h < hp->n_head; h++) {
    const int32_t g = h / group;
    for (int32_t t = 0; t < T; t++) {
      const int32_t s0 = window > 0 && t - window + 1 > 0 ? t - window + 1 : 0;
      const float *qt = q + t * Q + (int64_t)h * hp->head_dim;
      double max = sinks[h];
      for (int32_t s = s0; s <= t; s++) {
        const float *ks = k + s * K + (int64_t)g * hp->head_dim;
        double dot = 0;
        for (int32_t d = 0; d < hp->head_dim; d++)
          dot += (double)qt[d] * ks[d];
        p[s] = dot * hp->attn_scale;
        if (p[s] > max) max = p[s];
      }
      double sum = exp((double)sinks[h] - max);
      for (int32_t s = s0; s <= t; s++)
        sum += (p[s] = exp(p[s] - max));
      float *ot = o + t * O + (int64_t)h * hp->head_dim_v;
      for (int32_t d = 0; d < hp->head_dim_v; d++) {
        double acc = 0;
        for (int32_t s = s0; s <= t; s++)
          acc += p[s] / sum * v[s * Vd + (int64_t)g * hp->head_dim_v + d];
        ot[d] = (float)acc;
      }
    }
  }
}

/* Expert e of layer L on h (E values): y = its down of the clamped SwiGLU
 * (gate, up: scratch of n_ff_exp). */
static nc_code expert(const nc_hparams *hp, const nc_layer_weights *L,
                      int32_t e, const float *h, float *gate, float *up,
                      float *y, nc_error *err) {
  const int64_t E = hp->n_embd, F = hp->n_ff_exp;
  const nc_weight wg = nc_weight_expert(&L->gate_exps, e);
  const nc_weight wu = nc_weight_expert(&L->up_exps, e);
  const nc_weight wd = nc_weight_expert(&L->down_exps, e);
  nc_code rc;
  if ((rc = nc_ref_matmul(&wg, h, 1, E, gate, F, err)) ||
      (rc = nc_ref_matmul(&wu, h, 1, E, up, F, err)))
    return rc;
  const float *bg = (const float *)L->gate_exps_b.data + (int64_t)e * F;
  const float *bu = (const float *)L->up_exps_b.data + (int64_t)e * F;
  for (int64_t i = 0; i < F; i++) {
    const double g = fmin((double)gate[i] + bg[i], 7.0);
    const double u = fmax(fmin((double)up[i] + bu[i], 7.0), -7.0);
    gate[i] = (float)(g / (1.0 + exp(-1.702 * g)) * (u + 1.0));
  }
  if ((rc = nc_ref_matmul(&wd, gate, 1, F, y, E, err))) return rc;
  add_rows(y, (const float *)L->down_exps_b.data + (int64_t)e * E, 1, E);
  return NC_OK;
}

/* The mixture of experts, one position at a time: x += its experts. */
static nc_code moe(const nc_hparams *hp, const nc_layer_weights *L,
                   const float *h, int32_t T, float *x, float *gate, float *up,
                   float *y, nc_error *err) {
  const int64_t E = hp->n_embd;
  const int32_t NX = hp->n_expert, K = hp->n_expert_used;
  float *r = malloc(sizeof(float) * (size_t)NX);
  int32_t *sel = malloc(sizeof(int32_t) * (size_t)K);
  nc_code rc = NC_OK;
  if (!r || !sel) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  for (int32_t t = 0; t < T && !rc; t++) {
    const float *ht = h + (int64_t)t * E;
    if ((rc = nc_ref_matmul(&L->ffn_gate_inp, ht, 1, E, r, NX, err))) break;
    add_rows(r, L->ffn_gate_inp_b.data, 1, NX);
    for (int32_t j = 0; j < K; j++) { /* the K largest, largest first */
      int32_t best = -1;
      for (int32_t e = 0; e < NX; e++) {
        bool used = false;
        for (int32_t i = 0; i < j; i++)
          used = used || sel[i] == e;
        if (!used && (best < 0 || r[e] > r[best])) best = e;
      }
      sel[j] = best;
    }
    double sum = 0;
    for (int32_t j = 0; j < K; j++)
      sum += exp((double)r[sel[j]] - r[sel[0]]);
    for (int32_t j = 0; j < K && !rc; j++) {
      if ((rc = expert(hp, L, sel[j], ht, gate, up, y, err))) break;
      const double wj = exp((double)r[sel[j]] - r[sel[0]]) / sum;
      for (int64_t i = 0; i < E; i++)
        x[(int64_t)t * E + i] += (float)(wj * y[i]);
    }
  }
done:
  free(r);
  free(sel);
  return rc;
}

static nc_code gptoss_ref_forward(const nucleus_model *m, const int32_t *tokens,
                                  int32_t T, float *logits, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const int64_t E = hp->n_embd, V = hp->n_vocab, F = hp->n_ff_exp;
  const int64_t Q = (int64_t)hp->n_head * hp->head_dim;
  const int64_t K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int64_t O = (int64_t)hp->n_head * hp->head_dim_v;
  const size_t t_ = (size_t)T, EO = (size_t)(E > O ? E : O);
  float *x = calloc(t_ * (size_t)E, sizeof(float));
  float *h = calloc(t_ * EO, sizeof(float));
  float *q = calloc(t_ * (size_t)Q, sizeof(float));
  float *k = calloc(t_ * (size_t)K, sizeof(float));
  float *v = calloc(t_ * (size_t)Vd, sizeof(float));
  float *o = calloc(t_ * EO, sizeof(float));
  float *gate = calloc((size_t)F, sizeof(float));
  float *up = calloc((size_t)F, sizeof(float));
  double *p = calloc(t_, sizeof(double));
  nc_code rc = NC_OK;
  if (!x || !h || !q || !k || !v || !o || !gate || !up || !p) {
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
    if ((rc = nc_ref_matmul(&L->wq, h, T, E, q, Q, err)) ||
        (rc = nc_ref_matmul(&L->wk, h, T, E, k, K, err)) ||
        (rc = nc_ref_matmul(&L->wv, h, T, E, v, Vd, err)))
      goto done;
    add_rows(q, L->bq.data, T, Q);
    add_rows(k, L->bk.data, T, K);
    add_rows(v, L->bv.data, T, Vd);
    const double base = L->swa ? hp->rope_freq_base_swa : hp->rope_freq_base;
    const double scale = L->swa ? hp->rope_freq_scale_swa : hp->rope_freq_scale;
    for (int32_t t = 0; t < T; t++) {
      rope(q + t * Q, hp->n_head, hp, base, scale, t);
      rope(k + t * K, hp->n_head_kv, hp, base, scale, t);
    }
    attention(hp, q, k, v, L->attn_sinks.data, T, L->swa ? hp->n_swa : 0, o, p);
    if ((rc = nc_ref_matmul(&L->wo, o, T, O, h, E, err))) goto done;
    add_rows(h, L->bo.data, T, E);
    for (int64_t i = 0; i < (int64_t)T * E; i++)
      x[i] += h[i];
    for (int32_t t = 0; t < T; t++)
      nc_ref_rmsnorm(x + t * E, L->ffn_norm.data, h + t * E, E, hp->rms_eps);
    if ((rc = moe(hp, L, h, T, x, gate, up, o, err))) goto done;
  }
  for (int32_t t = 0; t < T; t++)
    nc_ref_rmsnorm(x + t * E, w->output_norm.data, h + t * E, E, hp->rms_eps);
  rc = nc_ref_matmul(&w->output, h, T, E, logits, V, err);
done:
  free(x);
  free(h);
  free(q);
  free(k);
  free(v);
  free(o);
  free(gate);
  free(up);
  free(p);
  return rc;
}

const nc_ref_family nc_ref_family_gptoss = {.family = "gptoss",
                                            .forward = gptoss_ref_forward};
