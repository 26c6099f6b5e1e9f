/* forward on the real Gemma 3 270M (models/gemma-3-270m-q4_k_m.gguf under
 * $NUCLEUS_ROOT, fetched by `make model`; missing fails unless
 * NUCLEUS_TESTS_WITHOUT_MODEL=1): Q5_0 / Q4_K / Q6_K / Q8_0 weights, the
 * tied Q8_0 output head over 262144 tokens, QK norms, GeGLU, post norms,
 * local layers on their own RoPE base.
 *
 * - agreement with llama.cpp: teacher-forced logits against two goldens of
 *   scripts/gen_logits_golden.py on this file (4 prompts x 128 tokens, no
 *   repack, flash attention off (asked for explicitly), F16 KV cache):
 *   gemma3_270m_q4_k_m.txt, each prompt in one batch, and
 *   gemma3_270m_q4_k_m_decode.txt (--decode), one token per llama_decode. Per
 * position: KL over llama.cpp's top 32 plus one bucket for the rest, top-1
 * agreement, max |logit diff|. Token by token, llama.cpp multiplies every
 * weight type (Q5_0, Q8_0, Q4_K, Q6_K) with its AVX2 ggml_vec_dot order, which
 * the avx2 table follows: its first three positions of every prompt are
 * bit-identical to the decode golden (to its 9 digits; bound: top-1 100%, KL <=
 * 1e-6, max |diff| <= 1e-5), which checks the gemma3 graph (embedding scale, QK
 *   norms, both RoPE bases, Q scale, attention over 1-3 keys, GeGLU on
 *   ggml's F16 GELU table, post norms, the tied Q8_0 head) to the last bit.
 *   In one batch (8+ rows) llama.cpp runs its Q4_K and Q6_K matmuls through
 *   its tiled kernel (ggml-cpu/tiled; acc = fma(t, d_a, acc) per
 *   superblock), the avx512 table's order (tests/unit/test_kernels_ggml.c
 *   checks it against that library bit for bit), and its attention through
 *   tinyBLAS, the order of our attention kernels: with the avx512 table
 *   every position of the batch golden matches to its 9 digits, measured
 *   over all 512 positions: top-1 100%, mean KL 1.6e-10, max KL 3.1e-8, max
 *   |logit diff| 9.5e-7 (the golden's printed digits); bound: the strict
 *   one above. The avx2 and amx tables keep their own orders for every
 *   batch (llama.cpp's decode, resp. its AMX build) and miss the batch
 *   golden's last bits, which the model's Q8 re-quantization of activations
 *   makes chaotic: 97.5% / 4.4e-3 (avx2), 97.5% / 4.8e-3 (ref); loose
 *   bounds (top-1 >= 97%, mean KL <= 6e-3). Past the first positions no
 *   batch-invariant table can match the decode golden as well: llama.cpp's
 *   single-row attention (ggml_vec_dot_f16) adds in another order than its
 *   batched one (token by token, avx2: 97.3% / 3.5e-3).
 *   Run: make build/release/tests/test_forward_gemma &&
 *   NUCLEUS_ROOT=$PWD build/release/tests/test_forward_gemma
 * - flash attention on against llama.cpp -fa on
 *   (gemma3_270m_q4_k_m_fa.txt and _fa_decode.txt, scripts/
 *   gen_logits_golden.py --fa [--decode], the same 4 prompts x 128 tokens
 *   in one batch, or one per decode): see test_matches_llama_cpp_fa.
 * - cache and batch invariance: one call == token by token == uneven
 *   chunks, and two prompts interleaved in shared batches, bit-identical. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chunked_forward.h"
#include "golden_agreement.h"
#include "logits_golden.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"
#include "test_require.h"

#define N_USE(n) (NC_SHORT && (n) > 24 ? 24 : (n))

typedef struct fixture {
  nucleus_model *m;   /* flash attention off: the FA-off goldens */
  nucleus_model *mfa; /* flash attention on */
  int32_t n_vocab;
  int n_prompts;
  golden_prompt g[MAX_PROMPTS];    /* one batch per prompt */
  golden_prompt gd[MAX_PROMPTS];   /* one token per decode, same tokens */
  golden_prompt gfa[MAX_PROMPTS];  /* -fa on, one batch, same tokens */
  golden_prompt gfad[MAX_PROMPTS]; /* -fa on, one token per decode */
  char why[4400];
} fixture;

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  *state = fx;
  const char *root = getenv("NUCLEUS_ROOT");
  if (!root || !*root) root = ".";
  char path[4096], gpath[4096], dpath[4096], fpath[4096], fdpath[4096];
  snprintf(path, sizeof path, "%s/models/gemma-3-270m-q4_k_m.gguf", root);
  snprintf(gpath, sizeof gpath, "%s/tests/data/logits/gemma3_270m_q4_k_m.txt",
           root);
  snprintf(dpath, sizeof dpath,
           "%s/tests/data/logits/gemma3_270m_q4_k_m_decode.txt", root);
  snprintf(fpath, sizeof fpath,
           "%s/tests/data/logits/gemma3_270m_q4_k_m_fa.txt", root);
  snprintf(fdpath, sizeof fdpath,
           "%s/tests/data/logits/gemma3_270m_q4_k_m_fa_decode.txt", root);
  nucleus_model_params p = nucleus_model_default_params();
  p.n_threads = 2;
  p.flash_attn = NUCLEUS_FLASH_ATTN_OFF;
  nucleus_error err;
  if (nucleus_model_load(path, &p, &fx->m, &err) != NUCLEUS_OK) {
    snprintf(fx->why, sizeof fx->why, "%s (make model): %s", path, err.message);
    fx->m = NULL;
    return 0;
  }
  p.flash_attn = NUCLEUS_FLASH_ATTN_ON;
  if (nucleus_model_load(path, &p, &fx->mfa, &err) != NUCLEUS_OK) {
    fprintf(stderr, "%s with flash attention on: %s\n", path, err.message);
    return -1;
  }
  fx->n_vocab = nucleus_model_n_vocab(fx->m);
  fx->n_prompts = load_golden(fx->g, gpath);
  if (fx->n_prompts < 2 || load_golden(fx->gd, dpath) != fx->n_prompts ||
      load_golden(fx->gfa, fpath) != fx->n_prompts ||
      load_golden(fx->gfad, fdpath) != fx->n_prompts) {
    fprintf(stderr, "cannot read the goldens %s, %s, %s\n", gpath, dpath,
            fpath);
    return -1;
  }
  for (int q = 0; q < fx->n_prompts; q++)
    if (fx->gd[q].n != fx->g[q].n || fx->gfa[q].n != fx->g[q].n ||
        memcmp(fx->gd[q].tokens, fx->g[q].tokens,
               sizeof(int32_t) * (size_t)fx->g[q].n) ||
        fx->gfad[q].n != fx->g[q].n ||
        memcmp(fx->gfa[q].tokens, fx->g[q].tokens,
               sizeof(int32_t) * (size_t)fx->g[q].n) ||
        memcmp(fx->gfad[q].tokens, fx->g[q].tokens,
               sizeof(int32_t) * (size_t)fx->g[q].n)) {
      fprintf(stderr, "%s or %s: other tokens than %s\n", dpath, fpath, gpath);
      return -1;
    }
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  for (int i = 0; i < MAX_PROMPTS; i++) {
    free(fx->g[i].pos);
    free(fx->gd[i].pos);
    free(fx->gfa[i].pos);
    free(fx->gfad[i].pos);
  }
  nucleus_model_free(fx->m);
  nucleus_model_free(fx->mfa);
  free(fx);
  return 0;
}

