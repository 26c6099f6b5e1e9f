/* The recurrent state of a hybrid model (qwen35: gated DeltaNet layers
 * beside attention layers; kv_cache.h's state slots), on the random
 * qwen35 file of scripts/make_arch_gguf.py (build/arch, made by `make
 * arch-models`):
 *
 * - the forward pass gives every row the same logits bit for bit whether
 *   its sequence runs alone in one call, beside another sequence in shared
 *   batches, or in chunks of any size; a fork mid-sequence continues
 *   exactly as the original (the state is copied); also on the qwen3next
 *   file (packed projections, grouped heads);
 * - the state slots: zeros for a new sequence, one per live sequence,
 *   truncating below the length cuts the sequence to 0, a checkpoint
 *   rewinds it (state and length) to where it was taken;
 * - snapshots (kv_cache.h): a row with a snapshot target leaves there the
 *   state a sequence fed exactly up to it has; a snapshot goes with its
 *   block's content;
 * - the engine gives each request the tokens and logprobs it gets alone on
 *   a fresh engine: beside other requests, in small chunks (the state
 *   carried across chunks), in a pool so small that requests are preempted
 *   (their state recomputed, or restored from a snapshot), and again on
 *   the same engine (a prefix hit up to the snapshot at the prompt's last
 *   block end); a chat's every turn is a prefix hit up to the last block
 *   end of the turn before, with the tokens of a cold run;
 * - n > 1 forks copy the state: greedy completions equal the greedy
 *   request alone; beam search gives the same text in chunks of 16 as in
 *   one batch. */
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

typedef struct fixture {
  nucleus_model *m;
  char why[4200];
} fixture;

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  *state = fx;
  const char *root = getenv("NUCLEUS_ROOT");
  char path[4096];
  snprintf(path, sizeof path, "%s/build/arch/qwen35.gguf",
           root && *root ? root : ".");
  nucleus_model_params p = nucleus_model_default_params();
  p.n_threads = 2;
  nucleus_error err;
  if (nucleus_model_load(path, &p, &fx->m, &err) != NUCLEUS_OK) {
    snprintf(fx->why, sizeof fx->why, "%s (make arch-models): %s", path,
             err.message);
    fx->m = NULL;
  }
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  nucleus_model_free(fx->m);
  free(fx);
  return 0;
}

