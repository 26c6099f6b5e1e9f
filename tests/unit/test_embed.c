/* Embeddings and rank scores (nucleus_embed, nucleus_embedder_*): the
 * random-weight embedding files of scripts/make_arch_gguf.py against
 * llama.cpp's vectors (tests/data/embed/arch_<kind>.txt,
 * scripts/gen_embed_goldens.py): qwen3emb (causal, last pooling),
 * gemmaemb (gemma-embedding: non-causal, symmetric windows, mean pooling,
 * dense projections), qwen3rank (rank pooling over the yes / no head),
 * bert, nomic-bert and a bert cross-encoder (bertrank).
 * Then batch invariance (a vector is the same bits alone, among 64 inputs
 * and under any packing), Matryoshka dimensions and the refusals.
 * Files: build/arch/<kind>.gguf (make arch-models). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nucleus.h"
#include "test_require.h"

#define MAX_INPUTS 16
#define MAX_TOKENS 512
#define MAX_WIDTH 1024

typedef struct golden {
  char pooling[16];
  int width, n;
  int32_t n_tokens[MAX_INPUTS];
  int32_t tokens[MAX_INPUTS][MAX_TOKENS];
  double vec[MAX_INPUTS][MAX_WIDTH];
} golden;

static const char *root(void) {
  const char *r = getenv("NUCLEUS_ROOT");
  return r && *r ? r : ".";
}

static void load_golden(golden *g, const char *kind) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/embed/arch_%s.txt", root(), kind);
  FILE *f = fopen(path, "r");
  if (!f) fail_msg("cannot open %s", path);
  memset(g, 0, sizeof *g);
  char word[32];
  int in = -1, vec = -1;
  while (fscanf(f, "%31s", word) == 1) {
    if (word[0] == '#' || strcmp(word, "model") == 0) {
      int c;
      while ((c = fgetc(f)) != '\n' && c != EOF)
        ;
    } else if (strcmp(word, "pooling") == 0) {
      assert_int_equal(fscanf(f, "%15s", g->pooling), 1);
    } else if (strcmp(word, "width") == 0) {
      assert_int_equal(fscanf(f, "%d", &g->width), 1);
      assert_true(g->width >= 1 && g->width <= MAX_WIDTH);
    } else if (strcmp(word, "inputs") == 0) {
      assert_int_equal(fscanf(f, "%d", &g->n), 1);
      assert_true(g->n >= 1 && g->n <= MAX_INPUTS);
    } else if (strcmp(word, "input") == 0) {
      in++;
      assert_true(in < g->n);
      assert_int_equal(fscanf(f, "%d", &g->n_tokens[in]), 1);
      assert_true(g->n_tokens[in] >= 1 && g->n_tokens[in] <= MAX_TOKENS);
      for (int i = 0; i < g->n_tokens[in]; i++)
        assert_int_equal(fscanf(f, "%d", &g->tokens[in][i]), 1);
    } else if (strcmp(word, "vector") == 0) {
      vec++;
      assert_true(vec == in);
      for (int i = 0; i < g->width; i++)
        assert_int_equal(fscanf(f, "%lf", &g->vec[vec][i]), 1);
    } else {
      fail_msg("%s: unexpected '%s'", path, word);
    }
  }
  fclose(f);
  assert_int_equal(in + 1, g->n);
  assert_int_equal(vec + 1, g->n);
}

static nucleus_model *load_kind(const char *kind, nucleus_flash_attn fa) {
  char path[4096];
  snprintf(path, sizeof path, "%s/build/arch/%s.gguf", root(), kind);
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  mp.flash_attn = fa;
  nucleus_model *m = NULL;
  nucleus_error err;
  if (nucleus_model_load(path, &mp, &m, &err) != NUCLEUS_OK) {
    char why[4200];
    snprintf(why, sizeof why, "%s (make arch-models): %s", path, err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return m;
}

static void inputs_of(const golden *g, nucleus_embed_input *in) {
  for (int i = 0; i < g->n; i++)
    in[i] = (nucleus_embed_input){g->tokens[i], (size_t)g->n_tokens[i]};
}

static double cosine(const float *a, const double *b, int n) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; i++) {
    ab += a[i] * b[i];
    aa += (double)a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / sqrt(aa * bb);
}

/* Every input's vector against llama.cpp's: cosine >= 0.99999 and the
 * same length (unnormalised) within 1e-3; normalised, a unit vector. */
