/* Speculative decoding with the model's own MTP head (NUCLEUS_SPEC_MTP,
 * spec_mtp.c) on the random qwen35mtp file of scripts/make_arch_gguf.py
 * (build/arch, `make arch-models`), a hybrid model: the drafts of a
 * rejected step are taken back by rewinding the recurrent state to its
 * checkpoint (kv_cache.h), the fed token with them.
 *
 * - greedy: token for token, logprob for logprob (bits) what decoding
 *   without drafts gives, at draft lengths 1 to 8, and what the same file
 *   loaded without its head gives; drafts are made (random weights: the
 *   head's drafts are almost never the model's tokens, so nearly every
 *   drafting step rewinds);
 * - in a batch beside a request without drafts and one with predicted
 *   outputs (kept runs, whole and cut short), each request gets what it
 *   gets alone;
 * - sampled with a seed and strict verification: the same tokens with and
 *   without the head's drafts (the verification draws as the plain step
 *   draws); at T = 3 under the exact rule (flat p and q: drafts are kept)
 *   the drafted tokens follow the plain runs' distribution (chi-square);
 * - the KV pool is whole after each run; a model without the head refuses
 *   the drafter. */
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
#include "nucleus.h"
#include "test_require.h"

#define MAX_GEN 48

typedef struct outcome {
  int32_t tokens[MAX_GEN];
  float logprobs[MAX_GEN];
  int32_t n_tokens;
  nucleus_finish_reason reason;
  bool done;
  nucleus_usage usage;
} outcome;

typedef struct req {
  int32_t prompt[64];
  size_t n_prompt;
  nucleus_request_params params;
  int arrival;
} req;

typedef struct fixture {
  nucleus_model *mtp, *plain; /* qwen35mtp with and without the head */
  char why[4200];
} fixture;

static nucleus_model *load(bool mtp, nucleus_error *err) {
  const char *root = getenv("NUCLEUS_ROOT");
  char path[4096];
  snprintf(path, sizeof path, "%s/build/arch/qwen35mtp.gguf",
           root && *root ? root : ".");
  nucleus_model_params p = nucleus_model_default_params();
  p.n_threads = 2;
  p.mtp = mtp;
  nucleus_model *m = NULL;
  if (nucleus_model_load(path, &p, &m, err) != NUCLEUS_OK) return NULL;
  return m;
}

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  *state = fx;
  nucleus_error err = {0};
  fx->mtp = load(true, &err);
  if (fx->mtp) fx->plain = load(false, &err);
  if (!fx->mtp || !fx->plain)
    snprintf(fx->why, sizeof fx->why, "qwen35mtp.gguf (make arch-models): %s",
             err.message);
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  nucleus_model_free(fx->mtp);
  nucleus_model_free(fx->plain);
  free(fx);
  return 0;
}

#define NEED_FILES(fx)                                                         \
  do {                                                                         \
    if (!(fx)->mtp || !(fx)->plain) NC_MODEL_UNAVAILABLE((fx)->why);           \
  } while (0)

static void drain(nucleus_request *r, outcome *o) {
  nucleus_event ev;
  while (nucleus_request_next_event(r, &ev, 0) == NUCLEUS_OK) {
    if (ev.kind == NUCLEUS_EVENT_DONE) {
      o->done = true;
      o->usage = ev.usage;
    } else if (ev.kind == NUCLEUS_EVENT_TOKEN) {
      assert_true(o->n_tokens < MAX_GEN);
      o->logprobs[o->n_tokens] = ev.logprob;
      o->tokens[o->n_tokens++] = ev.token;
    } else if (ev.kind == NUCLEUS_EVENT_FINISH) {
      o->reason = ev.finish_reason;
    }
  }
}

