/* Speculative decoding in the engine, on the real model: the output with
 * drafts is token for token, logprob for logprob (bits), text and finish
 * reason what decoding without drafts gives: greedy at every draft length,
 * sampled with the same seed at several temperatures (with top-p, min-p
 * and penalties), with stop strings, EOS, max_tokens, min_tokens and
 * grammars inside accepted runs, n > 1, and in random batch mixes beside
 * requests without drafts. Predicted outputs accept what matches and
 * change nothing else. The KV pool is whole after each run, and the blocks
 * a speculative request leaves in the prefix cache hold exactly what a
 * cold run computes. Bad speculative parameters are refused. */
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
#include "sampling/spec_policy.h"
#include "nucleus.h"
#include "test_require.h"

#define MAX_GEN 96
#define MAX_N 3

typedef struct outcome {
  int32_t tokens[MAX_N][MAX_GEN];
  float logprobs[MAX_N][MAX_GEN];
  nucleus_token_logprob top[MAX_N][MAX_GEN][2];
  int32_t n_tokens[MAX_N];
  char text[MAX_N][4096];
  size_t text_len[MAX_N];
  nucleus_finish_reason reason[MAX_N];
  bool done;
  nucleus_usage usage;
} outcome;

typedef struct req {
  int32_t prompt[256];
  size_t n_prompt;
  nucleus_request_params params;
  int arrival;
} req;

static nucleus_model *g_model;
static int32_t g_vocab;
static nucleus_grammar *g_grammar;
static char g_why[640];

/* A list the model continues by repeating: n-gram drafts hit often. */
static const char k_repetitive[] =
    "Monday, Tuesday, Wednesday, Thursday, Friday. Monday, Tuesday, "
    "Wednesday, Thursday, Friday. Monday, Tuesday,";
static const char k_grammar[] =
    "root ::= (\"Monday\" | \"Tuesday\" | \", \" | \"Friday\")+ \".\"\n";

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

static void drain(nucleus_request *r, outcome *o) {
  nucleus_event ev;
  while (nucleus_request_next_event(r, &ev, 0) == NUCLEUS_OK) {
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
      for (int j = 0; j < ev.n_top_logprobs && j < 2; j++)
        o->top[i][k][j] = ev.top_logprobs[j];
      if (ev.inspect) assert_int_equal(ev.inspect->token, ev.token);
    } else if (ev.kind == NUCLEUS_EVENT_FINISH) {
      assert_int_equal(o->reason[i], NUCLEUS_FINISH_NONE);
      o->reason[i] = ev.finish_reason;
    }
  }
}

/* The tests' verify row cost: cheap rows, so that every drafter drafts
 * at its acceptance whatever the machine's timings (with 0, the default,
 * the draft lengths, and so the drafted and accepted counts, would follow
 * the measured step times; the output would not). */
#define TEST_ROW_COST 0.01f

static nucleus_engine *engine_costed(int32_t budget, bool prefix_cache,
                                     float row_cost) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.kv_cache_tokens = 8192;
  ep.max_batch_tokens = budget;
  ep.no_prefix_cache = !prefix_cache;
  ep.spec_row_cost = row_cost;
  nucleus_engine *e = NULL;
  assert_int_equal(nc_engine_create_stepped(g_model, &ep, &e, NULL), NC_OK);
  return e;
}

static nucleus_engine *engine_of(int32_t budget, bool prefix_cache) {
  return engine_costed(budget, prefix_cache, TEST_ROW_COST);
}

static void run_on(nucleus_engine *e, const req *rs, int n, outcome *outs) {
  nucleus_request *handles[32] = {0};
  assert_true(n <= 32);
  memset(outs, 0, (size_t)n * sizeof *outs);
  int submitted = 0;
  for (int step = 0; step < 20000; step++) {
    for (int i = 0; i < n; i++) {
      if (rs[i].arrival != step) continue;
      nucleus_error err = {0};
      nucleus_status st = nucleus_engine_submit(
          e, rs[i].prompt, rs[i].n_prompt, &rs[i].params, &handles[i], &err);
      if (st) fprintf(stderr, "submit: %s\n", err.message);
      assert_int_equal(st, NUCLEUS_OK);
      submitted++;
    }
    bool more = nc_engine_step(e);
    for (int i = 0; i < n; i++)
      if (handles[i]) drain(handles[i], &outs[i]);
    bool all = submitted == n;
    for (int i = 0; i < n && all; i++)
      all = outs[i].done;
    if (all && !more) break;
  }
  for (int i = 0; i < n; i++) {
    assert_true(outs[i].done);
    nucleus_request_free(handles[i]);
  }
}

/* Runs rs on a new engine; the pool is whole at the end. */
static void run(const req *rs, int n, outcome *outs, int32_t budget,
                nucleus_engine_stats *stats) {
  nucleus_engine *e = engine_of(budget, true);
  run_on(e, rs, n, outs);
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  assert_int_equal(st.kv_blocks_used, 0);
  if (stats) *stats = st;
  nucleus_engine_free(e);
}

