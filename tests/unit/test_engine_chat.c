/* The engine's prefix cache over multi-turn chats (issue 38): each turn's
 * prompt is the previous turn's prompt, its reply and a new message; with
 * the reuse orders (the default) a turn takes every full block of the
 * previous turn's prompt and reply from the cache, and its tokens and
 * logprobs are bit-identical to a cold engine's (no prefix cache), with
 * flash attention on and off, short turns (under llama.cpp's 64-row tiled
 * path) and long ones, whole or in prefill chunks; on Gemma 3 270M too
 * (K-quant matmuls, sliding-window layers); with the split orders too.
 * With llama.cpp's orders the cache is off. Uses the stepped engine (no
 * thread). */
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

#ifdef __SANITIZE_ADDRESS__
#define N_TURNS 2 /* the sanitizers check memory, not scale */
#define SANITIZED 1
#else
#define N_TURNS 8
#define SANITIZED 0
#endif
enum { MAX_TOKENS = 1024, MAX_GEN = 32, BLOCK = 16 };

typedef struct turn_out {
  int32_t tokens[MAX_GEN];
  float logprobs[MAX_GEN];
  int32_t n;
  nucleus_usage usage;
  bool done;
} turn_out;

static void drain(nucleus_request *r, turn_out *o) {
  nucleus_event ev;
  while (nucleus_request_next_event(r, &ev, 0) == NUCLEUS_OK) {
    if (ev.kind == NUCLEUS_EVENT_DONE) {
      o->done = true;
      o->usage = ev.usage;
    } else if (ev.kind == NUCLEUS_EVENT_TOKEN) {
      assert_true(o->n < MAX_GEN);
      o->tokens[o->n] = ev.token;
      o->logprobs[o->n++] = ev.logprob;
    }
  }
}

static nucleus_engine *engine(nucleus_model *m, bool cache, int32_t budget,
                              nucleus_row_orders orders) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = MAX_TOKENS;
  ep.kv_cache_tokens = 4096;
  ep.max_batch_tokens = budget;
  ep.no_prefix_cache = !cache;
  ep.row_orders = orders;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  assert_int_equal(nc_engine_create_stepped(m, &ep, &e, &err), NC_OK);
  return e;
}

static void run_turn(nucleus_engine *e, const int32_t *prompt, int32_t n,
                     int32_t max_tokens, turn_out *o) {
  nucleus_request_params p = nucleus_request_default_params();
  p.sampling.temperature = 0;
  p.sampling.logprobs = true;
  p.max_tokens = max_tokens;
  p.ignore_eos = true; /* replies of the lengths asked */
  nucleus_request *r = NULL;
  nucleus_error err = {0};
  memset(o, 0, sizeof *o);
  assert_int_equal(nucleus_engine_submit(e, prompt, (size_t)n, &p, &r, &err),
                   NUCLEUS_OK);
  while (nc_engine_step(e))
    drain(r, o);
  drain(r, o);
  assert_true(o->done);
  assert_int_equal(o->n, max_tokens);
  nucleus_request_free(r);
}

