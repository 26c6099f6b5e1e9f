/* sampler_batch: the sampling pipeline over a batch of rows (the order is
 * documented in sampler.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "sampler_row.h"
#include "sampler_select.h"

#define BLOCK NC_SAMPLE_BLOCK

nc_code nc_sample_workspace_create(int32_t n_vocab, nc_sample_workspace **out,
                                   nc_error *err) {
  *out = NULL;
  if (n_vocab <= 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample workspace: n_vocab = %d must be at least 1",
                   n_vocab);
  nc_sample_workspace *ws = calloc(1, sizeof *ws);
  if (!ws) return nc_fail(err, NC_ERR_NOMEM, "sample workspace: out of memory");
  size_t v = (size_t)n_vocab;
  ws->n_vocab = n_vocab;
  ws->simd = NC_SIMD_BEST;
  ws->x = malloc(v * sizeof *ws->x);
  ws->w = malloc(v * sizeof *ws->w);
  ws->block = malloc((v / BLOCK + 1) * sizeof *ws->block);
  ws->cand = malloc(v * sizeof *ws->cand);
  ws->top_ids = malloc(v * sizeof *ws->top_ids);
  ws->top_vals = malloc(v * sizeof *ws->top_vals);
  if (!ws->x || !ws->w || !ws->block || !ws->cand || !ws->top_ids ||
      !ws->top_vals) {
    nc_sample_workspace_free(ws);
    return nc_fail(err, NC_ERR_NOMEM, "sample workspace: out of memory");
  }
  *out = ws;
  return NC_OK;
}

void nc_sample_workspace_set_simd(nc_sample_workspace *ws, int simd) {
  ws->simd = simd;
}

void nc_sample_workspace_free(nc_sample_workspace *ws) {
  if (!ws) return;
  free(ws->x);
  free(ws->w);
  free(ws->block);
  free(ws->cand);
  free(ws->top_ids);
  free(ws->top_vals);
  nc_inspect_rec_free(ws->insp);
  free(ws);
}

/* What the pipeline leaves for the draw and the logprobs. */

/* Tracks the max of x through sparse edits: the max of the untouched
 * tokens is the raw max unless an edited token held it and lost it. */
typedef struct max_track {
  float raw_max;  /* max before the edits */
  float edit_max; /* max of the edited tokens' final values */
  bool lowered;   /* a token at raw_max ended below it: rescan */
} max_track;

static inline void track(const float *raw, const float *x, int32_t t,
                         max_track *mt) {
  if (raw[t] == mt->raw_max && x[t] < mt->raw_max) mt->lowered = true;
  mt->edit_max = x[t] > mt->edit_max ? x[t] : mt->edit_max;
}

/* Steps 1-3: bias, masks, penalties, into ws->x; st->m is their max. */
/* The grammar's bitset on the logits: a word of 64 allowed tokens is
 * skipped, a word of none is one fill, a mixed one goes bit by bit. */
static void apply_grammar(float *x, int32_t V, const uint64_t *mask) {
  int32_t whole = V / 64;
  for (int32_t w = 0; w < whole; w++) {
    uint64_t bits = mask[w];
    if (bits == UINT64_MAX) continue;
    float *xs = x + (size_t)w * 64;
    if (bits == 0) {
      for (int j = 0; j < 64; j++)
        xs[j] = -INFINITY;
      continue;
    }
    for (int j = 0; j < 64; j++)
      if (!((bits >> j) & 1)) xs[j] = -INFINITY;
  }
  for (int32_t i = whole * 64; i < V; i++)
    if (!((mask[i >> 6] >> (i & 63)) & 1)) x[i] = -INFINITY;
}