static req make_req(const char *text, int32_t max_tokens) {
  req r = {0};
  int32_t *ids = NULL;
  size_t n = 0;
  assert_int_equal(
      nucleus_tokenize(g_model, text, strlen(text), true, true, &ids, &n, NULL),
      NUCLEUS_OK);
  assert_true(n <= 256);
  memcpy(r.prompt, ids, n * sizeof *ids);
  r.n_prompt = n;
  nucleus_free(ids);
  r.params = nucleus_request_default_params();
  r.params.sampling.temperature = 0;
  r.params.sampling.logprobs = true;
  r.params.sampling.top_logprobs = 2;
  r.params.max_tokens = max_tokens;
  return r;
}

static void with_spec(req *r, nucleus_spec_type type, int32_t draft_max) {
  r->params.speculative.type = type;
  r->params.speculative.draft_max = draft_max;
}

static void assert_same(const outcome *a, const outcome *b, int n) {
  for (int i = 0; i < n; i++) {
    assert_int_equal(a->n_tokens[i], b->n_tokens[i]);
    assert_memory_equal(a->tokens[i], b->tokens[i],
                        (size_t)a->n_tokens[i] * sizeof(int32_t));
    assert_memory_equal(a->logprobs[i], b->logprobs[i],
                        (size_t)a->n_tokens[i] * sizeof(float));
    assert_memory_equal(a->top[i], b->top[i],
                        (size_t)a->n_tokens[i] * sizeof a->top[i][0]);
    assert_int_equal(a->reason[i], b->reason[i]);
    assert_int_equal(a->text_len[i], b->text_len[i]);
    assert_memory_equal(a->text[i], b->text[i], a->text_len[i]);
  }
  assert_int_equal(a->usage.completion_tokens, b->usage.completion_tokens);
}

/* Greedy: identical at draft lengths 1..64; drafts are made and kept. */
static void test_greedy_identity_every_draft_length(void **state) {
  (void)state;
  NEED_MODEL();
  req plain = make_req(k_repetitive, 64);
  outcome base, spec;
  run(&plain, 1, &base, 512, NULL);
  assert_int_equal(base.usage.draft_tokens, 0);
  const int32_t lengths[] = {1, 2, 3, 5, 8, 16, 32, 64};
  for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
    req r = plain;
    with_spec(&r, NUCLEUS_SPEC_NGRAM, lengths[i]);
    nucleus_engine_stats st;
    run(&r, 1, &spec, 512, &st);
    assert_same(&base, &spec, 1);
    fprintf(stderr, "  draft_max %2d: %d drafted, %d accepted, %lld steps\n",
            lengths[i], spec.usage.draft_tokens,
            spec.usage.accepted_draft_tokens, (long long)st.steps_total);
    assert_true(spec.usage.accepted_draft_tokens > 0);
    assert_true(spec.usage.accepted_draft_tokens <= spec.usage.draft_tokens);
    assert_int_equal(st.spec_drafted_total[NUCLEUS_SPEC_NGRAM],
                     spec.usage.draft_tokens);
    assert_int_equal(st.spec_accepted_total[NUCLEUS_SPEC_NGRAM],
                     spec.usage.accepted_draft_tokens);
    /* fewer steps than tokens: several tokens per step */
    assert_true(st.steps_total < 64 + 1);
    /* drafts past 8 grow with the runs kept (nc_spec_length_cap): 8, 16,
     * 32 kept first, no 64-draft run within 64 tokens */
    for (int32_t k = 33; k <= NUCLEUS_MAX_DRAFT; k++)
      assert_int_equal(st.spec_accepted_hist[k], 0);
    if (lengths[i] <= NC_SPEC_GROW_FROM) continue;
    int64_t past = 0;
    for (int32_t k = NC_SPEC_GROW_FROM + 1; k <= NUCLEUS_MAX_DRAFT; k++)
      past += st.spec_accepted_hist[k];
    assert_true(past > 0); /* the runs did grow */
  }
}

/* The draft length follows the row cost: rows dearer than any acceptance
 * repays (4 decode steps each) draft nothing; the default, the engine's
 * measured cost, drafts where it pays (timing-dependent counts); the
 * output is the plain run's either way. */
static void test_row_cost_decides(void **state) {
  (void)state;
  NEED_MODEL();
  req plain = make_req(k_repetitive, 32);
  outcome base, spec;
  run(&plain, 1, &base, 512, NULL);
  req r = plain;
  with_spec(&r, NUCLEUS_SPEC_NGRAM, 8);
  const float costs[] = {4.0f, 0.0f};
  for (int i = 0; i < 2; i++) {
    nucleus_engine *e = engine_costed(512, true, costs[i]);
    run_on(e, &r, 1, &spec);
    nucleus_engine_stats st;
    nucleus_engine_get_stats(e, &st);
    nucleus_engine_free(e);
    assert_same(&base, &spec, 1);
    fprintf(stderr, "  row cost %.2f: %d drafted, %d accepted, %lld steps\n",
            (double)costs[i], spec.usage.draft_tokens,
            spec.usage.accepted_draft_tokens, (long long)st.steps_total);
    if (costs[i] > 0) assert_int_equal(spec.usage.draft_tokens, 0);
  }
}

