/* forward_ref_qwen35: the reference forward pass of the `qwen35` family
 * (forward_ref.h), from its math, one sequence from position 0:
 *
 *   x_t = E[token_t]
 *   per layer: h = rmsnorm(x) * attn_norm, then
 *     a gated DeltaNet layer (L->rec >= 0), with S the head size, Hk key
 *     heads, Hv value heads:
 *       m_t = Wqkv h_t (q | k | v), z_t = Wz h_t
 *       c_t[i] = silu(sum_{j<K} conv[i][j] m_{t-K+1+j}[i])   (m before 0: 0)
 *       q, k: each key head scaled to unit length: u / sqrt(|u|^2 + eps)
 *       beta_t = sigmoid(Wbeta h_t), g_t = softplus(Walpha h_t + dt) * a
 *       (qwen3next: m, z from one packed Wqkvz when the file has it, and
 *       beta, alpha from one packed Wba: per key head g, q k v z, or the
 *       beta then the alpha, of its r = Hv / Hk value heads g r .. g r +
 *       r - 1)
 *       per value head j (key head j % Hk; qwen3next: j / r), state M
 *       (S x S) from zeros:
 *         M = e^g M;  M += k (beta (v - M^T k))^T;  o = M^T q / sqrt(S)
 *       y_t = Wout (rmsnorm(o per head) * ssm_norm * silu(z_t))
 *     or an attention layer:
 *       [q | gate] per head = Wq h; k, v = Wk h, Wv h
 *       q, k: per-head RMSNorm (q_norm, k_norm), NEOX RoPE on n_rot dims
 *       o = causal softmax(q k^T / sqrt(head_dim)) v, per head (GQA)
 *       y_t = Wo (o * sigmoid(gate))
 *     x += y;  h = rmsnorm(x) * post_attention_norm
 *     x += Wdown (silu(Wgate h) * (Wup h))
 *       or, with a router (qwen35moe): x += the experts of h
 *       (nc_ref_moe_ffn) + sigmoid(Wshgate h) * shared(h), shared a SwiGLU
 *       FFN of its own
 *   logits_t = Wout (rmsnorm(x_t) * output_norm)
 *
 * The MTP head (nc_ref_qwen35_mtp): with h_t = rmsnorm(x_t) * output_norm
 * (zeros before position 0), position p's row u_p = Weh [rmsnorm(E[tok_p])
 * * enorm ; rmsnorm(h_{p-1}) * hnorm], one attention layer and FFN as
 * above on the rows u (its own K/V), h'_p = rmsnorm(.) * shared_head_norm,
 * logits Whead h'_p; a draft d after p: u_{p+1} from (d, h'_p).
 *
 * f32 values, dot products and norms accumulated in double, the delta
 * rule's state in double: no code of the fast path but nc_dequantize_row
 * and the RoPE angles of nc_ref_rope_pair. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "gguf/quant.h"

/* y[t][i] = W[i] . x[t], W one dequantized row at a time. */
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
      double acc = 0;
      for (int64_t j = 0; j < in; j++)
        acc += (double)row[j] * x[(int64_t)t * in + j];
      y[(int64_t)t * out + i] = (float)acc;
    }
  }
  free(row);
  return NC_OK;
}

static void rmsnorm(const float *x, const float *g, float *y, int64_t n,
                    float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; i++)
    ss += (double)x[i] * x[i];
  const double scale = 1.0 / sqrt(ss / (double)n + (double)eps);
  for (int64_t i = 0; i < n; i++)
    y[i] = (float)(x[i] * scale) * (g ? g[i] : 1.0f);
}

static double silu(double a) {
  return a / (1.0 + exp(-a));
}

/* NEOX RoPE of the first n_rot dims of n_heads heads at position pos. */
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