static nucleus_model *need(void **state) {
  fixture *fx = *state;
  if (!fx->m) NC_MODEL_UNAVAILABLE(fx->why);
  return fx->m;
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

typedef struct fwd {
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch b;
  float *logits;
  int32_t nv;
} fwd;

static void fwd_open(fwd *f, const nucleus_model *m, int32_t n, int32_t rows) {
  const nc_hparams *hp = nc_model_hparams(m);
  nucleus_error err;
  f->nv = hp->n_vocab;
  assert_int_equal(
      nc_kv_cache_create_typed(nc_hp_kv_shape(hp), nc_model_kv_types(m),
                               4 * ((n + 15) / 16) + 4, 16, 4, &f->kv, &err),
      NC_OK);
  assert_true(nc_kv_state_floats(f->kv) > 0);
  assert_int_equal(nc_context_create(m, f->kv, rows, &f->ctx, &err), NC_OK);
  assert_int_equal(nc_batch_init(&f->b, rows, &err), NC_OK);
  f->logits = malloc(sizeof(float) * (size_t)rows * (size_t)f->nv);
}

static void fwd_close(fwd *f) {
  free(f->logits);
  nc_batch_free(&f->b);
  nc_context_free(f->ctx);
  nc_kv_cache_free(f->kv);
}

/* Feeds the sequences' tokens [done, done + take) (take[p] of sequence
 * seqs[p]) in one call; every row's logits into out[p][pos]. */
static void feed(fwd *f, int n_seq, const int32_t *seqs,
                 const int32_t *const *tok, int32_t *done, const int32_t *take,
                 float *const *out) {
  nucleus_error err;
  nc_batch_clear(&f->b);
  int32_t rows = 0, row_pos[512], row_seq[512];
  for (int p = 0; p < n_seq; p++) {
    assert_int_equal(nc_kv_seq_reserve(f->kv, seqs[p], done[p] + take[p], &err),
                     NC_OK);
    for (int32_t i = done[p]; i < done[p] + take[p]; i++) {
      assert_true(nc_batch_add(&f->b, tok[p][i], i, seqs[p], true));
      row_pos[rows] = i;
      row_seq[rows++] = p;
    }
    done[p] += take[p];
  }
  if (nc_context_forward(f->ctx, &f->b, f->logits, &err) != NC_OK)
    fail_msg("forward: %s", err.message);
  for (int32_t r = 0; r < rows; r++)
    memcpy(out[row_seq[r]] + (int64_t)row_pos[r] * f->nv,
           f->logits + (int64_t)r * f->nv, sizeof(float) * (size_t)f->nv);
}

/* The rows of model m (file name) alone, in shared batches of cycled chunk
 * sizes and after a fork: the same logits bit for bit. */
static void forward_invariance(const nucleus_model *m, const char *name) {
  const int32_t n = SANITIZED ? 40 : 120, nv = nc_model_hparams(m)->n_vocab;
  int32_t t0[128], t1[128];
  random_tokens(t0, n, nv, 0x5A5Aull);
  random_tokens(t1, n, nv, 0xBEEFull);
  const size_t sz = sizeof(float) * (size_t)n * (size_t)nv;
  float *r0 = malloc(sz), *r1 = malloc(sz), *a0 = malloc(sz), *a1 = malloc(sz);
  /* each sequence alone, in one call */
  {
    fwd f;
    fwd_open(&f, m, n, n);
    for (int p = 0; p < 2; p++) {
      const int32_t s = nc_kv_seq_new(f.kv), take = n;
      int32_t done = 0;
      const int32_t *tok[1] = {p ? t1 : t0};
      float *out[1] = {p ? r1 : r0};
      feed(&f, 1, &s, tok, &done, &take, out);
      nc_kv_seq_free(f.kv, s);
    }
    fwd_close(&f);
  }
  /* both, in shared batches of cycled chunk sizes */
  static const int32_t chunks[] = {5, 1, 17, 30, 2, 9, 1, 1, 20};
  {
    fwd f;
    fwd_open(&f, m, n, 64);
    const int32_t s[2] = {nc_kv_seq_new(f.kv), nc_kv_seq_new(f.kv)};
    const int32_t *tok[2] = {t0, t1};
    float *out[2] = {a0, a1};
    int32_t done[2] = {0, 0};
    for (int it = 0; done[0] < n || done[1] < n; it++) {
      int32_t take[2];
      for (int p = 0; p < 2; p++) {
        take[p] = chunks[(it + 3 * p) % 9];
        if (done[p] + take[p] > n) take[p] = n - done[p];
      }
      feed(&f, 2, s, tok, done, take, out);
    }
    fwd_close(&f);
  }
  assert_memory_equal(r0, a0, sz);
  assert_memory_equal(r1, a1, sz);
  /* a fork at position n / 2 (mid-block) goes on as the original */
  {
    fwd f;
    fwd_open(&f, m, n, n);
    const int32_t s = nc_kv_seq_new(f.kv), half = n / 2 + 3;
    int32_t done = 0;
    const int32_t *tok[2] = {t0, t0};
    float *out[2] = {a0, a1};
    feed(&f, 1, &s, tok, &done, &half, out);
    const int32_t s2[2] = {s, nc_kv_seq_fork(f.kv, s)};
    assert_true(s2[1] >= 0);
    assert_memory_equal(nc_kv_seq_state(f.kv, s), nc_kv_seq_state(f.kv, s2[1]),
                        sizeof(float) * (size_t)nc_kv_state_floats(f.kv));
    int32_t d2[2] = {half, half};
    const int32_t rest[2] = {n - half, n - half};
    feed(&f, 2, s2, tok, d2, rest, out);
    fwd_close(&f);
  }
  /* the fork's rows: from the fork on */
  const int64_t at = (int64_t)(n / 2 + 3) * nv;
  assert_memory_equal(r0, a0, sz);
  assert_memory_equal(r0 + at, a1 + at, sz - sizeof(float) * (size_t)at);
  print_message("%s (random): %d positions x 2 sequences: logits alone "
                "== shared batches in chunks == after a fork, bit for bit\n",
                name, (int)n);
  free(r0);
  free(r1);
  free(a0);
  free(a1);
}

static void test_forward_invariance(void **state) {
  forward_invariance(need(state), "qwen35");
}

/* qwen3next: its packed projections sorted per row, value heads reading
 * their key head by group */
static void test_forward_invariance_qwen3next(void **state) {
  (void)state;
  const char *root = getenv("NUCLEUS_ROOT");
  char path[4096];
  snprintf(path, sizeof path, "%s/build/arch/qwen3next.gguf",
           root && *root ? root : ".");
  nucleus_model_params p = nucleus_model_default_params();
  p.n_threads = 2;
  nucleus_model *m = NULL;
  nucleus_error err;
  if (nucleus_model_load(path, &p, &m, &err) != NUCLEUS_OK)
    NC_MODEL_UNAVAILABLE(err.message);
  forward_invariance(m, "qwen3next");
  nucleus_model_free(m);
}

/* The slots: a new sequence's state is zeros, one slot per live sequence
 * (kept for the id after a free), truncation below the length cuts to 0. */
static void test_state_slots(void **state) {
  const nucleus_model *m = need(state);
  const nc_hparams *hp = nc_model_hparams(m);
  fwd f;
  fwd_open(&f, m, 32, 32);
  const int64_t floats = nc_kv_state_floats(f.kv);
  assert_int_equal(floats, (int64_t)hp->n_layer_rec *
                               ((hp->ssm_d_conv - 1) * nc_hp_ssm_conv_dim(hp) +
                                (int64_t)hp->ssm_n_v_heads * hp->ssm_d_state *
                                    hp->ssm_d_state));
  assert_int_equal(nc_kv_state_bytes(f.kv), 0);
  assert_null(nc_kv_seq_state(f.kv, 0));
  int32_t tok[20];
  random_tokens(tok, 20, hp->n_vocab, 7);
  const int32_t s = nc_kv_seq_new(f.kv), take = 20;
  assert_int_equal(nc_kv_state_bytes(f.kv), (size_t)floats * sizeof(float));
  int32_t done = 0;
  float *lg = malloc(sizeof(float) * 20 * (size_t)hp->n_vocab);
  const int32_t *tp[1] = {tok};
  float *out[1] = {lg};
  feed(&f, 1, &s, tp, &done, &take, out);
  const float *st = nc_kv_seq_state(f.kv, s);
  int64_t nonzero = 0;
  for (int64_t i = 0; i < floats; i++)
    nonzero += st[i] != 0.0f;
  assert_true(nonzero > floats / 2);
  /* a checkpoint goes back (speculative steps): four positions on, then
   * rewound to it, with the state and length of before (once); the same
   * four again give the same bits */
  assert_int_equal(nc_kv_rollback_room(f.kv, 20, 4), 4);
  assert_false(nc_kv_seq_rewind(f.kv, s)); /* none taken */
  const size_t st_bytes = (size_t)floats * sizeof(float);
  const size_t row4 = 4 * (size_t)hp->n_vocab;
  float *before = malloc(st_bytes), *l1 = malloc(sizeof(float) * 6 * row4),
        *l2 = malloc(sizeof(float) * 6 * row4);
  assert_non_null(before);
  assert_non_null(l1);
  assert_non_null(l2);
  memcpy(before, st, st_bytes);
  assert_true(nc_kv_seq_checkpoint(f.kv, s));
  int32_t more[24], take4 = 4;
  memcpy(more, tok, sizeof tok);
  random_tokens(more + 20, 4, hp->n_vocab, 9);
  const int32_t *mp[1] = {more};
  float *o1[1] = {l1}, *o2[1] = {l2};
  done = 20;
  feed(&f, 1, &s, mp, &done, &take4, o1);
  assert_int_equal(nc_kv_seq_len(f.kv, s), 24);
  assert_true(memcmp(nc_kv_seq_state(f.kv, s), before, st_bytes) != 0);
  assert_true(nc_kv_seq_rewind(f.kv, s));
  assert_int_equal(nc_kv_seq_len(f.kv, s), 20);
  assert_memory_equal(nc_kv_seq_state(f.kv, s), before, st_bytes);
  assert_false(nc_kv_seq_rewind(f.kv, s)); /* spent */
  done = 20;
  feed(&f, 1, &s, mp, &done, &take4, o2);
  assert_memory_equal(l1 + 5 * row4, l2 + 5 * row4, sizeof(float) * row4);
  free(before);
  free(l1);
  free(l2);
  nc_kv_seq_truncate(f.kv, s, 24); /* at the length: nothing changes */
  assert_int_equal(nc_kv_seq_len(f.kv, s), 24);
  nc_kv_seq_truncate(f.kv, s, 23); /* below: the state is gone, so is all */
  assert_int_equal(nc_kv_seq_len(f.kv, s), 0);
  for (int64_t i = 0; i < floats; i++)
    assert_true(nc_kv_seq_state(f.kv, s)[i] == 0.0f);
  nc_kv_seq_free(f.kv, s);
  const int32_t s2 = nc_kv_seq_new(f.kv); /* the id's slot again, zeroed */
  assert_int_equal(s2, s);
  assert_int_equal(nc_kv_state_bytes(f.kv), (size_t)floats * sizeof(float));
  for (int64_t i = 0; i < floats; i++)
    assert_true(nc_kv_seq_state(f.kv, s2)[i] == 0.0f);
  free(lg);
  fwd_close(&f);
}

/* A row with a snapshot target leaves there the state of its sequence
 * after it: the state of a sequence fed exactly up to that row, whatever
 * rows come after it in the call; the snapshot goes when its block is
 * freed unnamed. */
static void test_state_snapshots(void **state) {
  const nucleus_model *m = need(state);
  const nc_hparams *hp = nc_model_hparams(m);
  fwd f;
  fwd_open(&f, m, 80, 80);
  const size_t bytes = sizeof(float) * (size_t)nc_kv_state_floats(f.kv);
  assert_int_equal(nc_kv_snaps_max(f.kv), 4); /* the cache's max_seqs */
  /* the bound: set before the first snapshot, in [1, NC_KV_MAX_SNAPS] */
  nucleus_error serr;
  assert_int_equal(nc_kv_snaps_set_max(f.kv, 0, &serr),
                   NC_ERR_INVALID_ARGUMENT);
  assert_string_equal(serr.message,
                      "state snapshots: 0, must be in [1, 65536]");
  assert_int_equal(nc_kv_snaps_set_max(f.kv, 3, &serr), NC_OK);
  assert_int_equal(nc_kv_snaps_max(f.kv), 3);
  assert_int_equal(nc_kv_snaps_set_max(f.kv, 4, &serr), NC_OK);
  int32_t tok[80];
  random_tokens(tok, 80, hp->n_vocab, 0x5EEDull);
  /* the state after exactly 16 tokens */
  const int32_t a = nc_kv_seq_new(f.kv);
  int32_t done = 0;
  const int32_t sixteen = 16;
  float *lg = malloc(sizeof(float) * 40 * (size_t)hp->n_vocab);
  const int32_t *tp[1] = {tok};
  float *out[1] = {lg};
  feed(&f, 1, &a, tp, &done, &sixteen, out);
  float *want = malloc(bytes);
  memcpy(want, nc_kv_seq_state(f.kv, a), bytes);
  nc_kv_seq_free(f.kv, a);
  /* 30 tokens in one call, the row of position 15 with a target */
  const int32_t b = nc_kv_seq_new(f.kv);
  nucleus_error err;
  assert_int_equal(nc_kv_seq_reserve(f.kv, b, 30, &err), NC_OK);
  assert_null(nc_kv_snap_take(f.kv, b, 15, true)); /* not a block end */
  assert_null(nc_kv_snap_take(f.kv, b, 48, true)); /* not reserved */
  float *snap = nc_kv_snap_take(f.kv, b, 16, true);
  assert_non_null(snap);
  assert_int_equal(nc_kv_snaps_held(f.kv), 1);
  nc_batch_clear(&f.b);
  for (int32_t i = 0; i < 30; i++)
    assert_true(nc_batch_add(&f.b, tok[i], i, b, i == 29));
  nc_batch_set_snapshot(&f.b, 15, snap);
  assert_int_equal(nc_context_forward(f.ctx, &f.b, f.logits, &err), NC_OK);
  assert_memory_equal(snap, want, bytes);
  assert_true(memcmp(nc_kv_seq_state(f.kv, b), want, bytes) != 0);
  assert_int_equal(nc_kv_snaps_set_max(f.kv, 8, &serr),
                   NC_ERR_INVALID_ARGUMENT); /* one was taken */
  assert_int_equal(nc_kv_snaps_max(f.kv), 4);
  /* written: no second target for that block end */
  assert_null(nc_kv_snap_take(f.kv, b, 16, true));
  /* never named: it goes with the block */
  nc_kv_seq_free(f.kv, b);
  assert_int_equal(nc_kv_snaps_held(f.kv), 0);
  /* the bound (max_seqs): a snapshot a row of the call being built writes
   * is never evicted for another (NULL instead); a named one is, least
   * recently used first */
  const int32_t c = nc_kv_seq_new(f.kv);
  assert_int_equal(nc_kv_seq_reserve(f.kv, c, 80, &err), NC_OK);
  nc_batch_clear(&f.b);
  for (int32_t i = 0; i < 80; i++)
    assert_true(nc_batch_add(&f.b, tok[i], i, c, i == 79));
  for (int32_t end = 16; end <= 64; end += 16) {
    float *dst = nc_kv_snap_take(f.kv, c, end, false);
    assert_non_null(dst);
    nc_batch_set_snapshot(&f.b, end - 1, dst);
  }
  assert_null(nc_kv_snap_take(f.kv, c, 80, false)); /* four in flight */
  assert_int_equal(nc_context_forward(f.ctx, &f.b, f.logits, &err), NC_OK);
  nc_kv_seq_publish(f.kv, c, tok, 80);
  const uint64_t root = nc_kv_salt_hash(NULL, 0);
  int64_t idle;
  assert_int_equal(nc_kv_prefix_peek(f.kv, root, tok, 17, &idle), 16);
  const int32_t d = nc_kv_seq_new(f.kv);
  assert_int_equal(nc_kv_seq_reserve(f.kv, d, 16, &err), NC_OK);
  assert_non_null(nc_kv_snap_take(f.kv, d, 16, true));
  assert_int_equal(nc_kv_snaps_held(f.kv), 4);
  /* the one after 16 went: no hit that ends there, one that ends at 32 */
  assert_int_equal(nc_kv_prefix_peek(f.kv, root, tok, 17, &idle), 0);
  assert_int_equal(nc_kv_prefix_peek(f.kv, root, tok, 33, &idle), 32);
  nc_kv_seq_free(f.kv, d);
  nc_kv_seq_free(f.kv, c);
  print_message("qwen35 (random): the snapshot at a block end of a 30-row "
                "call == the state after 16 tokens; dropped with its "
                "unnamed block; at most 4, in-flight ones kept, named ones "
                "evicted LRU\n");
  free(want);
  free(lg);
  fwd_close(&f);
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

static nucleus_engine *engine_of(nucleus_model *m, int64_t kv_tokens,
                                 int32_t budget, bool prefix_cache) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.no_prefix_cache = !prefix_cache;
  ep.n_ctx = 2048;
  ep.kv_cache_tokens = kv_tokens;
  ep.max_batch_tokens = budget;
  /* no prefill bound (prefill_budget.h): it follows the steps' measured
   * times, so the schedule, and whether a tight pool preempts, would
   * depend on the machine's speed; these runs fix the schedule */
  ep.decode_stall = 1000;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  assert_int_equal(nc_engine_create_stepped(m, &ep, &e, &err), NC_OK);
  assert_true(nc_kv_state_floats(e->kv) > 0);
  return e;
}

static nucleus_engine *engine(nucleus_model *m, int64_t kv_tokens,
                              int32_t budget) {
  return engine_of(m, kv_tokens, budget, true);
}

static void run_on(nucleus_engine *e, const spec *specs, int n, result *out) {
  nucleus_request *reqs[16] = {0};
  bool done[16] = {false};
  memset(out, 0, sizeof *out * (size_t)n);
  int finished = 0;
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
  assert_int_equal(nc_kv_blocks_used(e->kv), 0);
}

static void assert_same(const result *a, const result *b, const char *what) {
  if (a->n != b->n ||
      memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n) ||
      memcmp(a->logprobs, b->logprobs, sizeof(float) * (size_t)a->n))
    fail_msg("%s: tokens or logprobs differ from the request's alone", what);
}