/* Sampling with a seed: the same tokens as without drafts, at several
 * temperatures with truncation and penalties, n = 3. */
static void test_sampled_identity(void **state) {
  (void)state;
  NEED_MODEL();
  const float temps[] = {0.7f, 1.0f, 1.5f};
  for (size_t t = 0; t < 3; t++) {
    req plain = make_req(k_repetitive, 40);
    nucleus_sampling_params *s = &plain.params.sampling;
    s->temperature = temps[t];
    s->top_p = 0.95f;
    s->min_p = 0.05f;
    s->repetition_penalty = t == 1 ? 1.1f : 1.0f;
    s->frequency_penalty = t == 2 ? 0.2f : 0.0f;
    s->has_seed = true;
    s->seed = 100 + t;
    plain.params.n = MAX_N;
    req r = plain;
    with_spec(&r, NUCLEUS_SPEC_NGRAM, 6);
    outcome base, spec;
    run(&plain, 1, &base, 512, NULL);
    run(&r, 1, &spec, 512, NULL);
    assert_same(&base, &spec, MAX_N);
    fprintf(stderr, "  T %.1f: %d drafted, %d accepted\n", (double)temps[t],
            spec.usage.draft_tokens, spec.usage.accepted_draft_tokens);
    assert_true(spec.usage.draft_tokens > 0);
  }
}

/* Stop strings, EOS, max_tokens, min_tokens and a grammar, with drafts
 * accepted around them. */
static void test_stops_and_grammar_inside_drafts(void **state) {
  (void)state;
  NEED_MODEL();
  req plain = make_req(k_repetitive, 48);
  outcome base;
  run(&plain, 1, &base, 512, NULL);
  /* a stop string from the middle of the greedy text */
  assert_true(base.text_len[0] > 30);
  char stop[8];
  memcpy(stop, base.text[0] + 20, 4);
  stop[4] = 0;
  const char *stops[] = {stop};
  req variants[6];
  for (int v = 0; v < 6; v++)
    variants[v] = plain;
  variants[0].params.stop = stops, variants[0].params.n_stop = 1;
  variants[1].params.max_tokens = 7;
  variants[2].params.min_tokens = 30;
  variants[2].params.stop = stops, variants[2].params.n_stop = 1;
  variants[3].params.grammar = g_grammar;
  variants[4].params.stop_token_ids = &base.tokens[0][9];
  variants[4].params.n_stop_token_ids = 1;
  req chat =
      make_req("<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n"
               "Hi! Say hi.<|im_end|>\n<|im_start|>user\nSay hi.<|im_end|>\n"
               "<|im_start|>assistant\n",
               48);
  variants[5] = chat; /* ends with EOS */
  for (int v = 0; v < 6; v++) {
    outcome a, b;
    req r = variants[v];
    run(&r, 1, &a, 512, NULL);
    with_spec(&r, NUCLEUS_SPEC_NGRAM, 8);
    run(&r, 1, &b, 512, NULL);
    fprintf(stderr, "  variant %d: %d tokens, reason %d, %d/%d accepted\n", v,
            a.n_tokens[0], (int)a.reason[0], b.usage.accepted_draft_tokens,
            b.usage.draft_tokens);
    assert_same(&a, &b, 1);
  }
}

static uint64_t rng_next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* Random requests (some repetitive, some random tokens; greedy and
 * sampled; grammars), half with drafts, arriving at random steps: each
 * equals its run alone without drafts. */
static void test_batch_mix_invariance(void **state) {
  (void)state;
  NEED_MODEL();
  enum { N = 10 };
  static req rs[N];
  static outcome alone[N], together[N];
  uint64_t x = 0x5EEDull;
  req rep = make_req(k_repetitive, 0);
  for (int i = 0; i < N; i++) {
    req *r = &rs[i];
    *r = rep;
    if (i % 3 == 2) { /* random tokens */
      r->n_prompt = 5 + rng_next(&x) % 30;
      for (size_t k = 0; k < r->n_prompt; k++)
        r->prompt[k] = (int32_t)(rng_next(&x) % (uint64_t)g_vocab);
    }
    r->params.max_tokens = 8 + (int32_t)(rng_next(&x) % 30);
    if (i % 2) {
      r->params.sampling.temperature = 0.6f + (float)(rng_next(&x) % 80) / 100;
      r->params.sampling.top_p = 0.9f;
      r->params.sampling.has_seed = true;
      r->params.sampling.seed = rng_next(&x);
    }
    if (i == 4) r->params.grammar = g_grammar;
    r->arrival = (int)(rng_next(&x) % 8);
  }
  for (int i = 0; i < N; i++)
    run(&rs[i], 1, &alone[i], 512, NULL);
  for (int i = 0; i < N; i++)
    if (i % 4 != 3)
      with_spec(&rs[i], NUCLEUS_SPEC_NGRAM, 1 + (int32_t)(rng_next(&x) % 10));
  nucleus_engine_stats st;
  run(rs, N, together, 512, &st);
  for (int i = 0; i < N; i++)
    assert_same(&alone[i], &together[i], 1);
  assert_true(st.spec_accepted_total[NUCLEUS_SPEC_NGRAM] > 0);
  /* and with a tiny batch budget: drafts only where rows are left over */
  run(rs, N, together, 9, &st);
  for (int i = 0; i < N; i++)
    assert_same(&alone[i], &together[i], 1);
}

