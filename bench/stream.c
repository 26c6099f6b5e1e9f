/* bench/stream: this machine's streaming read bandwidth, STREAM-like: T
 * threads each sum their share of a buffer far larger than the caches
 * (8 independent 64-bit accumulators a thread, so the loads, not the adds,
 * set the pace), best of R passes; prints GB/s (1e9 bytes per second of
 * wall time) per thread count. The roofline's denominator
 * (bench/roofline.py). Not a test: `make bench-stream`, then
 *   build/release/bench/stream [MiB (512)] [passes (10)] [threads: 1,2]
 * A busy machine shares its memory bus: measure on a quiet one. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_THREADS = 64 };

typedef struct share {
  const uint64_t *p;
  size_t n; /* words */
  uint64_t sum;
  pthread_barrier_t *start;
} share;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *read_share(void *arg) {
  share *s = arg;
  pthread_barrier_wait(s->start);
  uint64_t a[8] = {0};
  const size_t n8 = s->n / 8 * 8;
  for (size_t i = 0; i < n8; i += 8)
    for (int k = 0; k < 8; k++)
      a[k] += s->p[i + k];
  for (size_t i = n8; i < s->n; i++)
    a[0] += s->p[i];
  uint64_t t = 0;
  for (int k = 0; k < 8; k++)
    t ^= a[k];
  s->sum = t;
  return NULL;
}

/* One pass of nth threads over words [0, n): seconds of wall time. */
static double pass(const uint64_t *buf, size_t n, int nth, uint64_t *check) {
  pthread_t th[MAX_THREADS];
  share sh[MAX_THREADS];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)nth + 1);
  for (int i = 0; i < nth; i++) {
    const size_t lo = n * (size_t)i / (size_t)nth,
                 hi = n * (size_t)(i + 1) / (size_t)nth;
    sh[i] = (share){.p = buf + lo, .n = hi - lo, .start = &start};
    pthread_create(&th[i], NULL, read_share, &sh[i]);
  }
  pthread_barrier_wait(&start);
  const double t0 = now_s();
  for (int i = 0; i < nth; i++) {
    pthread_join(th[i], NULL);
    *check ^= sh[i].sum;
  }
  const double t = now_s() - t0;
  pthread_barrier_destroy(&start);
  return t;
}

int main(int argc, char **argv) {
  const long mib = argc > 1 ? atol(argv[1]) : 512;
  const int passes = argc > 2 ? atoi(argv[2]) : 10;
  const char *list = argc > 3 ? argv[3] : "1,2";
  if (mib < 1 || mib > 65536 || passes < 1 || passes > 1000) {
    fprintf(stderr, "stream: MiB in [1, 65536], passes in [1, 1000]\n");
    return 2;
  }
  const size_t bytes = (size_t)mib << 20, n = bytes / sizeof(uint64_t);
  uint64_t *buf = aligned_alloc(64, bytes);
  if (!buf) {
    fprintf(stderr, "stream: cannot allocate %ld MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < n; i++) /* touched: real pages, not the zero page */
    buf[i] = i * 0x9E3779B97F4A7C15ull;
  uint64_t check = 0;
  printf("| threads | read GB/s |\n|---:|---:|\n");
  for (const char *s = list; *s;) {
    char *end;
    const long nth = strtol(s, &end, 10);
    if (end == s || nth < 1 || nth > MAX_THREADS) {
      fprintf(stderr, "stream: thread counts in [1, %d], comma-separated\n",
              MAX_THREADS);
      return 2;
    }
    double best = 1e30;
    for (int r = 0; r < passes; r++) {
      const double t = pass(buf, n, (int)nth, &check);
      best = t < best ? t : best;
    }
    printf("| %ld | %.2f |\n", nth, (double)bytes / best / 1e9);
    s = *end == ',' ? end + 1 : end;
  }
  fprintf(stderr, "(checksum %llx)\n", (unsigned long long)check);
  free(buf);
  return 0;
}
