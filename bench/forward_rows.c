/* bench/forward_rows: what a forward call of k decode rows costs against one
 * row, k = 1 .. max_rows: the verify step of speculative decoding (the fed
 * token and k - 1 drafts, every row with its logits, in the engine's reuse
 * orders: nc_batch_add_reusable, as engine.c's add_row), after a context of
 * `depth` positions. Each call is timed in the process's CPU time (as the
 * engine's draft-length policy times its steps: other processes do not
 * inflate it), the row counts interleaved call by call so that a changing
 * load hits them alike; the K/V written is truncated after each call.
 * Prints per row count the median and the best ms per call and the cost in
 * one-row calls (spec_policy.c's c(k - 1) for a lone completion). Not a
 * test: `make bench-rows`, then
 *   build/release/bench/forward_rows MODEL [max_rows] [reps] [depth] [threads]
 *                                      [min_rows]
 * (9, 21, 200, 1, 1; min_rows = max_rows times one count alone, for a
 * profiler). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"

enum { BLOCK = 16, MAX_ROWS = 64, MAX_REPS = 1000, CHUNK = 64 };

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Tokens [i0, i1) of tok at positions i0.. of seq, logits for all rows
 * when want (a verify step), else none. */
static int feed(nc_context *ctx, nc_kv_cache *kv, int32_t seq, nc_batch *b,
                const int32_t *tok, int32_t i0, int32_t i1, bool want,
                float *logits) {
  nucleus_error err;
  nc_batch_clear(b);
  for (int32_t i = i0; i < i1; i++)
    nc_batch_add_reusable(b, tok[i], i, seq, want || i + 1 == i1);
  if (nc_kv_seq_reserve(kv, seq, i1, &err) != NC_OK ||
      nc_context_forward(ctx, b, logits, &err) != NC_OK) {
    fprintf(stderr, "forward_rows: %s\n", err.message);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: forward_rows MODEL [max_rows] [reps] [depth] "
                    "[threads] [min_rows]\n");
    return 2;
  }
  const int32_t max_rows = argc > 2 ? atoi(argv[2]) : 9;
  const int reps = argc > 3 ? atoi(argv[3]) : 21;
  const int32_t depth = argc > 4 ? atoi(argv[4]) : 200;
  const int threads = argc > 5 ? atoi(argv[5]) : 1;
  const int32_t min_rows = argc > 6 ? atoi(argv[6]) : 1;
  if (min_rows < 1 || min_rows > max_rows || max_rows < 1 ||
      max_rows > MAX_ROWS || reps < 1 || reps > MAX_REPS || depth < 1 ||
      depth > 1 << 16 || threads < 1) {
    fprintf(stderr,
            "forward_rows: min_rows <= max_rows <= %d, reps 1..%d, depth "
            "1..65536, threads >= 1\n",
            MAX_ROWS, MAX_REPS);
    return 2;
  }
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = threads;
  nucleus_model *m = NULL;
  nucleus_error err;
  if (nucleus_model_load(argv[1], &mp, &m, &err) != NUCLEUS_OK) {
    fprintf(stderr, "forward_rows: %s\n", err.message);
    return 1;
  }
  const nc_hparams *hp = nc_model_hparams(m);
  const int32_t n = depth + max_rows;
  int32_t *tok = malloc(sizeof(int32_t) * (size_t)n);
  uint64_t s = 88172645463325252ull;
  for (int32_t i = 0; tok && i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    tok[i] = (int32_t)(s % (uint64_t)hp->n_vocab);
  }
  const int32_t cap = max_rows > CHUNK ? max_rows : CHUNK;
  float *logits = malloc(sizeof(float) * (size_t)cap * (size_t)hp->n_vocab);
  double *ms = malloc(sizeof(double) * (size_t)max_rows * (size_t)reps);
  nc_kv_cache *kv = NULL;
  nc_context *ctx = NULL;
  nc_batch b;
  if (!tok || !logits || !ms ||
      nc_kv_cache_create_typed(nc_hp_kv_shape(hp), nc_model_kv_types(m),
                               (n + BLOCK - 1) / BLOCK + 1, BLOCK, 1, &kv,
                               &err) != NC_OK ||
      nc_context_create(m, kv, cap, &ctx, &err) != NC_OK ||
      nc_batch_init(&b, cap, &err) != NC_OK) {
    fprintf(stderr, "forward_rows: out of memory or %s\n", err.message);
    return 1;
  }
  const int32_t seq = nc_kv_seq_new(kv);
  for (int32_t i0 = 0; i0 < depth; i0 += CHUNK)
    if (feed(ctx, kv, seq, &b, tok, i0, i0 + CHUNK < depth ? i0 + CHUNK : depth,
             false, logits))
      return 1;
  /* two warm-up rounds, then reps timed ones, row counts interleaved */
  for (int r = -2; r < reps; r++)
    for (int32_t k = min_rows; k <= max_rows; k++) {
      const double t0 = cpu_ms();
      if (feed(ctx, kv, seq, &b, tok, depth, depth + k, true, logits)) return 1;
      const double t = cpu_ms() - t0;
      nc_kv_seq_truncate(kv, seq, depth);
      if (r >= 0) ms[(size_t)(k - 1) * (size_t)reps + (size_t)r] = t;
    }
  printf("%s, kernels %s, %d thread(s), depth %d, %d reps: CPU ms per "
         "forward call of k rows (all with logits)\n\n",
         argv[1], nucleus_model_kernels(m), threads, (int)depth, reps);
  printf("| rows | median ms | best ms | x min_rows | per extra row |\n"
         "|---:|---:|---:|---:|---:|\n");
  double one = 0;
  for (int32_t k = min_rows; k <= max_rows; k++) {
    double *v = ms + (size_t)(k - 1) * (size_t)reps;
    qsort(v, (size_t)reps, sizeof *v, cmp_double);
    const double med = v[reps / 2];
    if (k == min_rows) one = med;
    printf("| %d | %.2f | %.2f | %.2f | %.3f |\n", (int)k, med, v[0], med / one,
           k > min_rows ? (med / one - 1) / (k - min_rows) : 0.0);
  }
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
  free(tok), free(logits), free(ms);
  nucleus_model_free(m);
  return 0;
}
