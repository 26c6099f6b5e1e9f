/* forward_ref_gemma4: the reference forward pass of `gemma4`
 * (forward_ref.h), from its math:
 *
 *   x_t = E[token_t] * sqrt(n_embd)
 *   with per-layer embeddings (width P, n_layer of them per token):
 *     u_t = rmsnorm_P(Wp x_t / sqrt(n_embd)) * proj_norm   (per layer's P)
 *     in_t = (u_t + PE[token_t] * sqrt(P)) / sqrt(2)
 *   per layer l (its kind: sliding or full, each with its head size, KV
 *   heads, RoPE base, RoPE dimensions; full layers divide each pair's
 *   frequency by rope_freqs):
 *     h = rmsnorm(x) * attn_norm; q = Wq h, per head rmsnorm * q_norm, RoPE
 *     owner of K/V (l < n_layer_kv): k = Wk h (per head rmsnorm * k_norm,
 *       RoPE), v = rmsnorm(Wv h or Wk h) per head, no weight: the layer's
 *       K/V; else the K/V of the last owner of its kind
 *     S[t][s] = q_t . k_s (no scale) for t - window < s <= t (sliding) or
 *       s <= t; o = softmax(S) V
 *     x += rmsnorm(Wo o) * post_attention_norm
 *     f = Wdown (gelu(Wgate g) * (Wup g)), g = rmsnorm(x) * ffn_norm
 *     with experts: f = rmsnorm(f) * post_ffw_norm_1
 *         + rmsnorm(sum_j w_j s_e Wdown_e (gelu(Wgate_e g2) * (Wup_e g2)))
 *           * post_ffw_norm_2, g2 = rmsnorm(x) * pre_ffw_norm_2, the two
 *           experts e of largest p = softmax(Wr (rmsnorm(x) / sqrt(n_embd)
 *           * router_scale)), w = p / sum of the chosen p, s_e the
 *           expert's output scale
 *     x += rmsnorm(f) * post_ffw_norm
 *     with per-layer embeddings: x += rmsnorm(Wproj (gelu(Wgate x) *
 *       in_t[l])) * post_norm
 *     x *= layer_output_scale
 *   logits = cap * tanh(Wout (rmsnorm(x) * output_norm) / cap)
 *
 * f32 values, double sums; no F16 anywhere, no cache. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "gguf/quant.h"

/* y[t][i] = W[i] . x[t] for T rows (W: rows of in values; expert e of a
 * 3-D tensor when e >= 0). */
static void mm(const nc_weight *w, int64_t e, const float *x, int32_t T,
               int64_t in, float *y, int64_t out, float *row) {
  const uint8_t *base = (const uint8_t *)w->data +
                        (e > 0 ? (size_t)e * (size_t)out * w->row_bytes : 0);
  for (int64_t i = 0; i < out; i++) {
    nc_dequantize_row(w->type, base + i * w->row_bytes, row, in);
    for (int32_t t = 0; t < T; t++) {
      double acc = 0;
      for (int64_t j = 0; j < in; j++)
        acc += (double)row[j] * x[(int64_t)t * in + j];
      y[(int64_t)t * out + i] = (float)acc;
    }
  }
}

static void norm(const float *x, const float *g, float *y, int64_t n,
                 float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; i++)
    ss += (double)x[i] * x[i];
  const double s = 1.0 / sqrt(ss / (double)n + (double)eps);
  for (int64_t i = 0; i < n; i++)
    y[i] = (float)(x[i] * s * (g ? g[i] : 1.0f));
}

static double gelu(double a) {
  return 0.5 * a * (1.0 + tanh(sqrt(2.0 / M_PI) * (a + 0.044715 * a * a * a)));
}

/* NEOX RoPE of n heads of hd values, n_rot of them turned. */
static void rope(float *x, int32_t n, int32_t hd, int32_t n_rot,
                 const nc_hparams *hp, double base, double scale,
                 const float *ff, int32_t pos) {
  nc_hparams h = *hp;
  h.n_rot = n_rot;
  for (int32_t i = 0; i < n_rot / 2; i++) {
    double th, mag;
    nc_ref_rope_pair(&h, base, scale, ff, i, pos, &th, &mag);
    const double c = cos(th) * mag, s = sin(th) * mag;
    for (int32_t j = 0; j < n; j++) {
      float *v = x + (int64_t)j * hd;
      const double a = v[i], b = v[i + n_rot / 2];
      v[i] = (float)(a * c - b * s);
      v[i + n_rot / 2] = (float)(a * s + b * c);
    }
  }
}

