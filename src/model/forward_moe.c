/* forward_moe: the mixture-of-experts FFN (nc_fwd_moe, forward.h): router,
 * top-k, the batch's rows grouped by expert, the weighted sum; and the
 * experts beside a gated shared expert (nc_fwd_moe_shared). */
#include <math.h>
#include <string.h>

#include "forward.h"
#include "kernels/ops.h"

/* llama.cpp clamps the sum of the chosen weights from below before the
 * division (build_moe_ffn). */
#define MOE_MIN_WSUM 6.103515625e-5

/* Row t's experts: softmax of the n router logits (ggml's exp, sum in
 * double, times 1/sum), the k largest probabilities in descending order
 * (ties: the lower expert first) and their weights p / sum(p). */
static void route(const float *logits, int32_t n, int32_t k, float *probs,
                  int32_t *sel, float *wts) {
  float max = -INFINITY;
  for (int32_t e = 0; e < n; e++)
    if (logits[e] > max) max = logits[e];
  double sum = 0;
  for (int32_t e = 0; e < n; e++) {
    probs[e] = nc_expf_ggml(logits[e] - max);
    sum += probs[e];
  }
  const float inv = (float)(1.0 / sum);
  for (int32_t e = 0; e < n; e++)
    probs[e] *= inv;
  double wsum = 0;
  for (int32_t j = 0; j < k; j++) {
    int32_t best = -1;
    for (int32_t e = 0; e < n; e++) {
      bool taken = false;
      for (int32_t i = 0; i < j && !taken; i++)
        taken = sel[i] == e;
      if (!taken && (best < 0 || probs[e] > probs[best])) best = e;
    }
    sel[j] = best;
    wts[j] = probs[best];
    wsum += wts[j];
  }
  const float ws = wsum < MOE_MIN_WSUM ? (float)MOE_MIN_WSUM : (float)wsum;
  for (int32_t j = 0; j < k; j++)
    wts[j] /= ws;
}

/* Row t's experts under SOFTMAX_WEIGHT gating (gpt-oss): the k largest
 * logits in descending order (ties: the lower expert first), then ggml's
 * soft_max over those k: max, e = exp(l - max) (ggml's vector exp and
 * 16-lane sum for whole groups of 16, libm's expf for the rest, the sums
 * in double), times (float)(1 / sum). */
static void route_softmax_weight(const float *logits, int32_t n, int32_t k,
                                 int32_t *sel, float *wts) {
  for (int32_t j = 0; j < k; j++) {
    int32_t best = -1;
    for (int32_t e = 0; e < n; e++) {
      bool taken = false;
      for (int32_t i = 0; i < j && !taken; i++)
        taken = sel[i] == e;
      if (!taken && (best < 0 || logits[e] > logits[best])) best = e;
    }
    sel[j] = best;
    wts[j] = logits[best];
  }
  float max = -INFINITY;
  for (int32_t j = 0; j < k; j++)
    max = max > wts[j] ? max : wts[j];
  double sum = 0;
  int32_t j = 0;
  for (; j + 16 <= k; j += 16) {
    for (int32_t i = 0; i < 16; i++)
      wts[j + i] = nc_expf_ggml(wts[j + i] - max);
    sum += (double)nc_sum16_tree(wts + j);
  }
  for (; j < k; j++) {
    wts[j] = expf(wts[j] - max);
    sum += (double)wts[j];
  }
  const float inv = (float)(1.0 / sum);
  for (j = 0; j < k; j++)
    wts[j] *= inv;
}

/* y += expert e's bias row (when the layer has expert biases) on rows
 * rows of n values. */
static void expert_bias(nc_fwd *ctx, const nc_weight *b, int32_t e, float *y,
                        int32_t rows, int64_t n) {
  if (b->data)
    nc_fwd_add_bias(ctx, y, (const float *)b->data + (int64_t)e * n, rows, n);
}

/* The experts' activation of rows rows of n: gate = act(gate, up). */
static void expert_act(nc_fwd *ctx, float *gate, const float *up, int32_t rows,
                       int64_t n) {
  if (ctx->hp->moe_act == NC_MOE_ACT_SWIGLU_OAI)
    nc_fwd_swiglu_oai(ctx, gate, up, rows, n);
  else if (ctx->hp->moe_act == NC_MOE_ACT_GELU)
    nc_fwd_geglu(ctx, gate, up, rows, n);
  else
    nc_fwd_swiglu(ctx, gate, up, rows, n);
}

