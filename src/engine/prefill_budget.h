/* prefill_budget: how many prompt tokens a step may carry beside sequences
 * that decode (scheduler.h's prefill_budget), from the engine's measured
 * step times, so that a stream waits at most about decode_stall decode
 * steps for other clients' prompts (--decode-stall).
 *
 * Two estimates, both learnt from the engine's own forward calls:
 * - a step of n decode rows alone: spec_policy.h's nc_spec_cost, timed on
 *   the steps that carry no prompt rows, by row count;
 * - the prompt rows of a step (nc_prompt_cost): what a step with prompt
 *   chunks took beyond its decode rows' estimate, fitted as a time per
 *   prompt token plus a time per key those tokens attend (a chunk deep in
 *   a long prompt costs more than one at its start), on every step with
 *   prompt rows (least squares, older steps fading).
 * A prompt row and a decode row cost quite differently (a decode row's
 * attention over its whole cache is one row's work, a prompt chunk's runs
 * as a matrix product), so neither is estimated from the other.
 *
 * Pure: no clock, no engine; test_prefill_budget drives it with made-up
 * times. */
#ifndef NC_PREFILL_BUDGET_H
#define NC_PREFILL_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "sampling/spec_policy.h"

/* The prompt rows' time: ms ~ per_token * tokens + per_key * keys, keys
 * being the positions the prompt rows attend (a chunk of n tokens from
 * position p: n p + n (n + 1) / 2). Weighted sums of the fit. */
typedef struct nc_prompt_cost {
  double tt, tk, kk; /* sums of tokens^2, tokens keys, keys^2 */
  double tm, km;     /* sums of tokens ms, keys ms */
  int32_t n;         /* steps seen */
} nc_prompt_cost;

/* The keys a chunk of n prompt tokens attends from position pos on. */
double nc_prompt_keys(int32_t pos, int32_t n);

/* A step's prompt rows (tokens, attending keys) took ms beyond its decode
 * rows (ms may come out below 0 on a noisy step: it counts as measured). */
void nc_prompt_cost_observe(nc_prompt_cost *c, int32_t tokens, double keys,
                            double ms);
/* The estimated time of prompt rows (tokens, keys); 0 until a step with
 * prompt rows is seen (or where the fit gives nothing positive). */
double nc_prompt_cost_ms(const nc_prompt_cost *c, int32_t tokens, double keys);

/* A step of n decode rows alone: the row count's own smoothed time, else
 * nc_spec_cost_ms's estimate, else the time of the nearest timed count
 * below n (one timed count: no line yet; fewer rows never cost more);
 * 0 when nothing below n is timed. */
double nc_decode_step_ms(const nc_spec_cost *c, int32_t n);

/* A timed decode row count goes stale after this many steps without a
 * decode-only step of it (its rows have moved deeper in their caches, the
 * machine's load has changed). */
#define NC_PREFILL_RETIME_STEPS 32

/* Whether a step of n decode rows should run without prompt rows so that
 * its time is measured: no row count in [n - n / 4, n] is timed (n up to
 * NC_SPEC_COST_ROWS), or, with timed_at (the step number each count was
 * last timed at, [NC_SPEC_COST_ROWS + 1]), none within the last
 * NC_PREFILL_RETIME_STEPS steps before step now. Such a step costs less
 * than any step with prompt chunks beside it (at most one in
 * NC_PREFILL_RETIME_STEPS while the count stays), and gives the bound its
 * base: while prompts are prefilled no step is decode rows alone. */
bool nc_decode_step_untimed(const nc_spec_cost *c, const int64_t *timed_at,
                            int64_t now, int32_t n);

/* nc_prefill_budget's answer for "no prompt tokens beside the decode rows
 * this step" (the scheduler takes any value below 0 so). */
#define NC_PREFILL_NONE (-1)

typedef struct nc_prefill_query {
  int32_t n_decoding;      /* rows that decode this step (one token each) */
  int32_t n_coming;        /* sequences that decode or will soon: those running
                              and waiting, at most the running cap */
  int32_t depth;           /* the position the step's prompt chunk starts at */
  int64_t pending;         /* prompt tokens to feed (running and waiting) */
  int32_t max_tokens;      /* the step's token budget (max_batch_tokens) */
  int32_t floor;           /* the least a bounded step carries: a KV block, an
                              image a running prompt still has to feed */
  double stall;            /* decode_stall: the bound, in decode steps */
  const int64_t *timed_at; /* nc_decode_step_untimed's, or NULL */
  int64_t now;             /* this step's number */
} nc_prefill_query;

/* The prompt tokens a step may carry beside q->n_decoding decode rows: 0
 * (no bound but max_tokens) with nothing decoding, a stall of 1000 or
 * more, or no more prompt tokens pending than the floor (they go in one
 * step anyway: no step is spent timing the decode rows); NC_PREFILL_NONE
 * while the decode rows' step is untimed (nc_decode_step_untimed); else
 * the most P in [floor, max_tokens) for which the decode rows' time t plus
 * P prompt tokens' from q->depth on is at most stall times T, T the time
 * of a step of max(n_decoding, n_coming) decode rows (0 when max_tokens
 * fits). While few sequences decode and many prompts wait, those streams
 * soon wait that long between tokens anyway: the prompts go in faster,
 * and the steps with prompt rows cost about the same from the first
 * stream to the last (a stream's longest wait against its typical one is
 * what the bound is for). Without a measured prompt step yet a prompt
 * token costs t / n_decoding (a decode row's share of the step, its fixed
 * part included: dearer than a prompt row). */
int32_t nc_prefill_budget(const nc_spec_cost *decode,
                          const nc_prompt_cost *prompt,
                          const nc_prefill_query *q);

#endif