static nucleus_engine *engine_on(nucleus_model *m) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 256;
  ep.kv_cache_tokens = 2048;
  ep.max_batch_tokens = 128;
  ep.spec_row_cost = 0.01f; /* cheap rows: every step drafts */
  nucleus_engine *e = NULL;
  assert_int_equal(nc_engine_create_stepped(m, &ep, &e, NULL), NC_OK);
  return e;
}

/* Runs rs on a new engine of m; the pool is whole at the end. */
static void run(nucleus_model *m, const req *rs, int n, outcome *outs,
                nucleus_engine_stats *stats) {
  nucleus_engine *e = engine_on(m);
  nucleus_request *handles[8] = {0};
  assert_true(n <= 8);
  memset(outs, 0, (size_t)n * sizeof *outs);
  int submitted = 0;
  for (int step = 0; step < 5000; step++) {
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
    bool all = submitted == n;
    for (int i = 0; i < n; i++) {
      if (handles[i]) drain(handles[i], &outs[i]);
      all = all && outs[i].done;
    }
    if (all && !more) break;
  }
  for (int i = 0; i < n; i++) {
    assert_true(outs[i].done);
    nucleus_request_free(handles[i]);
  }
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  assert_int_equal(st.kv_blocks_used, 0);
  if (stats) *stats = st;
  nucleus_engine_free(e);
}

static req make_req(uint32_t seed, int32_t n_prompt, int32_t max_tokens) {
  req r = {0};
  for (int32_t i = 0; i < n_prompt; i++) {
    seed = seed * 1664525u + 1013904223u;
    r.prompt[i] = (int32_t)(seed >> 8) % 40000 + 100;
  }
  r.n_prompt = (size_t)n_prompt;
  r.params = nucleus_request_default_params();
  r.params.sampling.temperature = 0;
  r.params.sampling.logprobs = true;
  r.params.max_tokens = max_tokens;
  return r;
}

static void with_spec(req *r, nucleus_spec_type type, int32_t draft_max) {
  r->params.speculative.type = type;
  r->params.speculative.draft_max = draft_max;
}

static void assert_same(const outcome *a, const outcome *b) {
  assert_int_equal(a->n_tokens, b->n_tokens);
  assert_memory_equal(a->tokens, b->tokens,
                      (size_t)a->n_tokens * sizeof(int32_t));
  assert_memory_equal(a->logprobs, b->logprobs,
                      (size_t)a->n_tokens * sizeof(float));
  assert_int_equal(a->reason, b->reason);
}

/* Greedy: the plain run's tokens and logprobs at every draft length, and
 * the same as the file without its head. */
static void test_greedy_identity(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  req plain = make_req(7, 20, 40);
  outcome base, other, spec;
  run(fx->mtp, &plain, 1, &base, NULL);
  run(fx->plain, &plain, 1, &other, NULL);
  assert_same(&base, &other);
  assert_int_equal(base.n_tokens, 40);
  const int32_t lengths[] = {1, 2, 4, 8};
  for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
    req r = plain;
    with_spec(&r, NUCLEUS_SPEC_MTP, lengths[i]);
    nucleus_engine_stats st;
    run(fx->mtp, &r, 1, &spec, &st);
    assert_same(&base, &spec);
    fprintf(stderr,
            "  mtp draft_max %d: %d drafted, %d accepted, %lld steps, %lld "
            "head forwards\n",
            lengths[i], spec.usage.draft_tokens,
            spec.usage.accepted_draft_tokens, (long long)st.steps_total,
            (long long)st.spec_draft_forwards_total);
    assert_true(spec.usage.draft_tokens > 0);
    assert_true(spec.usage.accepted_draft_tokens <= spec.usage.draft_tokens);
    assert_int_equal(st.spec_drafted_total[NUCLEUS_SPEC_MTP],
                     spec.usage.draft_tokens);
    assert_true(st.spec_draft_forwards_total > 0);
  }
}

/* Beside a plain request and a predicted-output one (the plain run's
 * output with two tokens changed: kept runs on a state model, whole and
 * cut, the rewinds keeping what was accepted), each gets what it gets
 * alone. */
