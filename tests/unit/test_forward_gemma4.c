/* test_forward_gemma4: Gemma 4 against llama.cpp on the random-weight files
 * of scripts/make_arch_gguf.py (`gemma4`: E2B-like, per-layer embeddings,
 * 3 layers sharing K/V, two attention shapes; `gemma4moe`: 26B-A4B-like,
 * experts beside the dense FFN, V = K on full layers; `make arch-models`
 * writes them to build/arch/), the goldens of scripts/gen_arch_goldens.py
 * (tests/data/logits/arch_gemma4*.txt): flash attention off (one batch),
 * on with the prompt in one batch (llama.cpp's tiled order) and on one
 * token per decode (its row order). Then the pieces each golden sees:
 * with the window, the shared K/V or the per-layer embeddings skipped the
 * top-1 falls far (the numbers are printed); any chunking of a prompt
 * gives the same bits (the shared layers read K/V other chunks wrote);
 * against the plain-C reference (tests/reference/forward_ref_gemma4.c);
 * the cache holds only the layers that own K/V, in their own shapes; bad
 * files are refused with the key or tensor named. */
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
#include "golden_agreement.h"
#include "kv/kv_cache.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"
#include "test_require.h"

#define DIFF_BOUND 2e-2

static const char *root(void) {
  const char *r = getenv("NUCLEUS_ROOT");
  return r && *r ? r : ".";
}

static nucleus_model *load_file(const char *file, nucleus_flash_attn fa) {
  char path[4096];
  snprintf(path, sizeof path, "%s/build/arch/%s.gguf", root(), file);
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
  assert_string_equal(nucleus_model_arch(m), "gemma4");
  return m;
}

static int load_gold(golden_prompt *g, const char *file, const char *suffix) {
  char gpath[4096];
  snprintf(gpath, sizeof gpath, "%s/tests/data/logits/arch_%s%s.txt", root(),
           file, suffix);
  const int n = load_golden(g, gpath);
  assert_true(n >= 1);
  return n;
}

static void free_gold(golden_prompt *g, int n) {
  for (int p = 0; p < n; p++)
    free(g[p].pos);
}

/* The model against a golden, each prompt in one call (as a prompt, or
 * one token per decode): top-1 (%, a near tie in the golden, its first two
 * logits within DIFF_BOUND, counting as agreeing) into *top1, max |logit
 * diff| over the golden's top 32 returned; printed with the mean KL. */
static double agree(const nucleus_model *m, const char *what,
                    const golden_prompt *g, int n, bool as_prompt,
                    double *top1) {
  const int32_t nv = nucleus_model_n_vocab(m);
  float *lg = malloc(sizeof(float) * MAX_TOKENS * (size_t)nv);
  assert_non_null(lg);
  agreement a = {0};
  double kl = 0;
  int64_t ties = 0;
  for (int p = 0; p < n; p++) {
    const int32_t all[1] = {g[p].n};
    run_chunked_prompt(m, g[p].tokens, g[p].n, as_prompt ? g[p].n : 0, all, 1,
                       lg);
    golden_add_prompt(&a, &kl, &g[p], lg, nv);
    for (int32_t t = 0; t < g[p].n; t++) {
      const golden_pos *gp = &g[p].pos[t];
      ties += gp->logit[0] - gp->logit[1] < DIFF_BOUND &&
              argmax(lg + (int64_t)t * nv, nv) != gp->id[0];
    }
  }
  free(lg);
  *top1 = 100.0 * (double)(a.top1 + ties) / (double)a.n_pos;
  print_message("%s: %lld positions, top-1 %.2f%% (%lld near ties the other "
                "way), mean KL %.3g, max |diff| %.3g\n",
                what, (long long)a.n_pos, *top1, (long long)ties,
                kl / (double)a.n_pos, a.diff_max);
  return a.diff_max;
}

/* file against its golden with flash attention fa (suffix: the golden's) */
static void check_golden(const char *file, nucleus_flash_attn fa,
                         const char *suffix, bool as_prompt) {
  nucleus_model *m = load_file(file, fa);
  golden_prompt g[MAX_PROMPTS] = {0};
  const int n = load_gold(g, file, suffix);
  char what[128];
  snprintf(what, sizeof what, "%s%s", file, suffix);
  double top1;
  const double diff = agree(m, what, g, n, as_prompt, &top1);
  assert_true(top1 >= 100.0);
  assert_true(diff <= DIFF_BOUND);
  free_gold(g, n);
  nucleus_model_free(m);
}

