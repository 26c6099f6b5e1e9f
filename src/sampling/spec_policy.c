/* spec_policy: how many tokens a completion drafts (spec_policy.h). */
#include "spec_policy.h"

#include <math.h>

/* Each new time counts this much in its row count's estimate; a sample
 * beyond SPREAD times the estimate (either way) counts as that bound, once
 * the estimate has SETTLED samples behind it. */
#define COST_WEIGHT 0.2
#define COST_SPREAD 2.0
#define COST_SETTLED 3
/* A row count's weight in the fit grows with its samples up to this. */
#define FIT_WEIGHT_MAX 8

/* Older counts scaled away past NC_SPEC_MAX_TRIES tries. */
static void cap_tries(nc_spec_accept *s) {
  if (s->tried > NC_SPEC_MAX_TRIES) {
    s->kept *= NC_SPEC_MAX_TRIES / s->tried;
    s->tried = NC_SPEC_MAX_TRIES;
  }
}

void nc_spec_accept_init(nc_spec_accept *s) {
  s->tried = NC_SPEC_PRIOR_TRIES;
  s->kept = NC_SPEC_PRIOR_RATE * NC_SPEC_PRIOR_TRIES;
}

void nc_spec_accept_observe(nc_spec_accept *s, int32_t kept, int32_t drafted) {
  if (drafted <= 0 || kept < 0 || kept > drafted) return;
  s->kept = NC_SPEC_DECAY * s->kept + kept;
  s->tried = NC_SPEC_DECAY * s->tried + kept + (kept < drafted ? 1 : 0);
  cap_tries(s);
}

double nc_spec_accept_rate(const nc_spec_accept *s) {
  if (!(s->tried > 0)) return 0;
  double a = s->kept / s->tried;
  return a < 0 ? 0 : a > 1 ? 1 : a;
}

void nc_spec_accept_clear(nc_spec_accept *s) {
  s->kept = s->tried = 0;
}

double nc_spec_accept_rate_in(const nc_spec_accept *part,
                              const nc_spec_accept *whole) {
  const double a = nc_spec_accept_rate(whole);
  const double tried = part->tried > 0 ? part->tried : 0;
  const double kept = part->kept > 0 ? part->kept : 0;
  const double v =
      (kept + NC_SPEC_PRIOR_TRIES * a) / (tried + NC_SPEC_PRIOR_TRIES);
  return v < 0 ? 0 : v > 1 ? 1 : v;
}

void nc_spec_top_observe(nc_spec_accept *s, double p_top) {
  if (!(p_top > 0)) return;
  s->kept = NC_SPEC_TOP_DECAY * s->kept + (p_top < 1 ? p_top : 1);
  s->tried = NC_SPEC_TOP_DECAY * s->tried + 1;
}

double nc_spec_top_bound(const nc_spec_accept *s) {
  return s->tried > 0 ? nc_spec_accept_rate(s) : 1;
}

int32_t nc_spec_probe_interval(int32_t probes) {
  int32_t n = NC_SPEC_PROBE_EVERY;
  for (int32_t i = 0; i < probes && n < NC_SPEC_PROBE_MAX; i++)
    n *= 2;
  return n < NC_SPEC_PROBE_MAX ? n : NC_SPEC_PROBE_MAX;
}

int32_t nc_spec_length_cap(int32_t last_kept) {
  const int32_t grown = last_kept > INT32_MAX / 2 ? INT32_MAX : 2 * last_kept;
  return grown > NC_SPEC_GROW_FROM ? grown : NC_SPEC_GROW_FROM;
}

double nc_spec_expected_tokens(double a, int32_t k) {
  if (k <= 0) return 1;
  if (a >= 1) return k + 1;
  if (a <= 0) return 1;
  return (1 - pow(a, k + 1)) / (1 - a);
}

bool nc_spec_pays(double a, double c_k, int32_t k) {
  return k > 0 && c_k > 0 &&
         nc_spec_expected_tokens(a, k) / c_k > 1 + NC_SPEC_MARGIN;
}

int32_t nc_spec_best_length(double a, const double *cost, int32_t k_max) {
  int32_t best = 0;
  double best_v = 1 + NC_SPEC_MARGIN;
  for (int32_t k = 1; k <= k_max; k++) {
    if (!(cost[k] > 0)) continue;
    double v = nc_spec_expected_tokens(a, k) / cost[k];
    if (v > best_v) {
      best_v = v;
      best = k;
    }
  }
  return best;
}

void nc_spec_linear_costs(double beta, int32_t k_max, double *cost) {
  for (int32_t k = 0; k <= k_max; k++)
    cost[k] = 1 + beta * k;
}

void nc_spec_cost_observe(nc_spec_cost *c, int32_t rows, double ms) {
  if (rows < 1 || rows > NC_SPEC_COST_ROWS || !(ms > 0) || !isfinite(ms))
    return;
  double *est = &c->ms[rows];
  if (c->n[rows] == 0) {
    *est = ms;
  } else {
    if (c->n[rows] >= COST_SETTLED) {
      if (ms > *est * COST_SPREAD) ms = *est * COST_SPREAD;
      if (ms < *est / COST_SPREAD) ms = *est / COST_SPREAD;
    }
    *est += COST_WEIGHT * (ms - *est);
  }
  if (c->n[rows] < INT32_MAX) c->n[rows]++;
}