/* The attention layer on T rows of h; y: [T, n_embd]. */
static nc_code attention_layer(const nc_hparams *hp, const nc_layer_weights *L,
                               const float *h, int32_t T, float *y,
                               nc_error *err) {
  const int64_t E = hp->n_embd, D = hp->head_dim, H = hp->n_head;
  const int64_t Q = H * D, K = nc_hp_n_embd_k(hp), Vd = nc_hp_n_embd_v(hp);
  const int32_t group = hp->n_head / hp->n_head_kv;
  float *qg = malloc(sizeof(float) * (size_t)T * 2 * Q);
  float *k = malloc(sizeof(float) * (size_t)T * K);
  float *v = malloc(sizeof(float) * (size_t)T * Vd);
  float *o = malloc(sizeof(float) * (size_t)T * Q);
  double *p = malloc(sizeof(double) * (size_t)T);
  nc_code rc = NC_OK;
  if (!qg || !k || !v || !o || !p) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  if ((rc = matmul(&L->wq, h, T, E, qg, 2 * Q, err)) ||
      (rc = matmul(&L->wk, h, T, E, k, K, err)) ||
      (rc = matmul(&L->wv, h, T, E, v, Vd, err)))
    goto done;
  for (int32_t t = 0; t < T; t++) {
    for (int64_t j = 0; j < H; j++) {
      float *qj = qg + t * 2 * Q + j * 2 * D;
      rmsnorm(qj, L->q_norm.data, qj, D, hp->rms_eps);
    }
    for (int64_t j = 0; j < hp->n_head_kv; j++)
      rmsnorm(k + t * K + j * D, L->k_norm.data, k + t * K + j * D, D,
              hp->rms_eps);
    for (int64_t j = 0; j < H; j++) /* q heads are 2 x D apart here */
      rope(qg + t * 2 * Q + j * 2 * D, 1, hp, t);
    rope(k + t * K, hp->n_head_kv, hp, t);
  }
  for (int64_t j = 0; j < H; j++) {
    const int64_t g = j / group;
    for (int32_t t = 0; t < T; t++) {
      const float *qt = qg + t * 2 * Q + j * 2 * D;
      double max = -INFINITY, sum = 0;
      for (int32_t s = 0; s <= t; s++) {
        double dot = 0;
        for (int64_t d = 0; d < D; d++)
          dot += (double)qt[d] * k[s * K + g * D + d];
        p[s] = dot / sqrt((double)D);
        if (p[s] > max) max = p[s];
      }
      for (int32_t s = 0; s <= t; s++)
        sum += p[s] = exp(p[s] - max);
      for (int64_t d = 0; d < D; d++) {
        double acc = 0;
        for (int32_t s = 0; s <= t; s++)
          acc += p[s] / sum * v[s * Vd + g * D + d];
        const double gate = qt[D + d];
        o[t * Q + j * D + d] = (float)(acc / (1.0 + exp(-gate)));
      }
    }
  }
  rc = matmul(&L->wo, o, T, Q, y, E, err);
done:
  free(qg);
  free(k);
  free(v);
  free(o);
  free(p);
  return rc;
}

/* The DeltaNet layer's projections of T rows of h: m [T, C] (q | k | v),
 * z [T, Vd], beta and alpha [T, Hv], from the file's separate matrices
 * or from qwen3next's packed ones. */
static nc_code project(const nc_layer_weights *L, const float *h, int32_t T,
                       const nc_hparams *hp, float *m, float *z, float *be,
                       float *al, nc_error *err) {
  const int64_t E = hp->n_embd, S = hp->ssm_d_state, Hk = hp->ssm_n_k_heads,
                Hv = hp->ssm_n_v_heads, r = Hv / Hk;
  const int64_t C = 2 * Hk * S + Hv * S, Vd = Hv * S;
  nc_code rc = NC_OK;
  if (L->ssm_qkvz.data) {
    const int64_t W = C + Vd, G = 2 * S + 2 * r * S; /* a key head's rows */
    float *p = malloc(sizeof(float) * (size_t)(T * W));
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    rc = matmul(&L->ssm_qkvz, h, T, E, p, W, err);
    for (int32_t t = 0; !rc && t < T; t++)
      for (int64_t g = 0; g < Hk; g++)
        for (int64_t i = 0; i < G; i++) {
          const float x = p[t * W + g * G + i];
          if (i < S)
            m[t * C + g * S + i] = x;
          else if (i < 2 * S)
            m[t * C + Hk * S + g * S + (i - S)] = x;
          else if (i < 2 * S + r * S)
            m[t * C + 2 * Hk * S + g * r * S + (i - 2 * S)] = x;
          else
            z[t * Vd + g * r * S + (i - 2 * S - r * S)] = x;
        }
    free(p);
  } else if (!(rc = matmul(&L->ssm_in, h, T, E, m, C, err))) {
    rc = matmul(&L->ssm_z, h, T, E, z, Vd, err);
  }
  if (rc) return rc;
  if (!L->ssm_ba.data) {
    if ((rc = matmul(&L->ssm_beta, h, T, E, be, Hv, err))) return rc;
    return matmul(&L->ssm_alpha, h, T, E, al, Hv, err);
  }
  float *p = malloc(sizeof(float) * (size_t)(T * 2 * Hv));
  if (!p) return nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
  rc = matmul(&L->ssm_ba, h, T, E, p, 2 * Hv, err);
  for (int32_t t = 0; !rc && t < T; t++)
    for (int64_t j = 0; j < Hv; j++) { /* value head j: key head j / r */
      const float *g = p + t * 2 * Hv + (j / r) * 2 * r;
      be[t * Hv + j] = g[j % r];
      al[t * Hv + j] = g[r + j % r];
    }
  free(p);
  return rc;
}

