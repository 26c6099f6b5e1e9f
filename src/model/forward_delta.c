/* forward_delta: the gated DeltaNet block of a recurrent layer
 * (nc_fwd_gated_delta_net, forward.h), over the sequences' state slots; a
 * row with a snapshot target (nc_batch's snap) has the layer's state copied
 * there once the row is computed, each thread its own channels and heads. */
#include <math.h>
#include <string.h>

#include "forward.h"
#include "kernels/ops.h"

/* One recurrent layer's view of the batch. */
typedef struct delta_task {
  nc_fwd *ctx;
  const nc_layer_weights *L;
  const nc_batch *b;
  int64_t C, S, Hk, Hv, K; /* conv channels, head size, heads, kernel */
  int64_t state_at;        /* the layer's first float in a state slot */
} delta_task;

static float *layer_state(const delta_task *t, int32_t row) {
  return nc_kv_seq_state(t->ctx->kv, t->b->seq[row]) + t->state_at;
}

/* The row's snapshot target at this layer's part, or NULL. */
static float *layer_snap(const delta_task *t, int32_t row) {
  float *s = t->b->snap ? t->b->snap[row] : NULL;
  return s ? s + t->state_at : NULL;
}

/* The causal convolution and SiLU (ggml's exp) of channels [lo, hi), in
 * place on ssm_mix; the slot keeps each channel's last K - 1 inputs, oldest
 * first. */
static void conv_worker(void *p, int ith, int nth) {
  const delta_task *t = p;
  const int64_t C = t->C, K = t->K;
  int64_t lo, hi;
  nc_split_range(C, ith, nth, &lo, &hi);
  const float *w = t->L->ssm_conv.data; /* [C][K] */
  float *mix = t->ctx->bufs.ssm_mix;
  for (int32_t r = 0; r < t->b->n_tokens; r++) {
    float *win = layer_state(t, r); /* [C][K - 1] */
    float *x = mix + (int64_t)r * C;
    for (int64_t c = lo; c < hi; c++) {
      float *st = win + c * (K - 1);
      const float *wc = w + c * K;
      const float in = x[c];
      float sum = 0.0f;
      for (int64_t k = 0; k < K - 1; k++)
        sum += st[k] * wc[k];
      sum += in * wc[K - 1];
      for (int64_t k = 0; k + 2 < K; k++)
        st[k] = st[k + 1];
      st[K - 2] = in;
      x[c] = sum;
    }
    t->ctx->ops->silu(x + lo, hi - lo);
    float *snap = layer_snap(t, r);
    if (snap)
      memcpy(snap + lo * (K - 1), win + lo * (K - 1),
             sizeof(float) * (size_t)((hi - lo) * (K - 1)));
  }
}

/* Per row: q and k of every key head L2-normed (as llama.cpp: RMSNorm with
 * eps / S, times 1 / sqrt(S)); beta = sigmoid(beta); decay = exp(softplus(
 * alpha + dt) * a). */
static void prep_worker(void *p, int ith, int nth) {
  const delta_task *t = p;
  const nc_fwd *ctx = t->ctx;
  const nc_hparams *hp = ctx->hp;
  int64_t lo, hi;
  nc_split_range(t->b->n_tokens, ith, nth, &lo, &hi);
  const float eps = hp->rms_eps / (float)t->S, inv = 1.0f / sqrtf((float)t->S);
  const float *dt = t->L->ssm_dt.data, *a = t->L->ssm_a.data;
  for (int64_t r = lo; r < hi; r++) {
    float *x = ctx->bufs.ssm_mix + r * t->C;
    for (int64_t h = 0; h < 2 * t->Hk; h++) {
      float *v = x + h * t->S;
      ctx->ops->rmsnorm(v, NULL, v, t->S, eps);
      for (int64_t i = 0; i < t->S; i++)
        v[i] *= inv;
    }
    float *bd = ctx->bufs.ssm_bd + r * 2 * t->Hv; /* beta, then alpha */
    for (int64_t h = 0; h < t->Hv; h++) {
      bd[h] = 1.0f / (1.0f + expf(-bd[h]));
      const float z = bd[t->Hv + h] + dt[h];
      const float sp = z > 20.0f ? z : logf(1.0f + expf(z));
      bd[t->Hv + h] = expf(sp * a[h]);
    }
  }
}

/* qwen3next's packed projections of rows [lo, hi) (ssm_packed) sorted into
 * ssm_mix (q of every key head, k of every key head, v of every value
 * head), ssm_z and ssm_bd (beta of every value head, then alpha); the
 * value heads of key head g are g r .. g r + r - 1. Without ssm_qkvz the
 * file's attn_qkv and attn_gate wrote ssm_mix and ssm_z directly. */
static void unpack_worker(void *p, int ith, int nth) {
  const delta_task *t = p;
  const nc_fwd_bufs *s = &t->ctx->bufs;
  const int64_t S = t->S, Hk = t->Hk, Hv = t->Hv, r = Hv / Hk, C = t->C;
  const int64_t P = nc_hp_ssm_packed_width(t->ctx->hp), qkvz = C + Hv * S;
  const size_t head = sizeof(float) * (size_t)S,
               group = sizeof(float) * (size_t)(r * S);
  int64_t lo, hi;
  nc_split_range(t->b->n_tokens, ith, nth, &lo, &hi);
  for (int64_t row = lo; row < hi; row++) {
    const float *in = s->ssm_packed + row * P;
    float *mix = s->ssm_mix + row * C, *z = s->ssm_z + row * Hv * S;
    float *bd = s->ssm_bd + row * 2 * Hv;
    for (int64_t g = 0; g < Hk && t->L->ssm_qkvz.data; g++) {
      const float *x = in + g * (2 * S + 2 * r * S);
      memcpy(mix + g * S, x, head);
      memcpy(mix + (Hk + g) * S, x + S, head);
      memcpy(mix + 2 * Hk * S + g * r * S, x + 2 * S, group);
      memcpy(z + g * r * S, x + 2 * S + r * S, group);
    }
    for (int64_t g = 0; g < Hk; g++) {
      const float *x = in + qkvz + g * 2 * r;
      memcpy(bd + g * r, x, sizeof(float) * (size_t)r);
      memcpy(bd + Hv + g * r, x + r, sizeof(float) * (size_t)r);
    }
  }
}