static nc_code build_logits(nc_sample_workspace *ws, const nc_sample_row *row,
                            nc_row_state *st, nc_error *err) {
  const nc_sampler *s = st->s;
  float *x = ws->x;
  int32_t V = st->V;
  if (row->n_suppress > 0 && !row->suppress)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "suppress: %d ids announced but the array is NULL",
                   row->n_suppress);
  for (int32_t i = 0; i < row->n_suppress; i++)
    if (row->suppress[i] < 0 || row->suppress[i] >= V)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "suppress[%d] = %d is not a token id: allowed range "
                     "[0, %d]",
                     i, row->suppress[i], V - 1);
  bool bad = false;
  max_track mt = {.edit_max = -INFINITY};
  if (s->has_allowed) {
    nc_row_copy_max_isa(st->raw, NULL, (size_t)V, &bad, ws->simd);
    if (!bad) {
      for (int32_t i = 0; i < V; i++)
        x[i] = -INFINITY;
      mt.raw_max = -INFINITY;
      for (size_t i = 0; i < s->n_allowed; i++) {
        float v = st->raw[s->allowed[i]];
        x[s->allowed[i]] = v;
        mt.raw_max = v > mt.raw_max ? v : mt.raw_max;
      }
    }
  } else {
    mt.raw_max = nc_row_copy_max_isa(st->raw, x, (size_t)V, &bad, ws->simd);
    st->raw_max = mt.raw_max, st->raw_known = true;
  }
  if (bad) {
    size_t i = nc_row_find_bad(st->raw, (size_t)V);
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "logits[%zu] = %g: logits must be finite or -inf", i,
                   (double)st->raw[i]);
  }
  if (row->grammar) { /* stage 0, "grammar": a hard mask (a bias added
                         after it leaves -inf at -inf) */
    apply_grammar(x, V, row->grammar);
    mt.lowered = true;
    if (st->ins) nc_inspect_logits(st->ins, NC_STAGE_GRAMMAR, x);
  }
  for (size_t i = 0; i < s->n_bias; i++) {
    int32_t t = s->bias[i].token;
    x[t] += s->bias[i].bias;
  }
  for (size_t i = 0; i < s->n_banned; i++)
    x[s->banned[i]] = -INFINITY;
  for (int32_t i = 0; i < row->n_suppress; i++)
    x[row->suppress[i]] = -INFINITY;
  if (st->ins &&
      (s->has_allowed || s->n_bias || s->n_banned || row->n_suppress))
    nc_inspect_logits(st->ins, NC_STAGE_LOGIT_BIAS, x);
  const float r = s->p.repetition_penalty;
  const float freq = s->p.frequency_penalty, pres = s->p.presence_penalty;
  /* inspected: the two penalties in two passes, to record between them
   * (the same float operations in the same order: the same logits) */
  bool split = st->ins && r != 1.0f && (freq != 0.0f || pres != 0.0f);
  for (int32_t e = 0; e < s->n_seen; e++) {
    const nc_seen *seen = &s->seen[e];
    float v = x[seen->token];
    if (r != 1.0f) v = v > 0.0f ? v / r : v * r;
    if (seen->count > 0 && !split) v -= (float)seen->count * freq + pres;
    x[seen->token] = v;
  }
  if (st->ins && r != 1.0f) nc_inspect_logits(st->ins, NC_STAGE_REPETITION, x);
  if (split)
    for (int32_t e = 0; e < s->n_seen; e++)
      if (s->seen[e].count > 0)
        x[s->seen[e].token] -= (float)s->seen[e].count * freq + pres;
  if (st->ins && (freq != 0.0f || pres != 0.0f))
    nc_inspect_logits(st->ins, NC_STAGE_PRESENCE_FREQUENCY, x);
  st->pristine = !s->has_allowed && s->n_bias == 0 && s->n_banned == 0 &&
                 row->n_suppress == 0 && s->n_seen == 0 && !row->grammar;
  /* the edited tokens' final values */
  for (size_t i = 0; i < s->n_bias; i++)
    track(st->raw, x, s->bias[i].token, &mt);
  for (size_t i = 0; i < s->n_banned; i++)
    track(st->raw, x, s->banned[i], &mt);
  for (int32_t i = 0; i < row->n_suppress; i++)
    track(st->raw, x, row->suppress[i], &mt);
  for (int32_t e = 0; e < s->n_seen; e++)
    track(st->raw, x, s->seen[e].token, &mt);
  if (mt.lowered)
    st->m = nc_row_copy_max_isa(x, NULL, (size_t)V, &bad, ws->simd);
  else
    st->m = mt.edit_max > mt.raw_max ? mt.edit_max : mt.raw_max;
  if (st->m == INFINITY) /* e.g. a huge logit over a penalty below 1 */
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "a logit overflowed to +inf after bias and penalties");
  return NC_OK;
}

