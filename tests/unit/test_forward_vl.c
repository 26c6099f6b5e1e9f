/* The vision-language Qwens' language models (qwen2vl, qwen3vl,
 * qwen3vlmoe: build/arch/ARCH.gguf, `make arch-models`) on what an image
 * makes of a prompt, against llama.cpp (tests/data/logits/
 * vl_image_ARCH.txt, scripts/gen_vl_image_goldens.py): 12 text tokens, an
 * image of 4 x 3 rows of input embeddings (values from a formula both
 * sides compute), 12 text tokens. The image's rows carry M-RoPE positions
 * (p0, p0 + row, p0 + column, 0) and the model's n_embd_inp values (Qwen3-VL's
 * DeepStack: n_embd x (1 + n_deepstack_layers), the slices after the
 * first added to the residual after layers 0, 1, ...); the text after the
 * image continues from p0 + max(4, 3) in the rope while its KV places
 * follow the image's rows (batch.h's rope_pos). Checked: every row's logits
 * (the image's too) within 2e-2 of llama.cpp's over its top 32 and top-1
 * 100%, the whole sequence in one batch and in the three calls llama.cpp
 * makes, the same bits either way. Measured max |diff| (text rows, image
 * rows): qwen2vl 6.3e-3, 8.9e-3; qwen3vl 5.5e-3, 5.1e-3; qwen3vlmoe 6.7e-3,
 * 5.8e-3. Each piece shows: without DeepStack qwen3vl's rows move by up
 * to 1.9 (top-1 31/36), qwen3vlmoe's by 6.3; the image's rows at text
 * positions (i, i, i, 0): 2.0 to 8.8; the text after the image at its KV
 * places instead of p0 + max(nx, ny) on: 4.7 to 9.0.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kv/kv_cache.h"
#include "logits_golden.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"
#include "test_require.h"

#define DIFF_BOUND 2e-2

static const char *root(void) {
  const char *r = getenv("NUCLEUS_ROOT");
  return r && *r ? r : ".";
}

/* The golden's "# image P0 NX NY WIDTH" line. */
static void read_image_line(const char *path, int32_t v[4]) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    found =
        sscanf(line, "# image %d %d %d %d", &v[0], &v[1], &v[2], &v[3]) == 4;
  fclose(f);
  assert_true(found);
}

/* The image's rows, as the generator writes them: exact binary fractions
 * of a multiplicative hash of the element's index. */
static float *image_rows(int32_t n, int32_t width) {
  float *e = malloc(sizeof(float) * (size_t)n * (size_t)width);
  assert_non_null(e);
  for (int64_t i = 0; i < (int64_t)n * width; i++) {
    const uint32_t h = (uint32_t)((uint64_t)i * 2654435761u) >> 16;
    e[i] = (float)(((double)h - 32768.0) / 131072.0);
  }
  return e;
}

/* Runs rows [r0, r1) of the sequence in one forward call (logits of all
 * into out + r0 rows). */
static void run_rows(nc_context *ctx, nc_kv_cache *kv, int32_t seq,
                     const golden_prompt *g, const int32_t img[4],
                     const float *emb, int32_t r0, int32_t r1, float *out) {
  const int32_t p0 = img[0], nx = img[1], ny = img[2], w = img[3];
  const int32_t n_img = nx * ny, shift = n_img - (nx > ny ? nx : ny);
  nc_batch b;
  nc_error err;
  assert_int_equal(nc_batch_init(&b, r1 - r0, &err), NC_OK);
  assert_int_equal(nc_kv_seq_reserve(kv, seq, r1, &err), NC_OK);
  for (int32_t i = r0; i < r1; i++) {
    const bool image = g->tokens[i] < 0;
    assert_true(nc_batch_add(&b, image ? 0 : g->tokens[i], i, seq, true));
    const int32_t row = b.n_tokens - 1;
    if (image) {
      const int32_t k = i - p0;
      const int32_t rp[4] = {p0, p0 + k / nx, p0 + k % nx, 0};
      nc_batch_set_input(&b, row, emb + (int64_t)k * w, 0);
      assert_true(nc_batch_set_rope_pos(&b, row, rp));
    } else if (i >= p0 + n_img) { /* after the image: max(nx, ny) on */
      const int32_t p = i - shift, rp[4] = {p, p, p, 0};
      assert_true(nc_batch_set_rope_pos(&b, row, rp));
    }
  }
  const int32_t nv = nc_model_hparams(nc_context_fwd(ctx)->m)->n_vocab;
  if (nc_context_forward(ctx, &b, out + (int64_t)r0 * nv, &err) != NC_OK)
    fail_msg("forward: %s", err.message);
  nc_batch_free(&b);
}