static void test_engine_invariance(void **state) {
  nucleus_model *m = need(state);
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
  result ref[N], got[N];
  for (int i = 0; i < N; i++) {
    spec s = specs[i];
    s.arrival = 0;
    nucleus_engine *e = engine(m, 4096, 512);
    run_on(e, &s, 1, &ref[i]);
    nucleus_engine_free(e);
  }
  nucleus_engine *e = engine(m, 4096, 512);
  for (int i = 0; i < N; i++) { /* again on one engine: a prefix hit */
    spec s = specs[i];
    s.arrival = 0;
    run_on(e, &s, 1, &got[i]);
    assert_same(&ref[i], &got[i], "alone");
    assert_int_equal(got[i].cached, 0);
    run_on(e, &s, 1, &got[i]);
    assert_same(&ref[i], &got[i], "the same prompt again");
    /* the prompt's last block end short of its last token */
    assert_int_equal(got[i].cached, (s.n_prompt - 1) / 16 * 16);
  }
  assert_true(nc_kv_snaps_held(e->kv) <= nc_kv_snaps_max(e->kv));
  nucleus_engine_free(e);
  e = engine(m, 4096, 512);
  run_on(e, specs, N, got);
  for (int i = 0; i < N; i++)
    assert_same(&ref[i], &got[i], "together");
  nucleus_engine_free(e);
  e = engine(m, 4096, 7);
  run_on(e, specs, N, got);
  for (int i = 0; i < N; i++)
    assert_same(&ref[i], &got[i], "in chunks of 7");
  nucleus_engine_free(e);
  /* preempted: readmitted from the last snapshot its blocks kept (the
   * prefix cache), or with the cache off recomputed from the tokens */
  nucleus_engine_stats st, st_off;
  e = engine(m, 112, 512);
  run_on(e, specs, N, got);
  for (int i = 0; i < N; i++)
    assert_same(&ref[i], &got[i], "preempted");
  nucleus_engine_get_stats(e, &st);
  assert_true(st.preemptions_total > 0);
  nucleus_engine_free(e);
  e = engine_of(m, 112, 512, false);
  run_on(e, specs, N, got);
  for (int i = 0; i < N; i++)
    assert_same(&ref[i], &got[i], "preempted, the state recomputed");
  nucleus_engine_get_stats(e, &st_off);
  assert_true(st_off.preemptions_total > 0);
  assert_int_equal(st_off.state_snapshots, 0);
  nucleus_engine_free(e);
  print_message("qwen35 (random): %d requests: alone == again (a prefix "
                "hit) == together == in chunks of 7 == in a pool of 112 "
                "tokens (%lld preemptions)\n",
                N, (long long)st.preemptions_total);
}