#define NEED_MODEL(fx)                                                         \
  do {                                                                         \
    if (!(fx)->m) NC_MODEL_UNAVAILABLE((fx)->why);                             \
  } while (0)

/* The agreement of table k with a golden: prefilled in one call, or token
 * by token (decode); the first `first` positions of each prompt (0: all).
 * fa: the flash attention model against the -fa on golden (in one call,
 * the prompt order). */
static void check_table(fixture *fx, const nc_kernels *k, bool decode,
                        int32_t first, bool strict, bool fa) {
  nucleus_error err;
  nucleus_model *m = fa ? fx->mfa : fx->m;
  assert_int_equal(nc_model_set_kernels(m, k, &err), NC_OK);
  const int32_t nv = fx->n_vocab;
  float *lg = malloc(sizeof(float) * MAX_TOKENS * (size_t)nv);
  assert_non_null(lg);
  agreement ag = {0};
  double kl_sum = 0;
  const int n_prompts = NC_SHORT ? 1 : fx->n_prompts;
  for (int p = 0; p < n_prompts; p++) {
    const golden_prompt *g = fa       ? (decode ? &fx->gfad[p] : &fx->gfa[p])
                             : decode ? &fx->gd[p]
                                      : &fx->g[p];
    /* flash on in one batch: the whole prompt even sanitized (64+ prompt
     * rows take the prompt order, the golden's) */
    const int32_t n = first > 0       ? first
                      : fa && !decode ? g->n
                                      : N_USE(g->n),
                  all[1] = {n}, one[1] = {1};
    /* token by token the rows are fed as generated ones: flash
     * attention's row order, llama.cpp's for one row per decode */
    run_chunked_prompt(m, g->tokens, n, decode ? 0 : n, decode ? one : all, 1,
                       lg);
    golden_add_rows(&ag, &kl_sum, g, n, lg, nv);
  }
  const int64_t n_pos = ag.n_pos;
  const double kl_max = ag.kl_max, diff_max = ag.diff_max;
  const double pct = 100.0 * (double)ag.top1 / (double)n_pos;
  print_message("gemma3 270m, kernels '%s' vs llama.cpp%s %s: %lld "
                "positions, top-1 %.2f%%, mean KL %.3g, max KL %.3g, max "
                "|logit diff| %.4g\n",
                k->name, fa ? " -fa on" : "",
                decode ? "token by token" : "in one batch", (long long)n_pos,
                pct, kl_sum / (double)n_pos, kl_max, diff_max);
  if (strict) {
    assert_true(pct >= 100.0);
    assert_true(kl_sum / (double)n_pos <= 1e-6);
    assert_true(diff_max <= 1e-5);
  } else {
    assert_true(pct >= (fa ? 96.0 : 97.0));
    assert_true(kl_sum / (double)n_pos <= 6e-3);
  }
  free(lg);
}

