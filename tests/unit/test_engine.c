/* The engine end to end on the real model: finish reasons, stop strings,
 * n > 1, cancellation, continuous batching with bit-identical results
 * (batch invariance), memory pressure with preemption, and a KV pool that
 * is whole again at the end. Uses the stepped engine (no thread) so that
 * arrival steps are exact. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "grammar/grammar.h"
#include "nucleus.h"
#include "test_require.h"

#define MAX_GEN 64
#define MAX_N 4

/* 16 requests in the release build; fewer under the (slow) sanitizers,
 * which check memory safety rather than scale. */
#ifdef __SANITIZE_ADDRESS__
#define N_BATCH_REQUESTS 6
#else
#define N_BATCH_REQUESTS 16
#endif

typedef struct outcome {
  int32_t tokens[MAX_N][MAX_GEN];
  float logprobs[MAX_N][MAX_GEN];
  nucleus_token_logprob top[MAX_N][MAX_GEN][3];
  int32_t n_tokens[MAX_N];
  char text[MAX_N][2048];
  size_t text_len[MAX_N];
  nucleus_finish_reason reason[MAX_N];
  bool grammar_error[MAX_N]; /* error_in_grammar of its FINISH */
  char stop_string[MAX_N][64];
  int32_t stop_token[MAX_N];
  int n_finish;
  bool done;
  nucleus_usage usage;
  int32_t n_inspected; /* TOKEN events with an inspect record */
} outcome;

typedef struct req_spec {
  int32_t prompt[64];
  size_t n_prompt;
  nucleus_request_params params;
  int arrival; /* engine step at which it is submitted */
} req_spec;

static nucleus_model *g_model;
static int32_t g_vocab;
/* A small JSON object: outputs finish within MAX_GEN tokens. */
static const char k_grammar[] =
    "root ::= \"{\\\"name\\\": \\\"\" [a-z]{1,8} \"\\\", \\\"age\\\": \" "
    "[1-9] [0-9]? \"}\"\n";
static nucleus_grammar *g_grammar;
static char g_why[640]; /* why g_model is NULL */

static int setup(void **state) {
  (void)state;
  const char *path = getenv("NUCLEUS_MODEL");
  if (!path || !*path) {
    snprintf(g_why, sizeof g_why, "NUCLEUS_MODEL is not set");
    return 0;
  }
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  nucleus_error err = {0};
  if (nucleus_model_load(path, &mp, &g_model, &err) != NUCLEUS_OK) {
    snprintf(g_why, sizeof g_why, "cannot load the model: %s", err.message);
    g_model = NULL;
    return 0;
  }
  g_vocab = nucleus_model_n_vocab(g_model);
  if (nucleus_grammar_create(k_grammar, strlen(k_grammar), NULL, &g_grammar,
                             &err) != NUCLEUS_OK) {
    fprintf(stderr, "grammar: %s\n", err.message);
    abort();
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  nucleus_model_free(g_model);
  nucleus_grammar_free(g_grammar);
  return 0;
}

#define NEED_MODEL()                                                           \
  do {                                                                         \
    if (!g_model) NC_MODEL_UNAVAILABLE(g_why);                                 \
  } while (0)

/* Drains every available event of a request into o. */
static void drain(nucleus_request *r, outcome *o) {
  nucleus_event ev;
  nucleus_status st;
  while ((st = nucleus_request_next_event(r, &ev, 0)) == NUCLEUS_OK) {
    if (ev.kind == NUCLEUS_EVENT_DONE) {
      o->done = true;
      o->usage = ev.usage;
      continue;
    }
    int i = ev.index;
    assert_true(i >= 0 && i < MAX_N);
    assert_true(o->text_len[i] + ev.text_len < sizeof o->text[i]);
    memcpy(o->text[i] + o->text_len[i], ev.text, ev.text_len);
    o->text_len[i] += ev.text_len;
    if (ev.kind == NUCLEUS_EVENT_TOKEN) {
      int k = o->n_tokens[i]++;
      assert_true(k < MAX_GEN);
      o->tokens[i][k] = ev.token;
      o->logprobs[i][k] = ev.logprob;
      for (int j = 0; j < ev.n_top_logprobs && j < 3; j++)
        o->top[i][k][j] = ev.top_logprobs[j];
      if (ev.inspect) { /* the same step as the token and its logprobs */
        const nucleus_inspect *in = ev.inspect;
        assert_int_equal(in->token, ev.token);
        assert_true(in->step == (uint64_t)k);
        assert_true(in->n_candidates > 0);
        for (int j = 0; j < ev.n_top_logprobs && j < in->n_candidates; j++)
          assert_true(fabs(logf(in->candidates[j].raw_prob) -
                           ev.top_logprobs[j].logprob) < 1e-3);
        /* the draw on the cumulative distribution: u fell in the drawn
         * token's interval, by the sums the sampler compared */
        if (in->method == NUCLEUS_DRAW_INVERSE_CDF) {
          assert_true(in->target == in->uniform * in->mass);
          assert_true(in->clamped ||
                      (in->cdf_lo <= in->target && in->target < in->cdf_hi));
        } else {
          assert_int_equal(in->method, NUCLEUS_DRAW_GREEDY);
          assert_int_equal(in->n_walk, 0);
        }
        o->n_inspected++;
      }
    } else if (ev.kind == NUCLEUS_EVENT_FINISH) {
      assert_int_equal(o->reason[i], NUCLEUS_FINISH_NONE); /* exactly once */
      o->reason[i] = ev.finish_reason;
      o->grammar_error[i] = ev.error_in_grammar;
      o->stop_token[i] = ev.stop_token;
      if (ev.stop_string)
        snprintf(o->stop_string[i], sizeof o->stop_string[i], "%s",
                 ev.stop_string);
      o->n_finish++;
    }
  }
  /* an empty queue is a timeout, not a limit */
  assert_int_equal(st, NUCLEUS_ERR_TIMEOUT);
}

static nucleus_engine *stepped_engine_cache(int64_t kv_tokens, int32_t budget,
                                            bool prefix_cache) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.kv_cache_tokens = kv_tokens;
  ep.max_batch_tokens = budget;
  ep.no_prefix_cache = !prefix_cache;
  /* no prefill bound (prefill_budget.h): it follows the steps' measured
   * times, so the schedule, and whether a tight pool preempts, would
   * depend on the machine's speed; these runs fix the schedule */
  ep.decode_stall = 1000;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  assert_int_equal(nc_engine_create_stepped(g_model, &ep, &e, &err), NC_OK);
  return e;
}