/* The gated DeltaNet layer on T rows of h; y: [T, n_embd]. */
static nc_code delta_layer(const nc_hparams *hp, const nc_layer_weights *L,
                           const float *h, int32_t T, float *y, nc_error *err) {
  const int64_t E = hp->n_embd, S = hp->ssm_d_state, Hk = hp->ssm_n_k_heads,
                Hv = hp->ssm_n_v_heads, Kc = hp->ssm_d_conv;
  const int64_t C = 2 * Hk * S + Hv * S, Vd = Hv * S;
  float *m = malloc(sizeof(float) * (size_t)T * C);
  float *c = malloc(sizeof(float) * (size_t)T * C);
  float *z = malloc(sizeof(float) * (size_t)T * Vd);
  float *be = malloc(sizeof(float) * (size_t)T * Hv);
  float *al = malloc(sizeof(float) * (size_t)T * Hv);
  float *o = malloc(sizeof(float) * (size_t)T * Vd);
  double *M = calloc((size_t)(S * S), sizeof(double));
  nc_code rc = NC_OK;
  if (!m || !c || !z || !be || !al || !o || !M) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  if ((rc = project(L, h, T, hp, m, z, be, al, err))) goto done;
  const float *conv = L->ssm_conv.data, *dt = L->ssm_dt.data,
              *a = L->ssm_a.data;
  for (int32_t t = 0; t < T; t++) {
    for (int64_t i = 0; i < C; i++) {
      double acc = 0;
      for (int64_t j = 0; j < Kc; j++) {
        const int64_t s = t - Kc + 1 + j;
        if (s >= 0) acc += (double)conv[i * Kc + j] * m[s * C + i];
      }
      c[t * C + i] = (float)silu(acc);
    }
    for (int64_t j = 0; j < 2 * Hk; j++) { /* unit q and k heads */
      float *u = c + t * C + j * S;
      double ss = 0;
      for (int64_t i = 0; i < S; i++)
        ss += (double)u[i] * u[i];
      const double inv = 1.0 / sqrt(ss + hp->rms_eps);
      for (int64_t i = 0; i < S; i++)
        u[i] = (float)(u[i] * inv);
    }
  }
  for (int64_t j = 0; j < Hv; j++) {
    memset(M, 0, sizeof(double) * (size_t)(S * S));
    const int64_t hk = hp->ssm_k_grouped ? j / (Hv / Hk) : j % Hk;
    for (int32_t t = 0; t < T; t++) {
      const float *q = c + t * C + hk * S, *k = c + t * C + (Hk + hk) * S,
                  *v = c + t * C + 2 * Hk * S + j * S;
      const double beta = 1.0 / (1.0 + exp(-(double)be[t * Hv + j]));
      const double x = (double)al[t * Hv + j] + dt[j];
      const double g = (x > 20 ? x : log1p(exp(x))) * a[j];
      for (int64_t i = 0; i < S * S; i++)
        M[i] *= exp(g);
      for (int64_t col = 0; col < S; col++) { /* M[r][col], r: key dim */
        double mk = 0;
        for (int64_t r = 0; r < S; r++)
          mk += M[r * S + col] * k[r];
        const double d = beta * (v[col] - mk);
        double mq = 0;
        for (int64_t r = 0; r < S; r++) {
          M[r * S + col] += k[r] * d;
          mq += M[r * S + col] * q[r];
        }
        o[t * Vd + j * S + col] = (float)(mq / sqrt((double)S));
      }
    }
  }
  for (int32_t t = 0; t < T; t++)
    for (int64_t j = 0; j < Hv; j++) {
      float *oj = o + t * Vd + j * S;
      rmsnorm(oj, L->ssm_norm.data, oj, S, hp->rms_eps);
      for (int64_t i = 0; i < S; i++)
        oj[i] = (float)(oj[i] * silu(z[t * Vd + j * S + i]));
    }
  rc = matmul(&L->ssm_out, o, T, Vd, y, E, err);
done:
  free(m);
  free(c);
  free(z);
  free(be);
  free(al);
  free(o);
  free(M);
  return rc;
}

/* qwen35moe's FFN on T rows of h: x += the experts' weighted sum, then
 * x += sigmoid(gate_inp_shexp . h) * the shared expert's FFN of h (gate,
 * up: T x the widest FFN; y: T x n_embd). */
