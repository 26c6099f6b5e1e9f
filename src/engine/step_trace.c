/* step_trace: a line per engine step (step_trace.h). */
#include "step_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct nc_step_trace {
  FILE *f;
};

static double mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

nc_step_trace *nc_step_trace_from_env(void) {
  const char *path = getenv("NUCLEUS_STEP_TRACE");
  if (!path || !*path) return NULL;
  nc_step_trace *t = malloc(sizeof *t);
  if (!t) return NULL;
  t->f = fopen(path, "w");
  if (!t->f) {
    fprintf(stderr, "nucleus: NUCLEUS_STEP_TRACE: cannot write %s\n", path);
    free(t);
    return NULL;
  }
  fprintf(t->f, "t_ms\twall_ms\tcpu_ms\trows\tdecode_rows\tprompt_rows\t"
                "prompt_keys\tbudget\tdecode_est_ms\tstep_est_ms\twaiting\t"
                "running\n");
  fflush(t->f);
  return t;
}

void nc_step_trace_close(nc_step_trace *t) {
  if (!t) return;
  fclose(t->f);
  free(t);
}

double nc_step_trace_now(const nc_step_trace *t) {
  return t ? mono_ms() : 0;
}

void nc_step_trace_write(nc_step_trace *t, const nc_step_record *r) {
  if (!t) return;
  fprintf(t->f, "%.3f\t%.3f\t%.3f\t%d\t%d\t%d\t%.0f\t%d\t%.3f\t%.3f\t%d\t%d\n",
          r->t0_ms, r->wall_ms, r->cpu_ms, r->rows, r->decode_rows,
          r->prompt_rows, r->prompt_keys, r->budget, r->decode_est_ms,
          r->step_est_ms, r->waiting, r->running);
  fflush(t->f);
}
