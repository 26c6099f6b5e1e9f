/* nucleus bench: prefill and decode speed (like llama-bench) and aggregate
 * throughput with many concurrent requests (like llama-batched-bench), on
 * random prompts, through the public API. bench/ compares both with
 * llama.cpp in the same run.
 *
 * -d N (llama-bench's --n-depth): the prefill and decode tests run with N
 * tokens already in the sequence's KV cache. Those N tokens are one fixed
 * random prefix, computed once before the timed runs and then taken from
 * the prefix cache by each run's prompt (prefix + its own tokens), so that
 * only the tokens after it are timed, as llama-bench fills its cache with
 * the depth before it starts the clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_options.h"
#include "commands.h"
#include "model_flags.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: nucleus bench [options]\n\n"
          "  -p, --n-prompt N        prefill test: prompt tokens (512)\n"
          "  -g, --n-gen N           decode test: generated tokens (128)\n"
          "  -r, --repetitions N     runs of each test; the median is "
          "printed (5)\n"
          "  -d, --n-depth N         both tests after N tokens already in "
          "the KV cache (0)\n"
          "  --concurrency 1,4,16    throughput test: concurrent requests\n"
          "  --batch-prompt N        its prompt tokens per request (128)\n"
          "  --batch-gen N           its generated tokens per request (128)\n"
          "  --spec TYPE, --draft-max N, --draft-min N: speculative "
          "decoding as for run\n"
          "                          (acceptance printed after the tests)\n"
          "  -m, -t, -c and the other model options as for run.\n"
          "Output: one line per test, 'test value tok/s'.\n");
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int32_t *random_prompt(int32_t n, int32_t n_vocab, uint64_t *state) {
  int32_t *ids = malloc((size_t)n * sizeof *ids);
  for (int32_t i = 0; ids && i < n; i++) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    ids[i] = (int32_t)(*state % (uint64_t)n_vocab);
  }
  return ids;
}

/* Runs `count` requests at once; returns the wall time, or -1. The caller's
 * times get each request's time to first token and last event. */
/* Speculative decoding (--spec): the request's drafter and what it did. */
typedef struct bench_spec {
  nucleus_spec_params params;
  int64_t drafted, accepted;
} bench_spec;

