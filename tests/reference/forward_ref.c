/* forward_ref: the table of reference forward passes (forward_ref.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ref.h"
#include "gguf/quant.h"
#include "model/arch.h"

/* One entry per forward family (nc_arch's family), not per arch. */
static const nc_ref_family *const REF_FAMILIES[] = {
    &nc_ref_family_llama,  &nc_ref_family_gemma,  &nc_ref_family_gptoss,
    &nc_ref_family_gemma4, &nc_ref_family_qwen35, &nc_ref_family_bert};

const nc_ref_family *nc_ref_family_find(const char *family) {
  const size_t n = sizeof REF_FAMILIES / sizeof REF_FAMILIES[0];
  for (size_t i = 0; family && i < n; i++)
    if (strcmp(REF_FAMILIES[i]->family, family) == 0) return REF_FAMILIES[i];
  return NULL;
}

const nc_ref_family *nc_ref_arch_of(const nucleus_model *m) {
  return nc_ref_family_find(nc_model_arch(m)->family);
}

nc_code nc_forward_ref(const nucleus_model *m, const int32_t *tokens, int32_t n,
                       float *logits, nc_error *err) {
  if (!m || !tokens || !logits)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "nc_forward_ref needs a model, tokens and logits");
  const nc_hparams *hp = nc_model_hparams(m);
  if (n < 1 || n > hp->n_ctx_train)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "reference forward: %d tokens, allowed 1 to %d", (int)n,
                   (int)hp->n_ctx_train);
  for (int32_t t = 0; t < n; t++)
    if (tokens[t] < 0 || tokens[t] >= hp->n_vocab)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "reference forward: token %d at %d is outside [0, %d)",
                     (int)tokens[t], (int)t, (int)hp->n_vocab);
  const nc_ref_family *a = nc_ref_arch_of(m);
  if (!a)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "no reference forward pass for architecture '%s'",
                   nc_model_arch_name(m));
  return a->forward(m, tokens, n, logits, err);
}

/* The pair index at which `turns` full turns fit in n_ctx_orig positions. */
static double yarn_dim(const nc_hparams *hp, double base, double turns) {
  return hp->n_rot * log(hp->yarn_orig_ctx / (turns * 2 * M_PI)) /
         (2 * log(base));
}

void nc_ref_rope_pair(const nc_hparams *hp, double base, double scale,
                      const float *freq_factors, int32_t i, int32_t pos,
                      double *theta, double *mag) {
  double freq = pow(base, -2.0 * i / hp->n_rot);
  if (freq_factors) freq /= freq_factors[i];
  double s = scale;
  *mag = hp->rope_attn_factor;
  if (hp->yarn_ext_factor != 0.0f) {
    const double lo = fmax(floor(yarn_dim(hp, base, hp->yarn_beta_fast)), 0);
    const double hi =
        fmin(ceil(yarn_dim(hp, base, hp->yarn_beta_slow)), hp->n_rot - 1);
    const double r = fmin(fmax((i - lo) / fmax(hi - lo, 0.001), 0), 1);
    const double extrap = (1 - r) * hp->yarn_ext_factor;
    s = scale * (1 - extrap) + extrap;
    if (scale < 1) *mag *= 1 + 0.1 * log(1 / scale);
  }
  *theta = (double)pos * freq * s;
}

/* y[t][i] = W[i] . x[t] for T positions, W dequantized one row at a time. */
nc_code nc_ref_matmul(const nc_weight *w, const float *x, int32_t T, int64_t in,
                      float *y, int64_t out, nc_error *err) {
  if (!w->data || w->ne0 != in || w->ne1 != out)
    return nc_fail(err, NC_ERR_FORMAT, "reference: tensor '%s' has a bad shape",
                   w->name ? w->name : "?");
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

void nc_ref_rmsnorm(const float *x, const float *g, float *y, int64_t n,
                    float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; i++)
    ss += (double)x[i] * x[i];
  const double scale = 1.0 / sqrt(ss / (double)n + (double)eps);
  for (int64_t i = 0; i < n; i++)
    y[i] = (float)(x[i] * scale) * g[i];
}

/* One SwiGLU FFN of width F on T rows: y = Wd (silu(Wg h) * (Wu h)). */
nc_code nc_ref_swiglu_ffn(const nc_weight *wg, const nc_weight *wu,
                          const nc_weight *wd, const float *h, int32_t T,
                          int64_t E, int64_t F, float *gate, float *up,
                          float *y, nc_error *err) {
  nc_code rc;
  if ((rc = nc_ref_matmul(wg, h, T, E, gate, F, err)) ||
      (rc = nc_ref_matmul(wu, h, T, E, up, F, err)))
    return rc;
  for (int64_t i = 0; i < (int64_t)T * F; i++) {
    const double a = gate[i];
    gate[i] = (float)(a / (1.0 + exp(-a))) * up[i];
  }
  return nc_ref_matmul(wd, gate, T, F, y, E, err);
}

/* The mixture of experts, one position at a time: x += the weighted sum
 * of its chosen experts' FFNs of h (gate, up: scratch of n_ff_exp; y: E). */
nc_code nc_ref_moe_ffn(const nc_hparams *hp, const nc_layer_weights *L,
                       const float *h, int32_t T, float *x, float *gate,
                       float *up, float *y, nc_error *err) {
  const int64_t E = hp->n_embd, F = hp->n_ff_exp;
  const int32_t NX = hp->n_expert, K = hp->n_expert_used;
  float *p = malloc(sizeof(float) * (size_t)NX);
  int32_t *sel = malloc(sizeof(int32_t) * (size_t)K);
  nc_code rc = NC_OK;
  if (!p || !sel) {
    rc = nc_fail(err, NC_ERR_NOMEM, "reference: out of memory");
    goto done;
  }
  for (int32_t t = 0; t < T && !rc; t++) {
    const float *ht = h + (int64_t)t * E;
    if ((rc = nc_ref_matmul(&L->ffn_gate_inp, ht, 1, E, p, NX, err))) break;
    double max = -INFINITY, sum = 0;
    for (int32_t e = 0; e < NX; e++)
      if (p[e] > max) max = p[e];
    for (int32_t e = 0; e < NX; e++)
      sum += exp((double)p[e] - max);
    for (int32_t e = 0; e < NX; e++)
      p[e] = (float)(exp((double)p[e] - max) / sum);
    double psum = 0;
    for (int32_t j = 0; j < K; j++) { /* the K largest, largest first */
      int32_t best = -1;
      for (int32_t e = 0; e < NX; e++) {
        bool used = false;
        for (int32_t i = 0; i < j; i++)
          used = used || sel[i] == e;
        if (!used && (best < 0 || p[e] > p[best])) best = e;
      }
      sel[j] = best;
      psum += p[best];
    }
    for (int32_t j = 0; j < K && !rc; j++) {
      const nc_weight g = nc_weight_expert(&L->gate_exps, sel[j]);
      const nc_weight u = nc_weight_expert(&L->up_exps, sel[j]);
      const nc_weight d = nc_weight_expert(&L->down_exps, sel[j]);
      if ((rc = nc_ref_swiglu_ffn(&g, &u, &d, ht, 1, E, F, gate, up, y, err)))
        break;
      const double wj = p[sel[j]] / psum;
      for (int64_t i = 0; i < E; i++)
        x[(int64_t)t * E + i] += (float)(wj * y[i]);
    }
  }
done:
  free(p);
  free(sel);
  return rc;
}
