/* sampler_inspect: the recording hook of the sampling pipeline. When a row
 * asks for it (nc_sample_row.inspect), sampler_batch.c calls these as each
 * stage runs: a stage that edits logits hands over the logits it left, a
 * truncating stage hands over the set it kept, and the draw hands over u
 * and the token. Nothing is recomputed from the settings: the numbers are
 * those the pipeline produced. Rows without inspect never reach this file.
 * Internal to the sampler. */
#ifndef NC_SAMPLER_INSPECT_H
#define NC_SAMPLER_INSPECT_H

#include "sampler.h"
#include "sampler_math.h"

typedef struct nc_inspect_rec nc_inspect_rec;

/* The workspace's recorder for rows of up to n_vocab logits, allocated on
 * the first inspected row (NULL when out of memory: the row is then sampled
 * as usual and its record left empty). */
nc_inspect_rec *nc_inspect_rec_get(nc_inspect_rec **slot, int32_t n_vocab);
void nc_inspect_rec_free(nc_inspect_rec *rec);

/* Starts a row: out is cleared; raw are the model's logits (checked finite
 * or -inf by the pipeline before any candidate is chosen). */
void nc_inspect_begin(nc_inspect_rec *rec, nucleus_inspect *out, int32_t top_n,
                      const float *raw, int32_t V, uint64_t seed,
                      uint64_t stream, uint64_t step);
/* A logits stage (grammar, logit_bias, penalties) left x. */
void nc_inspect_logits(nc_inspect_rec *rec, nc_stage stage, const float *x);
/* Temperature: x are the processed logits (final from here on), m their
 * max, scale = 1/T; greedy rows pass argmax (else -1). Picks the top_n
 * candidates from the raw logits. */
void nc_inspect_temperature(nc_inspect_rec *rec, const float *x, float m,
                            float scale, int32_t argmax, int simd);
/* A truncating stage kept cand[0..n). */
void nc_inspect_set(nc_inspect_rec *rec, nc_stage stage, const nc_cand *cand,
                    size_t n);
/* Top-p when the pipeline skipped forming its set because min-p's (which
 * lies inside it) fell short of target: the set is formed here, by the same
 * selection, on a copy. */
void nc_inspect_top_p_full(nc_inspect_rec *rec, double target);
/* The draw: u and the token; mass is the final set's, w the weights of the
 * untruncated row (NULL when a set was kept). */
void nc_inspect_finish(nc_inspect_rec *rec, double u, int32_t token,
                       double mass, const float *w);

/* What the inverse CDF did, as sampler_batch.c's draw ran it: target =
 * u * mass, the drawn token's running sum before (lo) and after (hi) it,
 * and whether the walk ran out without passing target (clamped). */
typedef struct nc_draw_trace {
  double target, lo, hi;
  bool clamped;
} nc_draw_trace;

/* After nc_inspect_finish, the draw on the cumulative distribution. Greedy
 * rows: tr NULL. Otherwise the walk's order: the kept set cand[0..n) when
 * w is NULL, else every token by id with weights w[0..V) and the sums
 * block[] of its blocks of block_len (the draw adds a block's sum at once
 * where it skips it). The candidates' intervals are summed here in that
 * order, by the draw's own additions; the drawn one's come from tr. */
void nc_inspect_draw(nc_inspect_rec *rec, const nc_draw_trace *tr, double mass,
                     const nc_cand *cand, size_t n, const float *w,
                     const double *block, int32_t block_len);

#endif