/* A chat on one engine: each turn's prompt is the one before, its reply
 * and 9 new tokens. Every turn but the first takes the prefix up to the
 * last block end the turn before fed (its state from the rolling
 * snapshot) and gives the tokens and logprobs of the same prompt on a
 * fresh engine; the first turn (48 tokens, 3 blocks, in one step) sent
 * again reuses 32 (the snapshot kept short of its last token). */
static void test_engine_multi_turn(void **state) {
  nucleus_model *m = need(state);
  enum { TURNS = 3, NEW = 9, GEN = 20 };
  const int32_t nv = nc_model_hparams(m)->n_vocab;
  int32_t conv[48 + TURNS * (GEN + NEW)];
  int32_t n = 48, fed_before = 0;
  random_tokens(conv, n, nv, 0xC4A7ull);
  nucleus_engine *e = engine(m, 4096, 512);
  for (int turn = 0; turn < TURNS; turn++) {
    spec s = {conv, n, GEN, 0};
    result warm, cold;
    run_on(e, &s, 1, &warm);
    nucleus_engine *fresh = engine(m, 4096, 512);
    run_on(fresh, &s, 1, &cold);
    nucleus_engine_free(fresh);
    assert_int_equal(cold.cached, 0);
    assert_same(&cold, &warm, "a chat turn after a prefix hit");
    assert_int_equal(warm.cached, fed_before / 16 * 16);
    assert_int_equal(warm.n, GEN);
    if (turn == 0) { /* again: the kept snapshot short of its last token */
      run_on(e, &s, 1, &warm);
      assert_same(&cold, &warm, "the first turn again");
      assert_int_equal(warm.cached, 32);
    }
    /* (the last generated token is not fed) */
    fed_before = n + GEN - 1;
    memcpy(conv + n, warm.tokens, sizeof(int32_t) * GEN);
    n += GEN;
    random_tokens(conv + n, NEW, nv, 0x7E57ull + (uint64_t)turn);
    n += NEW;
  }
  /* one snapshot per prompt end and per sequence's rolling one, at most */
  assert_true(nc_kv_snaps_held(e->kv) <= 2 * TURNS);
  assert_true(nc_kv_snap_bytes(e->kv) <= (size_t)nc_kv_snaps_held(e->kv) *
                                             (size_t)nc_kv_state_floats(e->kv) *
                                             sizeof(float));
  nucleus_engine_free(e);
  print_message("qwen35 (random): a chat of %d turns: each turn's prompt a "
                "prefix hit to the last turn's last block end, tokens and "
                "logprobs as on a fresh engine\n",
                TURNS);
}

