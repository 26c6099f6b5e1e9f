/* spec_policy: how many tokens a completion drafts (speculative decoding,
 * docs/SPECULATIVE.md "How long a draft is").
 *
 * Drafts of k tokens, each kept with probability a (the first rejection
 * ends the run), give E(k) = (1 - a^(k+1)) / (1 - a) tokens per verifying
 * step: the kept run and the model's token after it. The step costs c(k)
 * plain decode steps: k rows more, each a small part of a step where
 * decode is memory-bound, a large one where it is compute-bound, and not
 * always in proportion (a kernel may change at some row count). The policy
 * drafts the k in [1, k_max] with the most tokens per cost, and nothing
 * unless that beats a plain step (one token per step) by NC_SPEC_MARGIN.
 *
 * a is estimated per completion (nc_spec_accept): discounted, capped counts
 * of the drafts kept and tried, the first rejection of a step being its
 * last try.
 * c is measured per engine (nc_spec_cost): the forward calls' times by
 * their row count; a count not timed yet is estimated from the timed ones
 * around it (nc_spec_cost_ms). A drafter that runs a model adds its own
 * time per draft: k drafts cost k of those more. An MTP head's is its
 * smoothed time per draft (nc_spec_drafter_cost); a draft model's its
 * forward call's time per row, the calls timed by row count as c is (an
 * nc_spec_cost: spec_draft.c), so that a draft sequence's catch-up (its
 * prompt, the tokens of the steps that drafted nothing) is not charged to
 * the next drafts.
 * Nothing here changes a sampled token: it only decides how many rows a
 * step feeds. */
#ifndef NC_SPEC_POLICY_H
#define NC_SPEC_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* How much drafting must beat a plain step (tokens per cost) to draft. */
#define NC_SPEC_MARGIN 0.05
/* The discount of earlier observations at each new step (about the last
 * three steps count), and the most tries the counts hold (older ones are
 * scaled away): a long run of kept drafts must not outweigh the misses
 * after it for long. */
#define NC_SPEC_DECAY 0.7
#define NC_SPEC_MAX_TRIES 8.0
/* The discount of the model's top probabilities (nc_spec_top_observe):
 * about the last ten tokens count, one token's draw being a noisy hint. */
#define NC_SPEC_TOP_DECAY 0.9
/* Before any draft: an acceptance of 0.8 worth two tries, and (until two
 * row counts are timed) a row costing 0.2 of a decode step. */
#define NC_SPEC_PRIOR_RATE 0.8
#define NC_SPEC_PRIOR_TRIES 2.0
#define NC_SPEC_PRIOR_BETA 0.2
/* A row costs at most this many decode steps in the estimates. */
#define NC_SPEC_MAX_BETA 4.0
/* Drafts of up to this many tokens at any step; longer ones only up to
 * twice what the last verifying step kept (nc_spec_length_cap). */
#define NC_SPEC_GROW_FROM 8
/* Plain steps between a model drafter's tries (nc_spec_probe_interval). */
#define NC_SPEC_PROBE_EVERY 8
#define NC_SPEC_PROBE_MAX 64

typedef struct nc_spec_accept {
  double kept, tried; /* discounted counts */
} nc_spec_accept;

/* The prior. */
void nc_spec_accept_init(nc_spec_accept *s);
/* A verifying step kept `kept` of `drafted` drafts (kept < drafted: the
 * next one was rejected, one more try). */
void nc_spec_accept_observe(nc_spec_accept *s, int32_t kept, int32_t drafted);
/* The estimated chance that a draft is kept, in [0, 1]. */
double nc_spec_accept_rate(const nc_spec_accept *s);
/* A drafter whose drafts are not free to look at (a draft model, an MTP
 * head; a beam's), when no draft length pays, still tries one draft now
 * and then to learn its acceptance again: after this many plain steps,
 * NC_SPEC_PROBE_EVERY doubled for each of the last `probes` tries in a row
 * after which no length paid still, up to NC_SPEC_PROBE_MAX (a draft
 * model's try costs its catch-up over the steps since the last: where
 * drafts seldom pay, as at a high temperature, tries must be rare to cost
 * next to nothing). */
int32_t nc_spec_probe_interval(int32_t probes);

/* A part of a completion's drafts (the n-gram drafter's match classes,
 * spec_ngram.h) keeps its own discounted counts, starting from none, and
 * is read through the completion's whole estimate: (kept + W a) /
 * (tried + W), with a the whole's rate and W = NC_SPEC_PRIOR_TRIES, so
 * that a part seen seldom follows the rest of the completion (a new class
 * after a run of kept drafts drafts long at once) and one seen often its
 * own record. */
void nc_spec_accept_clear(nc_spec_accept *s);
double nc_spec_accept_rate_in(const nc_spec_accept *part,
                              const nc_spec_accept *whole);

