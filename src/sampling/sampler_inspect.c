/* sampler_inspect: the pipeline's recording hook (see sampler_inspect.h). */
#include "sampler_inspect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "sampler_select.h"

_Static_assert(NC_STAGE_COUNT == NUCLEUS_MAX_INSPECT_STAGES,
               "one inspect slot per stage");

#define MAX_CAND (NUCLEUS_MAX_INSPECT_TOP + 1)
#define N_LOGIT_STAGES 4 /* grammar, logit_bias and the two penalties */

static const char *const STAGE_NAMES[NC_STAGE_COUNT] = {
    [NC_STAGE_GRAMMAR] = "grammar",
    [NC_STAGE_LOGIT_BIAS] = "logit_bias",
    [NC_STAGE_REPETITION] = "repetition_penalty",
    [NC_STAGE_PRESENCE_FREQUENCY] = "presence_frequency_penalty",
    [NC_STAGE_TEMPERATURE] = "temperature",
    [NC_STAGE_TOP_K] = "top_k",
    [NC_STAGE_TOP_P] = "top_p",
    [NC_STAGE_MIN_P] = "min_p",
    [NC_STAGE_TYPICAL_P] = "typical_p",
};

const char *nc_stage_name(nc_stage stage) {
  return stage >= 0 && stage < NC_STAGE_COUNT ? STAGE_NAMES[stage] : "?";
}

typedef enum kind { LOGITS, TEMPER, GREEDY, SET } kind;

typedef struct stage_rec {
  kind kind;
  int32_t snap;  /* LOGITS: which snapshot */
  float m;       /* LOGITS: max of the snapshot */
  double z;      /* LOGITS: sum exp(x - m); TEMPER: sum of the weights */
  double mass;   /* SET: mass kept */
  uint64_t kept; /* SET, GREEDY: bit c = candidate c kept (top_n <= 64) */
} stage_rec;

struct nc_inspect_rec {
  int32_t n_vocab;
  float *snaps;  /* [N_LOGIT_STAGES][n_vocab] */
  nc_cand *copy; /* [n_vocab]: top-p formed on a copy */
  int32_t ids[NUCLEUS_MAX_INSPECT_TOP];
  float vals[NUCLEUS_MAX_INSPECT_TOP];
  /* the row */
  nucleus_inspect *out;
  const float *raw, *x;
  int32_t V, want, n_top, n_snaps;
  float m, scale;
  int32_t argmax;
  int simd;
  int32_t sorted[NUCLEUS_MAX_INSPECT_TOP]; /* candidate ids ascending */
  int32_t sorted_at[NUCLEUS_MAX_INSPECT_TOP];
  stage_rec st[NC_STAGE_COUNT];
};

nc_inspect_rec *nc_inspect_rec_get(nc_inspect_rec **slot, int32_t n_vocab) {
  if (*slot && (*slot)->n_vocab >= n_vocab) return *slot;
  nc_inspect_rec_free(*slot);
  *slot = NULL;
  nc_inspect_rec *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->n_vocab = n_vocab;
  r->snaps = malloc((size_t)N_LOGIT_STAGES * (size_t)n_vocab * sizeof(float));
  r->copy = malloc((size_t)n_vocab * sizeof *r->copy);
  if (!r->snaps || !r->copy) {
    nc_inspect_rec_free(r);
    return NULL;
  }
  *slot = r;
  return r;
}

void nc_inspect_rec_free(nc_inspect_rec *rec) {
  if (!rec) return;
  free(rec->snaps);
  free(rec->copy);
  free(rec);
}

void nc_inspect_begin(nc_inspect_rec *rec, nucleus_inspect *out, int32_t top_n,
                      const float *raw, int32_t V, uint64_t seed,
                      uint64_t stream, uint64_t step) {
  memset(out, 0, sizeof *out);
  rec->want = top_n < 1                         ? 1
              : top_n > NUCLEUS_MAX_INSPECT_TOP ? NUCLEUS_MAX_INSPECT_TOP
                                                : top_n;
  out->seed = seed, out->stream = stream, out->step = step;
  out->token = -1;
  out->draft_token = -1;
  rec->out = out;
  rec->raw = raw;
  rec->x = NULL;
  rec->V = V;
  rec->n_top = 0;
  rec->n_snaps = 0;
  rec->argmax = -1;
}

static stage_rec *push_stage(nc_inspect_rec *rec, nc_stage stage) {
  nucleus_inspect *o = rec->out;
  if (o->n_stages >= NC_STAGE_COUNT) return NULL;
  o->stages[o->n_stages] = STAGE_NAMES[stage];
  stage_rec *s = &rec->st[o->n_stages++];
  memset(s, 0, sizeof *s);
  return s;
}

