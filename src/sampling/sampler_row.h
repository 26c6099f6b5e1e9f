/* sampler_row: what one row's pass through the pipeline leaves behind
 * (the workspace and the row state), shared by the sampler's files.
 * Internal to the sampler. */
#ifndef NC_SAMPLER_ROW_H
#define NC_SAMPLER_ROW_H

#include "sampler_inspect.h"
#include "sampler_internal.h"
#include "sampler_math.h"

/* Elements per block sum in the no-truncation draw; equal to the chunk of
 * nc_row_exp so that its sums can be reused (a test checks the bits). */
#define NC_SAMPLE_BLOCK 1024

struct nc_sample_workspace {
  int32_t n_vocab;
  float *x;         /* processed logits */
  float *w;         /* weights when nothing truncates */
  double *block;    /* block sums of w */
  nc_cand *cand;    /* candidates */
  int32_t *top_ids; /* top-k heap */
  float *top_vals;
  int simd; /* NC_SIMD_* level of the row passes (the backend table's) */
  nc_inspect_rec *insp; /* made on the first inspected row */
};

typedef struct nc_row_state {
  const nc_sampler *s;
  const float *raw;
  int32_t V;
  bool greedy;
  int32_t argmax; /* greedy only */
  float m;        /* max of the processed logits */
  float scale;    /* 1 / T (1 for greedy) */
  bool full;      /* the final set is every token, weights in ws->w */
  size_t n;       /* otherwise the final set is ws->cand[0..n) */
  double mass;    /* sum of the final set's weights */
  float raw_max;  /* max of the raw logits, when raw_known */
  bool raw_known;
  bool pristine;       /* no edit: the processed logits are the raw ones */
  nc_inspect_rec *ins; /* this row's recorder, NULL when not inspected */
} nc_row_state;

/* Steps 1-8 of the pipeline for one row (sampler.h), nothing drawn: the
 * final distribution is left in ws and st (greedy: st->argmax; st->full:
 * the weights ws->w of every token; else ws->cand[0..st->n)), of total
 * weight st->mass. An inspected row begins its record here. */
nc_code nc_sample_process_row(nc_sample_workspace *ws, const nc_sample_row *row,
                              nc_row_state *st, nc_error *err);

/* The final distribution's largest probability (1 for greedy). */
float nc_row_top_prob(const nc_sample_workspace *ws, const nc_row_state *st);

/* Fills res->logprob and res->top as the sampler asks (res->token set). */
void nc_sample_logprobs(nc_sample_workspace *ws, const nc_row_state *st,
                        nc_sample_result *res);

#endif