typedef struct bufs {
  float *x, *h, *q, *o, *f, *g, *u, *e, *row, *sc, *in;
  float **k, **v; /* per layer that owns K/V */
} bufs;

/* The FFN of layer L over T rows of x (f: its output before the
 * post-FFN norm). */
static void ffn(const nc_hparams *hp, const nc_layer_weights *L, int32_t T,
                bufs *b) {
  const int64_t E = hp->n_embd, F = L->ffn_gate.ne1;
  for (int32_t t = 0; t < T; t++)
    norm(b->x + t * E, L->ffn_norm.data, b->h + t * E, E, hp->rms_eps);
  mm(&L->ffn_gate, -1, b->h, T, E, b->g, F, b->row);
  mm(&L->ffn_up, -1, b->h, T, E, b->u, F, b->row);
  for (int64_t i = 0; i < T * F; i++)
    b->g[i] = (float)(gelu(b->g[i]) * b->u[i]);
  mm(&L->ffn_down, -1, b->g, T, F, b->f, E, b->row);
  if (!L->ffn_gate_inp.data) return;
  const int32_t NX = hp->n_expert, K = hp->n_expert_used;
  const int64_t FE = hp->n_ff_exp;
  for (int32_t t = 0; t < T; t++) {
    float *ft = b->f + t * E, *ht = b->h, *lg = b->e;
    norm(ft, L->ffn_post_norm_1.data, ft, E, hp->rms_eps);
    norm(b->x + t * E, NULL, ht, E, hp->rms_eps);
    for (int64_t i = 0; i < E; i++)
      ht[i] = (float)(ht[i] / sqrt((double)E) *
                      ((const float *)L->gate_inp_scale.data)[i]);
    mm(&L->ffn_gate_inp, -1, ht, 1, E, lg, NX, b->row);
    double mx = -INFINITY, sum = 0;
    for (int32_t i = 0; i < NX; i++)
      mx = fmax(mx, lg[i]);
    for (int32_t i = 0; i < NX; i++)
      sum += exp(lg[i] - mx);
    int32_t sel[64];
    double w[64], wsum = 0;
    for (int32_t j = 0; j < K && j < 64; j++) {
      sel[j] = -1;
      for (int32_t i = 0; i < NX; i++) {
        bool used = false;
        for (int32_t k = 0; k < j; k++)
          used = used || sel[k] == i;
        if (!used && (sel[j] < 0 || lg[i] > lg[sel[j]])) sel[j] = i;
      }
      w[j] = exp(lg[sel[j]] - mx) / sum;
      wsum += w[j];
    }
    norm(b->x + t * E, L->ffn_pre_norm_2.data, ht, E, hp->rms_eps);
    double *acc = calloc((size_t)E, sizeof(double));
    for (int32_t j = 0; acc && j < K && j < 64; j++) {
      mm(&L->gate_exps, sel[j], ht, 1, E, b->g, FE, b->row);
      mm(&L->up_exps, sel[j], ht, 1, E, b->u, FE, b->row);
      for (int64_t i = 0; i < FE; i++)
        b->g[i] = (float)(gelu(b->g[i]) * b->u[i]);
      mm(&L->down_exps, sel[j], b->g, 1, FE, b->o, E, b->row);
      const double s = L->down_exps_scale.data
                           ? ((const float *)L->down_exps_scale.data)[sel[j]]
                           : 1.0;
      for (int64_t i = 0; i < E; i++)
        acc[i] += w[j] / wsum * s * b->o[i];
    }
    for (int64_t i = 0; acc && i < E; i++)
      b->o[i] = (float)acc[i];
    free(acc);
    norm(b->o, L->ffn_post_norm_2.data, b->o, E, hp->rms_eps);
    for (int64_t i = 0; i < E; i++)
      ft[i] += b->o[i];
  }
}