static void fill_cand(nc_cand *c, int32_t id, float v, float m, float scale) {
  c->id = id;
  c->s = (v - m) * scale;
  c->w = nc_expf_neg(c->s);
  c->key = -c->s;
}

static double cand_mass(const nc_cand *c, size_t n) {
  double acc = 0.0;
  for (size_t i = 0; i < n; i++)
    acc += c[i].w;
  return acc;
}

/* Steps 5-8 (T > 0). */
static void truncate(nc_sample_workspace *ws, nc_row_state *st) {
  const nucleus_sampling_params *p = &st->s->p;
  const float *x = ws->x;
  nc_cand *cand = ws->cand;
  bool top_k = p->top_k > 0 && p->top_k < st->V;
  bool top_p = p->top_p < 1.0f;
  bool min_p = p->min_p > 0.0f;
  bool typical = p->typical_p < 1.0f;
  if (!top_k && !top_p && !min_p && !typical) {
    st->full = true;
    double total = 0.0;
    for (int32_t b = 0; b * BLOCK < st->V; b++) {
      int32_t lo = b * BLOCK, len = st->V - lo < BLOCK ? st->V - lo : BLOCK;
      ws->block[b] = nc_row_exp_isa(x + lo, (size_t)len, st->m, st->scale,
                                    ws->w + lo, ws->simd);
      total += ws->block[b];
    }
    st->mass = total;
    return;
  }
  size_t n = 0;
  if (top_k) {
    n = nc_row_topn(x, (size_t)st->V, (size_t)p->top_k, true, ws->top_ids,
                    ws->top_vals);
    for (size_t i = 0; i < n; i++)
      fill_cand(&cand[i], ws->top_ids[i], ws->top_vals[i], st->m, st->scale);
    if (st->ins) nc_inspect_set(st->ins, NC_STAGE_TOP_K, cand, n);
    if (top_p) {
      n = nc_cand_select_mass(cand, n, p->top_p * cand_mass(cand, n));
      if (st->ins) nc_inspect_set(st->ins, NC_STAGE_TOP_P, cand, n);
    }
  } else if (top_p) {
    /* The top-p set is a prefix by probability: collect the tokens within
     * -thr of the max, widening only while they hold less than the target
     * mass (then the prefix lies among them). Min-p keeps a prefix too, so
     * nothing below its cut is ever collected: when the min-p set holds
     * less than the target, it is the answer (it lies inside top-p's). */
    double target = p->top_p * nc_row_exp_isa(x, (size_t)st->V, st->m,
                                              st->scale, NULL, ws->simd);
    float floor_thr = min_p ? logf(p->min_p) : -INFINITY;
    for (float thr = -4.0f;; thr *= 2.0f) {
      if (thr < -200.0f) thr = -INFINITY;
      if (thr <= floor_thr) thr = floor_thr;
      n = nc_row_collect(x, (size_t)st->V, st->m, st->scale, thr, cand);
      if (cand_mass(cand, n) >= target) {
        n = nc_cand_select_mass(cand, n, target);
        if (st->ins) nc_inspect_set(st->ins, NC_STAGE_TOP_P, cand, n);
        break;
      }
      if (thr == floor_thr) {
        if (st->ins) nc_inspect_top_p_full(st->ins, target);
        break;
      }
    }
  } else {
    float thr = min_p ? logf(p->min_p) : -INFINITY;
    n = nc_row_collect(x, (size_t)st->V, st->m, st->scale, thr, cand);
  }
  if (min_p) {
    float thr = logf(p->min_p);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
      if (cand[i].s >= thr) cand[kept++] = cand[i];
    n = kept;
    if (st->ins) nc_inspect_set(st->ins, NC_STAGE_MIN_P, cand, n);
  }
  if (typical && n > 1) {
    double mass = cand_mass(cand, n), ws_sum = 0.0;
    for (size_t i = 0; i < n; i++) /* p log p -> 0 as p -> 0 */
      if (cand[i].w > 0.0f) ws_sum += (double)cand[i].w * cand[i].s;
    double log_mass = log(mass);
    double entropy = log_mass - ws_sum / mass;
    for (size_t i = 0; i < n; i++)
      cand[i].key = (float)fabs(-((double)cand[i].s - log_mass) - entropy);
    n = nc_cand_select_mass(cand, n, p->typical_p * mass);
  }
  if (typical && st->ins) nc_inspect_set(st->ins, NC_STAGE_TYPICAL_P, cand, n);
  st->n = n;
  st->mass = cand_mass(cand, n);
}

