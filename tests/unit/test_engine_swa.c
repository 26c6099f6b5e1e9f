/* Sliding-window layers in the paged cache (kv_cache.h): the SWA group's
 * blocks that fell out of the window are released, and nothing a request
 * sees changes. On the random gemma2 / gemma3 / gpt-oss files of
 * scripts/make_arch_gguf.py (window 16; build/arch, made by `make
 * arch-models`) and the real Gemma 3 270M (window 512, contexts past
 * 1024):
 *
 * - the forward pass over a cache with the SWA group equals the one over
 *   a full cache bit for bit, under any chunking of the prompt and with two
 *   sequences interleaved in shared batches, while the SWA group holds no
 *   more than the window (and one step) per sequence;
 * - the engine with the SWA group gives the tokens and logprobs of the
 *   engine with a full cache (swa_full) alone, beside other requests, in
 *   small chunks, under preemption and on prefix-cache hits;
 * - both hold with Q8_0 K and V rows (-ctk/-ctv q8_0, flash attention) in
 *   both groups;
 * - the KV bytes held for Gemma 3 at 4k / 8k / 32k positions, printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "engine/engine_internal.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"
#include "test_require.h"

#ifdef __SANITIZE_ADDRESS__
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* gemma2, gemma3 (random), gemma 3 270M, gemma3 (random) with flash
 * attention, gemma3 (random) with a Q8_0 cache (flash attention), gpt-oss
 * (random: windows on its even layers, attention sinks) */
enum { N_MODELS = 6 };

typedef struct fixture {
  nucleus_model *m[N_MODELS];
  char why[N_MODELS][1024];
} fixture;

static const char *const k_files[N_MODELS] = {
    "build/arch/gemma2.gguf",          "build/arch/gemma3.gguf",
    "models/gemma-3-270m-q4_k_m.gguf", "build/arch/gemma3.gguf",
    "build/arch/gemma3.gguf",          "build/arch/gptoss.gguf"};

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  *state = fx;
  const char *root = getenv("NUCLEUS_ROOT");
  if (!root || !*root) root = ".";
  for (int i = 0; i < N_MODELS; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, k_files[i]);
    nucleus_model_params p = nucleus_model_default_params();
    p.n_threads = 2;
    if (i == 3) p.flash_attn = NUCLEUS_FLASH_ATTN_ON;
    if (i == 4) p.cache_type_k = p.cache_type_v = NUCLEUS_CACHE_Q8_0;
    nucleus_error err;
    if (nucleus_model_load(path, &p, &fx->m[i], &err) != NUCLEUS_OK) {
      snprintf(fx->why[i], sizeof fx->why[i], "%s (make arch-models): %s", path,
               err.message);
      fx->m[i] = NULL;
    }
  }
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  for (int i = 0; i < N_MODELS; i++)
    nucleus_model_free(fx->m[i]);
  free(fx);
  return 0;
}

static const nucleus_model *need(fixture *fx, int i) {
  if (!fx->m[i]) NC_MODEL_UNAVAILABLE(fx->why[i]);
  return fx->m[i];
}

static bool *swa_flags(const nucleus_model *m) {
  const nc_hparams *hp = nc_model_hparams(m);
  bool *f = calloc((size_t)hp->n_layer, sizeof *f);
  for (int32_t l = 0; l < hp->n_layer; l++)
    f[l] = nc_model_weights_of(m)->layers[l].swa;
  return f;
}

static void random_tokens(int32_t *t, int32_t n, int32_t n_vocab, uint64_t x) {
  for (int32_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t[i] = (int32_t)(x % (uint64_t)n_vocab);
  }
}

/* ---- the forward pass */

/* Two sequences' tokens through one cache (SWA group or full), in shared
 * batches of the given per-sequence chunks (cycled); the logits of the
 * rows at positions >= from into out[seq][pos - from]. */