static nc_code shared_moe(const nc_hparams *hp, const nc_layer_weights *L,
                          const float *h, int32_t T, float *x, float *gate,
                          float *up, float *y, nc_error *err) {
  const int64_t E = hp->n_embd;
  float *g = malloc(sizeof(float) * (size_t)T);
  if (!g) return nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
  nc_code rc;
  if ((rc = nc_ref_moe_ffn(hp, L, h, T, x, gate, up, y, err)) ||
      (rc = nc_ref_swiglu_ffn(&L->gate_shexp, &L->up_shexp, &L->down_shexp, h,
                              T, E, hp->n_ff_shexp, gate, up, y, err)) ||
      (rc = matmul(&L->gate_inp_shexp, h, T, E, g, 1, err))) {
    free(g);
    return rc;
  }
  for (int32_t t = 0; t < T; t++) {
    const double sg = 1.0 / (1.0 + exp(-(double)g[t]));
    for (int64_t i = 0; i < E; i++)
      x[t * E + i] += (float)(sg * y[t * E + i]);
  }
  free(g);
  return NC_OK;
}

/* The layers on T tokens: each position's final normed hidden state into
 * hn ([T, n_embd]). */
static nc_code trunk(const nucleus_model *m, const int32_t *tokens, int32_t T,
                     float *hn, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const int64_t E = hp->n_embd;
  int64_t F = hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp;
  if (hp->n_ff_shexp > F) F = hp->n_ff_shexp;
  if (hp->n_head_kv < 1 || hp->n_head % hp->n_head_kv)
    return nc_fail(err, NC_ERR_FORMAT, "reference: %d heads, %d KV heads",
                   (int)hp->n_head, (int)hp->n_head_kv);
  const size_t t_ = (size_t)T;
  float *x = calloc(t_ * (size_t)E, sizeof(float));
  float *h = calloc(t_ * (size_t)E, sizeof(float));
  float *y = calloc(t_ * (size_t)E, sizeof(float));
  float *gate = calloc(t_ * (size_t)F, sizeof(float));
  float *up = calloc(t_ * (size_t)F, sizeof(float));
  nc_code rc = NC_OK;
  if (!x || !h || !y || !gate || !up) {
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
      rmsnorm(x + t * E, L->attn_norm.data, h + t * E, E, hp->rms_eps);
    rc = L->rec >= 0 ? delta_layer(hp, L, h, T, y, err)
                     : attention_layer(hp, L, h, T, y, err);
    if (rc) goto done;
    for (int64_t i = 0; i < (int64_t)T * E; i++)
      x[i] += y[i];
    for (int32_t t = 0; t < T; t++) /* post_attention_norm */
      rmsnorm(x + t * E, L->ffn_norm.data, h + t * E, E, hp->rms_eps);
    if (L->ffn_gate_inp.data) {
      if ((rc = shared_moe(hp, L, h, T, x, gate, up, y, err))) goto done;
      continue;
    }
    if ((rc = nc_ref_swiglu_ffn(&L->ffn_gate, &L->ffn_up, &L->ffn_down, h, T, E,
                                hp->n_ff, gate, up, y, err)))
      goto done;
    for (int64_t i = 0; i < (int64_t)T * E; i++)
      x[i] += y[i];
  }
  for (int32_t t = 0; t < T; t++)
    rmsnorm(x + t * E, w->output_norm.data, hn + t * E, E, hp->rms_eps);
done:
  free(x);
  free(h);
  free(y);
  free(gate);
  free(up);
  return rc;
}

static nc_code qwen35_ref_forward(const nucleus_model *m, const int32_t *tokens,
                                  int32_t T, float *logits, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  const int64_t E = hp->n_embd;
  float *hn = calloc((size_t)T * (size_t)E, sizeof(float));
  if (!hn) return nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
  nc_code rc = trunk(m, tokens, T, hn, err);
  if (!rc)
    rc = matmul(&nc_model_weights_of(m)->output, hn, T, E, logits, hp->n_vocab,
                err);
  free(hn);
  return rc;
}

/* The MTP block on rows 0..T-1 (positions 0..T-1) of u (eh_proj's
 * outputs): each row's head-normed hidden state into hn. */