static nucleus_engine *stepped_engine(int64_t kv_tokens, int32_t budget) {
  return stepped_engine_cache(kv_tokens, budget, true);
}

/* Runs the specs on engine e, each submitted at its arrival step (counted
 * from this call). */
static void run_specs_on(nucleus_engine *e, const req_spec *specs, int n,
                         outcome *outs) {
  nucleus_request *reqs[32] = {0};
  memset(outs, 0, (size_t)n * sizeof *outs);
  int submitted = 0;
  for (int step = 0; step < 10000; step++) {
    for (int i = 0; i < n; i++) {
      if (specs[i].arrival != step) continue;
      nucleus_error err = {0};
      assert_int_equal(nucleus_engine_submit(e, specs[i].prompt,
                                             specs[i].n_prompt,
                                             &specs[i].params, &reqs[i], &err),
                       NUCLEUS_OK);
      submitted++;
    }
    bool more = nc_engine_step(e);
    for (int i = 0; i < n; i++)
      if (reqs[i]) drain(reqs[i], &outs[i]);
    bool all_done = submitted == n;
    for (int i = 0; i < n && all_done; i++)
      all_done = outs[i].done;
    if (all_done && !more) break;
  }
  for (int i = 0; i < n; i++) {
    assert_true(outs[i].done);
    nucleus_request_free(reqs[i]);
  }
}

/* Runs the specs on a new engine. */
static void run_specs(const req_spec *specs, int n, outcome *outs,
                      int64_t kv_tokens, int32_t budget,
                      nucleus_engine_stats *final) {
  nucleus_engine *e = stepped_engine(kv_tokens, budget);
  run_specs_on(e, specs, n, outs);
  if (final) nucleus_engine_get_stats(e, final);
  nucleus_engine_free(e);
}

static void run_one(const req_spec *spec, outcome *out) {
  req_spec s = *spec;
  s.arrival = 0;
  run_specs(&s, 1, out, 4096, 512, NULL);
}

/* The request alone on an engine without the prefix cache (cold). */
static void run_cold(const req_spec *spec, outcome *out) {
  req_spec s = *spec;
  s.arrival = 0;
  nucleus_engine *e = stepped_engine_cache(4096, 512, false);
  run_specs_on(e, &s, 1, out);
  nucleus_engine_free(e);
}

static req_spec greedy_spec(const char *text, int32_t max_tokens) {
  req_spec s = {0};
  int32_t *ids = NULL;
  size_t n = 0;
  assert_int_equal(
      nucleus_tokenize(g_model, text, strlen(text), true, true, &ids, &n, NULL),
      NUCLEUS_OK);
  assert_true(n <= 64);
  memcpy(s.prompt, ids, n * sizeof *ids);
  s.n_prompt = n;
  nucleus_free(ids);
  s.params = nucleus_request_default_params();
  s.params.sampling.temperature = 0;
  s.params.max_tokens = max_tokens;
  return s;
}

static void test_budget_is_length_never_stop(void **state) {
  (void)state;
  NEED_MODEL();
  req_spec s = greedy_spec("The three primary colors are", 8);
  outcome o;
  run_one(&s, &o);
  assert_int_equal(o.reason[0], NUCLEUS_FINISH_LENGTH);
  assert_int_equal(o.n_tokens[0], 8);
  assert_int_equal(o.usage.completion_tokens, 8);
  assert_int_equal(o.usage.prompt_tokens, (int)s.n_prompt);
}

static void test_stop_string_and_stop_token(void **state) {
  (void)state;
  NEED_MODEL();
  req_spec s = greedy_spec("1, 2, 3, 4, 5,", 24);
  outcome base;
  run_one(&s, &base);
  assert_true(base.text_len[0] > 6);
  /* A stop string made of the middle of the greedy text. */
  char stop[8];
  memcpy(stop, base.text[0] + 3, 3);
  stop[3] = '\0';
  const char *stops[] = {stop};
  s.params.stop = stops;
  s.params.n_stop = 1;
  outcome o;
  run_one(&s, &o);
  assert_int_equal(o.reason[0], NUCLEUS_FINISH_STOP);
  assert_string_equal(o.stop_string[0], stop);
  const char *at = strstr(base.text[0], stop);
  assert_non_null(at);
  assert_int_equal(o.text_len[0], (size_t)(at - base.text[0]));
  assert_memory_equal(o.text[0], base.text[0], o.text_len[0]);
  /* include_stop_str_in_output keeps it. */
  s.params.include_stop_str_in_output = true;
  run_one(&s, &o);
  assert_int_equal(o.text_len[0], (size_t)(at - base.text[0]) + 3);
  /* A stop token id: the third generated token. */
  s.params.n_stop = 0;
  s.params.include_stop_str_in_output = false;
  int32_t stop_tok = base.tokens[0][2];
  s.params.stop_token_ids = &stop_tok;
  s.params.n_stop_token_ids = 1;
  run_one(&s, &o);
  assert_int_equal(o.reason[0], NUCLEUS_FINISH_STOP);
  assert_int_equal(o.stop_token[0], stop_tok);
  int first = 0;
  while (base.tokens[0][first] != stop_tok)
    first++;
  assert_int_equal(o.n_tokens[0], first); /* the stop token is not output */
  /* min_tokens masks it: generation goes past it. */
  s.params.min_tokens = first + 2;
  run_one(&s, &o);
  assert_true(o.n_tokens[0] >= first + 2);
}