static void run_pair(const nucleus_model *m, bool swa, const int32_t *tok0,
                     const int32_t *tok1, int32_t n, const int32_t *chunks,
                     int n_chunks, int32_t from, float *out0, float *out1) {
  const nc_hparams *hp = nc_model_hparams(m);
  const int32_t nv = hp->n_vocab;
  int32_t step = 0;
  for (int i = 0; i < n_chunks; i++)
    step += chunks[i];
  step *= 2;
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch b;
  nucleus_error err;
  const int64_t blocks = 2 * ((n + 15) / 16) + 4;
  bool *flags = swa_flags(m);
  assert_int_equal(nc_kv_cache_create_swa(
                       nc_hp_kv_shape(hp), nc_model_kv_types(m),
                       swa ? flags : NULL, blocks, 16, 2, step, &kv, &err),
                   NC_OK);
  free(flags);
  assert_int_equal(nc_kv_n_groups(kv), swa ? 2 : 1);
  assert_int_equal(nc_context_create(m, kv, step, &ctx, &err), NC_OK);
  assert_int_equal(nc_batch_init(&b, step, &err), NC_OK);
  const int32_t max_rows = 2 * (n - from);
  float *logits = malloc(sizeof(float) * (size_t)max_rows * (size_t)nv);
  const int32_t s[2] = {nc_kv_seq_new(kv), nc_kv_seq_new(kv)};
  int32_t done[2] = {0, 0}, row_pos[1024], row_seq[1024];
  int64_t swa_peak = 0;
  for (int it = 0; done[0] < n || done[1] < n; it++) {
    nc_batch_clear(&b);
    int32_t rows = 0;
    for (int p = 0; p < 2; p++) {
      int32_t take = chunks[(it + p) % n_chunks];
      if (done[p] + take > n) take = n - done[p];
      if (take <= 0) continue;
      assert_int_equal(nc_kv_seq_reserve(kv, s[p], done[p] + take, &err),
                       NC_OK);
      for (int32_t i = done[p]; i < done[p] + take; i++) {
        const bool want = i >= from;
        assert_true(nc_batch_add(&b, (p ? tok1 : tok0)[i], i, s[p], want));
        if (want) {
          row_pos[rows] = i;
          row_seq[rows++] = p;
        }
      }
      done[p] += take;
    }
    if (nc_context_forward(ctx, &b, logits, &err) != NC_OK)
      fail_msg("forward: %s", err.message);
    for (int32_t r = 0; r < rows; r++)
      memcpy((row_seq[r] ? out1 : out0) + (int64_t)(row_pos[r] - from) * nv,
             logits + (int64_t)r * nv, sizeof(float) * (size_t)nv);
    if (nc_kv_n_groups(kv) == 2) {
      const int64_t used = nc_kv_group_blocks_used(kv, 1);
      if (used > swa_peak) swa_peak = used;
      for (int p = 0; p < 2; p++) { /* only the window (and a block) */
        const int32_t ws = nc_kv_seq_window_start(kv, s[p]);
        assert_true(ws <= done[p] - hp->n_swa + 1 || ws == 0);
        assert_true(done[p] - ws < hp->n_swa + 32);
        /* a sliding-window layer has nothing before, everything after */
        int32_t l = 0;
        while (!nc_model_weights_of(m)->layers[l].swa)
          l++;
        if (ws > 0) assert_null(nc_kv_k_data_c(kv, l, s[p], ws - 1));
        for (int32_t j = ws; j < done[p]; j++)
          assert_non_null(nc_kv_k_data_c(kv, l, s[p], j));
      }
    }
  }
  if (nc_kv_n_groups(kv) == 2) assert_true(swa_peak < nc_kv_blocks_total(kv));
  free(logits);
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
}

