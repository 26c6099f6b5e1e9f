/* prefill_budget: prompt tokens beside decode rows (prefill_budget.h). */
#include "prefill_budget.h"

#include <math.h>

/* Each step's weight in the prompt fit fades by this much a step with
 * prompt rows (about the last 20 count). */
#define PROMPT_DECAY 0.95
/* decode_stall at or above this: no bound (the option's largest value). */
#define STALL_OFF 1000.0

double nc_prompt_keys(int32_t pos, int32_t n) {
  if (n <= 0) return 0;
  return (double)n * pos + (double)n * (n + 1) / 2;
}

void nc_prompt_cost_observe(nc_prompt_cost *c, int32_t tokens, double keys,
                            double ms) {
  if (tokens < 1 || !(keys >= 0) || !isfinite(keys) || !isfinite(ms)) return;
  const double t = tokens;
  c->tt = PROMPT_DECAY * c->tt + t * t;
  c->tk = PROMPT_DECAY * c->tk + t * keys;
  c->kk = PROMPT_DECAY * c->kk + keys * keys;
  c->tm = PROMPT_DECAY * c->tm + t * ms;
  c->km = PROMPT_DECAY * c->km + keys * ms;
  if (c->n < INT32_MAX) c->n++;
}

/* The fit's two rates, each at least 0: both where the steps tell them
 * apart and both come out positive, else one of them alone. */
static void prompt_rates(const nc_prompt_cost *c, double *per_token,
                         double *per_key) {
  *per_token = *per_key = 0;
  if (c->n == 0 || !(c->tt > 0)) return;
  const double det = c->tt * c->kk - c->tk * c->tk;
  if (det > 1e-9 * c->tt * c->kk) {
    const double a = (c->tm * c->kk - c->km * c->tk) / det;
    const double b = (c->km * c->tt - c->tm * c->tk) / det;
    if (a >= 0 && b >= 0) {
      *per_token = a;
      *per_key = b;
      return;
    }
    if (b < 0 && c->tm > 0) { /* keys add nothing measurable */
      *per_token = c->tm / c->tt;
      return;
    }
    if (a < 0 && c->km > 0 && c->kk > 0) { /* all in the keys */
      *per_key = c->km / c->kk;
      return;
    }
  }
  if (c->tm > 0) *per_token = c->tm / c->tt;
}

double nc_prompt_cost_ms(const nc_prompt_cost *c, int32_t tokens, double keys) {
  if (tokens < 1) return 0;
  double a, b;
  prompt_rates(c, &a, &b);
  const double v = a * tokens + b * (keys > 0 ? keys : 0);
  return v > 0 ? v : 0;
}

double nc_decode_step_ms(const nc_spec_cost *c, int32_t n) {
  if (n < 1) return 0;
  if (n <= NC_SPEC_COST_ROWS && c->n[n] > 0) return c->ms[n];
  const double v = nc_spec_cost_ms(c, n);
  if (v > 0) return v;
  for (int32_t r = (n <= NC_SPEC_COST_ROWS ? n : NC_SPEC_COST_ROWS); r >= 1;
       r--)
    if (c->n[r] > 0) return c->ms[r];
  return 0;
}

bool nc_decode_step_untimed(const nc_spec_cost *c, const int64_t *timed_at,
                            int64_t now, int32_t n) {
  if (n < 1 || n > NC_SPEC_COST_ROWS) return false;
  for (int32_t r = n - n / 4; r <= n; r++)
    if (c->n[r] > 0 &&
        (!timed_at || now - timed_at[r] <= NC_PREFILL_RETIME_STEPS))
      return false;
  return true;
}

int32_t nc_prefill_budget(const nc_spec_cost *decode,
                          const nc_prompt_cost *prompt,
                          const nc_prefill_query *q) {
  if (q->n_decoding <= 0 || q->max_tokens <= 0 || !(q->stall > 0) ||
      q->stall >= STALL_OFF || q->pending <= q->floor)
    return 0;
  if (nc_decode_step_untimed(decode, q->timed_at, q->now, q->n_decoding))
    return NC_PREFILL_NONE;
  const double alone = nc_decode_step_ms(decode, q->n_decoding);
  if (!(alone > 0)) return NC_PREFILL_NONE; /* (not reached: timed above) */
  double base = q->n_coming > q->n_decoding
                    ? nc_decode_step_ms(decode, q->n_coming)
                    : alone;
  if (base < alone) base = alone;
  const double room = base * q->stall - alone;
  const bool measured = prompt->n > 0 && nc_prompt_cost_ms(prompt, 1, 1) > 0;
  /* the most P in [0, max_tokens] whose prompt rows fit in room */
  int32_t lo = 0, hi = q->max_tokens;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    const double cost =
        measured ? nc_prompt_cost_ms(prompt, mid, nc_prompt_keys(q->depth, mid))
                 : alone * mid / q->n_decoding;
    if (cost <= room)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo < q->floor) lo = q->floor;
  return lo < q->max_tokens ? lo : 0;
}