static void test_batch_mix(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  req rs[3] = {make_req(11, 12, 40), make_req(12, 30, 40), make_req(13, 9, 40)};
  outcome first;
  run(fx->mtp, &rs[2], 1, &first, NULL);
  int32_t pred[MAX_GEN];
  memcpy(pred, first.tokens, sizeof pred);
  pred[10] = (pred[10] + 1) % 1000;
  pred[25] = (pred[25] + 1) % 1000;
  with_spec(&rs[0], NUCLEUS_SPEC_MTP, 3);
  with_spec(&rs[2], NUCLEUS_SPEC_PREDICTION, 6);
  rs[2].params.speculative.prediction = pred;
  rs[2].params.speculative.n_prediction = (size_t)first.n_tokens;
  rs[1].arrival = 1;
  rs[2].arrival = 3;
  outcome alone[3], together[3];
  for (int i = 0; i < 3; i++) {
    req r = rs[i];
    r.arrival = 0;
    req p = r;
    with_spec(&p, NUCLEUS_SPEC_OFF, 1);
    p.params.speculative.prediction = NULL;
    p.params.speculative.n_prediction = 0;
    outcome base;
    run(fx->mtp, &p, 1, &base, NULL);
    run(fx->mtp, &r, 1, &alone[i], NULL);
    assert_same(&base, &alone[i]);
  }
  run(fx->mtp, rs, 3, together, NULL);
  for (int i = 0; i < 3; i++)
    assert_same(&alone[i], &together[i]);
  fprintf(stderr, "  prediction beside: %d drafted, %d accepted\n",
          together[2].usage.draft_tokens,
          together[2].usage.accepted_draft_tokens);
  assert_true(together[0].usage.draft_tokens > 0);
  assert_true(together[2].usage.accepted_draft_tokens > 20);
  assert_true(together[2].usage.accepted_draft_tokens <
              together[2].usage.draft_tokens);
}

/* Sampled with a seed and strict verification (the model's own draw,
 * the draft kept when equal): the drafts change no token. */
static void test_sampled_same(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  for (uint64_t seed = 1; seed <= 3; seed++) {
    req p = make_req(21, 10, 24);
    p.params.sampling.temperature = 1.0f;
    p.params.sampling.top_k = 4;
    p.params.sampling.has_seed = true;
    p.params.sampling.seed = seed;
    req r = p;
    with_spec(&r, NUCLEUS_SPEC_MTP, 4);
    r.params.speculative.strict = true;
    outcome a, b;
    run(fx->mtp, &p, 1, &a, NULL);
    run(fx->mtp, &r, 1, &b, NULL);
    assert_same(&a, &b);
    assert_true(b.usage.draft_tokens > 0);
  }
}

#ifdef __SANITIZE_ADDRESS__
#define CHI2_RUNS 160
#else
#define CHI2_RUNS 512
#endif
#define CHI2_CATS 16

/* The second and third tokens (their ids mod 4: 16 categories; the first
 * comes from the prompt's step, the second may be a draft, the third its
 * bonus) of `runs` sampled requests with seeds from seed0, all on one
 * engine. */