/* --state-snapshots: 0 keeps one per sequence slot (2 x max_running + 8);
 * with a bound of 1 a chat still gives every turn the tokens and logprobs
 * of a fresh engine, and holds at most one snapshot. */
static void test_engine_snapshot_bound(void **state) {
  nucleus_model *m = need(state);
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 2048;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  assert_int_equal(nc_engine_create_stepped(m, &ep, &e, &err), NC_OK);
  assert_int_equal(nc_kv_snaps_max(e->kv), 2 * ep.max_running + 8);
  nucleus_engine_free(e);
  ep.state_snapshots = 1;
  assert_int_equal(nc_engine_create_stepped(m, &ep, &e, &err), NC_OK);
  assert_int_equal(nc_kv_snaps_max(e->kv), 1);
  enum { GEN = 12 };
  const int32_t nv = nc_model_hparams(m)->n_vocab;
  int32_t conv[48 + 2 * (GEN + 9)];
  int32_t n = 48;
  random_tokens(conv, n, nv, 0xB0B0ull);
  for (int turn = 0; turn < 2; turn++) {
    spec s = {conv, n, GEN, 0};
    result warm, cold;
    run_on(e, &s, 1, &warm);
    nucleus_engine *fresh = engine(m, 4096, 512);
    run_on(fresh, &s, 1, &cold);
    nucleus_engine_free(fresh);
    assert_same(&cold, &warm, "a chat turn with one snapshot kept");
    assert_true(nc_kv_snaps_held(e->kv) <= 1);
    memcpy(conv + n, warm.tokens, sizeof(int32_t) * GEN);
    n += GEN;
    random_tokens(conv + n, 9, nv, 0x9A9Aull + (uint64_t)turn);
    n += 9;
  }
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  assert_true(st.state_snapshots <= 1);
  nucleus_engine_free(e);
  print_message("qwen35 (random): --state-snapshots 0 keeps %d; 1 keeps "
                "one, each chat turn as on a fresh engine\n",
                2 * ep.max_running + 8);
}