static void test_matches_llama_cpp(void **state) {
  fixture *fx = *state;
  NEED_MODEL(fx);
  const nc_kernels *def = nc_model_kernels(fx->m);
  const nc_kernels *avx2 = nc_kernels_by_name("avx2");
  if (avx2) check_table(fx, avx2, true, 3, true, false);
  /* avx512's rows fed as generated ones take vec_dot's order (gemm_few),
   * llama.cpp's for one row per decode: strict as avx2 */
  const nc_kernels *avx512 = nc_kernels_by_name("avx512");
  if (avx512) check_table(fx, avx512, true, 3, true, false);
  /* (the ref table, in plain C, measured 97.5% / 4.8e-3 and is left out
   * for time) */
  /* avx512: llama.cpp's batched order (strict); the others their own */
  static const char *const tables[] = {"avx512", "avx2", "amx"};
  for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
    const nc_kernels *k = nc_kernels_by_name(tables[i]);
    /* the sanitizer build checks memory on the strict decode run above and
     * the invariance test; 24 positions are too few for the loose bounds */
    if (!k || NC_SHORT) continue;
    check_table(fx, k, false, 0, i == 0, false);
  }
  nucleus_error err;
  assert_int_equal(nc_model_set_kernels(fx->m, def, &err), NC_OK);
}