static void test_gemma4_golden(void **state) {
  (void)state;
  check_golden("gemma4", NUCLEUS_FLASH_ATTN_OFF, "", true);
  check_golden("gemma4", NUCLEUS_FLASH_ATTN_ON, "_fa", true);
  check_golden("gemma4", NUCLEUS_FLASH_ATTN_ON, "_fa_decode", false);
}

static void test_gemma4moe_golden(void **state) {
  (void)state;
  check_golden("gemma4moe", NUCLEUS_FLASH_ATTN_OFF, "", true);
  check_golden("gemma4moe", NUCLEUS_FLASH_ATTN_ON, "_fa", true);
  check_golden("gemma4moe", NUCLEUS_FLASH_ATTN_ON, "_fa_decode", false);
}

/* The pieces the golden sees: each skipped in turn (the model's
 * hyperparameters or layer table changed in memory after the load), the
 * top-1 against llama.cpp must fall far. Window: the sliding layers see
 * every position; shared K/V: the shared layers read the first owner of
 * their kind instead of the last; per-layer embeddings: none. */
static double top1_now(const nucleus_model *m, const char *what) {
  golden_prompt g[MAX_PROMPTS] = {0};
  const int n = load_gold(g, "gemma4", "");
  double top1;
  agree(m, what, g, n, true, &top1);
  free_gold(g, n);
  return top1;
}

static void test_gemma4_pieces(void **state) {
  (void)state;
  nucleus_model *m = load_file("gemma4", NUCLEUS_FLASH_ATTN_OFF);
  nc_hparams *hp = (nc_hparams *)nc_model_hparams(m);
  nc_layer_weights *layers = nc_model_weights_of(m)->layers;
  assert_true(top1_now(m, "gemma4 as it is") >= 100.0);
  const int32_t window = hp->n_swa;
  hp->n_swa = hp->n_ctx_train;
  assert_true(top1_now(m, "gemma4 without the window") < 90.0);
  hp->n_swa = window;
  int32_t kv_of[NC_HP_MAX_SWA_LAYERS];
  for (int32_t l = 0; l < hp->n_layer; l++) {
    kv_of[l] = layers[l].kv_layer;
    if (l >= hp->n_layer_kv) {
      int32_t first = 0;
      while (hp->swa_layer[first] != hp->swa_layer[l])
        first++;
      assert_true(first != kv_of[l]);
      layers[l].kv_layer = first;
    }
  }
  assert_true(top1_now(m, "gemma4 reading the first owner's K/V") < 90.0);
  for (int32_t l = 0; l < hp->n_layer; l++)
    layers[l].kv_layer = kv_of[l];
  const int32_t P = hp->n_embd_per_layer;
  hp->n_embd_per_layer = 0;
  assert_true(top1_now(m, "gemma4 without per-layer embeddings") < 90.0);
  hp->n_embd_per_layer = P;
  assert_true(top1_now(m, "gemma4 restored") >= 100.0);
  nucleus_model_free(m);
}

/* Any chunking of a prompt gives the bits of the whole prompt in one
 * batch: the shared layers read K/V that earlier chunks wrote. */
static void test_gemma4_chunks(void **state) {
  (void)state;
  static const char *const files[] = {"gemma4", "gemma4moe"};
  for (size_t f = 0; f < 2; f++) {
    nucleus_model *m = load_file(files[f], NUCLEUS_FLASH_ATTN_OFF);
    golden_prompt g[MAX_PROMPTS] = {0};
    const int n = load_gold(g, files[f], "");
    const int32_t nv = nucleus_model_n_vocab(m), T = g[0].n;
    float *one = malloc(sizeof(float) * (size_t)T * (size_t)nv);
    float *cut = malloc(sizeof(float) * (size_t)T * (size_t)nv);
    assert_non_null(one);
    assert_non_null(cut);
    const int32_t all[1] = {T}, chunks[] = {5, 1, 17, 2, 9, 1};
    run_chunked_reusable(m, g[0].tokens, T, all, 1, one);
    run_chunked_reusable(m, g[0].tokens, T, chunks, 6, cut);
    assert_same_bits(one, cut, (int64_t)T * nv, files[f]);
    free(one);
    free(cut);
    free_gold(g, n);
    nucleus_model_free(m);
  }
}