/* One request of n completions (or beams) on an engine of this budget:
 * the completions' tokens (or the beams' text) into out. */
typedef struct forked {
  int32_t tokens[4][MAX_GEN];
  int32_t n[4];
  char text[4][2048];
  size_t text_len[4];
} forked;

static void run_forked(nucleus_model *m, int32_t budget, const int32_t *prompt,
                       int32_t n_prompt, bool beam, forked *out) {
  nucleus_engine *e = engine(m, 4096, budget);
  nucleus_request_params p = nucleus_request_default_params();
  p.max_tokens = 12;
  p.ignore_eos = true;
  p.sampling.temperature = 0;
  if (beam) {
    p.beam_width = 3;
    p.n = 2;
  } else {
    p.n = 3;
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
      if (ev.kind == NUCLEUS_EVENT_DONE) {
        done = true;
        continue;
      }
      assert_true(ev.index >= 0 && ev.index < 4);
      assert_true(out->text_len[ev.index] + ev.text_len < sizeof out->text[0]);
      memcpy(out->text[ev.index] + out->text_len[ev.index], ev.text,
             ev.text_len);
      out->text_len[ev.index] += ev.text_len;
      if (ev.kind != NUCLEUS_EVENT_TOKEN) continue;
      const int32_t k = out->n[ev.index]++;
      assert_true(k < MAX_GEN);
      out->tokens[ev.index][k] = ev.token;
    }
  }
  assert_true(done);
  nucleus_request_free(r);
  assert_int_equal(nc_kv_blocks_used(e->kv), 0);
  nucleus_engine_free(e);
}

