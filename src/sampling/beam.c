/* beam: beam search bookkeeping (rules in beam.h). */
#include "beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct hyp {
  int32_t *tokens;
  int32_t n, cap;
  float cum;
  float score; /* finished only */
} hyp;

/* One global candidate of a step. */
typedef struct cand {
  float cum;
  int32_t beam;
  int32_t token;
} cand;

struct nc_beam {
  int32_t width, n_return;
  float length_penalty;
  bool early_stopping;
  int32_t *eog;
  int32_t n_eog;
  hyp live[NC_BEAM_MAX_WIDTH];
  int32_t n_live;
  hyp fin[NC_BEAM_MAX_WIDTH]; /* best first */
  int32_t n_fin;
  int32_t cur_len; /* generated tokens of the live beams */
  bool done;
  cand *pool; /* width * 2 * width candidates */
  cand *best; /* 2 * width */
};

static void hyp_free(hyp *h) {
  free(h->tokens);
  memset(h, 0, sizeof *h);
}

/* h = prefix (n tokens) + token (when token >= 0). */
static bool hyp_set(hyp *h, const int32_t *prefix, int32_t n, int32_t token) {
  int32_t need = n + 1;
  if (need > h->cap) {
    int32_t cap = h->cap ? h->cap : 16;
    while (cap < need)
      cap *= 2;
    int32_t *t = realloc(h->tokens, (size_t)cap * sizeof *t);
    if (!t) return false;
    h->tokens = t, h->cap = cap;
  }
  if (n > 0) memmove(h->tokens, prefix, (size_t)n * sizeof *prefix);
  h->n = n;
  if (token >= 0) h->tokens[h->n++] = token;
  return true;
}

nc_code nc_beam_create(const nc_beam_params *p, nc_beam **out, nc_error *err) {
  *out = NULL;
  if (!p) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "beam params: NULL");
  if (p->width < 1 || p->width > NC_BEAM_MAX_WIDTH)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "beam width = %d is out of range: [1, %d]", p->width,
                   NC_BEAM_MAX_WIDTH);
  if (p->n_return < 1 || p->n_return > p->width)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "beam n_return = %d is out of range: [1, width = %d]",
                   p->n_return, p->width);
  if (!isfinite(p->length_penalty))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "length_penalty = %g must be finite",
                   (double)p->length_penalty);
  if (p->n_eog < 0 || (p->n_eog > 0 && !p->eog))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "beam eog: %d ids announced, array %s", p->n_eog,
                   p->eog ? "given" : "NULL");
  nc_beam *b = calloc(1, sizeof *b);
  if (!b) return nc_fail(err, NC_ERR_NOMEM, "beam: out of memory");
  b->width = p->width, b->n_return = p->n_return;
  b->length_penalty = p->length_penalty;
  b->early_stopping = p->early_stopping;
  size_t w = (size_t)p->width;
  b->pool = malloc(w * 2 * w * sizeof *b->pool);
  b->best = malloc(2 * w * sizeof *b->best);
  if (p->n_eog > 0) {
    b->eog = malloc((size_t)p->n_eog * sizeof *b->eog);
    if (b->eog) memcpy(b->eog, p->eog, (size_t)p->n_eog * sizeof *b->eog);
  }
  b->n_eog = p->n_eog;
  if (!b->pool || !b->best || (p->n_eog > 0 && !b->eog) ||
      !hyp_set(&b->live[0], NULL, 0, -1)) {
    nc_beam_free(b);
    return nc_fail(err, NC_ERR_NOMEM, "beam: out of memory");
  }
  b->n_live = 1;
  *out = b;
  return NC_OK;
}

void nc_beam_free(nc_beam *b) {
  if (!b) return;
  for (int32_t i = 0; i < NC_BEAM_MAX_WIDTH; i++) {
    hyp_free(&b->live[i]);
    hyp_free(&b->fin[i]);
  }
  free(b->eog);
  free(b->pool);
  free(b->best);
  free(b);
}