/* One row (decode): its experts' gate and up matmuls share the row, so
 * they run together (up to 4 experts per pass), then their downs, each
 * over its own SwiGLU row (nc_fwd_matmul_each, up to 8 per pass): about 3
 * parallel passes instead of 2 per expert. Each value is the one the
 * grouped path computes for the row alone. */
static void moe_one_row(nc_fwd *ctx, const nc_layer_weights *L,
                        const float *x) {
  const nc_hparams *hp = ctx->hp;
  const nc_fwd_bufs *s = &ctx->bufs;
  const int32_t K = hp->n_expert_used;
  const int64_t E = hp->n_embd, F = hp->n_ff_exp;
  enum { GU_EXPERTS = NC_FWD_MAX_MM / 2 };
  nc_weight w[NC_FWD_MAX_MM];
  nc_mm mm[NC_FWD_MAX_MM];
  for (int32_t j0 = 0; j0 < K; j0 += GU_EXPERTS) {
    const int32_t nj = K - j0 < GU_EXPERTS ? K - j0 : GU_EXPERTS;
    for (int32_t j = 0; j < nj; j++) {
      const int32_t e = s->moe_sel[j0 + j];
      w[2 * j] = nc_weight_expert(&L->gate_exps, e);
      w[2 * j + 1] = nc_weight_expert(&L->up_exps, e);
      mm[2 * j] = (nc_mm){&w[2 * j], s->gate + (int64_t)(j0 + j) * F, F};
      mm[2 * j + 1] = (nc_mm){&w[2 * j + 1], s->up + (int64_t)(j0 + j) * F, F};
    }
    nc_fwd_matmul(ctx, x, E, 1, mm, 2 * nj);
  }
  for (int32_t j = 0; j < K; j++) {
    expert_bias(ctx, &L->gate_exps_b, s->moe_sel[j], s->gate + (int64_t)j * F,
                1, F);
    expert_bias(ctx, &L->up_exps_b, s->moe_sel[j], s->up + (int64_t)j * F, 1,
                F);
  }
  expert_act(ctx, s->gate, s->up, K, F);
  /* the downs' rows are all the row's */
  const uint8_t *few = ctx->mm_few;
  if (few) {
    memset(ctx->few_exp, few[0], (size_t)K);
    ctx->mm_few = ctx->few_exp;
  }
  for (int32_t j0 = 0; j0 < K; j0 += NC_FWD_MAX_MM) {
    const int32_t nj = K - j0 < NC_FWD_MAX_MM ? K - j0 : NC_FWD_MAX_MM;
    for (int32_t j = 0; j < nj; j++) {
      w[j] = nc_weight_expert(&L->down_exps, s->moe_sel[j0 + j]);
      mm[j] = (nc_mm){&w[j], s->moe_out + (int64_t)(j0 + j) * E, E};
      s->moe_at[j0 + j] = j0 + j;
    }
    nc_fwd_matmul_each(ctx, s->gate + (int64_t)j0 * F, F, mm, nj);
  }
  ctx->mm_few = few;
  for (int32_t j = 0; j < K; j++)
    expert_bias(ctx, &L->down_exps_b, s->moe_sel[j],
                s->moe_out + (int64_t)j * E, 1, E);
}

void nc_fwd_moe(nc_fwd *ctx, const nc_layer_weights *L, const float *x,
                float *y, int32_t rows) {
  nc_fwd_moe_ext(ctx, L, x, y, rows, &(nc_moe_opts){0});
}