/* The fast path against the plain-C reference on the first prompt. */
static void test_gemma4_reference(void **state) {
  (void)state;
  static const char *const files[] = {"gemma4", "gemma4moe"};
  for (size_t f = 0; f < 2; f++) {
    nucleus_model *m = load_file(files[f], NUCLEUS_FLASH_ATTN_OFF);
    golden_prompt g[MAX_PROMPTS] = {0};
    const int n = load_gold(g, files[f], "");
    const int32_t nv = nucleus_model_n_vocab(m);
    const int32_t T = NC_SHORT && g[0].n > 24 ? 24 : g[0].n;
    float *fast = malloc(sizeof(float) * (size_t)T * (size_t)nv);
    float *ref = malloc(sizeof(float) * (size_t)T * (size_t)nv);
    assert_non_null(fast);
    assert_non_null(ref);
    const int32_t all[1] = {T};
    run_chunked(m, g[0].tokens, T, all, 1, fast);
    nucleus_error err;
    assert_int_equal(nc_forward_ref(m, g[0].tokens, T, ref, &err), NC_OK);
    /* the experts: the f32 reference and the F16-rounded fast path part
     * at the router's first near tie, and the positions after it differ
     * through the cache; the positions before it are held to the bound */
    const bool moe = nc_model_hparams(m)->n_expert > 0;
    int32_t top1 = 0, held = T;
    double diff = 0;
    for (int32_t t = 0; t < T; t++) {
      const float *a = fast + (int64_t)t * nv, *r = ref + (int64_t)t * nv;
      top1 += argmax(a, nv) == argmax(r, nv);
      double d = 0;
      for (int32_t i = 0; i < nv; i++)
        d = fmax(d, fabs((double)a[i] - r[i]));
      if (moe && d > 0.5 && held == T) held = t;
      if (t < held) diff = fmax(diff, d);
    }
    print_message("%s against the reference: %d positions, top-1 %d, max "
                  "|diff| %.3g over the first %d\n",
                  files[f], (int)T, (int)top1, diff, (int)held);
    assert_true(moe ? top1 >= T * 3 / 4 && held >= 8 : top1 >= T - 1);
    assert_true(diff <= 5e-2);
    free(fast);
    free(ref);
    free_gold(g, n);
    nucleus_model_free(m);
  }
}

/* The cache holds the layers that own K/V, each in its shape: the E2B-like
 * file's 5 owners of 8 layers (2 KV heads of 64 on sliding layers, 2 of
 * 128 on full ones), K and V F16. */
static void test_gemma4_cache_shape(void **state) {
  (void)state;
  nucleus_model *m = load_file("gemma4", NUCLEUS_FLASH_ATTN_OFF);
  const nc_hparams *hp = nc_model_hparams(m);
  assert_int_equal(hp->n_layer, 8);
  assert_int_equal(nc_hp_n_layer_kv(hp), 5);
  const nc_kv_shape shape = nc_hp_kv_shape(hp);
  assert_int_equal(shape.n_layer, 5);
  /* sliding 0, 1, 3: 2 x 64; full 2, 4: 2 x 128; K and V, 2 bytes */
  const size_t swa_row = 2 * 64 * 2, full_row = 2 * 128 * 2;
  const size_t per_pos = 2 * (3 * swa_row + 2 * full_row);
  assert_int_equal(nc_kv_bytes_per_position(shape, NC_KV_TYPES_F16), per_pos);
  assert_int_equal(nucleus_model_kv_bytes_per_position(m), per_pos);
  bool swa[8];
  for (int32_t l = 0; l < 8; l++)
    swa[l] = nc_model_weights_of(m)->layers[l].swa;
  assert_int_equal(
      nc_kv_bytes_per_position_of(shape, NC_KV_TYPES_F16, swa, true),
      2 * 3 * swa_row);
  nc_kv_cache *kv;
  nucleus_error err;
  assert_int_equal(nc_kv_cache_create_swa(shape, NC_KV_TYPES_F16, swa, 8, 16, 1,
                                          64, &kv, &err),
                   NC_OK);
  assert_int_equal(nc_kv_n_groups(kv), 2);
  for (int32_t l = 0; l < 5; l++)
    assert_int_equal(nc_kv_k_row_bytes(kv, l), swa[l] ? swa_row : full_row);
  assert_int_equal(nc_kv_k_row_bytes(kv, 5), 0); /* a shared layer: none */
  /* 64 positions: every global block holds the 2 full owners' rows */
  const int32_t s = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, s, 64, &err), NC_OK);
  nc_kv_seq_set_len(kv, s, 64);
  assert_int_equal(
      nc_kv_bytes_used(kv),
      (size_t)nc_kv_group_blocks_used(kv, 0) * 16 * 2 * 2 * full_row +
          (size_t)nc_kv_group_blocks_used(kv, 1) * 16 * 2 * 3 * swa_row);
  nc_kv_cache_free(kv);
  nucleus_model_free(m);
}

