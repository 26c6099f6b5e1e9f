/* forward_ref_bert: the reference forward pass of `bert` and `nomic-bert`
 * (forward_ref.h), from their math. An encoder has no LM head: its
 * "logits" are the final hidden states, n_embd floats per position
 * (n * n_embd in all), every position seeing the whole sequence:
 *
 *   x_t = E[token_t] + types[0] + P[t] (bert; nomic-bert: no P),
 *   x = layernorm(x) * g + b
 *   per layer:
 *     q, k, v = Wq x + bq, Wk x + bk, Wv x + bv (nomic-bert: no biases,
 *       then NEOX RoPE of q and k at position t)
 *     S[t][s] = q_t . k_s / sqrt(head_dim) for every s (no mask),
 *       P = softmax over s, o = P V
 *     x = layernorm(x + Wo o + bo) * attn_output_norm + its bias
 *     x = layernorm(x + Wdown gelu(Wup x + bup) + bdown)
 *           * layer_output_norm + its bias,
 *       gelu(a) = a/2 (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)));
 *       nomic-bert: Wdown (silu(Wgate x) * Wup x), silu(a) = a / (1 + e^-a)
 *
 * Every value is f32 (no F16 GELU table, no F16 cache); dot products and
 * sums accumulate in double. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "gguf/quant.h"

static void layernorm(float *x, const nc_weight *g, const nc_weight *b,
                      int64_t n, float eps) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; i++)
    mean += x[i];
  mean /= (double)n;
  for (int64_t i = 0; i < n; i++)
    var += (x[i] - mean) * (x[i] - mean);
  var /= (double)n;
  const double inv = 1.0 / sqrt(var + (double)eps);
  const float *gw = g->data, *bw = b->data;
  for (int64_t i = 0; i < n; i++)
    x[i] = (float)((x[i] - mean) * inv * gw[i] + bw[i]);
}

static float gelu(float a) {
  const double x = a;
  return (float)(0.5 * x *
                 (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
}

static void add_row(const nc_weight *w, int64_t row, float *x, int64_t n,
                    float *tmp) {
  nc_dequantize_row(w->type, (const uint8_t *)w->data + row * w->row_bytes, tmp,
                    n);
  for (int64_t i = 0; i < n; i++)
    x[i] += tmp[i];
}

/* NEOX RoPE of the n_heads heads of x at position pos. */
static void rope(float *x, int32_t n_heads, const nc_hparams *hp, int32_t pos) {
  const int32_t half = hp->n_rot / 2;
  for (int32_t i = 0; i < half; i++) {
    double theta, mag;
    nc_ref_rope_pair(hp, hp->rope_freq_base, hp->rope_freq_scale, NULL, i, pos,
                     &theta, &mag);
    const double c = cos(theta) * mag, s = sin(theta) * mag;
    for (int32_t h = 0; h < n_heads; h++) {
      float *v = x + (int64_t)h * hp->head_dim;
      const double x0 = v[i], x1 = v[i + half];
      v[i] = (float)(x0 * c - x1 * s);
      v[i + half] = (float)(x0 * s + x1 * c);
    }
  }
}

/* y += b per row (nothing when the tensor is absent). */
static void add_bias(float *y, const nc_weight *b, int32_t T, int64_t n) {
  const float *bw = b->data;
  if (!bw) return;
  for (int32_t t = 0; t < T; t++)
    for (int64_t i = 0; i < n; i++)
      y[(int64_t)t * n + i] += bw[i];
}

