/* threadpool: persistent workers, woken per run by a generation counter.
 *
 * A run publishes (fn, arg) and bumps the generation; each worker runs its
 * share and decrements the pending count; the caller runs share 0 and then
 * waits for pending == 0. Both sides wait by spinning first (a forward pass
 * runs ~10 short parallel sections per layer, so the next run or the last
 * share is usually microseconds away), then by yielding the CPU (cheap when
 * the machine has more runnable threads than cores), and after a time
 * budget by sleeping on a condition variable, so that idle workers cost
 * nothing for long. The mutex and condition variables are touched only
 * when somebody sleeps: a hand-off between spinning threads is a few cache
 * line transfers.
 *
 * Share i of a run is claimed once (a per-share generation stamp); when the
 * caller is done with share 0 it claims and runs the shares that no worker
 * has started yet. On a machine with more runnable threads than cores a
 * worker may not get a CPU for milliseconds; its share then runs on the
 * caller instead of stalling the run. fn sees the same (ith, nth) either
 * way, so results do not change. */
#include "threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

/* How long a waiter spins (pause), then yields, before it sleeps. */
#define NC_SPIN_NS 50000
#define NC_YIELD_NS 1000000
/* Pause instructions between clock reads. */
#define NC_SPIN_CHECK 64

typedef struct share_slot {
  alignas(64) atomic_uint gen; /* the last run whose share was claimed */
} share_slot;