static void check_forward(const nucleus_model *m, int32_t n, int32_t from,
                          const int32_t *chunks, int n_chunks,
                          const char *name) {
  const int32_t nv = nc_model_hparams(m)->n_vocab;
  int32_t *t0 = malloc(sizeof(int32_t) * (size_t)n);
  int32_t *t1 = malloc(sizeof(int32_t) * (size_t)n);
  random_tokens(t0, n, nv, 0x5A5Aull);
  random_tokens(t1, n, nv, 0xBEEFull);
  const size_t sz = sizeof(float) * (size_t)(n - from) * (size_t)nv;
  float *r0 = malloc(sz), *r1 = malloc(sz), *a0 = malloc(sz), *a1 = malloc(sz);
  const int32_t whole[1] = {n};
  run_pair(m, false, t0, t1, n, whole, 1, from, r0, r1); /* full cache */
  run_pair(m, true, t0, t1, n, whole, 1, from, a0, a1);
  assert_memory_equal(r0, a0, sz);
  assert_memory_equal(r1, a1, sz);
  run_pair(m, true, t0, t1, n, chunks, n_chunks, from, a0, a1);
  assert_memory_equal(r0, a0, sz);
  assert_memory_equal(r1, a1, sz);
  print_message("%s: %d positions (window %d), logits of %d rows x 2 "
                "sequences: SWA group == full cache, in one call and in "
                "chunks\n",
                name, (int)n, (int)nc_model_hparams(m)->n_swa, (int)(n - from));
  free(r0);
  free(r1);
  free(a0);
  free(a1);
  free(t0);
  free(t1);
}

static void test_forward_random(void **state) {
  fixture *fx = *state;
  const int32_t chunks[] = {5, 1, 17, 30, 2, 9, 1, 1, 20};
  const nucleus_model *g2 = need(fx, 0), *g3 = need(fx, 1), *g3f = need(fx, 3),
                      *go = need(fx, 5);
  assert_true(nc_model_flash_attn(g3f));
  const int32_t n = SANITIZED ? 60 : 150;
  check_forward(g2, n, 20, chunks, 9, "gemma2 (random)");
  check_forward(g3, n, 20, chunks, 9, "gemma3 (random)");
  check_forward(g3f, n, 20, chunks, 9, "gemma3 (random, flash attention)");
  check_forward(go, n, 20, chunks, 9, "gpt-oss (random)");
}

static void test_forward_gemma3_270m(void **state) {
  fixture *fx = *state;
  const nucleus_model *m = need(fx, 2);
  if (SANITIZED)
    NC_SKIP_BECAUSE(
        "the sanitizers make 1000-token Gemma 3 270M runs too slow");
  const int32_t chunks[] = {300, 1, 517, 64, 1};
  check_forward(m, 1100, 1090, chunks, 5, "gemma 3 270M");
}

/* ---- the engine */

#define MAX_GEN 24

typedef struct result {
  int32_t tokens[MAX_GEN];
  float logprobs[MAX_GEN];
  int32_t n;
  int32_t cached;
} result;

typedef struct spec {
  int32_t *prompt;
  int32_t n_prompt;
  int32_t max_tokens;
  int arrival;
} spec;

static nucleus_engine *engine(nucleus_model *m, int64_t kv_tokens,
                              int32_t budget, bool swa_full) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 2048;
  ep.kv_cache_tokens = kv_tokens;
  ep.max_batch_tokens = budget;
  ep.swa_full = swa_full;
  /* no prefill bound (prefill_budget.h): it follows the steps' measured
   * times, so the schedule, and whether a tight pool preempts, would
   * depend on the machine's speed; these runs fix the schedule */
  ep.decode_stall = 1000;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  assert_int_equal(nc_engine_create_stepped(m, &ep, &e, &err), NC_OK);
  assert_int_equal(nc_kv_n_groups(e->kv), swa_full ? 1 : 2);
  return e;
}