/* Predicted outputs: the plain output as the prediction is accepted almost
 * whole; a wrong prediction is rejected; neither changes the output. */
static void test_prediction(void **state) {
  (void)state;
  NEED_MODEL();
  req plain = make_req("Write the numbers from one to ten in words:", 40);
  plain.params.ignore_eos = true;
  outcome base, spec;
  run(&plain, 1, &base, 512, NULL);
  req r = plain;
  with_spec(&r, NUCLEUS_SPEC_PREDICTION, 16);
  r.params.speculative.prediction = base.tokens[0];
  r.params.speculative.n_prediction = (size_t)base.n_tokens[0];
  nucleus_engine_stats st;
  run(&r, 1, &spec, 512, &st);
  assert_same(&base, &spec, 1);
  fprintf(stderr, "  right: %d drafted, %d accepted, %lld steps\n",
          spec.usage.draft_tokens, spec.usage.accepted_draft_tokens,
          (long long)st.steps_total);
  /* every draft kept: the first token (from the prompt's row) and one
   * token per step after the drafts were not drafted */
  assert_int_equal(spec.usage.accepted_draft_tokens, spec.usage.draft_tokens);
  assert_int_equal(spec.usage.accepted_draft_tokens,
                   base.n_tokens[0] - (int)st.steps_total);
  assert_true(st.steps_total <= 6);
  assert_int_equal(st.spec_accepted_total[NUCLEUS_SPEC_PREDICTION],
                   spec.usage.accepted_draft_tokens);
  int32_t wrong[20];
  for (int i = 0; i < 20; i++)
    wrong[i] = (base.tokens[0][i] + 7) % g_vocab;
  r.params.speculative.prediction = wrong;
  r.params.speculative.n_prediction = 20;
  run(&r, 1, &spec, 512, NULL);
  assert_same(&base, &spec, 1);
  assert_true(spec.usage.draft_tokens > 0);
  assert_true(spec.usage.accepted_draft_tokens < spec.usage.draft_tokens);
}

/* Predicted outputs where the output has left the prediction for text of
 * its own (a list it repeats) while the prediction holds each two-token
 * key of that text with another token after it: the prompt and output's
 * lookup, which matches more of the output's tail, drafts there, and keeps
 * at least half of what the n-gram drafter keeps. */
static void test_prediction_yields_to_a_longer_match(void **state) {
  (void)state;
  NEED_MODEL();
  req plain = make_req(k_repetitive, 60);
  plain.params.ignore_eos = true;
  outcome base, ngram, spec;
  run(&plain, 1, &base, 512, NULL);
  req r = plain;
  with_spec(&r, NUCLEUS_SPEC_NGRAM, 8);
  run(&r, 1, &ngram, 512, NULL);
  const int n = base.n_tokens[0];
  int32_t *bad = malloc((size_t)3 * (size_t)n * sizeof *bad);
  assert_non_null(bad);
  int nb = 0;
  for (int i = 0; i + 1 < n; i++) {
    bad[nb++] = base.tokens[0][i];
    bad[nb++] = base.tokens[0][i + 1];
    bad[nb++] = (base.tokens[0][i + 1] + 5) % g_vocab;
  }
  with_spec(&r, NUCLEUS_SPEC_PREDICTION, 8);
  r.params.speculative.prediction = bad;
  r.params.speculative.n_prediction = (size_t)nb;
  run(&r, 1, &spec, 512, NULL);
  assert_same(&base, &spec, 1);
  fprintf(stderr, "  n-gram %d of %d kept, prediction %d of %d\n",
          ngram.usage.accepted_draft_tokens, ngram.usage.draft_tokens,
          spec.usage.accepted_draft_tokens, spec.usage.draft_tokens);
  assert_true(ngram.usage.accepted_draft_tokens >= 10);
  assert_true(2 * spec.usage.accepted_draft_tokens >=
              ngram.usage.accepted_draft_tokens);
  free(bad);
}

/* The prefix cache names only a completion's own tokens: a speculative
 * run leaves no more named blocks than a run without drafts (at most the
 * last step's kept drafts fewer: they were never fed again), and a warm
 * rerun on the same engine gives the bits of the cold one. */
