/* spec_mtp: speculative decoding's MTP drafter (docs/SPECULATIVE.md).
 *
 * A model loaded with its MTP head (nucleus_model_params.mtp;
 * arch_qwen35_mtp.c) drafts for itself: every forward of the model writes
 * the head's K/V beside its own and keeps, in each sequence's state, the
 * final normed hidden state of its last position. A completion whose
 * token x at position p is about to be fed drafts by running the head on
 * (x, that state) at p, sampling its first draft from the head's
 * distribution q (a copy of the completion's sampler on another stream,
 * as the draft model's: spec_draft.c), then on (draft, the head's own
 * hidden state) at p + 1, and so on (nc_context_mtp). The rows of every
 * drafting completion share each forward call, one per draft position.
 * The drafts' K/V are written past the sequence's length: the step's
 * forward writes the model's own there, and the verifier (spec_verify.h,
 * with q) keeps the model's distribution whatever the head proposes. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

struct nc_spec_mtp {
  nc_batch batch;
  int32_t max_rows; /* completions per forward call */
  float *h;         /* [max_rows, n_embd]: each job's hidden state */
  float *h_rows;    /* [max_rows, n_embd]: the batch rows' */
  float *logits;    /* [max_rows, n_vocab] */
  int32_t *row_job; /* [max_rows] */
  nc_sampler **smp; /* [max_rows]: each job's sampler copy */
  int32_t *k;       /* [max_rows]: drafts sampled */
  bool *live;       /* [max_rows] */
  int32_t *ids;     /* [n_vocab] */
  double *probs;    /* [n_vocab] */
};

nc_code nc_spec_mtp_create(nucleus_engine *e, nc_spec_mtp **out,
                           nc_error *err) {
  *out = NULL;
  const nc_hparams *hp = nc_model_hparams(e->model);
  if (!hp->mtp) return NC_OK;
  nc_spec_mtp *m = calloc(1, sizeof *m);
  if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory (MTP drafter)");
  const nucleus_engine_params *p = &e->params;
  m->max_rows = p->max_running < p->max_batch_tokens ? p->max_running
                                                     : p->max_batch_tokens;
  const size_t R = (size_t)m->max_rows, E = (size_t)hp->n_embd,
               V = (size_t)e->n_vocab;
  nc_code rc = nc_batch_init(&m->batch, m->max_rows, err);
  if (rc == NC_OK) {
    m->h = malloc(R * E * sizeof *m->h);
    m->h_rows = malloc(R * E * sizeof *m->h_rows);
    m->logits = malloc(R * V * sizeof *m->logits);
    m->row_job = malloc(R * sizeof *m->row_job);
    m->smp = calloc(R, sizeof *m->smp);
    m->k = malloc(R * sizeof *m->k);
    m->live = malloc(R * sizeof *m->live);
    m->ids = malloc(V * sizeof *m->ids);
    m->probs = malloc(V * sizeof *m->probs);
    if (!m->h || !m->h_rows || !m->logits || !m->row_job || !m->smp || !m->k ||
        !m->live || !m->ids || !m->probs)
      rc = nc_fail(err, NC_ERR_NOMEM, "out of memory (MTP drafter)");
  }
  if (rc != NC_OK) {
    nc_spec_mtp_free(m);
    return rc;
  }
  *out = m;
  return NC_OK;
}

void nc_spec_mtp_free(nc_spec_mtp *m) {
  if (!m) return;
  nc_batch_free(&m->batch);
  free(m->h);
  free(m->h_rows);
  free(m->logits);
  free(m->row_job);
  free(m->smp);
  free(m->k);
  free(m->live);
  free(m->ids);
  free(m->probs);
  free(m);
}

/* Job i's next draft from its q (a logits row of the head): a draw from
 * q, or under the strict rule its mode (nc_spec_draft_token). */
static void sample_next(nucleus_engine *e, nc_spec_mtp *m, completion *c,
                        int32_t i, const float *logits) {
  const nc_sample_row row = {.sampler = m->smp[i], .logits = logits};
  const int32_t tok = nc_spec_draft_token(
      e->ws, &row, nc_spec_rule_of(c->owner), m->ids, m->probs,
      c->spec.q + (size_t)m->k[i] * (size_t)e->n_vocab);
  m->live[i] = false;
  if (tok < 0) return;
  c->spec.draft[m->k[i]++] = tok;
  nc_sampler_accept(m->smp[i], tok);
  m->live[i] = m->k[i] < c->spec.draft_room;
}