/* The delta rule of value heads [lo, hi) over the rows in batch order
 * (each sequence's rows come in the order of its positions). */
static void rule_worker(void *p, int ith, int nth) {
  const delta_task *t = p;
  const nc_fwd *ctx = t->ctx;
  const int64_t S = t->S, Hv = t->Hv, Hk = t->Hk;
  int64_t lo, hi;
  nc_split_range(Hv, ith, nth, &lo, &hi);
  const float scale = 1.0f / sqrtf((float)S);
  const int64_t conv_floats = (t->K - 1) * t->C;
  for (int32_t r = 0; r < t->b->n_tokens; r++) {
    float *st = layer_state(t, r) + conv_floats;
    const float *x = ctx->bufs.ssm_mix + (int64_t)r * t->C;
    const float *bd = ctx->bufs.ssm_bd + (int64_t)r * 2 * Hv;
    float *o = ctx->bufs.ssm_o + (int64_t)r * Hv * S;
    for (int64_t h = lo; h < hi; h++) {
      const int64_t hk = ctx->hp->ssm_k_grouped ? h / (Hv / Hk) : h % Hk;
      ctx->ops->delta_rule(st + h * S * S, x + hk * S, x + (Hk + hk) * S,
                           x + 2 * Hk * S + h * S, bd[Hv + h], bd[h], scale,
                           o + h * S, S);
    }
    float *snap = layer_snap(t, r);
    if (snap)
      memcpy(snap + conv_floats + lo * S * S, st + lo * S * S,
             sizeof(float) * (size_t)((hi - lo) * S * S));
  }
}

/* Per row and head: RMSNorm(o) * ssm_norm, times silu(z). */
static void gate_worker(void *p, int ith, int nth) {
  const delta_task *t = p;
  const nc_fwd *ctx = t->ctx;
  const int64_t n = t->b->n_tokens * t->Hv, S = t->S;
  int64_t lo, hi;
  nc_split_range(n, ith, nth, &lo, &hi);
  for (int64_t i = lo; i < hi; i++) {
    float *o = ctx->bufs.ssm_o + i * S;
    ctx->ops->rmsnorm(o, t->L->ssm_norm.data, o, S, ctx->hp->rms_eps);
    ctx->ops->swiglu(ctx->bufs.ssm_z + i * S, o, o, S);
  }
}

void nc_fwd_gated_delta_net(nc_fwd *ctx, const nc_layer_weights *L,
                            const nc_batch *b, const float *xn, float *out) {
  const nc_hparams *hp = ctx->hp;
  const nc_fwd_bufs *s = &ctx->bufs;
  const int32_t T = b->n_tokens;
  delta_task t = {.ctx = ctx,
                  .L = L,
                  .b = b,
                  .C = nc_hp_ssm_conv_dim(hp),
                  .S = hp->ssm_d_state,
                  .Hk = hp->ssm_n_k_heads,
                  .Hv = hp->ssm_n_v_heads,
                  .K = hp->ssm_d_conv,
                  .state_at = (int64_t)L->rec * nc_hp_ssm_layer_floats(hp)};
  const int64_t E = hp->n_embd, Vd = hp->ssm_d_inner, Hv = t.Hv;
  if (L->ssm_ba.data) { /* qwen3next: packed per key head */
    const int64_t P = nc_hp_ssm_packed_width(hp);
    float *ba = s->ssm_packed + t.C + Vd;
    const nc_mm in[3] = {{&L->ssm_ba, ba, P},
                         L->ssm_qkvz.data
                             ? (nc_mm){&L->ssm_qkvz, s->ssm_packed, P}
                             : (nc_mm){&L->ssm_in, s->ssm_mix, t.C},
                         {&L->ssm_z, s->ssm_z, Vd}};
    nc_fwd_matmul(ctx, xn, E, T, in, L->ssm_qkvz.data ? 2 : 3);
    nc_fwd_parallel(ctx, unpack_worker, &t);
  } else {
    const nc_mm in[4] = {{&L->ssm_in, s->ssm_mix, t.C},
                         {&L->ssm_z, s->ssm_z, Vd},
                         {&L->ssm_beta, s->ssm_bd, 2 * Hv},
                         {&L->ssm_alpha, s->ssm_bd + Hv, 2 * Hv}};
    nc_fwd_matmul(ctx, xn, E, T, in, 4);
  }
  nc_fwd_parallel(ctx, conv_worker, &t);
  nc_fwd_parallel(ctx, prep_worker, &t);
  nc_fwd_parallel(ctx, rule_worker, &t);
  nc_fwd_parallel(ctx, gate_worker, &t);
  const nc_mm o = {&L->ssm_out, out, E};
  nc_fwd_matmul(ctx, s->ssm_o, Vd, T, &o, 1);
}