void nc_fwd_moe_ext(nc_fwd *ctx, const nc_layer_weights *L, const float *x,
                    float *y, int32_t rows, const nc_moe_opts *o) {
  const nc_hparams *hp = ctx->hp;
  const nc_fwd_bufs *s = &ctx->bufs;
  const int32_t NX = hp->n_expert, K = hp->n_expert_used;
  const int64_t E = hp->n_embd, F = hp->n_ff_exp;
  const nc_mm router = {&L->ffn_gate_inp, s->moe_logits, NX};
  nc_fwd_matmul(ctx, o->router_x ? o->router_x : x, E, rows, &router, 1);
  if (L->ffn_gate_inp_b.data)
    nc_fwd_add_bias(ctx, s->moe_logits, L->ffn_gate_inp_b.data, rows, NX);
  for (int32_t t = 0; t < rows; t++) {
    float *lg = s->moe_logits + (int64_t)t * NX;
    if (hp->moe_gating == NC_MOE_GATING_SOFTMAX_WEIGHT)
      route_softmax_weight(lg, NX, K, s->moe_sel + (int64_t)t * K,
                           s->moe_w + (int64_t)t * K);
    else
      route(lg, NX, K, lg, s->moe_sel + (int64_t)t * K,
            s->moe_w + (int64_t)t * K);
  }
  /* expert by expert, its rows in batch order: gate and up of its rows,
   * silu(gate) * up, down into the next rows of moe_out */
  int32_t off = 0;
  ctx->mm_experts = true; /* llama.cpp's mul_mat_id: row by row */
  if (rows == 1) moe_one_row(ctx, L, x);
  for (int32_t e = 0; rows > 1 && e < NX; e++) {
    int32_t n = 0;
    for (int32_t t = 0; t < rows; t++)
      for (int32_t j = 0; j < K; j++)
        if (s->moe_sel[(int64_t)t * K + j] == e) {
          s->moe_rows[n] = t;
          s->moe_at[(int64_t)t * K + j] = off + n;
          n++;
        }
    if (n == 0) continue;
    const nc_weight g = nc_weight_expert(&L->gate_exps, e);
    const nc_weight u = nc_weight_expert(&L->up_exps, e);
    const nc_weight d = nc_weight_expert(&L->down_exps, e);
    const nc_mm gu[2] = {{&g, s->gate, F}, {&u, s->up, F}};
    nc_fwd_matmul_rows(ctx, x, E, s->moe_rows, n, gu, 2);
    expert_bias(ctx, &L->gate_exps_b, e, s->gate, n, F);
    expert_bias(ctx, &L->up_exps_b, e, s->up, n, F);
    expert_act(ctx, s->gate, s->up, n, F);
    const nc_mm down = {&d, s->moe_out + (int64_t)off * E, E};
    const uint8_t *few = ctx->mm_few; /* the down's row k is moe_rows[k]'s */
    if (few) {
      for (int32_t k = 0; k < n; k++)
        ctx->few_exp[k] = few[s->moe_rows[k]];
      ctx->mm_few = ctx->few_exp;
    }
    nc_fwd_matmul(ctx, s->gate, F, n, &down, 1);
    ctx->mm_few = few;
    expert_bias(ctx, &L->down_exps_b, e, s->moe_out + (int64_t)off * E, n, E);
    off += n;
  }
  ctx->mm_experts = false;
  /* each expert's output times its scale first where there is one
   * (llama.cpp's down_exps_s: a multiply of its own) */
  for (int32_t t = 0; o->exp_scale && t < rows; t++)
    for (int32_t j = 0; j < K; j++) {
      const float sc = o->exp_scale[s->moe_sel[(int64_t)t * K + j]];
      float *oe = s->moe_out + (int64_t)s->moe_at[(int64_t)t * K + j] * E;
      for (int64_t i = 0; i < E; i++)
        oe[i] *= sc;
    }
  /* y = w0 * e0 + w1 * e1 + ..., in slot order (ggml: the weighted views
   * added one after another) */
  for (int32_t t = 0; t < rows; t++) {
    float *yt = y + (int64_t)t * E;
    for (int32_t j = 0; j < K; j++) {
      const float w = s->moe_w[(int64_t)t * K + j];
      const float *oe = s->moe_out + (int64_t)s->moe_at[(int64_t)t * K + j] * E;
      if (j == 0)
        for (int64_t i = 0; i < E; i++)
          yt[i] = oe[i] * w;
      else
        for (int64_t i = 0; i < E; i++)
          yt[i] += oe[i] * w;
    }
  }
}

void nc_fwd_moe_shared(nc_fwd *ctx, const nc_layer_weights *L, float *x,
                       int32_t rows) {
  const nc_fwd_bufs *s = &ctx->bufs;
  const int64_t E = ctx->hp->n_embd, F = ctx->hp->n_ff_shexp;
  float *sh = s->side, *g = s->side + (int64_t)rows * E;
  const nc_mm gu[3] = {{&L->gate_shexp, s->gate, F},
                       {&L->up_shexp, s->up, F},
                       {&L->gate_inp_shexp, g, 1}};
  nc_fwd_matmul(ctx, x, E, rows, gu, 3);
  nc_fwd_swiglu(ctx, s->gate, s->up, rows, F);
  const nc_mm down = {&L->down_shexp, sh, E};
  nc_fwd_matmul(ctx, s->gate, F, rows, &down, 1);
  nc_fwd_moe(ctx, L, x, x, rows);
  /* ggml: sigmoid of the gate, the shared output times it, then the
   * experts' sum plus that */
  for (int32_t t = 0; t < rows; t++) {
    const float sg = 1.0f / (1.0f + expf(-g[t]));
    float *xt = x + (int64_t)t * E;
    const float *st = sh + (int64_t)t * E;
    for (int64_t i = 0; i < E; i++)
      xt[i] += st[i] * sg;
  }
}