int32_t nc_beam_n_live(const nc_beam *b) {
  return b->done ? 0 : b->n_live;
}
int32_t nc_beam_n_finished(const nc_beam *b) {
  return b->n_fin;
}
bool nc_beam_done(const nc_beam *b) {
  return b->done;
}

static bool is_eog(const nc_beam *b, int32_t token) {
  for (int32_t i = 0; i < b->n_eog; i++)
    if (b->eog[i] == token) return true;
  return false;
}

static float score_of(const nc_beam *b, float cum, int32_t len) {
  if (len < 1) len = 1;
  return (float)((double)cum / pow((double)len, (double)b->length_penalty));
}

/* Adds a finished hypothesis when it ranks among the best width. */
static bool add_finished(nc_beam *b, const int32_t *tokens, int32_t n,
                         int32_t token, float cum) {
  float score = score_of(b, cum, n + (token >= 0));
  if (b->n_fin == b->width && !(score > b->fin[b->n_fin - 1].score))
    return true;
  int32_t pos = b->n_fin < b->width ? b->n_fin : b->width - 1;
  /* the slot at pos is free or the dropped worst; reuse its buffer */
  hyp slot = b->fin[pos];
  for (; pos > 0 && score > b->fin[pos - 1].score; pos--)
    b->fin[pos] = b->fin[pos - 1];
  b->fin[pos] = slot;
  if (b->n_fin < b->width) b->n_fin++;
  hyp *h = &b->fin[pos];
  if (!hyp_set(h, tokens, n, token)) return false;
  h->cum = cum, h->score = score;
  return true;
}

static bool cand_before(const cand *a, const cand *c) {
  if (a->cum != c->cum) return a->cum > c->cum;
  if (a->beam != c->beam) return a->beam < c->beam;
  return a->token < c->token;
}

/* Keeps the best k of a stream of candidates in best[0..*n), sorted. */
static void keep_best(cand *best, int32_t *n, int32_t k, cand c) {
  if (*n == k && !cand_before(&c, &best[k - 1])) return;
  int32_t j = *n < k ? (*n)++ : k - 1;
  while (j > 0 && cand_before(&c, &best[j - 1])) {
    best[j] = best[j - 1];
    j--;
  }
  best[j] = c;
}

static nc_code advance(nc_beam *b, const cand *best, int32_t n_best,
                       nc_beam_next *next, int32_t *n_next, nc_error *err) {
  hyp fresh[NC_BEAM_MAX_WIDTH];
  memset(fresh, 0, sizeof fresh);
  int32_t n_new = 0;
  for (int32_t r = 0; r < n_best && n_new < b->width; r++) {
    const cand *c = &best[r];
    const hyp *parent = &b->live[c->beam];
    if (is_eog(b, c->token)) {
      if (r < b->width &&
          !add_finished(b, parent->tokens, parent->n, c->token, c->cum))
        goto nomem;
      continue;
    }
    if (!hyp_set(&fresh[n_new], parent->tokens, parent->n, c->token))
      goto nomem;
    fresh[n_new].cum = c->cum;
    next[n_new] = (nc_beam_next){c->beam, c->token, c->cum};
    n_new++;
  }
  for (int32_t i = 0; i < b->n_live; i++)
    hyp_free(&b->live[i]);
  memcpy(b->live, fresh, sizeof fresh);
  b->n_live = n_new;
  b->cur_len++;
  *n_next = n_new;
  if (n_new == 0) {
    b->done = true;
  } else if (b->n_fin == b->width) {
    float worst = b->fin[b->width - 1].score;
    if (b->early_stopping || score_of(b, b->live[0].cum, b->cur_len) <= worst)
      b->done = true;
  }
  return NC_OK;
nomem:
  for (int32_t i = 0; i < b->width; i++)
    hyp_free(&fresh[i]);
  return nc_fail(err, NC_ERR_NOMEM, "beam step: out of memory");
}

