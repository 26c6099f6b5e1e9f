/* threadpool: a persistent pool of worker threads for data-parallel loops.
 *
 * nc_threadpool_run(tp, fn, arg) calls fn(arg, ith, nth) once for every
 * ith in [0, nth) (the caller runs ith = 0) and returns when all are done.
 * Workers spin briefly on an atomic generation counter before sleeping on a
 * condition variable, so back-to-back runs cost little. One caller at a
 * time. */
#ifndef NC_THREADPOOL_H
#define NC_THREADPOOL_H

#include "status.h"

typedef struct nc_threadpool nc_threadpool;
typedef void (*nc_task_fn)(void *arg, int ith, int nth);

/* n_threads >= 1 (counting the caller). */
nc_code nc_threadpool_create(int n_threads, nc_threadpool **out, nc_error *err);
void nc_threadpool_free(nc_threadpool *tp);
int nc_threadpool_size(const nc_threadpool *tp);
void nc_threadpool_run(nc_threadpool *tp, nc_task_fn fn, void *arg);

/* Splits [0, n) into nth near-equal ranges; range ith is [*lo, *hi). */
void nc_split_range(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi);

#endif