/* calls: 1 (the whole sequence in one batch) or 3 (text, image, text). */
static void run_sequence(const nucleus_model *m, const golden_prompt *g,
                         const int32_t img[4], const float *emb, int calls,
                         float *out) {
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_error err;
  assert_int_equal(nc_kv_cache_create(nc_hp_kv_shape(nc_model_hparams(m)), 8,
                                      16, 1, &kv, &err),
                   NC_OK);
  assert_int_equal(nc_context_create(m, kv, g->n, &ctx, &err), NC_OK);
  const int32_t seq = nc_kv_seq_new(kv);
  const int32_t cut[4] = {0, img[0], img[0] + img[1] * img[2], g->n};
  if (calls == 1) {
    run_rows(ctx, kv, seq, g, img, emb, 0, g->n, out);
  } else {
    for (int c = 0; c < 3; c++)
      run_rows(ctx, kv, seq, g, img, emb, cut[c], cut[c + 1], out);
  }
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
}

static void check_vl(const char *arch) {
  char path[4096], gpath[4096], why[4300];
  snprintf(path, sizeof path, "%s/build/arch/%s.gguf", root(), arch);
  snprintf(gpath, sizeof gpath, "%s/tests/data/logits/vl_image_%s.txt", root(),
           arch);
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  mp.flash_attn = NUCLEUS_FLASH_ATTN_OFF;
  nucleus_model *m = NULL;
  nucleus_error err;
  if (nucleus_model_load(path, &mp, &m, &err) != NUCLEUS_OK) {
    snprintf(why, sizeof why, "%s (make arch-models): %s", path, err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  const nc_hparams *hp = nc_model_hparams(m);
  golden_prompt g[MAX_PROMPTS] = {0};
  assert_int_equal(load_golden(g, gpath), 1);
  int32_t img[4];
  read_image_line(gpath, img);
  assert_int_equal(img[3], hp->n_embd * (1 + hp->n_deepstack));
  float *emb = image_rows(img[1] * img[2], img[3]);
  const int32_t nv = hp->n_vocab;
  float *one = malloc(sizeof(float) * (size_t)g[0].n * (size_t)nv);
  float *three = malloc(sizeof(float) * (size_t)g[0].n * (size_t)nv);
  assert_non_null(one);
  assert_non_null(three);
  run_sequence(m, &g[0], img, emb, 1, one);
  run_sequence(m, &g[0], img, emb, 3, three);
  assert_memory_equal(one, three, sizeof(float) * (size_t)g[0].n * nv);
  double diff = 0, diff_img = 0;
  int32_t top1 = 0;
  for (int32_t t = 0; t < g[0].n; t++) {
    const float *f = one + (int64_t)t * nv;
    const golden_pos *gp = &g[0].pos[t];
    top1 +=
        argmax(f, nv) == gp->id[0] || gp->logit[0] - gp->logit[1] < DIFF_BOUND;
    for (int k = 0; k < TOPK; k++) {
      const double d = fabs((double)f[gp->id[k]] - gp->logit[k]);
      if (g[0].tokens[t] < 0)
        diff_img = fmax(diff_img, d);
      else
        diff = fmax(diff, d);
    }
  }
  print_message("%s: %d rows (%d of an image %d wide); vs llama.cpp top-1 "
                "%d/%d, max |diff| %.3g on the text rows, %.3g on the "
                "image's\n",
                arch, (int)g[0].n, (int)(img[1] * img[2]), (int)img[3],
                (int)top1, (int)g[0].n, diff, diff_img);
  assert_int_equal(top1, g[0].n);
  assert_true(diff <= DIFF_BOUND && diff_img <= DIFF_BOUND);
  free(g[0].pos);
  free(one);
  free(three);
  free(emb);
  nucleus_model_free(m);
}

static void test_qwen2vl_image(void **state) {
  (void)state;
  check_vl("qwen2vl");
}

static void test_qwen3vl_image(void **state) {
  (void)state;
  check_vl("qwen3vl");
}

static void test_qwen3vlmoe_image(void **state) {
  (void)state;
  check_vl("qwen3vlmoe");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qwen2vl_image),
      cmocka_unit_test(test_qwen3vl_image),
      cmocka_unit_test(test_qwen3vlmoe_image),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
