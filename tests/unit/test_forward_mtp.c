/* The MTP head (arch_qwen35_mtp.c) on the random qwen35mtp file of
 * scripts/make_arch_gguf.py (build/arch, `make arch-models`: qwen35 with
 * one MTP layer):
 *
 * - loading: with nucleus_model_params.mtp the head loads (one cache layer
 *   more, n_embd more floats of state); a file without MTP layers, or an
 *   arch without a head, is refused with a message naming why; without
 *   mtp nothing changes;
 * - the model's logits are the same bits with the head on (it only adds
 *   K/V of its own);
 * - the head's drafts (nc_context_mtp after a prompt: its first draft from
 *   the last token and the model's state, then two more from its own
 *   state) give the logits of the plain-C reference of the formula
 *   (tests/reference/forward_ref_qwen35.c's nc_ref_qwen35_mtp), on
 *   the qwen3nextm file too (the head's FFN: experts and a shared expert),
 *   and without flash attention;
 * - the state a batch leaves for the next (the hidden state of its last
 *   row) makes a prompt fed in chunks draft the same bits as one fed
 *   whole, as does one that reuses another's first block by prefix (the
 *   hidden state restored with its snapshot); the drafts change no
 *   sequence length. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../reference/forward_ref.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"
#include "test_require.h"

typedef struct fixture {
  nucleus_model *mtp, *plain; /* the same file with and without the head */
  char why[4200];
} fixture;

static void file_path(char *path, size_t n, const char *kind) {
  const char *root = getenv("NUCLEUS_ROOT");
  snprintf(path, n, "%s/build/arch/%s.gguf", root && *root ? root : ".", kind);
}

static nucleus_model *load_fa(const char *kind, bool mtp, nucleus_flash_attn fa,
                              nucleus_error *err) {
  char path[4096];
  file_path(path, sizeof path, kind);
  nucleus_model_params p = nucleus_model_default_params();
  p.n_threads = 2;
  p.mtp = mtp;
  p.flash_attn = fa;
  nucleus_model *m = NULL;
  if (nucleus_model_load(path, &p, &m, err) != NUCLEUS_OK) return NULL;
  return m;
}

static nucleus_model *load(const char *kind, bool mtp, nucleus_error *err) {
  return load_fa(kind, mtp, NUCLEUS_FLASH_ATTN_AUTO, err);
}

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  *state = fx;
  nucleus_error err = {0};
  fx->mtp = load("qwen35mtp", true, &err);
  if (fx->mtp) fx->plain = load("qwen35mtp", false, &err);
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

static const int32_t k_prompt[] = {11, 464, 2068, 7586, 21831, 18045, 625, 262};
#define N_PROMPT ((int32_t)(sizeof k_prompt / sizeof *k_prompt))

/* A cache and context for one sequence of the model. */
typedef struct runner {
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch b;
  int32_t seq;
} runner;

static void runner_open(runner *r, const nucleus_model *m) {
  const nc_hparams *hp = nc_model_hparams(m);
  assert_int_equal(nc_kv_cache_create_typed(nc_hp_kv_shape(hp),
                                            nc_model_kv_types(m), 16, 16, 2,
                                            &r->kv, NULL),
                   NC_OK);
  assert_int_equal(nc_context_create(m, r->kv, 64, &r->ctx, NULL), NC_OK);
  assert_int_equal(nc_batch_init(&r->b, 64, NULL), NC_OK);
  r->seq = nc_kv_seq_new(r->kv);
  assert_true(r->seq >= 0);
  assert_int_equal(nc_kv_seq_reserve(r->kv, r->seq, 128, NULL), NC_OK);
}

static void runner_close(runner *r) {
  nc_batch_free(&r->b);
  nc_context_free(r->ctx);
  nc_kv_cache_free(r->kv);
}