static void check_golden(const char *kind, nucleus_flash_attn fa) {
  golden *g = malloc(sizeof *g);
  assert_non_null(g);
  load_golden(g, kind);
  nucleus_model *m = load_kind(kind, fa);
  nucleus_pooling pool;
  assert_true(nucleus_pooling_parse(g->pooling, &pool));
  assert_int_equal(nucleus_model_pooling(m), pool);
  assert_true(nucleus_model_is_embedding(m));
  nucleus_embed_params p = nucleus_embed_default_params();
  assert_int_equal(nucleus_embed_size(m, &p), g->width);
  nucleus_embed_input in[MAX_INPUTS];
  inputs_of(g, in);
  float *raw = malloc(sizeof(float) * MAX_INPUTS * MAX_WIDTH);
  float *unit = malloc(sizeof(float) * MAX_INPUTS * MAX_WIDTH);
  assert_non_null(raw);
  assert_non_null(unit);
  nucleus_error err;
  p.normalize = false;
  assert_int_equal(nucleus_embed(m, in, (size_t)g->n, &p, raw, &err),
                   NUCLEUS_OK);
  p.normalize = true;
  assert_int_equal(nucleus_embed(m, in, (size_t)g->n, &p, unit, &err),
                   NUCLEUS_OK);
  double worst = 1.0, worst_len = 0.0;
  for (int i = 0; i < g->n; i++) {
    const float *r = raw + (size_t)i * g->width;
    const double c = cosine(r, g->vec[i], g->width);
    double na = 0, nb = 0, nu = 0;
    for (int j = 0; j < g->width; j++) {
      na += (double)r[j] * r[j];
      nb += g->vec[i][j] * g->vec[i][j];
      nu += (double)unit[(size_t)i * g->width + j] *
            unit[(size_t)i * g->width + j];
    }
    const double dl = fabs(sqrt(na) - sqrt(nb)) / sqrt(nb);
    if (c < worst) worst = c;
    if (dl > worst_len) worst_len = dl;
    if (pool == NUCLEUS_POOLING_RANK) {
      /* scores: the same normalised or not (no normalisation) */
      assert_memory_equal(r, unit + (size_t)i * g->width,
                          sizeof(float) * (size_t)g->width);
      /* probabilities: llama.cpp's logits bound (2e-2) after a softmax */
      for (int j = 0; j < g->width; j++)
        assert_true(fabs(r[j] - g->vec[i][j]) < 2e-3);
    } else {
      assert_true(fabs(nu - 1.0) < 1e-5);
    }
  }
  print_message("%s (flash %s): %d inputs, worst cosine %.9f, worst length "
                "%.2e\n",
                kind, fa == NUCLEUS_FLASH_ATTN_ON ? "on" : "off", g->n, worst,
                worst_len);
  assert_true(worst >= 0.99999);
  /* (rank scores: each within 2e-3 above; a single score near 0, as the
   * cross-encoder's, has no meaningful relative length) */
  assert_true(worst_len <= 1e-3 || pool == NUCLEUS_POOLING_RANK);
  free(raw);
  free(unit);
  free(g);
  nucleus_model_free(m);
}

static void test_qwen3emb(void **state) {
  (void)state;
  check_golden("qwen3emb", NUCLEUS_FLASH_ATTN_OFF);
  check_golden("qwen3emb", NUCLEUS_FLASH_ATTN_ON);
}

static void test_gemmaemb(void **state) {
  (void)state;
  check_golden("gemmaemb", NUCLEUS_FLASH_ATTN_OFF);
  check_golden("gemmaemb", NUCLEUS_FLASH_ATTN_ON);
}

/* BERT encoders: bert (absolute positions, token types, LayerNorm, GELU),
 * nomic-bert (RoPE, SwiGLU, fused QKV) and a bert cross-encoder (rank
 * pooling through cls and cls.output). */