struct nc_threadpool {
  int n_threads; /* including the caller */
  pthread_t *threads;
  int n_started;
  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers wait for a new generation */
  pthread_cond_t done; /* the caller waits for pending == 0 */
  nc_task_fn fn;
  void *arg;
  share_slot *slots; /* [n_threads]; slot 0 unused (the caller's share) */
  /* Each on its own cache line: workers poll generation while they finish
   * by decrementing pending. */
  alignas(64) atomic_uint generation;
  alignas(64) atomic_int pending;
  alignas(64) atomic_int sleepers; /* workers in (or entering) wake */
  atomic_bool caller_sleeping;     /* the caller is in (or entering) done */
  atomic_bool stop;
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

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins, then yields, until ready(tp, x) or the time budget is spent. */
static inline void spin_wait(bool (*ready)(nc_threadpool *, unsigned),
                             nc_threadpool *tp, unsigned x) {
  int64_t t0 = 0;
  for (unsigned it = 1; !ready(tp, x); it++) {
    if (it % NC_SPIN_CHECK) {
      cpu_relax();
      continue;
    }
    const int64_t t = now_ns();
    if (!t0) t0 = t;
    if (t - t0 > NC_YIELD_NS) return;
    if (t - t0 > NC_SPIN_NS) sched_yield();
  }
}

static bool new_gen(nc_threadpool *tp, unsigned seen) {
  return atomic_load_explicit(&tp->generation, memory_order_acquire) != seen ||
         atomic_load_explicit(&tp->stop, memory_order_relaxed);
}

/* True for exactly one caller per (share, run): the stamp moves forward to
 * run g only from an older run (wrap-safe comparison). */
static bool claim(nc_threadpool *tp, int i, unsigned g) {
  unsigned cur = atomic_load(&tp->slots[i].gen);
  while ((int)(cur - g) < 0)
    if (atomic_compare_exchange_weak(&tp->slots[i].gen, &cur, g)) return true;
  return false;
}

/* Runs share i of the current run (claimed, so the run cannot end and
 * fn/arg cannot change meanwhile) and counts it done. */
static void run_share(nc_threadpool *tp, int i) {
  tp->fn(tp->arg, i, tp->n_threads);
  if (atomic_fetch_sub(&tp->pending, 1) == 1 &&
      atomic_load(&tp->caller_sleeping)) {
    pthread_mutex_lock(&tp->mu);
    pthread_cond_signal(&tp->done);
    pthread_mutex_unlock(&tp->mu);
  }
}

static void *worker_main(void *p) {
  worker_arg *wa = p;
  nc_threadpool *tp = wa->tp;
  const int ith = wa->ith;
  free(wa);
  unsigned seen = 0;
  for (;;) {
    spin_wait(new_gen, tp, seen);
    unsigned gen = atomic_load_explicit(&tp->generation, memory_order_acquire);
    if (gen == seen && !atomic_load(&tp->stop)) {
      /* Announce the sleep before the last look at the generation; the
       * caller bumps the generation before it looks at sleepers (both
       * sequentially consistent), so one of the two sees the other. */
      pthread_mutex_lock(&tp->mu);
      atomic_fetch_add(&tp->sleepers, 1);
      while ((gen = atomic_load(&tp->generation)) == seen &&
             !atomic_load(&tp->stop))
        pthread_cond_wait(&tp->wake, &tp->mu);
      atomic_fetch_sub(&tp->sleepers, 1);
      pthread_mutex_unlock(&tp->mu);
    }
    if (atomic_load(&tp->stop)) return NULL;
    seen = gen;
    if (claim(tp, ith, gen)) run_share(tp, ith);
  }
}

nc_code nc_threadpool_create(int n_threads, nc_threadpool **out,
                             nc_error *err) {
  *out = NULL;
  if (n_threads < 1 || n_threads > 1024)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "thread count %d: must be in [1, 1024]", n_threads);
  nc_threadpool *tp = aligned_alloc(64, (sizeof *tp + 63) / 64 * 64);
  if (!tp) return nc_fail(err, NC_ERR_NOMEM, "thread pool: out of memory");
  *tp = (nc_threadpool){.n_threads = n_threads};
  pthread_mutex_init(&tp->mu, NULL);
  pthread_cond_init(&tp->wake, NULL);
  pthread_cond_init(&tp->done, NULL);
  atomic_init(&tp->generation, 0);
  atomic_init(&tp->pending, 0);
  atomic_init(&tp->sleepers, 0);
  atomic_init(&tp->caller_sleeping, false);
  atomic_init(&tp->stop, false);
  if (n_threads > 1) {
    tp->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
    tp->slots = aligned_alloc(64, sizeof(share_slot) * (size_t)n_threads);
    if (tp->slots)
      for (int i = 0; i < n_threads; i++)
        atomic_init(&tp->slots[i].gen, 0);
    if (!tp->threads || !tp->slots) {
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
  free(tp->slots);
  pthread_mutex_destroy(&tp->mu);
  pthread_cond_destroy(&tp->wake);
  pthread_cond_destroy(&tp->done);
  free(tp);
}

int nc_threadpool_size(const nc_threadpool *tp) {
  return tp->n_threads;
}

static bool all_done(nc_threadpool *tp, unsigned unused) {
  (void)unused;
  return atomic_load_explicit(&tp->pending, memory_order_acquire) == 0;
}

void nc_threadpool_run(nc_threadpool *tp, nc_task_fn fn, void *arg) {
  if (tp->n_threads == 1) {
    fn(arg, 0, 1);
    return;
  }
  tp->fn = fn;
  tp->arg = arg;
  atomic_store_explicit(&tp->pending, tp->n_threads - 1, memory_order_relaxed);
  /* publishes fn, arg, pending */
  const unsigned g = atomic_fetch_add(&tp->generation, 1) + 1;
  if (atomic_load(&tp->sleepers) > 0) {
    pthread_mutex_lock(&tp->mu);
    pthread_cond_broadcast(&tp->wake);
    pthread_mutex_unlock(&tp->mu);
  }
  fn(arg, 0, tp->n_threads);
  for (int i = 1; i < tp->n_threads; i++)
    if (claim(tp, i, g)) run_share(tp, i);
  spin_wait(all_done, tp, 0);
  if (all_done(tp, 0)) return;
  pthread_mutex_lock(&tp->mu);
  atomic_store(&tp->caller_sleeping, true);
  while (atomic_load(&tp->pending) != 0)
    pthread_cond_wait(&tp->done, &tp->mu);
  atomic_store(&tp->caller_sleeping, false);
  pthread_mutex_unlock(&tp->mu);
}

void nc_split_range(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi) {
  const int64_t base = n / nth, rem = n % nth;
  *lo = ith * base + (ith < rem ? ith : rem);
  *hi = *lo + base + (ith < rem ? 1 : 0);
}