/* Feeds tokens[from, to) at their positions; the last row's logits. */
static void feed(runner *r, const int32_t *tokens, int32_t from, int32_t to,
                 float *logits) {
  nc_batch_clear(&r->b);
  for (int32_t p = from; p < to; p++)
    nc_batch_add_reusable(&r->b, tokens[p], p, r->seq, p == to - 1);
  assert_int_equal(nc_context_forward(r->ctx, &r->b, logits, NULL), NC_OK);
}

/* The head's logits of 1 + k drafts after tokens[0..n) fed in chunks of
 * `chunk`: its first from tokens[n-1] at n - 1 (fed to the head only),
 * then from each drafts[j]. */
static void draft_logits(const nucleus_model *m, int32_t chunk,
                         const int32_t *drafts, int32_t k, float *out) {
  const nc_hparams *hp = nc_model_hparams(m);
  const int64_t E = hp->n_embd, V = hp->n_vocab;
  runner r;
  runner_open(&r, m);
  float *logits = malloc(sizeof(float) * (size_t)V);
  float *h = malloc(sizeof(float) * (size_t)E);
  assert_non_null(logits);
  assert_non_null(h);
  for (int32_t p = 0; p < N_PROMPT - 1; p += chunk)
    feed(&r, k_prompt, p, p + chunk < N_PROMPT - 1 ? p + chunk : N_PROMPT - 1,
         logits);
  const float *st = nc_kv_seq_state(r.kv, r.seq);
  memcpy(h, st + nc_kv_state_floats(r.kv) - E, sizeof(float) * (size_t)E);
  for (int32_t j = 0; j <= k; j++) {
    nc_batch_clear(&r.b);
    nc_batch_add_reusable(&r.b, j ? drafts[j - 1] : k_prompt[N_PROMPT - 1],
                          N_PROMPT - 1 + j, r.seq, true);
    assert_int_equal(nc_context_mtp(r.ctx, &r.b, h, h, out + j * V, NULL),
                     NC_OK);
    /* the drafts change no length */
    assert_int_equal(nc_kv_seq_len(r.kv, r.seq), N_PROMPT - 1);
  }
  /* below the length: refused */
  nc_batch_clear(&r.b);
  nc_batch_add_reusable(&r.b, 5, N_PROMPT - 2, r.seq, true);
  nc_error err = {0};
  assert_int_equal(nc_context_mtp(r.ctx, &r.b, h, h, logits, &err),
                   NC_ERR_INVALID_ARGUMENT);
  free(logits);
  free(h);
  runner_close(&r);
}

static void test_load(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  const nc_hparams *hm = nc_model_hparams(fx->mtp),
                   *hp = nc_model_hparams(fx->plain);
  assert_true(hm->mtp);
  assert_false(hp->mtp);
  assert_int_equal(hm->n_layer_nextn, 1);
  assert_int_equal(hm->n_layer, hp->n_layer);
  assert_int_equal(nc_hp_n_layer_kv(hm), nc_hp_n_layer_kv(hp) + 1);
  assert_int_equal(nc_hp_kv_shape(hm).state_floats,
                   nc_hp_kv_shape(hp).state_floats + hm->n_embd);
  const nc_model_weights *w = nc_model_weights_of(fx->mtp);
  assert_non_null(w->mtp_eh_proj.data);
  assert_int_equal(w->mtp_layer.kv_layer, nc_hp_n_layer_kv(hm) - 1);
  /* the file has no embed_tokens or shared_head_head: the model's */
  assert_ptr_equal(w->mtp_embd.data, w->tok_embd.data);
  assert_ptr_equal(w->mtp_head.data, w->output.data);
  assert_ptr_not_equal(w->mtp_head_norm.data, w->output_norm.data);
  assert_null(nc_model_weights_of(fx->plain)->mtp_eh_proj.data);
  nucleus_error err = {0};
  assert_null(load("qwen35", true, &err));
  assert_non_null(strstr(err.message, "no MTP layers"));
  assert_non_null(strstr(err.message, "nextn_predict_layers"));
}