/* Steps 1-8 for one row. */
nc_code nc_sample_process_row(nc_sample_workspace *ws, const nc_sample_row *row,
                              nc_row_state *st, nc_error *err) {
  memset(st, 0, sizeof *st);
  if (!row->sampler || !row->logits)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sampler or logits missing (NULL)");
  st->s = row->sampler;
  st->raw = row->logits;
  st->V = st->s->n_vocab;
  if (st->V > ws->n_vocab)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "the sampler's vocabulary (%d) is larger than the "
                   "workspace's (%d)",
                   st->V, ws->n_vocab);
  if (row->inspect) {
    st->ins = nc_inspect_rec_get(&ws->insp, ws->n_vocab);
    if (st->ins)
      nc_inspect_begin(st->ins, row->inspect, st->s->p.inspect_top_n, st->raw,
                       st->V, st->s->seed, st->s->stream, st->s->step);
    else
      memset(row->inspect, 0, sizeof *row->inspect);
  }
  nc_code rc = build_logits(ws, row, st, err);
  if (rc) return rc;
  if (st->m == -INFINITY)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "every token is masked (allowed_tokens, banned_tokens, "
                   "logit_bias or suppressed ids leave nothing to sample)");
  /* T so small that 1/T overflows acts as greedy (the limit T -> 0+) */
  if (st->s->p.temperature == 0.0f || isinf(1.0f / st->s->p.temperature)) {
    st->greedy = true;
    st->argmax = (int32_t)nc_row_find(ws->x, (size_t)st->V, st->m);
    st->scale = 1.0f;
    st->n = 1;
    st->mass = 1.0;
    fill_cand(&ws->cand[0], st->argmax, st->m, st->m, 1.0f);
    if (st->ins)
      nc_inspect_temperature(st->ins, ws->x, st->m, 1.0f, st->argmax, ws->simd);
    return NC_OK;
  }
  st->scale = 1.0f / st->s->p.temperature;
  if (st->ins)
    nc_inspect_temperature(st->ins, ws->x, st->m, st->scale, -1, ws->simd);
  truncate(ws, st);
  return NC_OK;
}

/* Step 9: inverse CDF at u over the final set; never a zero weight. An
 * inspected row passes tr: what the walk compared is left there. */
static int32_t draw(const nc_sample_workspace *ws, const nc_row_state *st,
                    double u, nc_draw_trace *tr) {
  if (st->greedy) return st->argmax;
  double target = u * st->mass, acc = 0.0, before = 0.0;
  if (tr) *tr = (nc_draw_trace){.target = target};
  if (!st->full) {
    int32_t last = ws->cand[0].id;
    for (size_t i = 0; i < st->n; i++) {
      if (!(ws->cand[i].w > 0.0f)) continue;
      before = acc;
      acc += ws->cand[i].w;
      last = ws->cand[i].id;
      if (acc > target) break;
    }
    if (tr) tr->lo = before, tr->hi = acc, tr->clamped = !(acc > target);
    return last;
  }
  int32_t last = -1, skipped = -1; /* last block skipped with mass */
  for (int32_t b = 0; b * BLOCK < st->V; b++) {
    int32_t lo = b * BLOCK, hi = st->V - lo < BLOCK ? st->V : lo + BLOCK;
    if (acc + ws->block[b] <= target && hi < st->V) {
      acc += ws->block[b];
      if (ws->block[b] > 0.0) skipped = b;
      continue;
    }
    for (int32_t i = lo; i < hi; i++) {
      if (!(ws->w[i] > 0.0f)) continue;
      before = acc;
      acc += ws->w[i];
      last = i;
      if (acc > target) {
        if (tr) tr->lo = before, tr->hi = acc;
        return i;
      }
    }
  }
  /* rounding: the sum never passed target; the last token with mass (its
   * interval, or the final sum where it lies in a block added at once) */
  if (tr) *tr = (nc_draw_trace){target, last >= 0 ? before : acc, acc, true};
  if (last < 0 && skipped >= 0)
    for (int32_t i = skipped * BLOCK; i < (skipped + 1) * BLOCK; i++)
      if (ws->w[i] > 0.0f) last = i;
  return last < 0 ? 0 : last;
}