static void test_prefix_cache_holds_no_rejected_drafts(void **state) {
  (void)state;
  NEED_MODEL();
  req plain = make_req(k_repetitive, 60);
  plain.params.sampling.temperature = 1.0f;
  plain.params.sampling.has_seed = true;
  plain.params.sampling.seed = 5;
  req a = plain;
  with_spec(&a, NUCLEUS_SPEC_NGRAM, 8);
  nucleus_engine *e = engine_of(512, true);
  outcome oa, again, op;
  run_on(e, &a, 1, &oa);
  assert_true(oa.usage.draft_tokens > oa.usage.accepted_draft_tokens);
  nucleus_engine_stats st_spec, st_plain;
  nucleus_engine_get_stats(e, &st_spec);
  run_on(e, &a, 1, &again);
  assert_true(again.usage.cached_tokens > 0);
  assert_same(&oa, &again, 1);
  nucleus_engine_free(e);
  nucleus_engine *p = engine_of(512, true);
  run_on(p, &plain, 1, &op);
  nucleus_engine_get_stats(p, &st_plain);
  nucleus_engine_free(p);
  assert_same(&op, &oa, 1);
  fprintf(stderr, "  named blocks: %lld with drafts, %lld without\n",
          (long long)st_spec.prefix_cache_blocks,
          (long long)st_plain.prefix_cache_blocks);
  assert_true(st_spec.prefix_cache_blocks <= st_plain.prefix_cache_blocks);
  assert_true(st_spec.prefix_cache_blocks >= st_plain.prefix_cache_blocks - 1);
}

/* Gemma 3 (K-quant matmuls, whose order differs between decode and prompt
 * micro-batches; sliding-window layers): greedy identity at two draft
 * lengths, alone and three at once, on the real 270M file and on the
 * random 16-position-window file of make arch-models (generations cross
 * many window units: drafts are cut where a rollback would lose the
 * window). */
static void test_gemma_greedy_identity(void **state) {
  (void)state;
  static const char *const files[] = {"models/gemma-3-270m-q4_k_m.gguf",
                                      "build/arch/gemma3.gguf"};
  const char *root = getenv("NUCLEUS_ROOT");
  if (!root || !*root) root = ".";
  for (int f = 0; f < 2; f++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, files[f]);
    nucleus_model_params mp = nucleus_model_default_params();
    mp.n_threads = 2;
    nucleus_model *m = NULL;
    nucleus_error err = {0};
    if (nucleus_model_load(path, &mp, &m, &err) != NUCLEUS_OK) {
      snprintf(g_why, sizeof g_why, "%s (make model arch-models): %s", path,
               err.message);
      NC_MODEL_UNAVAILABLE(g_why);
    }
    nucleus_model *keep = g_model;
    g_model = m;
    static req rs[3];
    static outcome base[3], spec[3];
    for (int i = 0; i < 3; i++) {
      rs[i] = make_req(k_repetitive, 80);
      rs[i].prompt[rs[i].n_prompt - 1 - i] = rs[i].prompt[i + 1];
      run(&rs[i], 1, &base[i], 512, NULL);
    }
    const int32_t lengths[] = {3, 8};
    for (int l = 0; l < 2; l++) {
      for (int i = 0; i < 3; i++)
        with_spec(&rs[i], NUCLEUS_SPEC_NGRAM, lengths[l]);
      nucleus_engine_stats st;
      run(&rs[0], 1, &spec[0], 512, &st);
      assert_same(&base[0], &spec[0], 1);
      assert_true(spec[0].usage.draft_tokens > 0);
      run(rs, 3, spec, 512, &st);
      for (int i = 0; i < 3; i++)
        assert_same(&base[i], &spec[i], 1);
      fprintf(stderr, "  %s, draft_max %d: %lld drafted, %lld accepted\n",
              files[f], lengths[l],
              (long long)st.spec_drafted_total[NUCLEUS_SPEC_NGRAM],
              (long long)st.spec_accepted_total[NUCLEUS_SPEC_NGRAM]);
    }
    g_model = keep;
    nucleus_model_free(m);
  }
}

/* The draft model: the default model drafting for itself (a second load),
 * so its drafts are the model's own choices: greedy output identical at two
 * draft lengths with nearly every draft kept; sampled (rejection sampling
 * with q, and the strict rule) runs finish with drafts kept; an engine
 * without a draft model refuses the drafter, and a draft with another
 * vocabulary is refused naming the first token that differs. */
