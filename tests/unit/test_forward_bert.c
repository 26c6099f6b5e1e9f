/* The bert family's fast path (src/model/archs/arch_bert.c, embedding mode:
 * nc_context_embed) against its reference forward pass
 * (tests/reference/forward_ref_bert.c: f32, the whole sequence, from the
 * math) on the random-weight bert and nomic-bert files (build/arch/, make
 * arch-models): every position's final hidden state within cosine 0.9999
 * of the reference's. The fast path rounds matmul inputs to F16 (the files'
 * weights are F16), K and V to F16 and GELU to ggml's F16 table; a wrong
 * step (a causal mask, a missing bias, RoPE pairs taken the other way) is
 * far below that bound. Plus: two sequences packed in one batch give each
 * the rows it gives alone (non-causal attention stays within a sequence).
 * test_embed.c holds both files to llama.cpp's vectors. */
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
#include "model/arch.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"
#include "test_require.h"

#define N_TOK 24

static nucleus_model *load(const char *kind) {
  const char *r = getenv("NUCLEUS_ROOT");
  char path[4096];
  snprintf(path, sizeof path, "%s/build/arch/%s.gguf", r && *r ? r : ".", kind);
  nucleus_model_params p = nucleus_model_default_params();
  p.n_threads = 2;
  nucleus_model *m = NULL;
  nucleus_error err;
  if (nucleus_model_load(path, &p, &m, &err) != NUCLEUS_OK) {
    char why[4200];
    snprintf(why, sizeof why, "%s (make arch-models): %s", path, err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return m;
}

/* The hidden states of the sequences of lens[] (tokens back to back),
 * packed in one batch as sequences 0, 1, ...: rows in batch order. */
static void embed_rows(const nucleus_model *m, const int32_t *tokens,
                       const int32_t *lens, int n_seq, float *out) {
  const nc_hparams *hp = nc_model_hparams(m);
  int32_t total = 0;
  for (int s = 0; s < n_seq; s++)
    total += lens[s];
  nc_error err = {0};
  nc_kv_cache *kv = NULL;
  assert_int_equal(nc_kv_cache_create_typed(nc_hp_kv_shape(hp),
                                            nc_model_kv_types(m), 16, 16, n_seq,
                                            &kv, &err),
                   NC_OK);
  nc_context *ctx = NULL;
  assert_int_equal(nc_context_create(m, kv, total, &ctx, &err), NC_OK);
  nc_batch b;
  assert_int_equal(nc_batch_init(&b, total, &err), NC_OK);
  int32_t at = 0;
  for (int s = 0; s < n_seq; s++) {
    assert_int_equal(nc_kv_seq_new(kv), s);
    assert_int_equal(nc_kv_seq_reserve(kv, s, lens[s], &err), NC_OK);
    for (int32_t i = 0; i < lens[s]; i++)
      assert_true(nc_batch_add(&b, tokens[at + i], i, s, true));
    at += lens[s];
  }
  nc_code rc = nc_context_embed(ctx, &b, out, &err);
  if (rc != NC_OK) fail_msg("embed: %s", err.message);
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
}

static double cosine(const float *a, const float *b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; i++) {
    ab += (double)a[i] * b[i];
    aa += (double)a[i] * a[i];
    bb += (double)b[i] * b[i];
  }
  return ab / sqrt(aa * bb);
}

static void check_kind(const char *kind) {
  nucleus_model *m = load(kind);
  const nc_hparams *hp = nc_model_hparams(m);
  const int64_t E = hp->n_embd;
  int32_t tokens[2 * N_TOK];
  for (int i = 0; i < 2 * N_TOK; i++)
    tokens[i] = (int32_t)((i * 7919 + 13) % hp->n_vocab);
  float *fast = malloc(sizeof(float) * 2 * N_TOK * (size_t)E);
  float *two = malloc(sizeof(float) * 2 * N_TOK * (size_t)E);
  float *ref = malloc(sizeof(float) * N_TOK * (size_t)hp->n_vocab);
  assert_non_null(fast);
  assert_non_null(two);
  assert_non_null(ref);
  const int32_t one[1] = {N_TOK};
  embed_rows(m, tokens, one, 1, fast);
  nc_error err = {0};
  assert_int_equal(nc_forward_ref(m, tokens, N_TOK, ref, &err), NC_OK);
  double worst = 1.0;
  for (int t = 0; t < N_TOK; t++) {
    const double c = cosine(fast + t * E, ref + t * E, E);
    if (c < worst) worst = c;
  }
  print_message("%s: %d positions, worst cosine to the reference %.7f\n", kind,
                N_TOK, worst);
  assert_true(worst >= 0.9999);
  /* packed with a second sequence (of other tokens, first in the batch):
   * the first sequence's rows are the same bits */
  const int32_t lens[2] = {N_TOK, N_TOK};
  int32_t swapped[2 * N_TOK];
  memcpy(swapped, tokens + N_TOK, sizeof(int32_t) * N_TOK);
  memcpy(swapped + N_TOK, tokens, sizeof(int32_t) * N_TOK);
  embed_rows(m, swapped, lens, 2, two);
  assert_memory_equal(two + N_TOK * E, fast, sizeof(float) * N_TOK * E);
  free(fast);
  free(two);
  free(ref);
  nucleus_model_free(m);
}

static void test_bert_reference(void **state) {
  (void)state;
  check_kind("bert");
}

static void test_nomicbert_reference(void **state) {
  (void)state;
  check_kind("nomicbert");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bert_reference),
      cmocka_unit_test(test_nomicbert_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