void nc_inspect_logits(nc_inspect_rec *rec, nc_stage stage, const float *x) {
  if (rec->n_snaps >= N_LOGIT_STAGES) return;
  stage_rec *s = push_stage(rec, stage);
  if (!s) return;
  float *snap = rec->snaps + (size_t)rec->n_snaps * (size_t)rec->n_vocab;
  bool bad = false;
  s->kind = LOGITS;
  s->snap = rec->n_snaps++;
  s->m = nc_row_copy_max(x, snap, (size_t)rec->V, &bad);
  s->z = s->m == -INFINITY ? 0.0
                           : nc_row_exp(snap, (size_t)rec->V, s->m, 1.0f, NULL);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The candidate index of token id among the top ones, or -1. */
static int32_t find_cand(const nc_inspect_rec *rec, int32_t id) {
  const int32_t *hit =
      bsearch(&id, rec->sorted, (size_t)rec->n_top, sizeof(int32_t), cmp_i32);
  return hit ? rec->sorted_at[hit - rec->sorted] : -1;
}

void nc_inspect_temperature(nc_inspect_rec *rec, const float *x, float m,
                            float scale, int32_t argmax, int simd) {
  nucleus_inspect *o = rec->out;
  rec->x = x, rec->m = m, rec->scale = scale, rec->argmax = argmax;
  rec->simd = simd;
  rec->n_top = (int32_t)nc_row_topn(rec->raw, (size_t)rec->V, (size_t)rec->want,
                                    true, rec->ids, rec->vals);
  for (int32_t c = 0; c < rec->n_top; c++)
    rec->sorted[c] = rec->ids[c];
  qsort(rec->sorted, (size_t)rec->n_top, sizeof(int32_t), cmp_i32);
  for (int32_t c = 0; c < rec->n_top; c++) {
    int32_t id = rec->ids[c];
    const int32_t *hit =
        bsearch(&id, rec->sorted, (size_t)rec->n_top, sizeof(int32_t), cmp_i32);
    rec->sorted_at[hit - rec->sorted] = c;
  }
  o->n_candidates = rec->n_top;
  stage_rec *s = push_stage(rec, NC_STAGE_TEMPERATURE);
  if (!s) return;
  if (argmax >= 0) {
    s->kind = GREEDY;
    int32_t c = find_cand(rec, argmax);
    s->kept = c >= 0 ? (uint64_t)1 << c : 0;
    s->mass = 1.0;
    return;
  }
  s->kind = TEMPER;
  s->z = nc_row_exp_isa(x, (size_t)rec->V, m, scale, NULL, simd);
}

void nc_inspect_set(nc_inspect_rec *rec, nc_stage stage, const nc_cand *cand,
                    size_t n) {
  stage_rec *s = push_stage(rec, stage);
  if (!s) return;
  s->kind = SET;
  for (size_t i = 0; i < n; i++) {
    s->mass += cand[i].w;
    int32_t c = find_cand(rec, cand[i].id);
    if (c >= 0) s->kept |= (uint64_t)1 << c;
  }
}

void nc_inspect_top_p_full(nc_inspect_rec *rec, double target) {
  size_t n = nc_row_collect(rec->x, (size_t)rec->V, rec->m, rec->scale,
                            -INFINITY, rec->copy);
  n = nc_cand_select_mass(rec->copy, n, target);
  nc_inspect_set(rec, NC_STAGE_TOP_P, rec->copy, n);
}

/* exp(x[id] - m) / z, 0 for a masked token. */
static float logit_prob(const float *snap, int32_t id, float m, double z) {
  if (snap[id] == -INFINITY || !(z > 0.0)) return 0.0f;
  return (float)(exp((double)snap[id] - (double)m) / z);
}

void nc_inspect_finish(nc_inspect_rec *rec, double u, int32_t token,
                       double mass, const float *w) {
  nucleus_inspect *o = rec->out;
  o->uniform = rec->argmax >= 0 ? 0.0 : u;
  o->token = token;
  int32_t n = rec->n_top;
  bool drawn_listed = find_cand(rec, token) >= 0;
  int32_t n_all = drawn_listed ? n : n + 1;
  /* raw probabilities: the softmax of the model's logits */
  bool bad = false;
  float raw_m = nc_row_max(rec->raw, (size_t)rec->V, &bad);
  double raw_z = nc_row_exp(rec->raw, (size_t)rec->V, raw_m, 1.0f, NULL);
  for (int32_t c = 0; c < n_all; c++) {
    nucleus_inspect_candidate *k = &o->candidates[c];
    int32_t id = c < n ? rec->ids[c] : token;
    bool is_drawn = id == token; /* kept by every stage */
    k->token = id;
    k->logit = rec->raw[id];
    k->raw_prob = logit_prob(rec->raw, id, raw_m, raw_z);
    k->removed_by = -1;
    float weight = nc_expf_neg((rec->x[id] - rec->m) * rec->scale);
    for (int32_t j = 0; j < o->n_stages; j++) {
      const stage_rec *s = &rec->st[j];
      bool kept = is_drawn || (c < 64 && (s->kept >> c) & 1);
      float p = 0.0f;
      switch (s->kind) {
      case LOGITS: {
        const float *snap = rec->snaps + (size_t)s->snap * (size_t)rec->n_vocab;
        p = logit_prob(snap, id, s->m, s->z);
        kept = snap[id] != -INFINITY;
        break;
      }
      case TEMPER:
        kept = rec->x[id] != -INFINITY;
        p = kept && s->z > 0.0 ? (float)(weight / s->z) : 0.0f;
        break;
      case GREEDY: p = kept ? 1.0f : 0.0f; break;
      case SET:
        p = kept && s->mass > 0.0 ? (float)(weight / s->mass) : 0.0f;
        break;
      }
      if (!kept) p = 0.0f;
      if (!kept && k->removed_by < 0) k->removed_by = j;
      k->stage_prob[j] = k->removed_by >= 0 ? 0.0f : p;
    }
    if (k->removed_by >= 0)
      k->final_prob = 0.0f;
    else if (rec->argmax >= 0)
      k->final_prob = id == rec->argmax ? 1.0f : 0.0f;
    else if (w)
      k->final_prob = mass > 0.0 ? (float)(w[id] / mass) : 0.0f;
    else
      k->final_prob = mass > 0.0 ? (float)(weight / mass) : 0.0f;
  }
  o->n_candidates = n_all;
}

/* The listed ids (the top candidates and the drawn token), ascending. */
static int32_t listed_ids(const nc_inspect_rec *rec, int32_t token,
                          int32_t *ids) {
  int32_t n = 0;
  bool placed = find_cand(rec, token) >= 0;
  for (int32_t c = 0; c < rec->n_top; c++) {
    if (!placed && token < rec->sorted[c]) ids[n++] = token, placed = true;
    ids[n++] = rec->sorted[c];
  }
  if (!placed) ids[n++] = token;
  return n;
}

static void walk_push(nucleus_inspect *o, int32_t id, double lo, double hi) {
  if (o->n_walk >= MAX_CAND) return;
  o->walk[o->n_walk++] =
      (nucleus_inspect_walk){.token = id, .lo = lo, .hi = hi};
}

/* The kept set in the draw's order: the same additions as the draw's. */
static void walk_set(nc_inspect_rec *rec, const nc_cand *cand, size_t n) {
  nucleus_inspect *o = rec->out;
  double acc = 0.0;
  for (size_t i = 0; i < n && o->n_walk < MAX_CAND; i++) {
    if (!(cand[i].w > 0.0f)) continue;
    double lo = acc;
    acc += cand[i].w;
    if (cand[i].id == o->token || find_cand(rec, cand[i].id) >= 0)
      walk_push(o, cand[i].id, lo, acc);
  }
}

/* Every token by id: a block the draw skips (its sum fits below target, and
 * it is not the last) adds its sum at once, the others token by token, as
 * the draw does; the listed tokens' intervals come out on the way. */
static void walk_ids(nc_inspect_rec *rec, double target, const float *w,
                     const double *block, int32_t block_len) {
  nucleus_inspect *o = rec->out;
  int32_t ids[MAX_CAND];
  int32_t n_ids = listed_ids(rec, o->token, ids), k = 0;
  double acc = 0.0;
  for (int32_t b = 0; b * block_len < rec->V && k < n_ids; b++) {
    int32_t lo = b * block_len;
    int32_t hi = rec->V - lo < block_len ? rec->V : lo + block_len;
    bool skip = acc + block[b] <= target && hi < rec->V;
    double q = acc;
    for (int32_t i = lo; i < hi && k < n_ids && (!skip || ids[k] < hi); i++) {
      while (k < n_ids && ids[k] < i)
        k++;
      if (!(w[i] > 0.0f)) continue;
      double before = q;
      q += w[i];
      if (k < n_ids && ids[k] == i) walk_push(o, i, before, q), k++;
    }
    acc = skip ? acc + block[b] : q;
  }
}

void nc_inspect_draw(nc_inspect_rec *rec, const nc_draw_trace *tr, double mass,
                     const nc_cand *cand, size_t n, const float *w,
                     const double *block, int32_t block_len) {
  nucleus_inspect *o = rec->out;
  o->n_walk = 0;
  if (!tr) {
    o->method = NUCLEUS_DRAW_GREEDY;
    return;
  }
  o->method = NUCLEUS_DRAW_INVERSE_CDF;
  o->mass = mass, o->target = tr->target;
  o->cdf_lo = tr->lo, o->cdf_hi = tr->hi, o->clamped = tr->clamped;
  o->order = w ? NUCLEUS_WALK_TOKEN_ID : NUCLEUS_WALK_KEPT_SET;
  if (w)
    walk_ids(rec, tr->target, w, block, block_len);
  else
    walk_set(rec, cand, n);
}