static nc_code check_step(const nc_beam *b, int32_t *n_next, nc_error *err) {
  *n_next = 0;
  if (b->done)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "beam step: the search is already done");
  return NC_OK;
}

nc_code nc_beam_step(nc_beam *b, const float *const *rows, int32_t n_vocab,
                     nc_beam_next *next, int32_t *n_next, nc_error *err) {
  nc_code rc = check_step(b, n_next, err);
  if (rc) return rc;
  if (!rows || !next || n_vocab < 1)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "beam step: rows or next missing, or n_vocab = %d < 1",
                   n_vocab);
  int32_t k = 2 * b->width, n_best = 0;
  for (int32_t i = 0; i < b->n_live; i++) {
    const float *row = rows[i];
    if (!row)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "beam step: row %d NULL", i);
    float cum = b->live[i].cum;
    for (int32_t t = 0; t < n_vocab; t++) {
      float lp = row[t];
      if (isnan(lp) || lp > 1e-3f)
        return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                       "beam step: row %d token %d logprob %g: must be a "
                       "log-probability (<= 0) or -inf",
                       i, t, (double)lp);
      if (lp == -INFINITY) continue;
      if (n_best == k && !(cum + lp >= b->best[k - 1].cum)) continue;
      keep_best(b->best, &n_best, k, (cand){cum + lp, i, t});
    }
  }
  return advance(b, b->best, n_best, next, n_next, err);
}

nc_code nc_beam_step_candidates(nc_beam *b,
                                const nc_beam_candidate *const *cands,
                                const int32_t *n_cands, nc_beam_next *next,
                                int32_t *n_next, nc_error *err) {
  nc_code rc = check_step(b, n_next, err);
  if (rc) return rc;
  if (!cands || !n_cands || !next)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "beam step: candidates or next missing");
  int32_t k = 2 * b->width, n_best = 0;
  for (int32_t i = 0; i < b->n_live; i++) {
    if (n_cands[i] < 0 || (n_cands[i] > 0 && !cands[i]))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "beam step: beam %d has %d candidates, array %s", i,
                     n_cands[i], cands[i] ? "given" : "NULL");
    float cum = b->live[i].cum;
    for (int32_t j = 0; j < n_cands[i]; j++) {
      nc_beam_candidate c = cands[i][j];
      if (isnan(c.logprob) || c.logprob > 1e-3f || c.token < 0)
        return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                       "beam step: beam %d candidate %d (token %d, logprob "
                       "%g): needs a token id >= 0 and a logprob <= 0",
                       i, j, c.token, (double)c.logprob);
      if (c.logprob == -INFINITY) continue;
      keep_best(b->best, &n_best, k, (cand){cum + c.logprob, i, c.token});
    }
  }
  return advance(b, b->best, n_best, next, n_next, err);
}

void nc_beam_finish(nc_beam *b) {
  if (b->done) return;
  for (int32_t i = 0; i < b->n_live; i++)
    add_finished(b, b->live[i].tokens, b->live[i].n, -1, b->live[i].cum);
  b->done = true;
}

nc_code nc_beam_result(const nc_beam *b, int32_t rank, const int32_t **tokens,
                       int32_t *n_tokens, float *score, float *cum_logprob,
                       nc_error *err) {
  int32_t have = b->n_fin < b->n_return ? b->n_fin : b->n_return;
  if (rank < 0 || rank >= have)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "beam result %d: out of range [0, %d)", rank, have);
  const hyp *h = &b->fin[rank];
  if (tokens) *tokens = h->tokens;
  if (n_tokens) *n_tokens = h->n;
  if (score) *score = h->score;
  if (cum_logprob) *cum_logprob = h->cum;
  return NC_OK;
}

const int32_t *nc_beam_live_tokens(const nc_beam *b, int32_t i, int32_t *n) {
  if (i < 0 || i >= b->n_live) {
    *n = 0;
    return NULL;
  }
  *n = b->live[i].n;
  return b->live[i].tokens;
}