static void test_draft_model(void **state) {
  (void)state;
  NEED_MODEL();
  const char *path = getenv("NUCLEUS_MODEL");
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  nucleus_model *draft = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_model_load(path, &mp, &draft, &err), NUCLEUS_OK);
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.kv_cache_tokens = 4096;
  ep.draft_model = draft;
  ep.spec_row_cost = TEST_ROW_COST;
  req plain =
      make_req("Write a short story about a robot who learns to paint.", 40);
  plain.params.ignore_eos = true;
  outcome base, spec;
  run(&plain, 1, &base, 512, NULL);
  const int32_t lengths[] = {2, 5};
  for (int l = 0; l < 2; l++) {
    req r = plain;
    with_spec(&r, NUCLEUS_SPEC_DRAFT, lengths[l]);
    nucleus_engine *e = NULL;
    assert_int_equal(nc_engine_create_stepped(g_model, &ep, &e, &err), NC_OK);
    run_on(e, &r, 1, &spec);
    nucleus_engine_stats st;
    nucleus_engine_get_stats(e, &st);
    nucleus_engine_free(e);
    assert_same(&base, &spec, 1);
    fprintf(stderr, "  draft model, draft_max %d: %d of %d kept\n", lengths[l],
            spec.usage.accepted_draft_tokens, spec.usage.draft_tokens);
    assert_true(spec.usage.accepted_draft_tokens >=
                spec.usage.draft_tokens * 9 / 10);
    assert_true(spec.usage.accepted_draft_tokens > 10);
    assert_int_equal(st.kv_blocks_used, 0);
  }
  for (int strict = 0; strict < 2; strict++) {
    req r = plain;
    with_spec(&r, NUCLEUS_SPEC_DRAFT, 4);
    r.params.speculative.strict = strict;
    r.params.sampling.inspect_top_n = 2; /* drain: the record's token */
    r.params.sampling.temperature = 1.0f;
    r.params.sampling.has_seed = true;
    r.params.sampling.seed = 3;
    r.params.n = 2;
    nucleus_engine *e = NULL;
    assert_int_equal(nc_engine_create_stepped(g_model, &ep, &e, &err), NC_OK);
    run_on(e, &r, 1, &spec);
    nucleus_engine_free(e);
    fprintf(stderr, "  draft model, T 1, %s: %d of %d kept\n",
            strict ? "strict" : "exact", spec.usage.accepted_draft_tokens,
            spec.usage.draft_tokens);
    for (int i = 0; i < 2; i++)
      assert_int_equal(spec.n_tokens[i], 40);
    assert_true(spec.usage.accepted_draft_tokens > 0);
  }
  /* no draft model: the drafter is refused at submit */
  nucleus_engine *bare = engine_of(512, true);
  req r = plain;
  with_spec(&r, NUCLEUS_SPEC_DRAFT, 4);
  nucleus_request *h = NULL;
  assert_int_equal(
      nucleus_engine_submit(bare, r.prompt, r.n_prompt, &r.params, &h, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "this engine has no draft model"));
  nucleus_engine_free(bare);
  nucleus_model_free(draft);
  /* another vocabulary */
  char gpath[4096];
  const char *root = getenv("NUCLEUS_ROOT");
  snprintf(gpath, sizeof gpath, "%s/models/gemma-3-270m-q4_k_m.gguf",
           root && *root ? root : ".");
  if (nucleus_model_load(gpath, &mp, &draft, &err) != NUCLEUS_OK)
    NC_MODEL_UNAVAILABLE(gpath);
  ep.draft_model = draft;
  nucleus_engine *e = NULL;
  assert_int_equal(nucleus_engine_create(g_model, &ep, &e, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  fprintf(stderr, "  %s\n", err.message);
  assert_non_null(strstr(err.message, "draft model: token 0 is '"));
  assert_non_null(strstr(err.message, "the vocabularies differ"));
  nucleus_model_free(draft);
}

/* The draft model drafts for every completion of a step in shared forward
 * calls: requests mixed in one engine (greedy, sampled with rejection
 * sampling and n = 2, the strict rule, one arriving later, one without
 * drafts, one with n-gram drafts) each give exactly their output alone
 * (tokens, logprobs, text: the draft's rows do not depend on the batch, so
 * neither do the drafts and their q), with fewer draft forward calls than
 * the runs alone take together (51 against 74 here). */
static void test_draft_model_batched(void **state) {
  (void)state;
  NEED_MODEL();
  const char *path = getenv("NUCLEUS_MODEL");
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  nucleus_model *draft = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_model_load(path, &mp, &draft, &err), NUCLEUS_OK);
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.kv_cache_tokens = 4096;
  ep.draft_model = draft;
  ep.spec_row_cost = TEST_ROW_COST;
  /* requests arriving a step apart draft in the same forwards: without the
   * prefill budget, whose steps of decode rows alone (timing a new row
   * count) and prompt chunks (measured times) would stagger them */
  ep.decode_stall = 1000;
  enum { N = 5 };
  req rs[N];
  rs[0] =
      make_req("Write a short story about a robot who learns to paint.", 32);
  with_spec(&rs[0], NUCLEUS_SPEC_DRAFT, 4);
  rs[1] = make_req("The three primary colours are", 24);
  with_spec(&rs[1], NUCLEUS_SPEC_DRAFT, 5);
  rs[1].params.sampling.temperature = 1.0f;
  rs[1].params.sampling.has_seed = true;
  rs[1].params.sampling.seed = 5;
  rs[1].params.n = 2;
  rs[2] = make_req(k_repetitive, 24);
  with_spec(&rs[2], NUCLEUS_SPEC_DRAFT, 3);
  rs[2].params.speculative.strict = true;
  rs[2].params.sampling.temperature = 0.7f;
  rs[2].params.sampling.has_seed = true;
  rs[2].params.sampling.seed = 9;
  rs[2].arrival = 3;
  rs[3] = make_req("List four fruits:", 20);
  rs[3].arrival = 1;
  rs[4] = make_req(k_repetitive, 20);
  with_spec(&rs[4], NUCLEUS_SPEC_NGRAM, 4);
  rs[4].arrival = 2;
  for (int i = 0; i < N; i++)
    rs[i].params.ignore_eos = true;
  static outcome mixed[N], alone[N];
  nucleus_engine *e = NULL;
  nucleus_engine_stats st;
  assert_int_equal(nc_engine_create_stepped(g_model, &ep, &e, &err), NC_OK);
  run_on(e, rs, N, mixed);
  nucleus_engine_get_stats(e, &st);
  nucleus_engine_free(e);
  assert_int_equal(st.kv_blocks_used, 0);
  const int64_t mixed_forwards = st.spec_draft_forwards_total;
  int64_t alone_forwards = 0;
  for (int i = 0; i < N; i++) {
    req r = rs[i];
    r.arrival = 0;
    assert_int_equal(nc_engine_create_stepped(g_model, &ep, &e, &err), NC_OK);
    run_on(e, &r, 1, &alone[i]);
    nucleus_engine_get_stats(e, &st);
    nucleus_engine_free(e);
    alone_forwards += st.spec_draft_forwards_total;
    assert_same(&alone[i], &mixed[i], r.params.n);
    if (r.params.speculative.type == NUCLEUS_SPEC_DRAFT)
      assert_true(mixed[i].usage.accepted_draft_tokens > 0);
    fprintf(stderr, "  request %d: %d of %d drafts kept\n", i,
            mixed[i].usage.accepted_draft_tokens, mixed[i].usage.draft_tokens);
  }
  fprintf(stderr, "  draft forward calls: %lld mixed, %lld alone\n",
          (long long)mixed_forwards, (long long)alone_forwards);
  assert_true(mixed_forwards > 0);
  assert_true(mixed_forwards * 5 < alone_forwards * 4);
  nucleus_model_free(draft);
}