static nc_code mtp_block(const nc_hparams *hp, const nc_model_weights *w,
                         const float *u, int32_t T, float *hn, nc_error *err) {
  const nc_layer_weights *L = &w->mtp_layer;
  const int64_t E = hp->n_embd;
  int64_t F = hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp;
  if (hp->n_ff_shexp > F) F = hp->n_ff_shexp;
  const size_t n = (size_t)T * (size_t)E;
  float *x = malloc(n * sizeof(float)), *h = malloc(n * sizeof(float));
  float *y = malloc(n * sizeof(float));
  float *gate = malloc((size_t)T * (size_t)F * sizeof(float));
  float *up = malloc((size_t)T * (size_t)F * sizeof(float));
  nc_code rc = NC_OK;
  if (!x || !h || !y || !gate || !up) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  memcpy(x, u, n * sizeof(float));
  for (int32_t t = 0; t < T; t++)
    rmsnorm(x + t * E, L->attn_norm.data, h + t * E, E, hp->rms_eps);
  if ((rc = attention_layer(hp, L, h, T, y, err))) goto done;
  for (size_t i = 0; i < n; i++)
    x[i] += y[i];
  for (int32_t t = 0; t < T; t++)
    rmsnorm(x + t * E, L->ffn_norm.data, h + t * E, E, hp->rms_eps);
  if (L->ffn_gate_inp.data) {
    rc = shared_moe(hp, L, h, T, x, gate, up, y, err);
  } else {
    rc = nc_ref_swiglu_ffn(&L->ffn_gate, &L->ffn_up, &L->ffn_down, h, T, E,
                           hp->n_ff, gate, up, y, err);
    for (size_t i = 0; !rc && i < n; i++)
      x[i] += y[i];
  }
  for (int32_t t = 0; !rc && t < T; t++)
    rmsnorm(x + t * E, w->mtp_head_norm.data, hn + t * E, E, hp->rms_eps);
done:
  free(x);
  free(h);
  free(y);
  free(gate);
  free(up);
  return rc;
}

/* Row t of the head's input: eh_proj [enorm(E[token]) ; hnorm(hprev)]. */
static nc_code mtp_input(const nc_hparams *hp, const nc_model_weights *w,
                         int32_t token, const float *hprev, float *u,
                         nc_error *err) {
  const int64_t E = hp->n_embd;
  float *cat = malloc(sizeof(float) * 2 * (size_t)E);
  if (!cat) return nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
  nc_dequantize_row(w->mtp_embd.type,
                    (const uint8_t *)w->mtp_embd.data +
                        (size_t)token * w->mtp_embd.row_bytes,
                    cat, E);
  rmsnorm(cat, w->mtp_enorm.data, cat, E, hp->rms_eps);
  rmsnorm(hprev, w->mtp_hnorm.data, cat + E, E, hp->rms_eps);
  nc_code rc = matmul(&w->mtp_eh_proj, cat, 1, 2 * E, u, E, err);
  free(cat);
  return rc;
}

nc_code nc_ref_qwen35_mtp(const nucleus_model *m, const int32_t *tokens,
                          int32_t n, const int32_t *drafts, int32_t k,
                          float *logits, nc_error *err) {
  const nc_hparams *hp = nc_model_hparams(m);
  const nc_model_weights *w = nc_model_weights_of(m);
  const int64_t E = hp->n_embd, V = hp->n_vocab;
  if (!hp->mtp)
    return nc_fail(err, NC_ERR_UNSUPPORTED, "reference: no MTP head loaded");
  const size_t rows = (size_t)(n + k);
  float *ht = calloc((size_t)n * (size_t)E, sizeof(float));
  float *u = calloc(rows * (size_t)E, sizeof(float));
  float *hm = calloc(rows * (size_t)E, sizeof(float));
  float *zero = calloc((size_t)E, sizeof(float));
  nc_code rc = NC_OK;
  if (!ht || !u || !hm || !zero) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  if ((rc = trunk(m, tokens, n, ht, err))) goto done;
  /* position p: its token with the model's state at p - 1 (zeros at 0) */
  for (int32_t p = 0; p < n && !rc; p++)
    rc = mtp_input(hp, w, tokens[p], p ? ht + (p - 1) * E : zero, u + p * E,
                   err);
  /* then each draft with the head's own state at the position before */
  for (int32_t j = 0; j <= k && !rc; j++) {
    const int32_t T = n + j;
    if ((rc = mtp_block(hp, w, u, T, hm, err)) ||
        (rc = matmul(&w->mtp_head, hm + (T - 1) * E, 1, E, logits + j * V, V,
                     err)))
      break;
    if (j < k)
      rc = mtp_input(hp, w, drafts[j], hm + (T - 1) * E, u + T * E, err);
  }
done:
  free(ht);
  free(u);
  free(hm);
  free(zero);
  return rc;
}

const nc_ref_family nc_ref_family_qwen35 = {.family = "qwen35",
                                            .forward = qwen35_ref_forward};