static void run_on(nucleus_engine *e, const spec *specs, int n, result *out) {
  nucleus_request *reqs[16] = {0};
  bool done[16] = {false};
  memset(out, 0, sizeof *out * (size_t)n);
  int submitted = 0, finished = 0;
  for (int step = 0; step < 100000 && finished < n; step++) {
    for (int i = 0; i < n; i++) {
      if (specs[i].arrival != step) continue;
      nucleus_request_params p = nucleus_request_default_params();
      p.sampling.temperature = 0;
      p.sampling.logprobs = true;
      p.max_tokens = specs[i].max_tokens;
      p.ignore_eos = true;
      nucleus_error err = {0};
      assert_int_equal(nucleus_engine_submit(e, specs[i].prompt,
                                             (size_t)specs[i].n_prompt, &p,
                                             &reqs[i], &err),
                       NUCLEUS_OK);
      submitted++;
    }
    nc_engine_step(e);
    for (int i = 0; i < n; i++) {
      nucleus_event ev;
      while (reqs[i] && !done[i] &&
             nucleus_request_next_event(reqs[i], &ev, 0) == NUCLEUS_OK) {
        if (ev.kind == NUCLEUS_EVENT_TOKEN) {
          assert_true(out[i].n < MAX_GEN);
          out[i].tokens[out[i].n] = ev.token;
          out[i].logprobs[out[i].n++] = ev.logprob;
        } else if (ev.kind == NUCLEUS_EVENT_DONE) {
          out[i].cached = ev.usage.cached_tokens;
          done[i] = true;
          finished++;
        }
      }
    }
  }
  assert_int_equal(finished, n);
  for (int i = 0; i < n; i++)
    nucleus_request_free(reqs[i]);
}

static void assert_same(const result *a, const result *b, const char *what) {
  if (a->n != b->n ||
      memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n) ||
      memcmp(a->logprobs, b->logprobs, sizeof(float) * (size_t)a->n))
    fail_msg("%s: tokens or logprobs differ from the full cache's", what);
}

/* Reference: each request alone on an engine with a full cache. Then with
 * the SWA group: alone, all together (arrivals spread), in chunks of
 * `small` tokens, in a pool of `tight` tokens (preemption), and again on
 * the same engine (prefix hits). */
static void check_engine(nucleus_model *m, const spec *specs, int n,
                         int64_t pool, int32_t small, int64_t tight,
                         const char *name) {
  result ref[16], got[16];
  for (int i = 0; i < n; i++) {
    spec s = specs[i];
    s.arrival = 0;
    nucleus_engine *e = engine(m, pool, 512, true);
    run_on(e, &s, 1, &ref[i]);
    nucleus_engine_free(e);
  }
  nucleus_engine *e = engine(m, pool, 512, false);
  for (int i = 0; i < n; i++) {
    spec s = specs[i];
    s.arrival = 0;
    run_on(e, &s, 1, &got[i]);
    assert_same(&ref[i], &got[i], "alone");
    assert_int_equal(nc_kv_group_blocks_used(e->kv, 0), 0);
    assert_int_equal(nc_kv_group_blocks_used(e->kv, 1), 0);
  }
  /* the same prompts again: prefix hits, whose window is still cached */
  int hits = 0;
  for (int i = 0; i < n; i++) {
    spec s = specs[i];
    s.arrival = 0;
    run_on(e, &s, 1, &got[i]);
    assert_same(&ref[i], &got[i], "prefix hit");
    hits += got[i].cached > 0;
  }
  assert_true(hits > 0);
  nucleus_engine_free(e);
  e = engine(m, pool, 512, false);
  run_on(e, specs, n, got);
  for (int i = 0; i < n; i++)
    assert_same(&ref[i], &got[i], "together");
  nucleus_engine_free(e);
  e = engine(m, pool, small, false);
  run_on(e, specs, n, got);
  for (int i = 0; i < n; i++)
    assert_same(&ref[i], &got[i], "chunked");
  nucleus_engine_free(e);
  e = engine(m, tight, 512, false);
  run_on(e, specs, n, got);
  for (int i = 0; i < n; i++)
    assert_same(&ref[i], &got[i], "preempted");
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  assert_true(st.preemptions_total > 0);
  nucleus_engine_free(e);
  print_message("%s: %d requests: SWA group == full cache alone, on prefix "
                "hits (%d), together, in chunks of %d, in a pool of %lld "
                "tokens (%lld preemptions)\n",
                name, n, hits, (int)small, (long long)tight,
                (long long)st.preemptions_total);
}