/* The model's own logits: the same bits with the head on. */
static void test_logits_unchanged(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  const int64_t V = nc_model_hparams(fx->mtp)->n_vocab;
  float *a = malloc(sizeof(float) * (size_t)V),
        *b = malloc(sizeof(float) * (size_t)V);
  assert_non_null(a);
  assert_non_null(b);
  runner ra, rb;
  runner_open(&ra, fx->mtp);
  runner_open(&rb, fx->plain);
  feed(&ra, k_prompt, 0, 5, a);
  feed(&rb, k_prompt, 0, 5, b);
  assert_memory_equal(a, b, sizeof(float) * (size_t)V);
  for (int32_t p = 5; p < N_PROMPT; p++) { /* decode rows */
    feed(&ra, k_prompt, p, p + 1, a);
    feed(&rb, k_prompt, p, p + 1, b);
    assert_memory_equal(a, b, sizeof(float) * (size_t)V);
  }
  runner_close(&ra);
  runner_close(&rb);
  free(a);
  free(b);
}

/* The drafts' logits of model m against the reference of the formula. */
static void against_reference(const nucleus_model *m) {
  const int64_t V = nc_model_hparams(m)->n_vocab;
  const int32_t drafts[2] = {314, 4173};
  float *fast = malloc(sizeof(float) * 3 * (size_t)V);
  float *ref = malloc(sizeof(float) * 3 * (size_t)V);
  assert_non_null(fast);
  assert_non_null(ref);
  draft_logits(m, 64, drafts, 2, fast);
  assert_int_equal(
      nc_ref_qwen35_mtp(m, k_prompt, N_PROMPT, drafts, 2, ref, NULL), NC_OK);
  for (int j = 0; j < 3; j++) {
    const float *f = fast + j * V, *r = ref + j * V;
    double max_ref = 0, max_diff = 0;
    int32_t am_f = 0, am_r = 0;
    for (int64_t i = 0; i < V; i++) {
      if (fabs(r[i]) > max_ref) max_ref = fabs(r[i]);
      if (fabs(f[i] - r[i]) > max_diff) max_diff = fabs(f[i] - r[i]);
      if (f[i] > f[am_f]) am_f = (int32_t)i;
      if (r[i] > r[am_r]) am_r = (int32_t)i;
    }
    fprintf(stderr,
            "  draft %d: max |logit| %.4f, max difference %.2e, top %d"
            " / %d\n",
            j, max_ref, max_diff, am_f, am_r);
    /* F16 K/V and the kernels' orders against double sums */
    assert_true(max_ref > 0.1);
    assert_true(max_diff < 2e-3 * max_ref + 1e-4);
    assert_int_equal(am_f, am_r);
  }
  free(fast);
  free(ref);
}

static void test_against_reference(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  against_reference(fx->mtp);
}

/* qwen3next's head (qwen3nextm: merged gate_up experts, one MTP layer):
 * experts beside a shared expert as its FFN. */
static void test_against_reference_qwen3next(void **state) {
  nucleus_error err = {0};
  nucleus_model *m = load("qwen3nextm", true, &err);
  if (!m) NC_MODEL_UNAVAILABLE(err.message);
  assert_non_null(nc_model_weights_of(m)->mtp_layer.ffn_gate_inp.data);
  against_reference(m);
  nucleus_model_free(m);
}

/* The same without flash attention (the attention kernels' path). */
static void test_against_reference_no_flash(void **state) {
  nucleus_error err = {0};
  nucleus_model *m = load_fa("qwen35mtp", true, NUCLEUS_FLASH_ATTN_OFF, &err);
  if (!m) NC_MODEL_UNAVAILABLE(err.message);
  against_reference(m);
  nucleus_model_free(m);
}

/* A prompt fed in chunks (the head's input crossing batches through the
 * state) drafts what one batch does, bit for bit. */