static void test_engine_forks(void **state) {
  nucleus_model *m = need(state);
  int32_t prompt[45];
  random_tokens(prompt, 45, nc_model_hparams(m)->n_vocab, 0xF0Dull);
  /* greedy n = 3: each fork of the prompt's sequence (its state copied)
   * equals the greedy request alone */
  spec s = {prompt, 45, 12, 0};
  result alone;
  nucleus_engine *e = engine(m, 4096, 512);
  run_on(e, &s, 1, &alone);
  nucleus_engine_free(e);
  forked got;
  run_forked(m, 512, prompt, 45, false, &got);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(got.n[i], alone.n);
    assert_memory_equal(got.tokens[i], alone.tokens,
                        sizeof(int32_t) * (size_t)alone.n);
  }
  /* beams, forked and freed as they are reordered: chunks of 16 == one
   * batch */
  forked a, b;
  run_forked(m, 512, prompt, 45, true, &a);
  run_forked(m, 16, prompt, 45, true, &b);
  for (int i = 0; i < 2; i++) {
    assert_true(a.text_len[i] > 0);
    assert_int_equal(a.text_len[i], b.text_len[i]);
    assert_memory_equal(a.text[i], b.text[i], a.text_len[i]);
  }
  print_message("qwen35 (random): n = 3 greedy forks == the request alone; "
                "beams (width 3, n 2) in chunks of 16 == in one batch\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_state_slots),
      cmocka_unit_test(test_forward_invariance),
      cmocka_unit_test(test_forward_invariance_qwen3next),
      cmocka_unit_test(test_engine_invariance),
      cmocka_unit_test(test_engine_forks),
      cmocka_unit_test(test_engine_multi_turn),
      cmocka_unit_test(test_state_snapshots),
      cmocka_unit_test(test_engine_snapshot_bound),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