static void test_engine_random(void **state) {
  fixture *fx = *state;
  static const char *const names[] = {"gemma2 (random)",
                                      "gemma3 (random)",
                                      "",
                                      "gemma3 (random, flash attention)",
                                      "",
                                      "gpt-oss (random)"};
  for (int k = 0; k < N_MODELS; k++) {
    if (k == 2 || k == 4) continue; /* the real file, q8_0: their own */
    nucleus_model *m = fx->m[k];
    need(fx, k);
    enum { N = 4 };
    int32_t prompts[N][80];
    spec specs[N];
    for (int i = 0; i < N; i++) {
      specs[i].n_prompt = 40 + 11 * i;
      random_tokens(prompts[i], specs[i].n_prompt, nc_model_hparams(m)->n_vocab,
                    0x1234ull + (uint64_t)i);
      specs[i].prompt = prompts[i];
      specs[i].max_tokens = 20; /* enough to outgrow the small pool */
      specs[i].arrival = 3 * i;
    }
    check_engine(m, specs, N, 4096, 7, 112, names[k]);
  }
}

/* n > 1 (forked sequences, sampled) and beams (forked and freed as they
 * are reordered): every completion's tokens and logprobs equal the full
 * cache's. */
typedef struct forked {
  int32_t tokens[4][MAX_GEN];
  float logprobs[4][MAX_GEN];
  int32_t n[4];
  char text[4][2048]; /* beams report text only */
  size_t text_len[4];
} forked;

static void run_forked(nucleus_model *m, bool swa_full, const int32_t *prompt,
                       int32_t n_prompt, bool beam, forked *out) {
  nucleus_engine *e = engine(m, 4096, 16, swa_full);
  nucleus_request_params p = nucleus_request_default_params();
  p.max_tokens = 12;
  p.ignore_eos = true;
  p.sampling.logprobs = !beam;
  if (beam) {
    p.beam_width = 3;
    p.n = 2;
    p.sampling.temperature = 0;
  } else {
    p.n = 3;
    p.sampling.temperature = 0.9f;
    p.sampling.has_seed = true;
    p.sampling.seed = 42;
  }
  nucleus_request *r = NULL;
  nucleus_error err = {0};
  if (nucleus_engine_submit(e, prompt, (size_t)n_prompt, &p, &r, &err) !=
      NUCLEUS_OK)
    fail_msg("submit: %s", err.message);
  memset(out, 0, sizeof *out);
  bool done = false;
  for (int step = 0; step < 10000 && !done; step++) {
    nc_engine_step(e);
    nucleus_event ev;
    while (!done && nucleus_request_next_event(r, &ev, 0) == NUCLEUS_OK) {
      if (ev.kind == NUCLEUS_EVENT_DONE) done = true;
      if (ev.kind == NUCLEUS_EVENT_DONE) continue;
      assert_true(ev.index >= 0 && ev.index < 4);
      assert_true(out->text_len[ev.index] + ev.text_len < sizeof out->text[0]);
      memcpy(out->text[ev.index] + out->text_len[ev.index], ev.text,
             ev.text_len);
      out->text_len[ev.index] += ev.text_len;
      if (ev.kind != NUCLEUS_EVENT_TOKEN) continue;
      const int32_t k = out->n[ev.index]++;
      assert_true(k < MAX_GEN);
      out->tokens[ev.index][k] = ev.token;
      out->logprobs[ev.index][k] = ev.logprob;
    }
  }
  assert_true(done);
  nucleus_request_free(r);
  assert_int_equal(nc_kv_group_blocks_used(e->kv, 0), 0);
  if (!swa_full) assert_int_equal(nc_kv_group_blocks_used(e->kv, 1), 0);
  nucleus_engine_free(e);
}