static void test_chunks(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  const int64_t V = nc_model_hparams(fx->mtp)->n_vocab;
  const int32_t drafts[1] = {99};
  float *a = malloc(sizeof(float) * 2 * (size_t)V);
  float *b = malloc(sizeof(float) * 2 * (size_t)V);
  assert_non_null(a);
  assert_non_null(b);
  draft_logits(fx->mtp, 64, drafts, 1, a);
  const int32_t chunks[] = {1, 2, 3};
  for (size_t i = 0; i < sizeof chunks / sizeof *chunks; i++) {
    draft_logits(fx->mtp, chunks[i], drafts, 1, b);
    assert_memory_equal(a, b, sizeof(float) * 2 * (size_t)V);
  }
  free(a);
  free(b);
}

/* A prefix hit restores the head's input with the state: a sequence that
 * reuses another's first block (its snapshot) drafts the bits of one fed
 * from position 0. */
static void test_prefix_hit(void **state) {
  fixture *fx = *state;
  NEED_FILES(fx);
  const nucleus_model *m = fx->mtp;
  const int64_t E = nc_model_hparams(m)->n_embd,
                V = nc_model_hparams(m)->n_vocab;
  int32_t tok[20];
  for (int32_t i = 0; i < 20; i++)
    tok[i] = 300 + 37 * i;
  float *lg = malloc(sizeof(float) * (size_t)V);
  float *a = malloc(sizeof(float) * (size_t)V),
        *b = malloc(sizeof(float) * (size_t)V);
  float *h = malloc(sizeof(float) * (size_t)E);
  assert_non_null(lg);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(h);
  runner r;
  runner_open(&r, m);
  /* the first: 20 tokens, a snapshot at the block end 16, published */
  const uint64_t salt = nc_kv_salt_hash(NULL, 0);
  assert_int_equal(nc_kv_seq_attach_prefix(r.kv, r.seq, salt, tok, 20), 0);
  nc_batch_clear(&r.b);
  for (int32_t p = 0; p < 20; p++)
    nc_batch_add_reusable(&r.b, tok[p], p, r.seq, p == 19);
  nc_batch_set_snapshot(&r.b, 15, nc_kv_snap_take(r.kv, r.seq, 16, false));
  assert_int_equal(nc_context_forward(r.ctx, &r.b, lg, NULL), NC_OK);
  nc_kv_seq_publish(r.kv, r.seq, tok, 20);
  /* the drafts after tokens 0..18 fed whole and after a hit of 16 */
  for (int pass = 0; pass < 2; pass++) {
    const int32_t s2 = nc_kv_seq_new(r.kv);
    assert_true(s2 >= 0);
    const int32_t from =
        pass ? nc_kv_seq_attach_prefix(r.kv, s2, salt, tok, 20) : 0;
    assert_int_equal(from, pass ? 16 : 0);
    assert_int_equal(nc_kv_seq_reserve(r.kv, s2, 24, NULL), NC_OK);
    nc_batch_clear(&r.b);
    for (int32_t p = from; p < 19; p++)
      nc_batch_add_reusable(&r.b, tok[p], p, s2, p == 18);
    assert_int_equal(nc_context_forward(r.ctx, &r.b, lg, NULL), NC_OK);
    const float *st = nc_kv_seq_state(r.kv, s2);
    memcpy(h, st + nc_kv_state_floats(r.kv) - E, sizeof(float) * (size_t)E);
    nc_batch_clear(&r.b);
    nc_batch_add_reusable(&r.b, tok[19], 19, s2, true);
    assert_int_equal(nc_context_mtp(r.ctx, &r.b, h, h, pass ? b : a, NULL),
                     NC_OK);
    nc_kv_seq_free(r.kv, s2);
  }
  assert_memory_equal(a, b, sizeof(float) * (size_t)V);
  runner_close(&r);
  free(lg);
  free(a);
  free(b);
  free(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load),
      cmocka_unit_test(test_logits_unchanged),
      cmocka_unit_test(test_against_reference),
      cmocka_unit_test(test_against_reference_qwen3next),
      cmocka_unit_test(test_against_reference_no_flash),
      cmocka_unit_test(test_chunks),
      cmocka_unit_test(test_prefix_hit),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