static void test_eos_stop_and_ignore_eos(void **state) {
  (void)state;
  NEED_MODEL();
  /* A chat turn: the model ends its reply ("The answer is: 4") with
   * <|im_end|>. */
  req_spec s = greedy_spec(
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n", 48);
  outcome o;
  run_one(&s, &o);
  assert_int_equal(o.reason[0], NUCLEUS_FINISH_STOP);
  assert_true(o.stop_token[0] >= 0);
  assert_true(nucleus_token_is_eog(g_model, o.stop_token[0]));
  s.params.ignore_eos = true;
  s.params.max_tokens = o.n_tokens[0] + 3;
  outcome o2;
  run_one(&s, &o2);
  assert_int_equal(o2.reason[0], NUCLEUS_FINISH_LENGTH);
  assert_int_equal(o2.n_tokens[0], o.n_tokens[0] + 3);
}

static void test_n_completions_share_prompt(void **state) {
  (void)state;
  NEED_MODEL();
  req_spec s = greedy_spec("Once upon a time", 6);
  s.params.sampling.temperature = 1.0f;
  s.params.sampling.has_seed = true;
  s.params.sampling.seed = 1234;
  outcome one;
  run_one(&s, &one);
  s.params.n = 3;
  outcome three;
  run_one(&s, &three);
  assert_int_equal(three.n_finish, 3);
  /* Completion 0 of n=3 is the n=1 completion with the same seed. */
  assert_int_equal(three.n_tokens[0], one.n_tokens[0]);
  assert_memory_equal(three.tokens[0], one.tokens[0],
                      (size_t)one.n_tokens[0] * sizeof(int32_t));
  for (int i = 0; i < 3; i++)
    assert_int_equal(three.reason[i], NUCLEUS_FINISH_LENGTH);
  bool differ = memcmp(three.tokens[1], three.tokens[0], 6 * 4) ||
                memcmp(three.tokens[2], three.tokens[0], 6 * 4);
  assert_true(differ);
}

static void test_cancel_frees_blocks(void **state) {
  (void)state;
  NEED_MODEL();
  nucleus_engine *e = stepped_engine(2048, 512);
  req_spec s = greedy_spec("Tell me a long story about", -1);
  nucleus_request *r = NULL;
  assert_int_equal(
      nucleus_engine_submit(e, s.prompt, s.n_prompt, &s.params, &r, NULL),
      NUCLEUS_OK);
  outcome o = {0};
  for (int i = 0; i < 4; i++)
    nc_engine_step(e);
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  assert_true(st.kv_blocks_used > 0);
  nucleus_request_cancel(r);
  nc_engine_step(e);
  drain(r, &o);
  assert_int_equal(o.reason[0], NUCLEUS_FINISH_ABORT);
  assert_true(o.done);
  nucleus_engine_get_stats(e, &st);
  assert_int_equal(st.kv_blocks_used, 0);
  nucleus_request_free(r);
  nucleus_engine_free(e);
}

static void test_beam_search(void **state) {
  (void)state;
  NEED_MODEL();
  /* Width 1 is greedy. */
  req_spec g = greedy_spec("The quick brown fox", 6);
  outcome greedy;
  run_one(&g, &greedy);
  req_spec b = g;
  b.params.beam_width = 1;
  outcome beam1;
  run_one(&b, &beam1);
  assert_int_equal(beam1.n_finish, 1);
  assert_int_equal(beam1.text_len[0], greedy.text_len[0]);
  assert_memory_equal(beam1.text[0], greedy.text[0], greedy.text_len[0]);

  /* Width 4, best 2: the beams share the prompt's blocks (copy-on-write
   * of the last partial block only): far fewer than four private copies. */
  req_spec w = greedy_spec("In the beginning there was a small village by the "
                           "sea, where the fishermen went out every morning "
                           "and came back with",
                           8);
  w.params.beam_width = 4;
  w.params.n = 2;
  nucleus_engine *e = stepped_engine(4096, 512);
  nucleus_request *r = NULL;
  assert_int_equal(
      nucleus_engine_submit(e, w.prompt, w.n_prompt, &w.params, &r, NULL),
      NUCLEUS_OK);
  outcome o = {0};
  int64_t peak = 0;
  while (nc_engine_step(e)) {
    nucleus_engine_stats st;
    nucleus_engine_get_stats(e, &st);
    if (st.kv_blocks_used > peak) peak = st.kv_blocks_used;
    drain(r, &o);
  }
  drain(r, &o);
  assert_true(o.done);
  assert_int_equal(o.n_finish, 2);
  assert_true(o.text_len[0] > 0 && o.text_len[1] > 0);
  assert_true(o.reason[0] == NUCLEUS_FINISH_LENGTH ||
              o.reason[0] == NUCLEUS_FINISH_STOP);
  int64_t prompt_blocks = ((int64_t)w.n_prompt + 8 + 15) / 16;
  fprintf(stderr, "  beam 4: peak %lld blocks (prompt+gen alone: %lld)\n",
          (long long)peak, (long long)prompt_blocks);
  assert_true(peak < 4 * prompt_blocks);
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  assert_int_equal(st.kv_blocks_used, 0);
  nucleus_request_free(r);
  nucleus_engine_free(e);
}

static uint64_t rng_next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static void random_specs(req_spec *specs, int n, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < n; i++) {
    req_spec *s = &specs[i];
    memset(s, 0, sizeof *s);
    s->n_prompt = 3 + rng_next(&x) % 40;
    for (size_t k = 0; k < s->n_prompt; k++)
      s->prompt[k] = (int32_t)(rng_next(&x) % (uint64_t)g_vocab);
    s->params = nucleus_request_default_params();
    s->params.max_tokens = 3 + (int32_t)(rng_next(&x) % 10);
    s->params.sampling.logprobs = true;
    s->params.sampling.top_logprobs = 3;
    if (i % 2 == 0) {
      s->params.sampling.temperature = 0;
    } else {
      s->params.sampling.temperature = 0.5f + (float)(rng_next(&x) % 100) / 100;
      s->params.sampling.top_k = (int32_t)(rng_next(&x) % 50);
      s->params.sampling.top_p = 0.8f + (float)(rng_next(&x) % 20) / 100;
      s->params.sampling.repetition_penalty = 1.1f;
      s->params.sampling.has_seed = true;
      s->params.sampling.seed = rng_next(&x);
    }
    if (i % 3 == 1) s->params.grammar = g_grammar; /* masked rows too */
    s->arrival = (int)(rng_next(&x) % 12);
  }
}