/* The model's top probability at each emitted token, discounted by
 * NC_SPEC_TOP_DECAY at each (kept: the probabilities, tried: the tokens;
 * cleared to start): a draft verified as a point mass or strictly (the model's
 * own draw, kept when equal) is kept with probability p(x) <= max p, so their
 * recent mean bounds any drafter's acceptance there. A flat distribution
 * (a high temperature) keeps a drafter that costs a model's forward calls
 * from trying at all. p_top <= 0: not known, nothing learnt. */
void nc_spec_top_observe(nc_spec_accept *s, double p_top);
/* That bound, in [0, 1]; 1 before any token. */
double nc_spec_top_bound(const nc_spec_accept *s);

/* The longest draft worth weighing after a verifying step that kept
 * `last_kept` drafts (before any: 0): max(NC_SPEC_GROW_FROM, 2 last_kept).
 * The estimate a is per token, as if each draft were kept independently,
 * but drafts are kept in runs (a quote, a copied line, a loop) that end
 * all at once: a few steps of kept drafts put a near 1, and at the run's
 * end the longest drafts are the ones wasted. Drafts longer than the
 * default therefore grow with the runs seen, doubling while every draft
 * is kept (8, 16, 32, 64 in a loop), so a run's end wastes at most about
 * as many rows as the run before it kept. */
int32_t nc_spec_length_cap(int32_t last_kept);

/* E(k) above for a in [0, 1]. */
double nc_spec_expected_tokens(double a, int32_t k);
/* E(k) / c_k against a plain step (1): above 1 + NC_SPEC_MARGIN pays. */
bool nc_spec_pays(double a, double c_k, int32_t k);
/* The draft length in [1, k_max] with the most tokens per cost, cost[k]
 * being c(k) (cost[0] = 1; the shortest of equals), or 0 when none pays. */
int32_t nc_spec_best_length(double a, const double *cost, int32_t k_max);
/* cost[k] = 1 + beta k for k in [0, k_max]: a fixed row cost. */
void nc_spec_linear_costs(double beta, int32_t k_max, double *cost);

/* Row counts timed (steps with more rows are not recorded). */
enum { NC_SPEC_COST_ROWS = 64 };

typedef struct nc_spec_cost {
  double ms[NC_SPEC_COST_ROWS + 1]; /* by rows: a smoothed time */
  int32_t n[NC_SPEC_COST_ROWS + 1]; /* by rows: the steps seen */
} nc_spec_cost;

/* One forward call of `rows` decode rows took ms milliseconds. A sample
 * far off the bucket's estimate (a step preempted by another process)
 * moves it by a bounded amount. */
void nc_spec_cost_observe(nc_spec_cost *c, int32_t rows, double ms);
/* The estimated time of a step of `rows` rows (>= 1): its own smoothed
 * time; else between the nearest timed counts lo and hi around it, the
 * straight line from lo to hi or, where lower, the slope of the timed
 * counts below lo carried on from lo (so that counts before a step up in
 * the times get tried); past the last timed count on the line fitted
 * through every timed count (its slope at least 0); below the first, in
 * proportion to the rows (never more: a line from the counts above would
 * make the rows past a count below look free); 0 until two row counts are
 * timed. */
double nc_spec_cost_ms(const nc_spec_cost *c, int32_t rows);
/* cost[k] for k in [0, k_max] in a step that feeds base_rows rows before
 * drafts (>= 1): 1 + (t(base + k) - t(base)) / (t(base) / base), the k
 * rows against the cost per row of the rows already there (a big batch
 * drafts little where rows cost alike); 1 + NC_SPEC_PRIOR_BETA k until two
 * row counts are timed; per row at most NC_SPEC_MAX_BETA. */
void nc_spec_measured_costs(const nc_spec_cost *c, int32_t base_rows,
                            int32_t k_max, double *cost);
/* What one row of a step that feeds base_rows decode rows costs (ms), as
 * nc_spec_measured_costs counts it; 0 until two row counts are timed. */
double nc_spec_row_ms(const nc_spec_cost *c, int32_t base_rows);

/* A drafter's own time per draft (a draft model's or MTP head's forward
 * calls, its sampling): a smoothed estimate, as nc_spec_cost's. */
typedef struct nc_spec_drafter_cost {
  double ms; /* per draft */
  int32_t n; /* observations */
} nc_spec_drafter_cost;

/* Drafting `drafts` tokens took ms (drafts <= 0: nothing learnt). */
void nc_spec_drafter_observe(nc_spec_drafter_cost *d, double ms,
                             int32_t drafts);
/* cost[k] += k * per_draft (a drafter's time per draft, in rows of the
 * step: nc_spec_drafter_cost's ms over nc_spec_row_ms), k in [1, k_max];
 * nothing for per_draft <= 0. */
void nc_spec_add_drafter_costs(double per_draft, int32_t k_max, double *cost);

#endif