/* flash attention on against llama.cpp -fa on, each prompt in one batch:
 * its tiled flash path (128 rows), which prompt rows follow. With the
 * avx512 table (llama.cpp's batched matmul order) the strict bounds hold:
 * measured top-1 100%, mean KL 1.6e-10, max KL 2.0e-8, max |logit diff|
 * 9.5e-7 (the golden's digits). Another table's own matmul order is the
 * distance test_matches_llama_cpp bounds (avx2 here: 96.7%, mean KL
 * 4.5e-3, the 97% / 4.4e-3 of flash off, another draw of the same chaos):
 * a CPU without AVX-512 checks its default table with top-1 >= 96%.
 * Token by token (gemma3_270m_q4_k_m_fa_decode.txt, --fa --decode: rows
 * fed as generated ones, flash attention's row order, llama.cpp's per-row
 * path) the avx2 table (llama.cpp's single-row matmul order) matches at
 * every position, where flash off matches the first three only: measured
 * over 512 positions top-1 100%, mean KL 3.5e-10, max KL 1.3e-7, max |logit
 * diff| 9.5e-7; bound the strict one. */
static void test_matches_llama_cpp_fa(void **state) {
  fixture *fx = *state;
  NEED_MODEL(fx);
  assert_true(nucleus_model_flash_attn(fx->mfa));
  assert_false(nucleus_model_flash_attn(fx->m));
  const nc_kernels *def = nc_model_kernels(fx->mfa);
  const nc_kernels *avx512 = nc_kernels_by_name("avx512");
  check_table(fx, avx512 ? avx512 : def, false, 0, avx512 != NULL, true);
  const nc_kernels *avx2 = nc_kernels_by_name("avx2");
  if (avx2) check_table(fx, avx2, true, 0, true, true);
  /* token by token the avx512 table too: its generated rows take vec_dot's
   * order (batch.h NC_MM_FEW, gemm_few) */
  if (avx512) check_table(fx, avx512, true, 0, true, true);
  nucleus_error err;
  assert_int_equal(nc_model_set_kernels(fx->mfa, def, &err), NC_OK);
}