static uint64_t rng_next(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

/* Turn t's new message: short (under 64 tokens) and long ones in turn. */
static int32_t message_len(int t, uint64_t *x) {
  return t % 2 == 0 ? 70 + (int32_t)(rng_next(x) % 60)
                    : 5 + (int32_t)(rng_next(x) % 40);
}

/* N_TURNS turns on a warm engine (the cache on, the token budget given)
 * and on a cold one: equal outputs, and each turn's hit is every full
 * block of the previous turn's computed positions (its prompt and its
 * reply but the last token, sampled and never fed) that prefixes it. */
static void check_chat_in(nucleus_model *m, int32_t budget, uint64_t seed,
                          nucleus_row_orders orders) {
  const int32_t n_vocab = nucleus_model_n_vocab(m);
  nucleus_engine *warm = engine(m, true, budget, orders);
  nucleus_engine *cold = engine(m, false, 512, orders);
  static int32_t chat[MAX_TOKENS];
  int32_t n = 0, prev_computed = 0;
  uint64_t x = seed;
  int64_t hits = 0;
  for (int t = 0; t < N_TURNS; t++) {
    const int32_t msg = message_len(t, &x);
    const int32_t gen = 4 + (int32_t)(rng_next(&x) % 20);
    assert_true(n + msg + gen <= MAX_TOKENS);
    for (int32_t i = 0; i < msg; i++)
      chat[n++] = (int32_t)(rng_next(&x) % (uint64_t)n_vocab);
    turn_out w, c;
    run_turn(warm, chat, n, gen, &w);
    run_turn(cold, chat, n, gen, &c);
    assert_int_equal(w.n, c.n);
    assert_memory_equal(w.tokens, c.tokens, sizeof(int32_t) * (size_t)c.n);
    assert_memory_equal(w.logprobs, c.logprobs, sizeof(float) * (size_t)c.n);
    assert_int_equal(c.usage.cached_tokens, 0);
    const int32_t reusable = prev_computed < n - 1 ? prev_computed : n - 1;
    assert_int_equal(w.usage.cached_tokens, reusable / BLOCK * BLOCK);
    hits += w.usage.cached_tokens;
    /* the reply joins the chat, as a client sends it back */
    memcpy(chat + n, w.tokens, sizeof(int32_t) * (size_t)w.n);
    n += w.n;
    prev_computed = n - 1;
  }
  nucleus_engine_stats st;
  nucleus_engine_get_stats(warm, &st);
  assert_int_equal(st.prefix_cache_hit_tokens_total, hits);
  fprintf(stderr, "  %d turns, %d tokens, budget %d: %lld reused\n", N_TURNS, n,
          budget, (long long)hits);
  nucleus_engine_free(warm);
  nucleus_engine_free(cold);
}

static void check_chat(nucleus_model *m, int32_t budget, uint64_t seed) {
  check_chat_in(m, budget, seed, NUCLEUS_ROW_ORDERS_AUTO);
}

/* The model at path (NUCLEUS_ROOT-relative unless absolute) with flash
 * attention as given; fails (or skips, NUCLEUS_TESTS_WITHOUT_MODEL=1). */
static nucleus_model *load(const char *path, nucleus_flash_attn fa) {
  char full[1024], why[1400];
  const char *root = getenv("NUCLEUS_ROOT");
  if (!path || !*path) NC_MODEL_UNAVAILABLE("NUCLEUS_MODEL is not set");
  snprintf(full, sizeof full, "%s%s%s", path[0] != '/' && root ? root : "",
           path[0] != '/' && root ? "/" : "", path);
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  mp.flash_attn = fa;
  nucleus_model *m = NULL;
  nucleus_error err = {0};
  if (nucleus_model_load(full, &mp, &m, &err) != NUCLEUS_OK) {
    snprintf(why, sizeof why, "cannot load %s: %s", full, err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return m;
}

static void test_default_model_flash_on(void **state) {
  (void)state;
  nucleus_model *m = load(getenv("NUCLEUS_MODEL"), NUCLEUS_FLASH_ATTN_ON);
  assert_true(nucleus_model_flash_attn(m));
  check_chat(m, 512, 0xC4A7ull);
  if (!SANITIZED) check_chat(m, 7, 0xC4A8ull); /* 7 tokens a step */
  nucleus_model_free(m);
}

static void test_default_model_flash_off(void **state) {
  (void)state;
  nucleus_model *m = load(getenv("NUCLEUS_MODEL"), NUCLEUS_FLASH_ATTN_OFF);
  assert_false(nucleus_model_flash_attn(m));
  check_chat(m, 512, 0xC4A9ull);
  nucleus_model_free(m);
}

static void test_gemma3(void **state) {
  (void)state;
  for (int fa = SANITIZED; fa < 2; fa++) {
    nucleus_model *m =
        load("models/gemma-3-270m-q4_k_m.gguf",
             fa ? NUCLEUS_FLASH_ATTN_ON : NUCLEUS_FLASH_ATTN_OFF);
    check_chat(m, 512, 0x6E33ull + (uint64_t)fa);
    nucleus_model_free(m);
  }
}

/* The split orders (flash attention's keys in chunks of 256 folded in
 * position order; a decode row's chunks spread over the threads): a
 * position's K/V still depend only on the tokens up to it, so a turn reuses
 * the previous turns' blocks and gives a cold engine's bits, across the
 * 256-key chunk boundaries (the chat grows past 512 tokens), whole and in
 * prefill chunks of 7 tokens. */
static void test_split_orders(void **state) {
  (void)state;
  nucleus_model *m = load(getenv("NUCLEUS_MODEL"), NUCLEUS_FLASH_ATTN_ON);
  check_chat_in(m, 512, 0x5B17ull, NUCLEUS_ROW_ORDERS_SPLIT);
  if (!SANITIZED) check_chat_in(m, 7, 0x5B18ull, NUCLEUS_ROW_ORDERS_SPLIT);
  nucleus_model_free(m);
}

/* llama.cpp's orders: a position's K/V depend on its prompt's length, so
 * nothing is reused (the same prompt twice: no hit, no lookup counted);
 * auto resolves to reuse in the engine. */
static void test_llama_orders_reuse_nothing(void **state) {
  (void)state;
  nucleus_model *m = load(getenv("NUCLEUS_MODEL"), NUCLEUS_FLASH_ATTN_ON);
  nucleus_engine *e = engine(m, true, 512, NUCLEUS_ROW_ORDERS_LLAMA);
  nucleus_engine_params got;
  nucleus_engine_get_params(e, &got);
  assert_int_equal(got.row_orders, NUCLEUS_ROW_ORDERS_LLAMA);
  int32_t prompt[40];
  for (int i = 0; i < 40; i++)
    prompt[i] = 100 + i;
  turn_out a, b;
  run_turn(e, prompt, 40, 4, &a);
  run_turn(e, prompt, 40, 4, &b);
  assert_int_equal(a.usage.cached_tokens + b.usage.cached_tokens, 0);
  assert_memory_equal(a.logprobs, b.logprobs, sizeof(float) * 4);
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  assert_int_equal(st.prefix_cache_queried_tokens_total, 0);
  assert_int_equal(st.prefix_cache_blocks, 0);
  nucleus_engine_free(e);
  e = engine(m, true, 512, NUCLEUS_ROW_ORDERS_AUTO);
  nucleus_engine_get_params(e, &got);
  assert_int_equal(got.row_orders, NUCLEUS_ROW_ORDERS_REUSE);
  run_turn(e, prompt, 40, 4, &a);
  run_turn(e, prompt, 40, 4, &b);
  assert_int_equal(b.usage.cached_tokens, 32);
  nucleus_engine_free(e);
  nucleus_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_model_flash_on),
      cmocka_unit_test(test_default_model_flash_off),
      cmocka_unit_test(test_gemma3),
      cmocka_unit_test(test_split_orders),
      cmocka_unit_test(test_llama_orders_reuse_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