static nc_code gemma4_ref_forward(const nucleus_model *m, const int32_t *tokens,
                                  int32_t T, float *logits, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const int64_t E = hp->n_embd, V = hp->n_vocab, P = hp->n_embd_per_layer;
  const int64_t NL = hp->n_layer, PL = P * NL;
  const int64_t hdmax =
      hp->head_dim > hp->head_dim_swa ? hp->head_dim : hp->head_dim_swa;
  const int64_t W = (int64_t)hp->n_head * hdmax > E ? hp->n_head * hdmax : E;
  int64_t wide = hp->n_ff_max > hp->n_ff ? hp->n_ff_max : hp->n_ff;
  if (hp->n_ff_exp > wide) wide = hp->n_ff_exp;
  if (PL > wide) wide = PL;
  if (E > wide) wide = E;
  const size_t t_ = (size_t)T;
  bufs b = {0};
  b.x = calloc(t_ * (size_t)E, sizeof(float));
  b.h = calloc(t_ * (size_t)W, sizeof(float));
  b.q = calloc(t_ * (size_t)W, sizeof(float));
  b.o = calloc(t_ * (size_t)W, sizeof(float));
  b.f = calloc(t_ * (size_t)E, sizeof(float));
  b.g = calloc(t_ * (size_t)wide, sizeof(float));
  b.u = calloc(t_ * (size_t)wide, sizeof(float));
  b.e = calloc((size_t)(hp->n_expert + 1), sizeof(float));
  b.row = calloc((size_t)(wide > W ? wide : W), sizeof(float));
  b.sc = calloc(t_, sizeof(float));
  b.in = calloc(t_ * (size_t)(PL + 1), sizeof(float));
  b.k = calloc((size_t)NL, sizeof(float *));
  b.v = calloc((size_t)NL, sizeof(float *));
  nc_code rc = NC_OK;
  if (!b.x || !b.h || !b.q || !b.o || !b.f || !b.g || !b.u || !b.e || !b.row ||
      !b.sc || !b.in || !b.k || !b.v) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  for (int32_t t = 0; t < T; t++) {
    nc_dequantize_row(w->tok_embd.type,
                      (const uint8_t *)w->tok_embd.data +
                          (size_t)tokens[t] * w->tok_embd.row_bytes,
                      b.x + t * E, E);
    for (int64_t i = 0; i < E; i++)
      b.x[t * E + i] = (float)(b.x[t * E + i] * sqrt((double)E));
  }
  if (P > 0) {
    mm(&w->ple_model_proj, -1, b.x, T, E, b.g, PL, b.row);
    for (int32_t t = 0; t < T; t++) {
      nc_dequantize_row(w->ple_tok_embd.type,
                        (const uint8_t *)w->ple_tok_embd.data +
                            (size_t)tokens[t] * w->ple_tok_embd.row_bytes,
                        b.u + t * PL, PL);
      for (int64_t l = 0; l < NL; l++) {
        float *gl = b.g + t * PL + l * P;
        for (int64_t i = 0; i < P; i++)
          gl[i] = (float)(gl[i] / sqrt((double)E));
        norm(gl, w->ple_proj_norm.data, gl, P, hp->rms_eps);
        for (int64_t i = 0; i < P; i++)
          b.in[t * PL + l * P + i] =
              (float)((gl[i] + b.u[t * PL + l * P + i] * sqrt((double)P)) /
                      sqrt(2.0));
      }
    }
  }
  for (int32_t l = 0; l < NL; l++) {
    const nc_layer_weights *L = &w->layers[l];
    const bool swa = L->swa;
    const int32_t hd = swa ? hp->head_dim_swa : hp->head_dim;
    const int32_t nkv = swa ? hp->n_head_kv_swa : hp->n_head_kv;
    const int32_t n_rot = swa ? hp->n_rot_swa : hp->n_rot;
    const int64_t Q = (int64_t)hp->n_head * hd, K = (int64_t)nkv * hd;
    const double base = swa ? hp->rope_freq_base_swa : hp->rope_freq_base;
    const double scale = swa ? hp->rope_freq_scale_swa : hp->rope_freq_scale;
    const float *ff = swa ? NULL : w->rope_freqs.data;
    for (int32_t t = 0; t < T; t++)
      norm(b.x + t * E, L->attn_norm.data, b.h + t * E, E, hp->rms_eps);
    mm(&L->wq, -1, b.h, T, E, b.q, Q, b.row);
    for (int32_t t = 0; t < T; t++) {
      for (int32_t j = 0; j < hp->n_head; j++)
        norm(b.q + t * Q + j * hd, L->q_norm.data, b.q + t * Q + j * hd, hd,
             hp->rms_eps);
      rope(b.q + t * Q, hp->n_head, hd, n_rot, hp, base, scale, ff, t);
    }
    if (L->kv_layer == l) {
      b.k[l] = calloc(t_ * (size_t)K, sizeof(float));
      b.v[l] = calloc(t_ * (size_t)K, sizeof(float));
      if (!b.k[l] || !b.v[l]) {
        rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
        goto done;
      }
      mm(&L->wk, -1, b.h, T, E, b.k[l], K, b.row);
      mm(L->wv.data ? &L->wv : &L->wk, -1, b.h, T, E, b.v[l], K, b.row);
      for (int32_t t = 0; t < T; t++)
        for (int32_t j = 0; j < nkv; j++) {
          float *kt = b.k[l] + t * K + j * hd, *vt = b.v[l] + t * K + j * hd;
          norm(kt, L->k_norm.data, kt, hd, hp->rms_eps);
          norm(vt, NULL, vt, hd, hp->rms_eps);
          rope(kt, 1, hd, n_rot, hp, base, scale, ff, t);
        }
    }
    const float *k = b.k[L->kv_layer], *v = b.v[L->kv_layer];
    const int32_t group = hp->n_head / nkv;
    for (int32_t hh = 0; hh < hp->n_head; hh++)
      for (int32_t t = 0; t < T; t++) {
        const float *qt = b.q + t * Q + (int64_t)hh * hd;
        const int32_t s0 = swa && t + 1 > hp->n_swa ? t + 1 - hp->n_swa : 0;
        double mx = -INFINITY, sum = 0;
        for (int32_t s = s0; s <= t; s++) {
          double d = 0;
          for (int32_t i = 0; i < hd; i++)
            d += (double)qt[i] * k[s * K + (hh / group) * hd + i];
          b.sc[s] = (float)d;
          mx = fmax(mx, d);
        }
        for (int32_t s = s0; s <= t; s++)
          sum += exp(b.sc[s] - mx);
        for (int32_t i = 0; i < hd; i++) {
          double a = 0;
          for (int32_t s = s0; s <= t; s++)
            a += exp(b.sc[s] - mx) / sum * v[s * K + (hh / group) * hd + i];
          b.o[t * Q + (int64_t)hh * hd + i] = (float)a;
        }
      }
    mm(&L->wo, -1, b.o, T, Q, b.h, E, b.row);
    for (int32_t t = 0; t < T; t++) {
      norm(b.h + t * E, L->attn_post_norm.data, b.h + t * E, E, hp->rms_eps);
      for (int64_t i = 0; i < E; i++)
        b.x[t * E + i] += b.h[t * E + i];
    }
    ffn(hp, L, T, &b);
    for (int32_t t = 0; t < T; t++) {
      norm(b.f + t * E, L->ffn_post_norm.data, b.f + t * E, E, hp->rms_eps);
      for (int64_t i = 0; i < E; i++)
        b.x[t * E + i] += b.f[t * E + i];
    }
    if (P > 0) {
      mm(&L->ple_gate, -1, b.x, T, E, b.g, P, b.row);
      for (int32_t t = 0; t < T; t++)
        for (int64_t i = 0; i < P; i++)
          b.g[t * P + i] =
              (float)(gelu(b.g[t * P + i]) * b.in[t * PL + l * P + i]);
      mm(&L->ple_proj, -1, b.g, T, P, b.h, E, b.row);
      for (int32_t t = 0; t < T; t++) {
        norm(b.h + t * E, L->ple_post_norm.data, b.h + t * E, E, hp->rms_eps);
        for (int64_t i = 0; i < E; i++)
          b.x[t * E + i] += b.h[t * E + i];
      }
    }
    if (L->out_scale.data)
      for (int64_t i = 0; i < (int64_t)T * E; i++)
        b.x[i] *= ((const float *)L->out_scale.data)[0];
  }
  for (int32_t t = 0; t < T; t++)
    norm(b.x + t * E, w->output_norm.data, b.h + t * E, E, hp->rms_eps);
  mm(&w->output, -1, b.h, T, E, logits, V, b.row);
  if (hp->final_softcap > 0)
    for (int64_t i = 0; i < (int64_t)T * V; i++)
      logits[i] = (float)(hp->final_softcap *
                          tanh(logits[i] / (double)hp->final_softcap));
done:
  for (int64_t l = 0; b.k && l < NL; l++) {
    free(b.k[l]);
    free(b.v[l]);
  }
  free(b.k);
  free(b.v);
  free(b.x);
  free(b.h);
  free(b.q);
  free(b.o);
  free(b.f);
  free(b.g);
  free(b.u);
  free(b.e);
  free(b.row);
  free(b.sc);
  free(b.in);
  return rc;
}

const nc_ref_family nc_ref_family_gemma4 = {.family = "gemma4",
                                            .forward = gemma4_ref_forward};