/* ---- bad files: the good file with one field patched in place (same
 * length), loaded; the error must name the key or tensor. */

static uint8_t *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  const long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = len > 0 ? malloc((size_t)len) : NULL;
  if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *n = p ? (size_t)len : 0;
  return p;
}

/* what: a key (its u32 value set to value) or, with value UINT32_MAX, a
 * tensor (renamed: the letter before ".weight" upper-cased). */
static void expect_refused(const char *what, uint32_t value,
                           const char *needle) {
  char path[4096], bad[4200];
  snprintf(path, sizeof path, "%s/build/arch/gemma4.gguf", root());
  size_t n = 0;
  uint8_t *p = read_all(path, &n);
  if (!p) NC_MODEL_UNAVAILABLE(path);
  const uint8_t *hit =
      memmem(p, n < (1u << 24) ? n : (1u << 24), what, strlen(what));
  assert_non_null(hit);
  const size_t at = (size_t)(hit - p) + strlen(what);
  if (value == UINT32_MAX) {
    p[at - strlen(".weight") - 1] ^= 0x20;
  } else {
    uint32_t type;
    memcpy(&type, p + at, 4);
    assert_int_equal(type, 4); /* GGUF_TYPE_UINT32 */
    memcpy(p + at + 4, &value, 4);
  }
  snprintf(bad, sizeof bad, "%s/build/arch/bad_gemma4.gguf", root());
  FILE *f = fopen(bad, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  fclose(f);
  free(p);
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 1;
  nucleus_model *m = NULL;
  nucleus_error err;
  assert_int_not_equal(nucleus_model_load(bad, &mp, &m, &err), NUCLEUS_OK);
  assert_null(m);
  print_message("%s: %s\n", what, err.message);
  if (!strstr(err.message, needle))
    fail_msg("error '%s' does not name '%s'", err.message, needle);
  remove(bad);
}

static void test_gemma4_bad_files(void **state) {
  (void)state;
  /* every layer sharing: none left to own K/V */
  expect_refused("gemma4.attention.shared_kv_layers", 8,
                 "gemma4.attention.shared_kv_layers");
  /* layers 2-7 sharing: the full ones have no earlier full owner */
  expect_refused("gemma4.attention.shared_kv_layers", 6, "shared_kv_layers");
  expect_refused("gemma4.attention.sliding_window", 0,
                 "gemma4.attention.sliding_window");
  expect_refused("gemma4.embedding_length_per_layer_input", 16,
                 "per_layer_token_embd.weight");
  expect_refused("blk.0.inp_gate.weight", UINT32_MAX, "blk.0.inp_gate.weight");
  expect_refused("rope_freqs.weight", UINT32_MAX, "rope_freqs.weight");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemma4_golden),
      cmocka_unit_test(test_gemma4moe_golden),
      cmocka_unit_test(test_gemma4_pieces),
      cmocka_unit_test(test_gemma4_chunks),
      cmocka_unit_test(test_gemma4_reference),
      cmocka_unit_test(test_gemma4_cache_shape),
      cmocka_unit_test(test_gemma4_bad_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