static nc_code bert_ref(const nucleus_model *m, const int32_t *tokens,
                        int32_t n, float *hidden, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const int64_t E = hp->n_embd, F = hp->n_ff, hd = hp->head_dim;
  float *x = hidden;
  float *q = malloc(sizeof(float) * (size_t)(n * E * 4 + 2 * n * F + n + E));
  if (!q) return nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
  float *k = q + n * E, *v = k + n * E, *o = v + n * E, *f = o + n * E;
  float *g = f + n * F, *s = g + n * F, *tmp = s + n;
  const bool nomic = w->pos_embd.data == NULL;
  nc_code rc = NC_OK;
  for (int32_t t = 0; t < n; t++) {
    float *xt = x + (int64_t)t * E;
    memset(xt, 0, sizeof(float) * (size_t)E);
    add_row(&w->tok_embd, tokens[t], xt, E, tmp);
    add_row(&w->tok_types, 0, xt, E, tmp);
    if (!nomic) add_row(&w->pos_embd, t, xt, E, tmp);
    layernorm(xt, &w->tok_norm, &w->tok_norm_b, E, hp->rms_eps);
  }
  for (int32_t l = 0; l < hp->n_layer && rc == NC_OK; l++) {
    const nc_layer_weights *L = &w->layers[l];
    if ((rc = nc_ref_matmul(&L->wq, x, n, E, q, E, err)) ||
        (rc = nc_ref_matmul(&L->wk, x, n, E, k, E, err)) ||
        (rc = nc_ref_matmul(&L->wv, x, n, E, v, E, err)))
      break;
    add_bias(q, &L->bq, n, E);
    add_bias(k, &L->bk, n, E);
    add_bias(v, &L->bv, n, E);
    for (int32_t t = 0; nomic && t < n; t++) {
      rope(q + (int64_t)t * E, hp->n_head, hp, t);
      rope(k + (int64_t)t * E, hp->n_head, hp, t);
    }
    for (int32_t h = 0; h < hp->n_head; h++)
      for (int32_t t = 0; t < n; t++) {
        const float *qt = q + (int64_t)t * E + h * hd;
        double mx = -INFINITY, sum = 0;
        for (int32_t j = 0; j < n; j++) {
          double d = 0;
          for (int64_t i = 0; i < hd; i++)
            d += (double)qt[i] * k[(int64_t)j * E + h * hd + i];
          s[j] = (float)(d / sqrt((double)hd));
          if (s[j] > mx) mx = s[j];
        }
        for (int32_t j = 0; j < n; j++)
          sum += exp(s[j] - mx);
        for (int64_t i = 0; i < hd; i++) {
          double acc = 0;
          for (int32_t j = 0; j < n; j++)
            acc += exp(s[j] - mx) / sum * v[(int64_t)j * E + h * hd + i];
          o[(int64_t)t * E + h * hd + i] = (float)acc;
        }
      }
    if ((rc = nc_ref_matmul(&L->wo, o, n, E, q, E, err))) break;
    add_bias(q, &L->bo, n, E);
    for (int64_t i = 0; i < n * E; i++)
      x[i] += q[i];
    for (int32_t t = 0; t < n; t++)
      layernorm(x + (int64_t)t * E, &L->attn_norm, &L->attn_norm_b, E,
                hp->rms_eps);
    if ((rc = nc_ref_matmul(&L->ffn_up, x, n, E, f, F, err))) break;
    add_bias(f, &L->ffn_up_b, n, F);
    if (L->ffn_gate.data) {
      if ((rc = nc_ref_matmul(&L->ffn_gate, x, n, E, g, F, err))) break;
      for (int64_t i = 0; i < n * F; i++)
        f[i] = (float)(g[i] / (1.0 + exp(-(double)g[i])) * f[i]);
    } else {
      for (int64_t i = 0; i < n * F; i++)
        f[i] = gelu(f[i]);
    }
    if ((rc = nc_ref_matmul(&L->ffn_down, f, n, F, q, E, err))) break;
    add_bias(q, &L->ffn_down_b, n, E);
    for (int64_t i = 0; i < n * E; i++)
      x[i] += q[i];
    for (int32_t t = 0; t < n; t++)
      layernorm(x + (int64_t)t * E, &L->ffn_norm, &L->ffn_norm_b, E,
                hp->rms_eps);
  }
  free(q);
  return rc;
}

const nc_ref_family nc_ref_family_bert = {"bert", bert_ref};
