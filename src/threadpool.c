/* threadpool: persistent workers, woken per run by a generation counter.
 *
 * A run publishes (fn, arg), bumps the generation and wakes the workers;
 * each worker runs its share and decrements the pending count. Waiting
 * spins for a short while (cheap back-to-back runs) and then sleeps on a
 * condition variable, so idle workers cost nothing on a shared machine. */
#include "threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#define NC_SPIN_ITERS 2000

struct nc_threadpool {
  int n_threads; /* including the caller */
  pthread_t *threads;
  int n_started;
  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers wait for a new generation */
  pthread_cond_t done; /* the caller waits for pending == 0 */
  atomic_uint generation;
  atomic_int pending;
  atomic_bool stop;
  nc_task_fn fn;
  void *arg;
};

typedef struct worker_arg {
  nc_threadpool *tp;
  int ith;
} worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void *worker_main(void *p) {
  worker_arg *wa = p;
  nc_threadpool *tp = wa->tp;
  const int ith = wa->ith;
  free(wa);
  unsigned seen = 0;
  for (;;) {
    unsigned gen = atomic_load_explicit(&tp->generation, memory_order_acquire);
    for (int i = 0; gen == seen && i < NC_SPIN_ITERS; i++) {
      if (atomic_load_explicit(&tp->stop, memory_order_relaxed)) break;
      cpu_relax();
      gen = atomic_load_explicit(&tp->generation, memory_order_acquire);
    }
    if (gen == seen) {
      pthread_mutex_lock(&tp->mu);
      while ((gen = atomic_load(&tp->generation)) == seen &&
             !atomic_load(&tp->stop))
        pthread_cond_wait(&tp->wake, &tp->mu);
      pthread_mutex_unlock(&tp->mu);
    }
    if (atomic_load(&tp->stop)) return NULL;
    seen = gen;
    tp->fn(tp->arg, ith, tp->n_threads);
    if (atomic_fetch_sub_explicit(&tp->pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&tp->mu);
      pthread_cond_signal(&tp->done);
      pthread_mutex_unlock(&tp->mu);
    }
  }
}

nc_code nc_threadpool_create(int n_threads, nc_threadpool **out,
                             nc_error *err) {
  *out = NULL;
  if (n_threads < 1 || n_threads > 1024)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "thread count %d: must be in [1, 1024]", n_threads);
  nc_threadpool *tp = calloc(1, sizeof *tp);
  if (!tp) return nc_fail(err, NC_ERR_NOMEM, "thread pool: out of memory");
  tp->n_threads = n_threads;
  pthread_mutex_init(&tp->mu, NULL);
  pthread_cond_init(&tp->wake, NULL);
  pthread_cond_init(&tp->done, NULL);
  atomic_init(&tp->generation, 0);
  atomic_init(&tp->pending, 0);
  atomic_init(&tp->stop, false);
  if (n_threads > 1) {
    tp->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
    if (!tp->threads) {
      nc_threadpool_free(tp);
      return nc_fail(err, NC_ERR_NOMEM, "thread pool: out of memory");
    }
  }
  for (int i = 1; i < n_threads; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa) {
      nc_threadpool_free(tp);
      return nc_fail(err, NC_ERR_NOMEM, "thread pool: out of memory");
    }
    wa->tp = tp;
    wa->ith = i;
    if (pthread_create(&tp->threads[i - 1], NULL, worker_main, wa) != 0) {
      free(wa);
      nc_threadpool_free(tp);
      return nc_fail(err, NC_ERR_INTERNAL,
                     "thread pool: cannot start thread %d of %d", i, n_threads);
    }
    tp->n_started++;
  }
  *out = tp;
  return NC_OK;
}

void nc_threadpool_free(nc_threadpool *tp) {
  if (!tp) return;
  pthread_mutex_lock(&tp->mu);
  atomic_store(&tp->stop, true);
  pthread_cond_broadcast(&tp->wake);
  pthread_mutex_unlock(&tp->mu);
  for (int i = 0; i < tp->n_started; i++)
    pthread_join(tp->threads[i], NULL);
  free(tp->threads);
  pthread_mutex_destroy(&tp->mu);
  pthread_cond_destroy(&tp->wake);
  pthread_cond_destroy(&tp->done);
  free(tp);
}

int nc_threadpool_size(const nc_threadpool *tp) {
  return tp->n_threads;
}

void nc_threadpool_run(nc_threadpool *tp, nc_task_fn fn, void *arg) {
  if (tp->n_threads == 1) {
    fn(arg, 0, 1);
    return;
  }
  tp->fn = fn;
  tp->arg = arg;
  atomic_store_explicit(&tp->pending, tp->n_threads - 1, memory_order_relaxed);
  pthread_mutex_lock(&tp->mu);
  atomic_fetch_add_explicit(&tp->generation, 1, memory_order_release);
  pthread_cond_broadcast(&tp->wake);
  pthread_mutex_unlock(&tp->mu);
  fn(arg, 0, tp->n_threads);
  for (int i = 0; i < NC_SPIN_ITERS; i++) {
    if (atomic_load_explicit(&tp->pending, memory_order_acquire) == 0) return;
    cpu_relax();
  }
  pthread_mutex_lock(&tp->mu);
  while (atomic_load(&tp->pending) != 0)
    pthread_cond_wait(&tp->done, &tp->mu);
  pthread_mutex_unlock(&tp->mu);
}

void nc_split_range(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi) {
  const int64_t base = n / nth, rem = n % nth;
  *lo = ith * base + (ith < rem ? ith : rem);
  *hi = *lo + base + (ith < rem ? 1 : 0);
}