static void sample_runs(nucleus_model *m, nucleus_spec_type type,
                        uint64_t seed0, int32_t runs, int64_t *counts,
                        int32_t *drafted, int32_t *kept) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 64;
  ep.kv_cache_tokens = 4096;
  ep.max_batch_tokens = 256;
  ep.max_running = 32;
  ep.max_queued = runs + 8;
  ep.spec_row_cost = 0.01f;
  nucleus_engine *e = NULL;
  assert_int_equal(nc_engine_create_stepped(m, &ep, &e, NULL), NC_OK);
  nucleus_request **h = calloc((size_t)runs, sizeof *h);
  outcome *o = calloc((size_t)runs, sizeof *o);
  assert_non_null(h);
  assert_non_null(o);
  for (int32_t i = 0; i < runs; i++) {
    req r = make_req(5, 6, 3);
    r.params.sampling.temperature = 3.0f;
    r.params.sampling.has_seed = true;
    r.params.sampling.seed = seed0 + (uint64_t)i;
    r.params.sampling.logprobs = false;
    r.params.ignore_eos = true;
    with_spec(&r, type, 2);
    assert_int_equal(
        nucleus_engine_submit(e, r.prompt, r.n_prompt, &r.params, &h[i], NULL),
        NUCLEUS_OK);
  }
  for (int step = 0; step < 100000 && nc_engine_step(e); step++)
    for (int32_t i = 0; i < runs; i++)
      drain(h[i], &o[i]);
  for (int32_t i = 0; i < runs; i++) {
    drain(h[i], &o[i]);
    assert_true(o[i].done);
    assert_int_equal(o[i].n_tokens, 3);
    counts[(o[i].tokens[1] % 4) * 4 + o[i].tokens[2] % 4]++;
    *drafted += o[i].usage.draft_tokens;
    *kept += o[i].usage.accepted_draft_tokens;
    nucleus_request_free(h[i]);
  }
  free(h);
  free(o);
  nucleus_engine_free(e);
}

/* Sampled at T = 3 (flat p and q: the head's drafts are kept often) under
 * the exact rule: the distribution of the tokens after the first is the
 * plain runs' (runs with other seeds; two-sample chi-square at the 0.001
 * level). */
static void test_sampled_chi2(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  int64_t a[CHI2_CATS] = {0}, b[CHI2_CATS] = {0};
  int32_t d0 = 0, k0 = 0, d1 = 0, k1 = 0;
  sample_runs(fx->mtp, NUCLEUS_SPEC_OFF, 1, CHI2_RUNS, a, &d0, &k0);
  sample_runs(fx->mtp, NUCLEUS_SPEC_MTP, 1000001, CHI2_RUNS, b, &d1, &k1);
  double chi2 = 0;
  int dof = -1;
  for (int c = 0; c < CHI2_CATS; c++) {
    if (a[c] + b[c] == 0) continue;
    chi2 +=
        (double)(a[c] - b[c]) * (double)(a[c] - b[c]) / (double)(a[c] + b[c]);
    dof++;
  }
  /* Wilson-Hilferty: the 0.999 quantile of chi-square with dof degrees */
  const double k = 2.0 / (9.0 * dof),
               crit = dof * pow(1.0 - k + 3.090 * sqrt(k), 3.0);
  fprintf(stderr,
          "  %d runs each: chi2 %.1f (%d dof, 0.001 level %.1f); mtp: %d of "
          "%d drafts kept\n",
          CHI2_RUNS, chi2, dof, crit, k1, d1);
  assert_int_equal(d0, 0);
  assert_true(dof >= 10);
  assert_true(d1 > 0 && k1 > 0);
  assert_true(chi2 < crit);
}

/* The drafter needs the head. */
static void test_refused_without_head(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  nucleus_engine *e = engine_on(fx->plain);
  req r = make_req(3, 5, 4);
  with_spec(&r, NUCLEUS_SPEC_MTP, 4);
  nucleus_request *h = NULL;
  nucleus_error err = {0};
  assert_int_equal(
      nucleus_engine_submit(e, r.prompt, r.n_prompt, &r.params, &h, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "MTP head"));
  assert_null(h);
  /* beams do not draft with it */
  r.params.beam_width = 2;
  assert_int_equal(nucleus_speculative_check(&r.params.speculative, 2,
                                             nucleus_model_n_vocab(fx->plain),
                                             &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  nucleus_engine_free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_greedy_identity),
      cmocka_unit_test(test_batch_mix),
      cmocka_unit_test(test_sampled_same),
      cmocka_unit_test(test_sampled_chi2),
      cmocka_unit_test(test_refused_without_head),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