static void test_cache_and_batch_invariance(void **state) {
  fixture *fx = *state;
  NEED_MODEL(fx);
  const int32_t nv = fx->n_vocab;
  const golden_prompt *g0 = &fx->g[0], *g1 = &fx->g[1];
  const int32_t n = N_USE(g0->n < g1->n ? g0->n : g1->n);
  float *a0 = malloc(sizeof(float) * (size_t)n * nv);
  float *a1 = malloc(sizeof(float) * (size_t)n * nv);
  float *buf = malloc(sizeof(float) * (size_t)n * nv);
  const int32_t all[1] = {n}, one[1] = {1}, uneven[] = {5, 1, 17, 30, 2, 9};
  run_chunked(fx->m, g0->tokens, n, all, 1, a0);
  run_chunked(fx->m, g1->tokens, n, all, 1, a1);
  run_chunked(fx->m, g0->tokens, n, one, 1, buf);
  assert_same_bits(a0, buf, (int64_t)n * nv, "token by token");
  run_chunked(fx->m, g0->tokens, n, uneven, 6, buf);
  assert_same_bits(a0, buf, (int64_t)n * nv, "uneven chunks");
  /* prompt 0 as a prompt of NP tokens and generated ones: the generated
   * rows' matmuls take llama.cpp's order for micro-batches under 8 rows
   * (batch.h), whatever the chunks; its prompt rows are a0's */
  enum { NP = 10 };
  float *d0 = malloc(sizeof(float) * (size_t)n * nv);
  assert_non_null(d0);
  run_chunked_prompt(fx->m, g0->tokens, n, NP, all, 1, d0);
  assert_same_bits(a0, d0, (int64_t)NP * nv, "the prompt rows");
  run_chunked_prompt(fx->m, g0->tokens, n, NP, one, 1, buf);
  assert_same_bits(d0, buf, (int64_t)n * nv, "generated rows one by one");
  run_chunked_prompt(fx->m, g0->tokens, n, NP, uneven, 6, buf);
  assert_same_bits(d0, buf, (int64_t)n * nv, "generated rows in chunks");
  const nc_kernels *kern = nc_model_kernels(fx->m);
  if (kern->gemm_few[NC_TYPE_Q4_K]) /* another order: other bits */
    assert_true(memcmp(a0 + (int64_t)NP * nv, d0 + (int64_t)NP * nv,
                       sizeof(float) * (size_t)(n - NP) * nv) != 0);
  /* both prompts in shared batches of uneven slices, prompt 0's rows as
   * above (so the batches mix the two orders) */
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch b;
  nucleus_error err;
  assert_int_equal(nc_kv_cache_create(nc_hp_kv_shape(nc_model_hparams(fx->m)),
                                      2 * ((n + 15) / 16) + 2, 16, 2, &kv,
                                      &err),
                   NC_OK);
  assert_int_equal(nc_context_create(fx->m, kv, n, &ctx, &err), NC_OK);
  assert_int_equal(nc_batch_init(&b, n, &err), NC_OK);
  const int32_t s[2] = {nc_kv_seq_new(kv), nc_kv_seq_new(kv)};
  const int32_t step[2][3] = {{7, 1, 13}, {2, 19, 3}};
  int32_t done[2] = {0, 0}, src[256][2];
  int rows = 0;
  for (int it = 0; done[0] < n || done[1] < n; it++) {
    nc_batch_clear(&b);
    for (int p = 0; p < 2; p++) {
      int32_t take = step[p][it % 3];
      if (done[p] + take > n) take = n - done[p];
      if (b.n_tokens + take > n) take = n - b.n_tokens;
      if (take <= 0) continue;
      assert_int_equal(nc_kv_seq_reserve(kv, s[p], done[p] + take, &err),
                       NC_OK);
      for (int32_t i = done[p]; i < done[p] + take; i++) {
        src[b.n_tokens][0] = p;
        src[b.n_tokens][1] = i;
        if (p)
          assert_true(nc_batch_add(&b, g1->tokens[i], i, s[p], true));
        else
          assert_true(nc_batch_add_prompt(&b, g0->tokens[i], i, s[p],
                                          NC_LOGITS_ALL, NP));
      }
      done[p] += take;
    }
    if (nc_context_forward(ctx, &b, buf, &err) != NC_OK)
      fail_msg("forward: %s", err.message);
    for (int32_t r = 0; r < b.n_tokens; r++) {
      const float *ref = (src[r][0] ? a1 : d0) + (int64_t)src[r][1] * nv;
      assert_same_bits(ref, buf + (int64_t)r * nv, nv, "row in a shared batch");
      rows++;
    }
  }
  print_message("gemma3 270m: one call == token by token == uneven chunks, "
                "prompt rows and generated ones; %d rows of 2 interleaved "
                "prompts bit-identical\n",
                rows);
  free(d0);
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
  free(a0);
  free(a1);
  free(buf);
}

static void test_model_facts(void **state) {
  fixture *fx = *state;
  NEED_MODEL(fx);
  const nc_hparams *hp = nc_model_hparams(fx->m);
  const nc_model_weights *w = nc_model_weights_of(fx->m);
  assert_string_equal(nucleus_model_arch(fx->m), "gemma3");
  assert_int_equal(hp->n_vocab, 262144);
  assert_int_equal(hp->n_swa, 512);
  assert_true(hp->rope_freq_base == 1e6f && hp->rope_freq_base_swa == 1e4f);
  assert_true(hp->q_scale == 1.0f / 16.0f && hp->attn_scale == 1.0f);
  assert_true(hp->final_softcap == 0.0f && hp->attn_softcap == 0.0f);
  /* five local layers, then a global one */
  for (int32_t l = 0; l < hp->n_layer; l++)
    assert_int_equal(w->layers[l].swa, l % 6 < 5);
  /* the tied output head is the token table, run by its own dot kernel */
  assert_ptr_equal(w->output.data, w->tok_embd.data);
  assert_int_equal(w->output.type, NC_TYPE_Q8_0);
  assert_non_null(nc_model_kernels(fx->m)->vec_dot[w->output.type]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_facts),
      cmocka_unit_test(test_matches_llama_cpp),
      cmocka_unit_test(test_matches_llama_cpp_fa),
      cmocka_unit_test(test_cache_and_batch_invariance),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