static void test_bert(void **state) {
  (void)state;
  check_golden("bert", NUCLEUS_FLASH_ATTN_OFF);
  check_golden("bert", NUCLEUS_FLASH_ATTN_ON);
}

static void test_nomicbert(void **state) {
  (void)state;
  check_golden("nomicbert", NUCLEUS_FLASH_ATTN_OFF);
  check_golden("nomicbert", NUCLEUS_FLASH_ATTN_ON);
}

static void test_bertrank(void **state) {
  (void)state;
  check_golden("bertrank", NUCLEUS_FLASH_ATTN_OFF);
  check_golden("bertrank", NUCLEUS_FLASH_ATTN_ON);
}

static void test_qwen3rank(void **state) {
  (void)state;
  check_golden("qwen3rank", NUCLEUS_FLASH_ATTN_OFF);
  check_golden("qwen3rank", NUCLEUS_FLASH_ATTN_ON);
}

/* 64 inputs (the golden's, prefixes of them of 1 to 60 tokens, and every
 * eighth one 65 to 160 tokens of the golden's tokens in turn: more than
 * one of flash attention's key tiles and query runs of 64) in one call, in
 * batches of at most 256 tokens, and each alone: the same bits. */
static void check_invariance(const char *kind) {
  golden *g = malloc(sizeof *g);
  assert_non_null(g);
  load_golden(g, kind);
  nucleus_model *m = load_kind(kind, NUCLEUS_FLASH_ATTN_AUTO);
  enum { N = 64, LONG = 160 };
  int32_t long_ids[LONG];
  for (int k = 0, src = 0, j = 0; k < LONG; k++) {
    long_ids[k] = g->tokens[src][j];
    if (++j == g->n_tokens[src]) j = 0, src = (src + 1) % g->n;
  }
  nucleus_embed_input in[N];
  for (int i = 0; i < N; i++) {
    const int src = i % g->n;
    const int32_t len = g->n_tokens[src];
    const int32_t n = i < g->n ? len : 1 + (i * 7) % (len < 60 ? len : 60);
    in[i] = (nucleus_embed_input){g->tokens[src], (size_t)n};
    if (i >= g->n && i % 8 == 0)
      in[i] = (nucleus_embed_input){long_ids, (size_t)(65 + (i * 37) % 96)};
  }
  const nucleus_embed_params p = nucleus_embed_default_params();
  const int32_t w = nucleus_embed_size(m, &p);
  assert_true(w > 0);
  float *all = malloc(sizeof(float) * N * (size_t)w);
  float *small = malloc(sizeof(float) * N * (size_t)w);
  float *one = malloc(sizeof(float) * (size_t)w);
  assert_non_null(all);
  assert_non_null(small);
  assert_non_null(one);
  nucleus_error err;
  nucleus_embedder *e = NULL, *e_small = NULL;
  assert_int_equal(nucleus_embedder_create(m, 0, &e, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_embedder_create(m, 256, &e_small, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_embedder_max_tokens(e_small), 256);
  assert_int_equal(nucleus_embedder_run(e, in, N, &p, all, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_embedder_run(e_small, in, N, &p, small, &err),
                   NUCLEUS_OK);
  assert_memory_equal(all, small, sizeof(float) * N * (size_t)w);
  for (int i = 0; i < N; i++) {
    assert_int_equal(nucleus_embedder_run(e, &in[i], 1, &p, one, &err),
                     NUCLEUS_OK);
    assert_memory_equal(one, all + (size_t)i * (size_t)w,
                        sizeof(float) * (size_t)w);
  }
  nucleus_embedder_free(e);
  nucleus_embedder_free(e_small);
  free(all);
  free(small);
  free(one);
  free(g);
  nucleus_model_free(m);
}

static void test_batch_invariance(void **state) {
  (void)state;
  check_invariance("qwen3emb");
  check_invariance("gemmaemb");
  check_invariance("bert");
}

/* dimensions k: the first k values of the unnormalised vector, then
 * normalised. */
static void test_matryoshka(void **state) {
  (void)state;
  golden *g = malloc(sizeof *g);
  assert_non_null(g);
  load_golden(g, "gemmaemb");
  nucleus_model *m = load_kind("gemmaemb", NUCLEUS_FLASH_ATTN_AUTO);
  nucleus_embed_input in[MAX_INPUTS];
  inputs_of(g, in);
  nucleus_embed_params p = nucleus_embed_default_params();
  p.normalize = false;
  float full[MAX_INPUTS * 256], cut[MAX_INPUTS * 64];
  nucleus_error err;
  assert_int_equal(nucleus_embed_size(m, &p), 256);
  assert_int_equal(nucleus_embed(m, in, (size_t)g->n, &p, full, &err),
                   NUCLEUS_OK);
  p.normalize = true;
  p.dimensions = 64;
  assert_int_equal(nucleus_embed_size(m, &p), 64);
  assert_int_equal(nucleus_embed(m, in, (size_t)g->n, &p, cut, &err),
                   NUCLEUS_OK);
  for (int i = 0; i < g->n; i++) {
    double ss = 0;
    for (int j = 0; j < 64; j++)
      ss += (double)full[i * 256 + j] * full[i * 256 + j];
    for (int j = 0; j < 64; j++)
      assert_true(fabs(full[i * 256 + j] / sqrt(ss) - cut[i * 64 + j]) < 1e-6);
  }
  free(g);
  nucleus_model_free(m);
}

static void expect_refusal(nucleus_status got, nucleus_status want,
                           const nucleus_error *err, const char *needle) {
  assert_int_equal(got, want);
  if (!strstr(err->message, needle))
    fail_msg("message '%s' lacks '%s'", err->message, needle);
}

static void test_refusals(void **state) {
  (void)state;
  nucleus_model *m = load_kind("qwen3emb", NUCLEUS_FLASH_ATTN_AUTO);
  const int32_t toks[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const int32_t bad[2] = {5, 1 << 30};
  float out[4 * 256];
  nucleus_error err;
  nucleus_embed_params p = nucleus_embed_default_params();
  nucleus_embed_input in[3] = {{toks, 3}, {toks, 2}, {toks, 0}};
  expect_refusal(nucleus_embed(m, in, 3, &p, out, &err),
                 NUCLEUS_ERR_INVALID_ARGUMENT, &err, "input 2 is empty");
  in[2] = (nucleus_embed_input){bad, 2};
  expect_refusal(nucleus_embed(m, in, 3, &p, out, &err),
                 NUCLEUS_ERR_INVALID_ARGUMENT, &err, "input 2: token");
  nucleus_embedder *e;
  assert_int_equal(nucleus_embedder_create(m, 8, &e, &err), NUCLEUS_OK);
  in[2] = (nucleus_embed_input){toks, 10};
  expect_refusal(nucleus_embedder_run(e, in, 3, &p, out, &err),
                 NUCLEUS_ERR_LIMIT, &err, "input 2 has 10 tokens");
  nucleus_embedder_free(e);
  expect_refusal(nucleus_embedder_create(m, -1, &e, &err),
                 NUCLEUS_ERR_INVALID_ARGUMENT, &err, "max_batch_tokens -1");
  p.pooling = NUCLEUS_POOLING_NONE;
  expect_refusal(nucleus_embed_params_validate(m, &p, &err),
                 NUCLEUS_ERR_INVALID_ARGUMENT, &err, "pooling 0");
  assert_int_equal(nucleus_embed_size(m, &p), 0);
  p.pooling = NUCLEUS_POOLING_RANK;
  expect_refusal(nucleus_embed_params_validate(m, &p, &err),
                 NUCLEUS_ERR_INVALID_ARGUMENT, &err, "no rank head");
  p.pooling = NUCLEUS_POOLING_MEAN;
  p.dimensions = 257;
  expect_refusal(nucleus_embed_params_validate(m, &p, &err),
                 NUCLEUS_ERR_INVALID_ARGUMENT, &err, "dimensions 257");
  p.dimensions = 0;
  assert_int_equal(nucleus_embed_params_validate(m, &p, &err), NUCLEUS_OK);
  nucleus_model_free(m);
  /* a file that names no pooling: the caller must choose one */
  m = load_kind("qwen3", NUCLEUS_FLASH_ATTN_AUTO);
  assert_false(nucleus_model_is_embedding(m));
  assert_int_equal(nucleus_model_pooling(m), NUCLEUS_POOLING_NONE);
  p = nucleus_embed_default_params();
  expect_refusal(nucleus_embed_params_validate(m, &p, &err),
                 NUCLEUS_ERR_INVALID_ARGUMENT, &err, "names none");
  p.pooling = NUCLEUS_POOLING_MEAN;
  in[2] = (nucleus_embed_input){toks, 10};
  assert_int_equal(nucleus_embed(m, in, 3, &p, out, &err), NUCLEUS_OK);
  nucleus_model_free(m);
}

/* The reranker's input: the file's rerank template filled in (qwen3rank:
 * the golden's inputs, which llama.cpp tokenized from the same query and
 * documents, scripts/gen_embed_goldens.py), else query then document with
 * the special tokens the vocabulary adds (the default model's: none). */
static void test_rerank_tokens(void **state) {
  (void)state;
  static const char *QUERY = "What is the capital of France?";
  static const char *DOCS[] = {
      "Paris is the capital and largest city of France.",
      "The mitochondria is the powerhouse of the cell.",
      "France's capital, Paris, lies on the Seine.",
  };
  golden *g = malloc(sizeof *g);
  assert_non_null(g);
  load_golden(g, "qwen3rank");
  assert_int_equal(g->n, 3);
  nucleus_model *m = load_kind("qwen3rank", NUCLEUS_FLASH_ATTN_AUTO);
  nucleus_error err;
  for (int i = 0; i < 3; i++) {
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(nucleus_rerank_tokens(m, QUERY, strlen(QUERY), DOCS[i],
                                           strlen(DOCS[i]), &ids, &n, &err),
                     NUCLEUS_OK);
    assert_int_equal(n, g->n_tokens[i]);
    assert_memory_equal(ids, g->tokens[i], n * sizeof *ids);
    nucleus_free(ids);
  }
  nucleus_model_free(m);
  m = load_kind("qwen3emb", NUCLEUS_FLASH_ATTN_AUTO);
  int32_t *ids = NULL, *q = NULL, *d = NULL;
  size_t n = 0, nq = 0, nd = 0;
  assert_int_equal(nucleus_rerank_tokens(m, QUERY, strlen(QUERY), DOCS[0],
                                         strlen(DOCS[0]), &ids, &n, &err),
                   NUCLEUS_OK);
  assert_int_equal(
      nucleus_tokenize(m, QUERY, strlen(QUERY), false, false, &q, &nq, &err),
      NUCLEUS_OK);
  assert_int_equal(nucleus_tokenize(m, DOCS[0], strlen(DOCS[0]), false, false,
                                    &d, &nd, &err),
                   NUCLEUS_OK);
  assert_int_equal(n, nq + nd);
  assert_memory_equal(ids, q, nq * sizeof *q);
  assert_memory_equal(ids + nq, d, nd * sizeof *d);
  nucleus_free(ids);
  nucleus_free(q);
  nucleus_free(d);
  nucleus_model_free(m);
  free(g);
}

static void test_pooling_names(void **state) {
  (void)state;
  const char *names[] = {"model", "none", "mean", "cls", "last", "rank"};
  for (int i = -1; i <= 4; i++) {
    nucleus_pooling p;
    assert_string_equal(nucleus_pooling_name((nucleus_pooling)i), names[i + 1]);
    assert_true(nucleus_pooling_parse(names[i + 1], &p));
    assert_int_equal(p, i);
  }
  nucleus_pooling p;
  assert_false(nucleus_pooling_parse("average", &p));
  assert_null(nucleus_pooling_name((nucleus_pooling)5));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pooling_names),
      cmocka_unit_test(test_qwen3emb),
      cmocka_unit_test(test_gemmaemb),
      cmocka_unit_test(test_qwen3rank),
      cmocka_unit_test(test_bert),
      cmocka_unit_test(test_nomicbert),
      cmocka_unit_test(test_bertrank),
      cmocka_unit_test(test_batch_invariance),
      cmocka_unit_test(test_matryoshka),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_rerank_tokens),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