static void assert_same(const outcome *a, const outcome *b) {
  assert_int_equal(a->n_tokens[0], b->n_tokens[0]);
  assert_memory_equal(a->tokens[0], b->tokens[0],
                      (size_t)a->n_tokens[0] * sizeof(int32_t));
  /* Bit-identical logprobs. */
  assert_memory_equal(a->logprobs[0], b->logprobs[0],
                      (size_t)a->n_tokens[0] * sizeof(float));
  assert_memory_equal(a->top[0], b->top[0],
                      (size_t)a->n_tokens[0] * sizeof a->top[0][0]);
  assert_int_equal(a->reason[0], b->reason[0]);
  assert_int_equal(a->text_len[0], b->text_len[0]);
  assert_memory_equal(a->text[0], b->text[0], a->text_len[0]);
}

static void check_batch_invariance_of(int64_t kv_tokens, int32_t budget,
                                      bool expect_preemption, bool inspect) {
  enum { N = N_BATCH_REQUESTS };
  req_spec specs[N];
  random_specs(specs, N, 0xC0FFEEull + (uint64_t)kv_tokens);
  static outcome alone[N], together[N];
  memset(alone, 0, sizeof alone);
  memset(together, 0, sizeof together);
  for (int i = 0; i < N; i++)
    run_one(&specs[i], &alone[i]);
  /* inspected together, plain alone: the record changes no output */
  for (int i = 0; inspect && i < N; i++)
    specs[i].params.sampling.inspect_top_n = 1 + i * 4;
  nucleus_engine_stats st;
  run_specs(specs, N, together, kv_tokens, budget, &st);
  for (int i = 0; i < N; i++) {
    assert_same(&alone[i], &together[i]);
    assert_int_equal(together[i].n_inspected,
                     inspect ? together[i].n_tokens[0] : 0);
  }
  assert_int_equal(st.kv_blocks_used, 0);
  assert_true(st.kv_blocks_free > 0);
  if (expect_preemption) assert_true(st.preemptions_total > 0);
  fprintf(stderr, "  kv_tokens=%lld budget=%d: %lld steps, %lld preemptions\n",
          (long long)kv_tokens, budget, (long long)st.steps_total,
          (long long)st.preemptions_total);
}

static void check_batch_invariance(int64_t kv_tokens, int32_t budget,
                                   bool expect_preemption) {
  check_batch_invariance_of(kv_tokens, budget, expect_preemption, false);
}

static void test_batch_invariance(void **state) {
  (void)state;
  NEED_MODEL();
  check_batch_invariance(4096, 512, false);
}

static void test_batch_invariance_inspected(void **state) {
  (void)state;
  NEED_MODEL();
  check_batch_invariance_of(4096, 512, false, true);
}

static void test_chunked_prefill_invariance(void **state) {
  (void)state;
  NEED_MODEL();
  /* A small token budget splits prompts into chunks across steps. */
  check_batch_invariance(4096, 7, false);
}

static void test_memory_pressure_preempts(void **state) {
  (void)state;
  NEED_MODEL();
  /* About a tenth of what 16 requests need at once: preemption and
   * recomputation, results unchanged. */
  check_batch_invariance(80, 512, true);
}

/* Random requests whose prompts share prefixes of a few lengths (within and
 * across block boundaries) of one random base, then diverge. */
static void shared_prefix_specs(req_spec *specs, int n, uint64_t seed) {
  random_specs(specs, n, seed);
  uint64_t x = seed ^ 0x5EEDull;
  int32_t base[48];
  for (int k = 0; k < 48; k++)
    base[k] = (int32_t)(rng_next(&x) % (uint64_t)g_vocab);
  static const int32_t shared[] = {0, 15, 16, 17, 31, 32, 33, 48};
  for (int i = 0; i < n; i++) {
    req_spec *s = &specs[i];
    int32_t m = shared[rng_next(&x) % 8];
    int32_t rest = 1 + (int32_t)(rng_next(&x) % 14);
    memcpy(s->prompt, base, (size_t)m * sizeof *base);
    for (int32_t k = m; k < m + rest; k++)
      s->prompt[k] = (int32_t)(rng_next(&x) % (uint64_t)g_vocab);
    s->n_prompt = (size_t)(m + rest);
  }
}