nc_code nc_sample_batch(nc_sample_workspace *ws, const nc_sample_row *rows,
                        int32_t n_rows, nc_sample_result *results,
                        nc_error *err) {
  if (!ws || (n_rows > 0 && (!rows || !results)) || n_rows < 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample batch: workspace, rows or results missing "
                   "(n_rows = %d)",
                   n_rows);
  nc_code first = NC_OK;
  for (int32_t r = 0; r < n_rows; r++) {
    nc_sample_result *res = &results[r];
    memset(res, 0, sizeof *res);
    nc_row_state st;
    nc_error row_err = {0};
    nc_code rc = nc_sample_process_row(ws, &rows[r], &st, &row_err);
    if (rc) {
      res->token = -1;
      res->status = rc;
      if (!first) {
        first = rc;
        nc_fail(err, rc, "row %d: %s", r, row_err.message);
      }
      continue;
    }
    double u = nc_rng_uniform(st.s->seed, st.s->stream, st.s->step, 0);
    nc_draw_trace tr;
    res->token = draw(ws, &st, u, st.ins ? &tr : NULL);
    if (st.ins) {
      nc_inspect_finish(st.ins, u, res->token, st.mass, st.full ? ws->w : NULL);
      nc_inspect_draw(st.ins, st.greedy ? NULL : &tr, st.mass, ws->cand, st.n,
                      st.full ? ws->w : NULL, ws->block, BLOCK);
    }
    res->n_kept = st.full ? st.V : (int32_t)st.n;
    res->p_top = nc_row_top_prob(ws, &st);
    res->status = NC_OK;
    nc_sample_logprobs(ws, &st, res);
  }
  return first;
}

float nc_row_top_prob(const nc_sample_workspace *ws, const nc_row_state *st) {
  if (st->greedy || !(st->mass > 0.0)) return 1.0f;
  /* every token kept: the argmax's weight is exp(0) = 1 */
  double top = 1.0;
  if (!st->full) { /* typical-p may drop the argmax */
    top = 0.0;
    for (size_t i = 0; i < st->n; i++)
      if (ws->cand[i].w > top) top = ws->cand[i].w;
  }
  const double v = top / st->mass;
  return v < 1.0 ? (float)v : 1.0f;
}

static int cmp_prob_desc(const void *pa, const void *pb) {
  const nc_cand *a = pa, *b = pb;
  if (a->s != b->s) return a->s > b->s ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

nc_code nc_sample_distribution(nc_sample_workspace *ws,
                               const nc_sample_row *row, int32_t *ids,
                               double *probs, int32_t *n_out, nc_error *err) {
  *n_out = 0;
  if (!ws || !row || !ids || !probs)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "sample distribution: an argument is NULL");
  nc_row_state st;
  nc_sample_row plain = *row; /* nothing drawn: nothing to inspect */
  plain.inspect = NULL;
  nc_code rc = nc_sample_process_row(ws, &plain, &st, err);
  if (rc) return rc;
  size_t n = st.n;
  if (st.full) {
    n = 0;
    for (int32_t i = 0; i < st.V; i++)
      if (ws->w[i] > 0.0f)
        fill_cand(&ws->cand[n++], i, ws->x[i], st.m, st.scale);
  }
  qsort(ws->cand, n, sizeof *ws->cand, cmp_prob_desc);
  for (size_t i = 0; i < n; i++) {
    ids[i] = ws->cand[i].id;
    probs[i] = ws->cand[i].w / st.mass;
  }
  *n_out = (int32_t)n;
  return NC_OK;
}