/* A beam search beside requests that draft: the drafts' logits rows come
 * before the beams' in the step's output, and each beam reads its own row
 * (its text alone). */
static void test_beam_beside_drafts(void **state) {
  (void)state;
  NEED_MODEL();
  req rs[3];
  rs[0] = make_req(k_repetitive, 40);
  with_spec(&rs[0], NUCLEUS_SPEC_NGRAM, 8);
  rs[1] = make_req("The capital of France is", 16);
  rs[1].params.beam_width = 3;
  rs[1].params.n = 2;
  rs[1].params.sampling.logprobs = false;
  rs[1].params.sampling.top_logprobs = 0;
  rs[1].params.ignore_eos = true;
  rs[2] = make_req(k_repetitive, 40);
  with_spec(&rs[2], NUCLEUS_SPEC_NGRAM, 5);
  rs[2].arrival = 2;
  static outcome mixed[3], alone;
  run(rs, 3, mixed, 512, NULL);
  assert_true(mixed[0].usage.accepted_draft_tokens > 0);
  run(&rs[1], 1, &alone, 512, NULL);
  assert_same(&alone, &mixed[1], 2);
}

/* Beam search with drafts: each beam drafts for itself (n-gram, or the
 * prediction); while every next beam is its parent's draft the search
 * steps on from the draft rows without a forward call. The ranked texts,
 * token counts and finish reasons equal the search without drafts, at
 * several draft lengths and widths, with EOS or without, beside
 * another drafting request. Drafts are kept when the beams move in step
 * along their drafts: with width 2 here (fewer steps), seldom with 3 or
 * more (the best beam's children outrank the others'). */
static void test_beam_with_drafts(void **state) {
  (void)state;
  NEED_MODEL();
  struct {
    const char *prompt;
    int32_t width, n, max_tokens, min_tokens;
    bool ignore_eos;
  } cases[] = {
      {k_repetitive, 3, 2, 40, 0, true},
      {k_repetitive, 2, 1, 24, 0, false},
      {"Count from one to twenty: one, two, three,", 4, 3, 32, 0, false},
  };
  const int32_t lengths[] = {1, 4, 8, 32}; /* 32: beams draft 8 at most */
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
    req plain = make_req(cases[ci].prompt, cases[ci].max_tokens);
    plain.params.beam_width = cases[ci].width;
    plain.params.n = cases[ci].n;
    plain.params.min_tokens = cases[ci].min_tokens;
    plain.params.ignore_eos = cases[ci].ignore_eos;
    plain.params.sampling.logprobs = false;
    plain.params.sampling.top_logprobs = 0;
    outcome base, spec;
    nucleus_engine_stats st0, st;
    run(&plain, 1, &base, 512, &st0);
    for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
      req r[2] = {plain, make_req(k_repetitive, 30)};
      with_spec(&r[0], NUCLEUS_SPEC_NGRAM, lengths[l]);
      with_spec(&r[1], NUCLEUS_SPEC_NGRAM, 6);
      r[1].arrival = 1;
      static outcome both[2];
      run(r, 2, both, 512, &st);
      spec = both[0];
      assert_same(&base, &spec, cases[ci].n);
      fprintf(stderr,
              "  beam %d, n %d, draft_max %d: %d of %d drafts kept, %lld "
              "steps (%lld without)\n",
              cases[ci].width, cases[ci].n, lengths[l],
              spec.usage.accepted_draft_tokens, spec.usage.draft_tokens,
              (long long)st.steps_total, (long long)st0.steps_total);
      assert_true(spec.usage.draft_tokens > 0);
      assert_true(spec.usage.accepted_draft_tokens <= spec.usage.draft_tokens);
    }
  }
  /* the prediction: the best text itself, drafted by every beam */
  req plain = make_req(k_repetitive, 32);
  plain.params.beam_width = 2;
  plain.params.sampling.logprobs = false;
  plain.params.sampling.top_logprobs = 0;
  plain.params.ignore_eos = true;
  outcome base, spec;
  nucleus_engine_stats st0, st;
  run(&plain, 1, &base, 512, &st0);
  int32_t *ids = NULL;
  size_t n_ids = 0;
  assert_int_equal(nucleus_tokenize(g_model, base.text[0], base.text_len[0],
                                    false, false, &ids, &n_ids, NULL),
                   NUCLEUS_OK);
  req r = plain;
  with_spec(&r, NUCLEUS_SPEC_PREDICTION, 8);
  r.params.speculative.prediction = ids;
  r.params.speculative.n_prediction = n_ids;
  run(&r, 1, &spec, 512, &st);
  nucleus_free(ids);
  assert_same(&base, &spec, 1);
  fprintf(stderr, "  beam 2, prediction: %d of %d kept, %lld steps (%lld)\n",
          spec.usage.accepted_draft_tokens, spec.usage.draft_tokens,
          (long long)st.steps_total, (long long)st0.steps_total);
  assert_true(spec.usage.accepted_draft_tokens > 0);
  assert_true(st.steps_total < st0.steps_total);
}