/* The prompt tokens a request finds cached once its whole prompt was
 * computed: every full block but the one holding its last token. */
static int32_t full_hit(const req_spec *s) {
  return (int32_t)((s->n_prompt - 1) / 16 * 16);
}

/* The same 16 requests cold (alone, no cache), then on one engine with the
 * cache: partially warm (they share prefixes as they arrive), warm (the
 * same requests again) and, with a small pool, under preemption: tokens,
 * logprobs and text bit-identical every time. */
static void check_prefix_invariance(int64_t kv_tokens, int32_t budget,
                                    bool expect_preemption) {
  enum { N = N_BATCH_REQUESTS };
  req_spec specs[N];
  shared_prefix_specs(specs, N, 0xFACADEull + (uint64_t)budget);
  if (expect_preemption) /* all at once, growing: they outgrow the pool */
    for (int i = 0; i < N; i++) {
      specs[i].arrival = 0;
      specs[i].params.max_tokens = 12;
    }
  static outcome cold[N], partial[N], warm[N];
  for (int i = 0; i < N; i++)
    run_cold(&specs[i], &cold[i]);
  nucleus_engine *e = stepped_engine_cache(kv_tokens, budget, true);
  run_specs_on(e, specs, N, partial);
  nucleus_engine_stats st1;
  nucleus_engine_get_stats(e, &st1);
  run_specs_on(e, specs, N, warm);
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  nucleus_engine_free(e);
  int32_t hits = 0;
  for (int i = 0; i < N; i++) {
    assert_same(&cold[i], &partial[i]);
    assert_same(&cold[i], &warm[i]);
    assert_int_equal(cold[i].usage.cached_tokens, 0);
    hits += partial[i].usage.cached_tokens > 0;
    if (!expect_preemption) /* a big pool keeps every prompt */
      assert_int_equal(warm[i].usage.cached_tokens, full_hit(&specs[i]));
    assert_true(warm[i].usage.cached_tokens <= full_hit(&specs[i]));
  }
  assert_true(hits > 0); /* some arrived after their prefix was cached */
  assert_true(st1.prefix_cache_hit_tokens_total > 0);
  assert_true(st.prefix_cache_hit_tokens_total >
              st1.prefix_cache_hit_tokens_total);
  assert_true(st.prefix_cache_queried_tokens_total >=
              st.prefix_cache_hit_tokens_total);
  assert_int_equal(st.kv_blocks_used, 0); /* cached blocks count as free */
  assert_true(st.prefix_cache_blocks > 0);
  if (expect_preemption) {
    assert_true(st.preemptions_total > 0);
    assert_true(st.prefix_cache_evictions_total > 0);
  }
  fprintf(stderr,
          "  prefix kv_tokens=%lld budget=%d: %d/%d partial hits, hit "
          "%lld/%lld tokens, %lld preemptions, %lld evictions\n",
          (long long)kv_tokens, budget, hits, N,
          (long long)st.prefix_cache_hit_tokens_total,
          (long long)st.prefix_cache_queried_tokens_total,
          (long long)st.preemptions_total,
          (long long)st.prefix_cache_evictions_total);
}

static void test_prefix_cache_invariance(void **state) {
  (void)state;
  NEED_MODEL();
  check_prefix_invariance(4096, 512, false);
}

static void test_prefix_cache_chunked_invariance(void **state) {
  (void)state;
  NEED_MODEL();
  check_prefix_invariance(4096, 7, false); /* the rest prefills in chunks */
}

static void test_prefix_cache_under_preemption(void **state) {
  (void)state;
  NEED_MODEL();
  check_prefix_invariance(96, 512, true);
}