static void test_engine_forks(void **state) {
  fixture *fx = *state;
  nucleus_model *m = fx->m[1];
  need(fx, 1);
  int32_t prompt[45];
  random_tokens(prompt, 45, nc_model_hparams(m)->n_vocab, 0xF0Dull);
  for (int beam = 0; beam < 2; beam++) {
    forked ref, got;
    run_forked(m, true, prompt, 45, beam, &ref);
    run_forked(m, false, prompt, 45, beam, &got);
    int total = 0;
    for (int i = 0; i < 4; i++) {
      assert_int_equal(ref.n[i], got.n[i]);
      assert_memory_equal(ref.tokens[i], got.tokens[i],
                          sizeof(int32_t) * (size_t)ref.n[i]);
      assert_memory_equal(ref.logprobs[i], got.logprobs[i],
                          sizeof(float) * (size_t)ref.n[i]);
      assert_int_equal(ref.text_len[i], got.text_len[i]);
      assert_memory_equal(ref.text[i], got.text[i], ref.text_len[i]);
      total += (int)ref.text_len[i];
      if (i < (beam ? 2 : 3)) assert_true(ref.text_len[i] > 0);
    }
    print_message("gemma3 (random): %s: %d bytes of text, tokens and "
                  "logprobs, SWA group == full cache\n",
                  beam ? "beam search (width 3, n 2)" : "n = 3 sampled", total);
  }
}

/* Q8_0 K and V (rotated) in both groups: the forward pass over the SWA
 * group equals the full cache's bit for bit, and the engine without
 * --swa-full gives the tokens and logprobs of the one with it. */
static void test_swa_q8_0(void **state) {
  fixture *fx = *state;
  nucleus_model *m = fx->m[4];
  need(fx, 4);
  assert_true(nc_model_flash_attn(m));
  assert_int_equal(nc_model_kv_types(m).k, NC_TYPE_Q8_0);
  assert_int_equal(nc_model_kv_types(m).v, NC_TYPE_Q8_0);
  const nc_hparams *hp = nc_model_hparams(m);
  /* a typed SWA cache: Q8_0 rows in both groups, bytes by those rows */
  bool *flags = swa_flags(m);
  nc_kv_cache *kv;
  nucleus_error err;
  assert_int_equal(nc_kv_cache_create_swa(nc_hp_kv_shape(hp),
                                          nc_model_kv_types(m), flags, 8, 16, 1,
                                          64, &kv, &err),
                   NC_OK);
  free(flags);
  assert_int_equal(nc_kv_n_groups(kv), 2);
  assert_int_equal(nc_kv_k_row_bytes(kv, 0),
                   nc_row_size(NC_TYPE_Q8_0, nc_hp_n_embd_k(hp)));
  const int32_t s = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, s, 64, &err), NC_OK);
  nc_kv_seq_set_len(kv, s, 64);
  const int64_t used0 = nc_kv_group_blocks_used(kv, 0),
                used1 = nc_kv_group_blocks_used(kv, 1);
  int32_t n_swa = 0;
  for (int32_t l = 0; l < hp->n_layer; l++)
    n_swa += nc_model_weights_of(m)->layers[l].swa;
  const size_t per_layer =
      16 * (nc_kv_k_row_bytes(kv, 0) + nc_kv_v_row_bytes(kv, 0));
  assert_int_equal(nc_kv_bytes_used(kv),
                   (size_t)used0 * (size_t)(hp->n_layer - n_swa) * per_layer +
                       (size_t)used1 * (size_t)n_swa * per_layer);
  nc_kv_cache_free(kv);

  const int32_t chunks[] = {5, 1, 17, 30, 2, 9, 1, 1, 20};
  check_forward(m, SANITIZED ? 60 : 150, 20, chunks, 9,
                "gemma3 (random, q8_0 K/V)");
  enum { N = 4 };
  int32_t prompts[N][80];
  spec specs[N];
  for (int i = 0; i < N; i++) {
    specs[i].n_prompt = 40 + 11 * i;
    random_tokens(prompts[i], specs[i].n_prompt, hp->n_vocab,
                  0x1234ull + (uint64_t)i);
    specs[i].prompt = prompts[i];
    specs[i].max_tokens = 20;
    specs[i].arrival = 3 * i;
  }
  check_engine(m, specs, N, 4096, 7, 112, "gemma3 (random, q8_0 K/V)");
}

