/* step_trace: one line per engine step to a file, for finding where a
 * stream's time goes under load (issue 45's starvation bound). Off unless
 * the environment names a file when the engine is created:
 *
 *   NUCLEUS_STEP_TRACE=/tmp/steps.tsv nucleus serve ...
 *
 * Columns (tab-separated, a header line first): the step's start (ms on
 * CLOCK_MONOTONIC, the clock of Python's time.monotonic), its wall and CPU time
 * (ms, the forward call), the batch's rows, its decode rows (one token fed:
 * generated tokens and drafts) and prompt rows (chunks of more than one token),
 * the keys the prompt rows attend, the prompt tokens the step was allowed
 * beside decoding rows (scheduler.h's prefill_budget: 0 no bound, -1
 * none), the estimated time of the decode rows alone and of the whole step
 * (prefill_budget.h), the requests waiting and running. */
#ifndef NC_STEP_TRACE_H
#define NC_STEP_TRACE_H

#include <stdint.h>

typedef struct nc_step_trace nc_step_trace;

typedef struct nc_step_record {
  double t0_ms; /* the step's start (nc_step_trace_now) */
  double wall_ms, cpu_ms;
  int32_t rows, decode_rows, prompt_rows;
  double prompt_keys;
  int32_t budget;
  double decode_est_ms, step_est_ms;
  int32_t waiting, running;
} nc_step_record;

/* The trace NUCLEUS_STEP_TRACE names (the file is created or truncated),
 * or NULL: unset, empty or not writable (said once on stderr). */
nc_step_trace *nc_step_trace_from_env(void);
void nc_step_trace_close(nc_step_trace *t);
/* ms on the trace's clock (CLOCK_MONOTONIC); 0 for NULL. */
double nc_step_trace_now(const nc_step_trace *t);
void nc_step_trace_write(nc_step_trace *t, const nc_step_record *r);

#endif