static double run_batch(nucleus_engine *engine, nucleus_model *model,
                        int32_t count, const int32_t *prefix, int32_t n_prefix,
                        int32_t n_prompt, int32_t n_gen, uint64_t *rng,
                        double *prefill_s, bench_spec *spec) {
  nucleus_request_params rp = nucleus_request_default_params();
  rp.speculative = spec->params;
  rp.sampling.temperature = 0;
  rp.max_tokens = n_gen;
  rp.ignore_eos = true;
  nucleus_request **reqs = calloc((size_t)count, sizeof *reqs);
  int32_t n_vocab = nucleus_model_n_vocab(model);
  double t0 = now_s(), first = 0;
  for (int32_t i = 0; i < count; i++) {
    int32_t *ids = random_prompt(n_prefix + n_prompt, n_vocab, rng);
    if (ids && n_prefix > 0)
      memcpy(ids, prefix, (size_t)n_prefix * sizeof *ids);
    nucleus_error err = {0};
    if (!ids ||
        nucleus_engine_submit(engine, ids, (size_t)(n_prefix + n_prompt), &rp,
                              &reqs[i], &err) != NUCLEUS_OK) {
      fprintf(stderr, "error: %s\n", err.message);
      free(ids);
      for (int32_t k = 0; k < i; k++)
        nucleus_request_free(reqs[k]);
      free(reqs);
      return -1;
    }
    free(ids);
  }
  for (int32_t i = 0; i < count; i++) {
    nucleus_event ev;
    while (nucleus_request_next_event(reqs[i], &ev, -1) == NUCLEUS_OK) {
      if (ev.kind == NUCLEUS_EVENT_TOKEN && first == 0) first = now_s();
      if (ev.kind == NUCLEUS_EVENT_DONE) {
        spec->drafted += ev.usage.draft_tokens;
        spec->accepted += ev.usage.accepted_draft_tokens;
        /* the depth must have come from the prefix cache (all of its full
         * blocks), or the runs would time its prefill too */
        if (n_prefix > 0 && n_prompt > 0 &&
            ev.usage.cached_tokens + 64 < n_prefix) {
          fprintf(stderr,
                  "error: %d of the depth's %d tokens came from the prefix "
                  "cache\n",
                  ev.usage.cached_tokens, n_prefix);
          t0 = -1;
        }
        break;
      }
    }
    nucleus_request_free(reqs[i]);
  }
  if (t0 < 0) {
    free(reqs);
    return -1;
  }
  double t = now_s() - t0;
  if (prefill_s) *prefill_s = first - t0;
  free(reqs);
  return t;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int cmd_bench(int argc, char **argv) {
  cli_options o;
  cli_options_init(&o);
  int32_t n_prompt = 512, n_gen = 128, reps = 5, depth = 0;
  int32_t batch_prompt = 128, batch_gen = 128;
  const char *concurrency = NULL;
  for (int i = 1; i < argc; i++) {
    int r = cli_options_parse(&o, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    const char *a = argv[i], *v = flag_value(argc, argv, i);
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (v && (!strcmp(a, "-p") || !strcmp(a, "--n-prompt"))) {
      n_prompt = atoi(v);
    } else if (v && (!strcmp(a, "-g") || !strcmp(a, "--n-gen"))) {
      n_gen = atoi(v);
    } else if (v && (!strcmp(a, "-r") || !strcmp(a, "--repetitions"))) {
      reps = atoi(v);
    } else if (v && (!strcmp(a, "-d") || !strcmp(a, "--n-depth"))) {
      depth = atoi(v);
    } else if (v && !strcmp(a, "--concurrency")) {
      concurrency = v;
    } else if (v && !strcmp(a, "--batch-prompt")) {
      batch_prompt = atoi(v);
    } else if (v && !strcmp(a, "--batch-gen")) {
      batch_gen = atoi(v);
    } else {
      fprintf(stderr, "error: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return 2;
    }
    i++;
  }
  if (o.prediction_arg) { /* random prompts: nothing to predict */
    fprintf(stderr, "error: bench: --prediction is for run and chat\n");
    cli_options_free(&o);
    return 2;
  }
  if (o.grammar) { /* bench times free greedy decoding: not accepted */
    fprintf(stderr, "error: bench: --grammar, --grammar-file, --json-schema "
                    "and --json-schema-file are for run and chat\n");
    cli_options_free(&o);
    return 2;
  }
  if (n_prompt < 0 || n_gen < 0 || reps < 1 || reps > 100 || batch_prompt < 1 ||
      batch_gen < 1 || depth < 0 || depth > (1 << 24)) {
    fprintf(stderr, "error: counts must be positive (repetitions 1..100)\n");
    return 2;
  }
  if (depth > 0 && o.engine.no_prefix_cache) {
    fprintf(stderr, "error: -d needs the prefix cache (it holds the depth's "
                    "tokens between runs): drop --no-prefix-cache\n");
    return 2;
  }
  nucleus_model *model = cli_load_model(&o);
  if (!model) return 1;
  if (cli_options_prepare(&o, model)) {
    nucleus_model_free(model);
    cli_options_free(&o);
    return 2;
  }
  bench_spec spec = {.params = o.request.speculative};
  nucleus_engine *engine = NULL;
  nucleus_error err = {0};
  if (o.engine.max_batch_tokens == 0)
    o.engine.max_batch_tokens = n_prompt > 512 ? n_prompt : 512;
  /* a context that holds the longest test (llama-bench's n_ctx: the pp
   * test is depth + n_prompt + 1 generated, the tg test depth + 1 + n_gen),
   * when the engine's default (at most 8192) would not */
  const int64_t need =
      (int64_t)depth + 1 + (n_prompt > n_gen ? n_prompt : n_gen);
  if (o.engine.n_ctx == 0 && need > 8192 && need <= INT32_MAX)
    o.engine.n_ctx = (int32_t)need;
  if (o.engine.kv_cache_tokens == 0)
    o.engine.kv_cache_tokens = 65536 > 2 * (int64_t)depth + 2 * n_prompt + 4096
                                   ? 65536
                                   : 2 * (int64_t)depth + 2 * n_prompt + 4096;
  if (nucleus_engine_create(model, &o.engine, &engine, &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    nucleus_model_free(model);
    cli_options_free(&o);
    return 1;
  }
  printf("kernels: %s\n", nucleus_model_kernels(model));
  printf("flash attention: %s\n",
         nucleus_model_flash_attn(model) ? "on" : "off");
  printf("weights: %s, %.1f MiB in 2 MiB pages\n",
         nucleus_load_mode_name(nucleus_model_load_mode(model)),
         (double)nucleus_model_huge_page_bytes(model) / (1 << 20));
  int32_t window = 0;
  const size_t kv_swa = nucleus_model_kv_bytes_per_position_swa(model, &window);
  printf("KV cache: K %s, V %s, %zu bytes per position",
         nucleus_cache_type_name(nucleus_model_cache_type_k(model)),
         nucleus_cache_type_name(nucleus_model_cache_type_v(model)),
         nucleus_model_kv_bytes_per_position(model));
  if (kv_swa)
    printf(" (%zu on sliding-window layers, window %d)", kv_swa, (int)window);
  printf("\n");
  uint64_t rng = 0x5EEDull;
  double *v = calloc((size_t)reps, sizeof *v);
  int32_t *prefix =
      depth > 0 ? random_prompt(depth, nucleus_model_n_vocab(model), &rng)
                : NULL;
  int rc = !v || (depth > 0 && !prefix);
  char at[32] = "";
  if (depth > 0) snprintf(at, sizeof at, " @ d%d", depth);
  /* the depth's KV, computed once: every run below takes it from the
   * prefix cache */
  if (!rc && depth > 0)
    rc =
        run_batch(engine, model, 1, prefix, depth, 0, 1, &rng, NULL, &spec) < 0;
  if (!rc && n_prompt > 0) {
    /* warm-up */
    run_batch(engine, model, 1, prefix, depth, n_prompt, 1, &rng, NULL, &spec);
    for (int r = 0; r < reps; r++) {
      double pre = 0;
      if (run_batch(engine, model, 1, prefix, depth, n_prompt, 1, &rng, &pre,
                    &spec) < 0)
        rc = 1;
      v[r] = n_prompt / pre;
    }
    printf("pp%d%s %.2f tok/s\n", n_prompt, at, median(v, reps));
    fflush(stdout);
  }
  if (!rc && n_gen > 0) {
    for (int r = 0; r < reps; r++) {
      double pre = 0, t = run_batch(engine, model, 1, prefix, depth, 1, n_gen,
                                    &rng, &pre, &spec);
      if (t < 0) rc = 1;
      v[r] = (n_gen - 1) / (t - pre);
    }
    printf("tg%d%s %.2f tok/s\n", n_gen, at, median(v, reps));
    fflush(stdout);
  }
  free(prefix);
  for (const char *c = concurrency; c && *c;) {
    int32_t count = atoi(c);
    if (count < 1) break;
    double t = run_batch(engine, model, count, NULL, 0, batch_prompt, batch_gen,
                         &rng, NULL, &spec);
    if (t < 0) rc = 1;
    printf("batched%d %.2f tok/s\n", count, count * batch_gen / t);
    fflush(stdout);
    c = strchr(c, ',');
    if (c) c++;
  }
  if (spec.params.type != NUCLEUS_SPEC_OFF)
    printf("drafts (%s): %lld of %lld accepted (%.1f%%)\n",
           nucleus_spec_type_name(spec.params.type), (long long)spec.accepted,
           (long long)spec.drafted,
           spec.drafted ? 100.0 * (double)spec.accepted / (double)spec.drafted
                        : 0.0);
  free(v);
  nucleus_engine_free(engine);
  nucleus_model_free(model);
  cli_options_free(&o); /* the draft model, after the engine */
  return rc;
}