static void test_bad_spec_params_refused(void **state) {
  (void)state;
  NEED_MODEL();
  req r = make_req("Hello", 4);
  nucleus_error err = {0};
  struct {
    nucleus_spec_params sp;
    int32_t beam;
    const char *msg;
  } bad[] = {
      {{.type = 7, .draft_max = 4}, 0, "speculative.type: 7 is not a drafter"},
      {{.type = NUCLEUS_SPEC_NGRAM, .draft_max = 0},
       0,
       "speculative.draft_max: 0 must be in [1, 64]"},
      {{.type = NUCLEUS_SPEC_NGRAM, .draft_max = 65},
       0,
       "speculative.draft_max: 65 must be in [1, 64]"},
      {{.type = NUCLEUS_SPEC_NGRAM, .draft_max = 4, .draft_min = 5},
       0,
       "speculative.draft_min: 5 must be in [0, draft_max = 4]"},
      {{.type = NUCLEUS_SPEC_NGRAM,
        .draft_max = 4,
        .prediction = r.prompt,
        .n_prediction = 1},
       0,
       "a prediction needs the 'prediction' drafter"},
      {{.type = NUCLEUS_SPEC_PREDICTION, .draft_max = 4, .n_prediction = 2},
       0,
       "prediction: 2 tokens announced but the array is NULL"},
      {{.type = NUCLEUS_SPEC_DRAFT, .draft_max = 4},
       2,
       "speculative 'draft': not with beam search (beam_width 2): beams "
       "draft by 'ngram' or 'prediction'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    req b = r;
    b.params.speculative = bad[i].sp;
    b.params.beam_width = bad[i].beam ? bad[i].beam : 1;
    assert_int_equal(nucleus_request_params_validate(g_model, &b.params, &err),
                     NUCLEUS_ERR_INVALID_ARGUMENT);
    if (!strstr(err.message, bad[i].msg))
      fail_msg("case %zu: '%s' lacks '%s'", i, err.message, bad[i].msg);
  }
  int32_t out_of_range = g_vocab;
  nucleus_spec_params sp = {.type = NUCLEUS_SPEC_PREDICTION,
                            .draft_max = 4,
                            .prediction = &out_of_range,
                            .n_prediction = 1};
  assert_int_equal(nucleus_speculative_check(&sp, 0, g_vocab, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "prediction[0]: token"));
  nucleus_spec_type t;
  assert_true(nucleus_spec_type_from_name("ngram", &t));
  assert_int_equal(t, NUCLEUS_SPEC_NGRAM);
  assert_false(nucleus_spec_type_from_name("draft-model", &t));
  assert_string_equal(nucleus_spec_type_name(NUCLEUS_SPEC_PREDICTION),
                      "prediction");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_greedy_identity_every_draft_length),
      cmocka_unit_test(test_row_cost_decides),
      cmocka_unit_test(test_sampled_identity),
      cmocka_unit_test(test_stops_and_grammar_inside_drafts),
      cmocka_unit_test(test_batch_mix_invariance),
      cmocka_unit_test(test_prediction),
      cmocka_unit_test(test_prediction_yields_to_a_longer_match),
      cmocka_unit_test(test_prefix_cache_holds_no_rejected_drafts),
      cmocka_unit_test(test_gemma_greedy_identity),
      cmocka_unit_test(test_draft_model),
      cmocka_unit_test(test_draft_model_batched),
      cmocka_unit_test(test_beam_beside_drafts),
      cmocka_unit_test(test_beam_with_drafts),
      cmocka_unit_test(test_bad_spec_params_refused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
