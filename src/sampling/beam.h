/* beam: beam search bookkeeping, without a model.
 *
 * The engine runs the model on the live beams, hands their log-softmax rows
 * (or each beam's best candidates) to nc_beam_step, and gets back the next
 * live beams as (parent, token, cumulative logprob): it forks the parent's
 * KV sequence for each (copy-on-write) and frees parents nobody chose.
 *
 * Rules (as HF transformers, except where noted):
 *   - the 2*width best (cum logprob, then beam, then token) candidates of a
 *     step are visited in order; a candidate ending in an eog id becomes a
 *     finished hypothesis when it ranks within the first width of them; any
 *     other candidate becomes a live beam until width beams are live;
 *   - score = cum logprob / length^length_penalty, where length counts the
 *     generated tokens including the final eog token (HF excludes the eog,
 *     vLLM counts the prompt too); the best width finished hypotheses are
 *     kept;
 *   - early_stopping: done once width hypotheses have finished. Otherwise
 *     done when width have finished and the best live beam's score at its
 *     current length cannot beat the worst kept one (HF's heuristic);
 *   - done as well when no live beam is left, or when the engine calls
 *     nc_beam_finish (max_tokens, context full): the live beams then join
 *     the finished set as they are.
 */
#ifndef NC_BEAM_H
#define NC_BEAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

#define NC_BEAM_MAX_WIDTH 64

typedef struct nc_beam nc_beam;

typedef struct nc_beam_params {
  int32_t width;        /* 1..NC_BEAM_MAX_WIDTH */
  int32_t n_return;     /* best hypotheses to return, 1..width */
  float length_penalty; /* finite */
  bool early_stopping;
  const int32_t *eog; /* end-of-generation ids (copied) */
  int32_t n_eog;
} nc_beam_params;

typedef struct nc_beam_next {
  int32_t parent; /* index of the live beam it extends (previous step) */
  int32_t token;
  float cum_logprob;
} nc_beam_next;

typedef struct nc_beam_candidate {
  int32_t token;
  float logprob;
} nc_beam_candidate;

/* Starts with one live beam (the prompt), cum logprob 0. */
nc_code nc_beam_create(const nc_beam_params *p, nc_beam **out, nc_error *err);
void nc_beam_free(nc_beam *b);

int32_t nc_beam_n_live(const nc_beam *b);
int32_t nc_beam_n_finished(const nc_beam *b);
bool nc_beam_done(const nc_beam *b);

/* One step from full rows: rows[i] is live beam i's log-softmax over
 * n_vocab tokens (-inf allowed for masked tokens; NaN is an error). Writes
 * the next live beams to next (room for width) and their count to *n_next;
 * finished hypotheses are recorded inside. */
nc_code nc_beam_step(nc_beam *b, const float *const *rows, int32_t n_vocab,
                     nc_beam_next *next, int32_t *n_next, nc_error *err);

/* The same from each live beam's best candidates: cands[i] holds n_cands[i]
 * (token, logprob) pairs of beam i, any order; give at least 2*width per
 * beam (or all its possible tokens) for the result to equal nc_beam_step. */
nc_code nc_beam_step_candidates(nc_beam *b,
                                const nc_beam_candidate *const *cands,
                                const int32_t *n_cands, nc_beam_next *next,
                                int32_t *n_next, nc_error *err);

/* Ends the search: the live beams join the finished set as they are. */
void nc_beam_finish(nc_beam *b);

/* The rank-th best finished hypothesis (0 = best), rank < n_return and
 * < nc_beam_n_finished. *tokens stays valid until the next call on b. */
nc_code nc_beam_result(const nc_beam *b, int32_t rank, const int32_t **tokens,
                       int32_t *n_tokens, float *score, float *cum_logprob,
                       nc_error *err);

/* The current tokens of live beam i (generated tokens only). */
const int32_t *nc_beam_live_tokens(const nc_beam *b, int32_t i, int32_t *n);

#endif