/* Job i's start: its q rows, its sampler copy, the blocks its drafts
 * write and the hidden state of the position before its token. */
static bool start_job(nucleus_engine *e, nc_spec_mtp *m, completion *c,
                      int32_t i) {
  const int64_t E = nc_model_hparams(e->model)->n_embd;
  const int32_t kv_len = c->n_tokens - 1;
  m->k[i] = 0;
  m->smp[i] = NULL;
  const float *st = nc_kv_seq_state(e->kv, c->kv_seq);
  if (!nc_spec_q_reserve(e, c, c->spec.draft_room) || !st ||
      nc_kv_seq_len(e->kv, c->kv_seq) != kv_len ||
      nc_kv_seq_reserve(e->kv, c->kv_seq, kv_len + c->spec.draft_room, NULL) !=
          NC_OK ||
      nc_sampler_clone(c->sampler, nc_sampler_stream(c->sampler) | 1ull << 32,
                       &m->smp[i], NULL) != NC_OK)
    return false;
  memcpy(m->h + i * E, st + nc_kv_state_floats(e->kv) - E,
         sizeof(float) * (size_t)E);
  return true;
}

/* Drafts for n <= max_rows completions. */
static void draft_some(nucleus_engine *e, nc_spec_mtp *m, completion *const *cs,
                       int32_t n) {
  const int64_t E = nc_model_hparams(e->model)->n_embd;
  for (int32_t i = 0; i < n; i++)
    m->live[i] = start_job(e, m, cs[i], i);
  for (int32_t depth = 0;; depth++) {
    nc_batch_clear(&m->batch);
    int32_t rows = 0;
    for (int32_t i = 0; i < n; i++) {
      if (!m->live[i]) continue;
      const completion *c = cs[i];
      const int32_t tok =
          depth == 0 ? c->tokens[c->n_tokens - 1] : c->spec.draft[depth - 1];
      nc_batch_add_reusable(&m->batch, tok, c->n_tokens - 1 + depth, c->kv_seq,
                            true);
      memcpy(m->h_rows + rows * E, m->h + i * E, sizeof(float) * (size_t)E);
      m->row_job[rows++] = i;
    }
    if (rows == 0) break;
    e->stats.spec_draft_forwards_total++;
    if (nc_context_mtp(e->ctx, &m->batch, m->h_rows, m->h_rows, m->logits,
                       NULL) != NC_OK)
      break;
    for (int32_t r = 0; r < rows; r++) {
      const int32_t i = m->row_job[r];
      memcpy(m->h + i * E, m->h_rows + r * E, sizeof(float) * (size_t)E);
      sample_next(e, m, cs[i], i, m->logits + (size_t)r * (size_t)e->n_vocab);
    }
  }
  for (int32_t i = 0; i < n; i++) {
    nc_spec_state *sp = &cs[i]->spec;
    const int32_t min = cs[i]->owner->req->params.speculative.draft_min;
    sp->n_draft = m->k[i] >= min ? m->k[i] : 0;
    sp->draft_room = 0;
    nc_sampler_free(m->smp[i]);
    m->smp[i] = NULL;
  }
}

void nc_spec_mtp_batch(nucleus_engine *e, completion *const *cs, int32_t n) {
  nc_spec_mtp *m = e->mtp;
  const double t0 = nc_engine_cpu_ms();
  for (int32_t i = 0; i < n; i++)
    cs[i]->spec.n_draft = 0;
  for (int32_t at = 0; m && at < n; at += m->max_rows)
    draft_some(e, m, cs + at, n - at < m->max_rows ? n - at : m->max_rows);
  int32_t drafted = 0;
  for (int32_t i = 0; i < n; i++) {
    cs[i]->spec.draft_room = 0;
    drafted += cs[i]->spec.n_draft;
  }
  nc_spec_drafter_observe(&e->mtp_cost, nc_engine_cpu_ms() - t0, drafted);
}