/* n > 1 and beams share the prompt's blocks with later requests too. */
static void test_prefix_cache_n_and_salt(void **state) {
  (void)state;
  NEED_MODEL();
  req_spec s = greedy_spec("The quick brown fox jumps over the lazy dog, and "
                           "then the dog wakes up and chases the fox across "
                           "the field",
                           5);
  assert_true(s.n_prompt > 17);
  s.params.sampling.temperature = 1.0f;
  s.params.sampling.has_seed = true;
  s.params.sampling.seed = 99;
  s.params.n = 3;
  outcome cold, first, again, salted, salted2;
  nucleus_engine *c = stepped_engine_cache(4096, 512, false);
  run_specs_on(c, &s, 1, &cold);
  nucleus_engine_free(c);
  nucleus_engine *e = stepped_engine(4096, 512);
  run_specs_on(e, &s, 1, &first);
  run_specs_on(e, &s, 1, &again);
  s.params.cache_salt = "tenant-a";
  run_specs_on(e, &s, 1, &salted);
  run_specs_on(e, &s, 1, &salted2);
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  nucleus_engine_free(e);
  assert_int_equal(first.usage.cached_tokens, 0);
  assert_int_equal(again.usage.cached_tokens, full_hit(&s));
  assert_int_equal(salted.usage.cached_tokens, 0); /* another tenant */
  assert_int_equal(salted2.usage.cached_tokens, full_hit(&s));
  const outcome *all[] = {&first, &again, &salted, &salted2};
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < 3; i++) {
      assert_int_equal(all[k]->n_tokens[i], cold.n_tokens[i]);
      assert_memory_equal(all[k]->tokens[i], cold.tokens[i],
                          (size_t)cold.n_tokens[i] * sizeof(int32_t));
      assert_memory_equal(all[k]->logprobs[i], cold.logprobs[i],
                          (size_t)cold.n_tokens[i] * sizeof(float));
    }
  assert_int_equal(st.kv_blocks_used, 0);
  /* An over-long salt is refused. */
  char big[NUCLEUS_MAX_CACHE_SALT_BYTES + 2];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  s.params.cache_salt = big;
  nucleus_error err = {0};
  assert_int_equal(nucleus_request_params_validate(g_model, &s.params, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
}

/* Feeds text to a fresh matcher of k_grammar: 1 a sentence, 0 a viable
 * prefix, -1 neither. */
static int grammar_verdict(const char *text, size_t len) {
  nc_grammar *g = NULL;
  assert_int_equal(
      nc_grammar_parse(k_grammar, strlen(k_grammar), NULL, &g, NULL), NC_OK);
  nc_grammar_matcher *m = NULL;
  assert_int_equal(nc_grammar_matcher_create(g, &m, NULL), NC_OK);
  bool ok = false;
  assert_int_equal(nc_grammar_matcher_accept(m, text, len, &ok, NULL), NC_OK);
  int v = !ok ? -1 : nc_grammar_matcher_complete(m) ? 1 : 0;
  nc_grammar_matcher_free(m);
  nc_grammar_free(g);
  return v;
}

static void test_grammar_constrains_output(void **state) {
  (void)state;
  NEED_MODEL();
  for (int seed = 1; seed <= 4; seed++) {
    req_spec s = greedy_spec("Write a poem about the sea.", MAX_GEN);
    s.params.sampling.temperature = 1.0f;
    s.params.sampling.has_seed = true;
    s.params.sampling.seed = (uint64_t)seed;
    s.params.grammar = g_grammar;
    outcome o;
    run_one(&s, &o);
    fprintf(stderr, "  seed %d: %.*s\n", seed, (int)o.text_len[0], o.text[0]);
    /* A completed grammar ends the request with stop. */
    assert_int_equal(o.reason[0], NUCLEUS_FINISH_STOP);
    assert_int_equal(grammar_verdict(o.text[0], o.text_len[0]), 1);
  }
  /* A budget that runs out first: length, and a viable prefix. */
  req_spec s = greedy_spec("Write a poem about the sea.", 3);
  s.params.grammar = g_grammar;
  outcome o;
  run_one(&s, &o);
  assert_int_equal(o.reason[0], NUCLEUS_FINISH_LENGTH);
  assert_int_equal(grammar_verdict(o.text[0], o.text_len[0]), 0);
  /* Bad grammars and grammars with beam search are refused. */
  nucleus_grammar *bad = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_grammar_create("root ::= x", 10, NULL, &bad, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_null(bad);
  assert_non_null(strstr(err.message, "line 1 column 10"));
  nucleus_engine *e = stepped_engine(1024, 512);
  s.params.beam_width = 2;
  nucleus_request *r = NULL;
  assert_int_equal(
      nucleus_engine_submit(e, s.prompt, s.n_prompt, &s.params, &r, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "grammars"));
  nucleus_engine_free(e);
}

/* Several grammar requests in one step: their masks are computed on the
 * model's threads at once; each output is bit for bit the request's alone
 * (n = 2 forks included), and a grammar past its per-token budget (1,000
 * alternatives that stay apart) ends that request alone with an error the
 * event says is the grammar's. */
static void test_grammar_masks_of_one_step(void **state) {
  (void)state;
  NEED_MODEL();
  enum { N_REQ = 6 };
  static char wide_text[64 * 1024];
  size_t o = (size_t)snprintf(wide_text, sizeof wide_text, "root ::= ");
  for (int i = 0; i < 1000; i++)
    o += (size_t)snprintf(wide_text + o, sizeof wide_text - o, "%sa%d",
                          i ? " | " : "", i);
  o += (size_t)snprintf(wide_text + o, sizeof wide_text - o, "\n");
  for (int i = 0; i < 1000; i++)
    o += (size_t)snprintf(wide_text + o, sizeof wide_text - o,
                          "a%d ::= [a-z]{0,40} \"!%d\"\n", i, i);
  nucleus_grammar *wide = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_grammar_create(wide_text, o, NULL, &wide, &err),
                   NUCLEUS_OK);
  req_spec specs[N_REQ];
  for (int i = 0; i < N_REQ; i++) {
    specs[i] =
        greedy_spec(i % 2 ? "Describe a cat." : "Write a poem.", MAX_GEN);
    specs[i].params.sampling.temperature = 1.0f;
    specs[i].params.sampling.has_seed = true;
    specs[i].params.sampling.seed = (uint64_t)(11 + i);
    specs[i].params.sampling.logprobs = true;
    specs[i].params.grammar = g_grammar;
  }
  specs[2].params.n = 2;
  specs[4].params.grammar = wide;
  specs[5].params.grammar = NULL; /* one without a grammar beside them */
  outcome together[N_REQ];
  run_specs(specs, N_REQ, together, 8192, 512, NULL);
  for (int i = 0; i < N_REQ; i++) {
    outcome alone;
    run_one(&specs[i], &alone);
    for (int k = 0; k < (specs[i].params.n > 1 ? 2 : 1); k++) {
      assert_int_equal(together[i].reason[k], alone.reason[k]);
      assert_int_equal(together[i].n_tokens[k], alone.n_tokens[k]);
      assert_memory_equal(together[i].tokens[k], alone.tokens[k],
                          (size_t)alone.n_tokens[k] * sizeof(int32_t));
      assert_memory_equal(together[i].logprobs[k], alone.logprobs[k],
                          (size_t)alone.n_tokens[k] * sizeof(float));
      if (i != 4 && i != 5) {
        assert_int_equal(together[i].reason[k], NUCLEUS_FINISH_STOP);
        assert_int_equal(
            grammar_verdict(together[i].text[k], together[i].text_len[k]), 1);
      }
    }
  }
  assert_int_equal(together[4].reason[0], NUCLEUS_FINISH_ERROR);
  assert_true(together[4].grammar_error[0]);
  assert_int_equal(together[4].n_tokens[0], 0);
  assert_false(together[5].grammar_error[0]);
  nucleus_grammar_free(wide);
}

/* A lazy grammar: free output until the trigger, then the grammar from the
 * trigger's first byte, and the request ends when it is complete. */
static void test_lazy_grammar_starts_at_trigger(void **state) {
  (void)state;
  NEED_MODEL();
  static const char gbnf[] = "root ::= \" the\" [a-z]{1,3} \"!\"";
  nucleus_grammar *lazy = NULL;
  nucleus_error err = {0};
  assert_int_equal(
      nucleus_grammar_create(gbnf, strlen(gbnf), NULL, &lazy, &err),
      NUCLEUS_OK);
  req_spec s = greedy_spec("The three primary colors are", MAX_GEN);
  s.params.grammar = lazy;
  s.params.grammar_trigger = " the";
  outcome o;
  run_one(&s, &o);
  req_spec free_spec = greedy_spec("The three primary colors are", MAX_GEN);
  outcome f;
  run_one(&free_spec, &f);
  const char *t = o.text[0];
  size_t n = (size_t)o.text_len[0];
  const char *at = memmem(t, n, " the", 4);
  fprintf(stderr, "  lazy (%d): %.*s\n  free: %.*s\n", (int)o.reason[0], (int)n,
          t, (int)f.text_len[0], f.text[0]);
  assert_non_null(at); /* the free text reaches " the" */
  /* Before the trigger: the free output, token for token. */
  size_t pre = (size_t)(at - t);
  assert_true((size_t)f.text_len[0] >= pre);
  assert_memory_equal(t, f.text[0], pre);
  /* From it: " the" + 1-3 letters + "!", and the grammar ended it. */
  const char *q = at + 4;
  size_t k = 0;
  while (q + k < t + n && q[k] >= 'a' && q[k] <= 'z')
    k++;
  assert_true(k >= 1 && k <= 3);
  assert_true(q + k + 1 == t + n && q[k] == '!');
  assert_int_equal(o.reason[0], NUCLEUS_FINISH_STOP);
  /* A trigger without a grammar, or too long, is refused. */
  nucleus_engine *e = stepped_engine(1024, 512);
  req_spec bad = greedy_spec("x", 2);
  bad.params.grammar_trigger = "x";
  nucleus_request *r = NULL;
  assert_int_equal(
      nucleus_engine_submit(e, bad.prompt, bad.n_prompt, &bad.params, &r, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  nucleus_engine_free(e);
  nucleus_grammar_free(lazy);
}

/* A request that could not finish even alone in the pool is refused at
 * submit, naming the pool, not after it ran as far as the pool goes; one
 * that needs every block of it runs to the end. */
static void test_request_larger_than_pool_refused_at_submit(void **state) {
  (void)state;
  NEED_MODEL();
  req_spec s = greedy_spec("one two three four five six seven eight nine "
                           "ten eleven twelve thirteen fourteen",
                           40);
  nucleus_engine *e = stepped_engine(16, 512); /* one block of 16 tokens */
  nucleus_request *r = NULL;
  nucleus_error err = {0};
  assert_int_equal(
      nucleus_engine_submit(e, s.prompt, s.n_prompt, &s.params, &r, &err),
      NUCLEUS_ERR_LIMIT);
  assert_non_null(strstr(err.message, "KV cache"));
  /* No max_tokens and end tokens live: it may end at its first token, so
   * it is admitted when its prompt fits (and refused when that does not). */
  s.params.max_tokens = -1;
  assert_int_equal(
      nucleus_engine_submit(e, s.prompt, s.n_prompt, &s.params, &r, &err),
      NUCLEUS_OK);
  nucleus_request_free(r);
  req_spec big = greedy_spec("one two three four five six seven eight nine "
                             "ten eleven twelve thirteen fourteen fifteen "
                             "sixteen seventeen eighteen",
                             -1);
  assert_true(big.n_prompt > 16);
  assert_int_equal(
      nucleus_engine_submit(e, big.prompt, big.n_prompt, &big.params, &r, &err),
      NUCLEUS_ERR_LIMIT);
  nucleus_engine_free(e);
  /* 4 blocks: n = 2 completions of g tokens after a prompt of p share its
   * full blocks and own the rest: p/16 + 2 (ceil((p + g - 1)/16) - p/16). */
  int32_t p = s.n_prompt, full = p / 16, g = 1;
  while (full + 2 * ((p + g + 15) / 16 - full) <= 4)
    g++; /* g + 1 tokens would not fit: g is the most that does */
  s.params.n = 2;
  s.params.ignore_eos = true;
  s.params.max_tokens = g;
  s.arrival = 0;
  outcome o;
  run_specs(&s, 1, &o, 64, 512, NULL);
  assert_int_equal(o.reason[0], NUCLEUS_FINISH_LENGTH);
  assert_int_equal(o.reason[1], NUCLEUS_FINISH_LENGTH);
  assert_int_equal(o.n_tokens[0], g);
  e = stepped_engine(64, 512);
  s.params.max_tokens = g + 1;
  assert_int_equal(
      nucleus_engine_submit(e, s.prompt, s.n_prompt, &s.params, &r, &err),
      NUCLEUS_ERR_LIMIT);
  nucleus_engine_free(e);
}

/* One run of test_prompt_chunks_beside_decoding: a stream decodes, then a
 * 480-token prompt arrives; the steps until that prompt is in (*b_steps),
 * the stream's tokens (a). Every step gives the stream its token. */
static void prompt_beside_decoding(float decode_stall, int *b_steps,
                                   outcome *a) {
  req_spec sa = greedy_spec("Tell me a long story about", 60);
  sa.params.ignore_eos = true;
  static int32_t b_prompt[480];
  for (int i = 0; i < 480; i++)
    b_prompt[i] = sa.prompt[1 + i % (sa.n_prompt - 1)];
  nucleus_request_params bp = nucleus_request_default_params();
  bp.sampling.temperature = 0;
  bp.max_tokens = 1;
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.kv_cache_tokens = 4096;
  ep.no_prefix_cache = true;
  ep.decode_stall = decode_stall;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  assert_int_equal(nc_engine_create_stepped(g_model, &ep, &e, &err), NC_OK);
  nucleus_request *ra = NULL, *rb = NULL;
  assert_int_equal(
      nucleus_engine_submit(e, sa.prompt, sa.n_prompt, &sa.params, &ra, NULL),
      NUCLEUS_OK);
  memset(a, 0, sizeof *a);
  for (int i = 0; i < 6; i++) { /* its prompt, then decode steps (timed) */
    nc_engine_step(e);
    drain(ra, a);
  }
  assert_int_equal(a->n_tokens[0], 6);
  assert_int_equal(nucleus_engine_submit(e, b_prompt, 480, &bp, &rb, NULL),
                   NUCLEUS_OK);
  outcome b = {0};
  *b_steps = 0;
  while (!b.done) {
    const int32_t before = a->n_tokens[0];
    nc_engine_step(e);
    ++*b_steps;
    drain(ra, a);
    drain(rb, &b);
    assert_int_equal(a->n_tokens[0], before + 1);
    assert_true(*b_steps < 50);
  }
  assert_int_equal(b.n_tokens[0], 1);
  while (nc_engine_step(e))
    drain(ra, a);
  drain(ra, a);
  assert_true(a->done);
  assert_int_equal(a->n_tokens[0], 60);
  nucleus_request_free(ra);
  nucleus_request_free(rb);
  nucleus_engine_free(e);
}

/* decode_stall (prefill_budget.h): while a stream decodes, a long prompt
 * comes in chunks that keep each step within 3 of its decode steps (a
 * prompt token costs far more than a 480th of a decode step, so more than
 * two steps, counted, not timed), the stream getting its token every
 * step; with 1000 (no bound) the prompt goes in at once. The stream's
 * tokens are the same. */
static void test_prompt_chunks_beside_decoding(void **state) {
  (void)state;
  NEED_MODEL();
  static outcome bounded, whole;
  int steps_bounded = 0, steps_whole = 0;
  prompt_beside_decoding(3, &steps_bounded, &bounded);
  prompt_beside_decoding(1000, &steps_whole, &whole);
  assert_int_equal(steps_whole, 1);
  assert_true(steps_bounded >= 3);
  assert_memory_equal(bounded.tokens[0], whole.tokens[0], 60 * sizeof(int32_t));
}

static void test_bad_requests_rejected(void **state) {
  (void)state;
  NEED_MODEL();
  nucleus_engine *e = stepped_engine(1024, 512);
  req_spec s = greedy_spec("hello", 4);
  nucleus_request *r = NULL;
  nucleus_error err = {0};
  s.params.sampling.top_p = 1.5f;
  assert_int_equal(
      nucleus_engine_submit(e, s.prompt, s.n_prompt, &s.params, &r, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "top_p"));
  s.params.sampling.top_p = 1.0f;
  int32_t bad = g_vocab + 5;
  assert_int_equal(nucleus_engine_submit(e, &bad, 1, &s.params, &r, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  static int32_t long_prompt[600];
  assert_int_equal(
      nucleus_engine_submit(e, long_prompt, 600, &s.params, &r, &err),
      NUCLEUS_ERR_LIMIT);
  assert_non_null(strstr(err.message, "context"));
  nucleus_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_budget_is_length_never_stop),
      cmocka_unit_test(test_stop_string_and_stop_token),
      cmocka_unit_test(test_eos_stop_and_ignore_eos),
      cmocka_unit_test(test_n_completions_share_prompt),
      cmocka_unit_test(test_cancel_frees_blocks),
      cmocka_unit_test(test_beam_search),
      cmocka_unit_test(test_grammar_constrains_output),
      cmocka_unit_test(test_grammar_masks_of_one_step),
      cmocka_unit_test(test_lazy_grammar_starts_at_trigger),
      cmocka_unit_test(test_batch_invariance),
      cmocka_unit_test(test_batch_invariance_inspected),
      cmocka_unit_test(test_chunked_prefill_invariance),
      cmocka_unit_test(test_memory_pressure_preempts),
      cmocka_unit_test(test_prefix_cache_invariance),
      cmocka_unit_test(test_prefix_cache_chunked_invariance),
      cmocka_unit_test(test_prefix_cache_under_preemption),
      cmocka_unit_test(test_prefix_cache_n_and_salt),
      cmocka_unit_test(test_request_larger_than_pool_refused_at_submit),
      cmocka_unit_test(test_bad_requests_rejected),
      cmocka_unit_test(test_prompt_chunks_beside_decoding),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