/* The line through the timed counts (weighted least squares of ms
 * against rows); false with fewer than two counts. */
static bool fit_line(const nc_spec_cost *c, double *t0, double *slope) {
  double w = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int32_t r = 1; r <= NC_SPEC_COST_ROWS; r++) {
    if (c->n[r] == 0) continue;
    double wr = c->n[r] < FIT_WEIGHT_MAX ? c->n[r] : FIT_WEIGHT_MAX;
    w += wr;
    sx += wr * r;
    sy += wr * c->ms[r];
    sxx += wr * r * r;
    sxy += wr * r * c->ms[r];
  }
  double den = w * sxx - sx * sx;
  if (w <= 0 || den <= 1e-12 * w * w) return false;
  *slope = (w * sxy - sx * sy) / den;
  *t0 = (sy - *slope * sx) / w;
  return true;
}

double nc_spec_cost_ms(const nc_spec_cost *c, int32_t rows) {
  double t0, m;
  if (rows < 1 || !fit_line(c, &t0, &m)) return 0;
  if (m < 0) m = 0;
  if (rows <= NC_SPEC_COST_ROWS && c->n[rows] > 0) return c->ms[rows];
  int32_t lo = 0, hi = 0;
  for (int32_t r = rows - 1; r >= 1 && !lo; r--)
    if (r <= NC_SPEC_COST_ROWS && c->n[r] > 0) lo = r;
  for (int32_t r = rows + 1; r <= NC_SPEC_COST_ROWS && !hi; r++)
    if (c->n[r] > 0) hi = r;
  if (lo && hi) {
    /* the straight line to hi, or lower where the slope below lo says so:
     * a kernel may step up at some count past lo, so the counts before it
     * must look no dearer than they may be, or they are never tried */
    double v = c->ms[lo] + (c->ms[hi] - c->ms[lo]) * (rows - lo) / (hi - lo);
    double local = m;
    for (int32_t r = lo - 1; r >= 1; r--)
      if (c->n[r] > 0) {
        local = (c->ms[lo] - c->ms[r]) / (lo - r);
        break;
      }
    double ext = c->ms[lo] + (local > 0 ? local : 0) * (rows - lo);
    return ext < v ? ext : v;
  }
  if (lo) return c->ms[lo] + m * (rows - lo);
  /* below every timed count: in proportion to the rows, the least it may
   * cost where every row costs alike. The line through the counts above
   * would credit fewer rows with those counts' fixed part (another
   * kernel's, past a step up in the times: the default model's 5 and 9
   * rows put one row at about 26 ms where it took 10.5), and rows past
   * the base would look nearly free; this estimate errs the other way, so
   * a step that finds its base count untimed drafts little or nothing
   * and, plain, times it. */
  return c->ms[hi] * rows / hi;
}

double nc_spec_row_ms(const nc_spec_cost *c, int32_t base_rows) {
  if (base_rows < 1) base_rows = 1;
  const double tb = nc_spec_cost_ms(c, base_rows);
  return tb > 0 ? tb / base_rows : 0;
}

void nc_spec_drafter_observe(nc_spec_drafter_cost *d, double ms,
                             int32_t drafts) {
  if (drafts <= 0 || !(ms >= 0) || !isfinite(ms)) return;
  double per = ms / drafts;
  if (d->n == 0) {
    d->ms = per;
  } else {
    if (d->n >= COST_SETTLED && d->ms > 0) {
      if (per > d->ms * COST_SPREAD) per = d->ms * COST_SPREAD;
      if (per < d->ms / COST_SPREAD) per = d->ms / COST_SPREAD;
    }
    d->ms += COST_WEIGHT * (per - d->ms);
  }
  if (d->n < INT32_MAX) d->n++;
}

void nc_spec_add_drafter_costs(double per_draft, int32_t k_max, double *cost) {
  if (!(per_draft > 0) || !isfinite(per_draft)) return;
  for (int32_t k = 1; k <= k_max; k++)
    cost[k] += per_draft * k;
}

void nc_spec_measured_costs(const nc_spec_cost *c, int32_t base_rows,
                            int32_t k_max, double *cost) {
  if (base_rows < 1) base_rows = 1;
  const double tb = nc_spec_cost_ms(c, base_rows);
  if (!(tb > 0)) {
    nc_spec_linear_costs(NC_SPEC_PRIOR_BETA, k_max, cost);
    return;
  }
  const double per_row = tb / base_rows;
  cost[0] = 1;
  for (int32_t k = 1; k <= k_max; k++) {
    double v = 1 + (nc_spec_cost_ms(c, base_rows + k) - tb) / per_row;
    if (v < cost[k - 1]) v = cost[k - 1]; /* more rows never cost less */
    if (v > 1 + NC_SPEC_MAX_BETA * k) v = 1 + NC_SPEC_MAX_BETA * k;
    cost[k] = v;
  }
}