static void test_engine_gemma3_270m(void **state) {
  fixture *fx = *state;
  nucleus_model *m = fx->m[2];
  need(fx, 2);
  if (SANITIZED)
    NC_SKIP_BECAUSE(
        "the sanitizers make 1000-token Gemma 3 270M runs too slow");
  /* two prompts of about 1000 tokens, each growing past 1024 positions:
   * both fit a pool of 2048 when admitted, not once they have grown */
  enum { N = 2 };
  static int32_t prompts[N][1200];
  spec specs[N];
  for (int i = 0; i < N; i++) {
    specs[i].n_prompt = 1000 + 10 * i;
    random_tokens(prompts[i], specs[i].n_prompt, 262144, 0x77ull + (uint64_t)i);
    specs[i].prompt = prompts[i];
    specs[i].max_tokens = MAX_GEN;
    specs[i].arrival = i;
  }
  check_engine(m, specs, N, 8192, 300, 2048, "gemma 3 270M");
}

/* ---- KV bytes held */

static void test_bytes_held_gemma3(void **state) {
  fixture *fx = *state;
  const nucleus_model *m = need(fx, 2);
  const nc_hparams *hp = nc_model_hparams(m);
  bool *flags = swa_flags(m);
  static const int32_t lens[] = {4096, 8192, 32768};
  for (int i = 0; i < 3; i++) {
    size_t held[2];
    for (int swa = 0; swa < 2; swa++) {
      nc_kv_cache *kv;
      nucleus_error err;
      /* one sequence, steps of 512 tokens, as `nucleus run` */
      assert_int_equal(nc_kv_cache_create_swa(nc_hp_kv_shape(hp),
                                              NC_KV_TYPES_F16,
                                              swa ? flags : NULL, lens[i] / 16,
                                              16, 1, 512, &kv, &err),
                       NC_OK);
      const int32_t s = nc_kv_seq_new(kv);
      for (int32_t len = 0; len < lens[i];) {
        const int32_t to = len + 512 < lens[i] ? len + 512 : lens[i];
        assert_int_equal(nc_kv_seq_reserve(kv, s, to, &err), NC_OK);
        nc_kv_seq_set_len(kv, s, to);
        len = to;
      }
      held[swa] = nc_kv_bytes_used(kv);
      if (!swa) assert_int_equal(held[0], nc_kv_bytes_total(kv));
      if (swa) {
        assert_int_equal(nc_kv_n_groups(kv), 2);
        print_message("gemma 3 270M at %5d positions: full cache %7.2f MiB "
                      "held, with the SWA group %6.2f MiB (%.3f; allocated "
                      "%.2f MiB)\n",
                      (int)lens[i], (double)held[0] / (1 << 20),
                      (double)held[1] / (1 << 20),
                      (double)held[1] / (double)held[0],
                      (double)nc_kv_bytes_total(kv) / (1 << 20));
      }
      nc_kv_cache_free(kv);
    }
    /* 3 of 18 layers global: 1/6 plus the window's share */
    const double expect = 1.0 / 6 + 5.0 / 6 * (512.0 + 16) / lens[i];
    assert_true((double)held[1] / (double)held[0] < expect + 0.01);
  }
  free(flags);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bytes_held_gemma3),
      cmocka_unit_test(test_forward_random),
      cmocka_unit_test(test_engine_random),
      cmocka_unit_test(test_engine_forks),
      cmocka_unit_test(test_swa_q8_0),
      cmocka_unit_test(test_forward_gemma3_270m),
      cmocka_unit_test(test_engine_gemma3_270m),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
