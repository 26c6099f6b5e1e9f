/* Gemma 4 images in the engine on the random gemma4 pair of `make
 * arch-models` (build/arch/gemma4.gguf + gemma4v-mmproj.gguf: images at
 * their own aspect ratio, 200 x 90 -> 136 rows, 70 x 150 -> 78, 108 x 108
 * -> 81): an image's rows as input embeddings not scaled by sqrt(n_embd),
 * token 0's per-layer embeddings for them (llama.cpp's embeddings batches),
 * and attention over an image's rows both ways on the sliding-window
 * layers only, causal on the full ones (llama.cpp's
 * LLAMA_NON_CAUSAL_TYPE_SWA_ONLY for gemma4; its E2B/E4B widths are
 * causal throughout, this one's 256 is not):
 * - llama-mtmd-cli's greedy text on a prompt with two images
 *   (tests/data/vision/gemma4v_greedy.txt, scripts/gen_vision_goldens.py
 *   --gemma4v, flash attention off; the prompt as llama-mtmd-cli renders
 *   it: one user turn, no system message) comes out of the engine, and
 *   other images give other text;
 * - the same tokens and logprobs in chunks that stop before an image,
 *   beside a request with other images and on a prefix-cache hit past the
 *   images. */
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
#include "test_image_util.h"
#include "test_require.h"

enum { MAX_GEN = 64, N_GEN = 16 };

typedef struct fixture {
  nucleus_model *lm;
  nucleus_mmproj *mm;
  nucleus_image *wide, *tall, *square;
} fixture;

static const char *root(void) {
  const char *r = getenv("NUCLEUS_ROOT");
  return r && *r ? r : ".";
}

/* scripts/gen_vision_goldens.py's pixels() */
static nucleus_image *synthetic(int32_t w, int32_t h) {
  uint8_t *p = malloc((size_t)3 * w * h);
  for (int32_t y = 0; y < h; y++)
    for (int32_t x = 0; x < w; x++)
      for (int c = 0; c < 3; c++) {
        const int64_t v =
            (x * 37 + y * 91 + c * 53 + (x * y) % 17) * 7 + (x + 2 * y) * 3;
        p[((size_t)y * w + x) * 3 + c] = (uint8_t)(v & 255);
      }
  nucleus_image *img = test_image(p, w, h);
  free(p);
  return img;
}

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof *fx);
  *state = fx;
  char lm[4096], mm[4096];
  snprintf(lm, sizeof lm, "%s/build/arch/gemma4.gguf", root());
  snprintf(mm, sizeof mm, "%s/build/arch/gemma4v-mmproj.gguf", root());
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 2;
  mp.flash_attn = NUCLEUS_FLASH_ATTN_OFF; /* as the golden */
  nucleus_error err;
  if (nucleus_model_load(lm, &mp, &fx->lm, &err) != NUCLEUS_OK ||
      nucleus_mmproj_load(mm, fx->lm, &mp, &fx->mm, &err) != NUCLEUS_OK) {
    nucleus_model_free(fx->lm);
    fx->lm = NULL;
  }
  fx->wide = synthetic(200, 90);
  fx->tall = synthetic(70, 150);
  fx->square = synthetic(108, 108);
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  nucleus_mmproj_free(fx->mm);
  nucleus_model_free(fx->lm);
  test_image_free(fx->wide);
  test_image_free(fx->tall);
  test_image_free(fx->square);
  free(fx);
  return 0;
}

static fixture *need(void **state) {
  fixture *fx = *state;
  if (!fx->lm)
    NC_MODEL_UNAVAILABLE("the random gemma4 pair (make arch-models)");
  return fx;
}

static const char *k_chat =
    "<|im_start|>user\n<__media__><__media__>Describe "
    "the two images.<|im_end|>\n<|im_start|>assistant\n";

static int32_t *prompt_of(fixture *fx, const nucleus_image *a,
                          const nucleus_image *b, size_t *n) {
  const nucleus_image *imgs[2] = {a, b};
  int32_t *ids = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_tokenize_with_images(fx->lm, fx->mm, k_chat,
                                                strlen(k_chat), imgs, 2, &ids,
                                                n, &err),
                   NUCLEUS_OK);
  return ids;
}

typedef struct result {
  int32_t tokens[MAX_GEN];
  float logprobs[MAX_GEN];
  int32_t n, cached;
} result;

typedef struct job {
  const int32_t *prompt;
  size_t n_prompt;
  const nucleus_image *images[2];
  int arrival;
} job;

static nucleus_engine *engine(fixture *fx, int32_t budget) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.max_batch_tokens = budget;
  ep.mmproj = fx->mm;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  if (nc_engine_create_stepped(fx->lm, &ep, &e, &err) != NUCLEUS_OK)
    fail_msg("engine: %s", err.message);
  return e;
}

static void run_on(nucleus_engine *e, const job *jobs, int n, result *out) {
  nucleus_request *reqs[4] = {0};
  bool done[4] = {false};
  memset(out, 0, sizeof *out * (size_t)n);
  int finished = 0;
  for (int step = 0; step < 10000 && finished < n; step++) {
    for (int i = 0; i < n; i++) {
      if (jobs[i].arrival != step) continue;
      nucleus_request_params p = nucleus_request_default_params();
      p.sampling.temperature = 0;
      p.sampling.logprobs = true;
      p.max_tokens = N_GEN;
      p.ignore_eos = true;
      p.images = jobs[i].images;
      p.n_images = 2;
      nucleus_error err = {0};
      if (nucleus_engine_submit(e, jobs[i].prompt, jobs[i].n_prompt, &p,
                                &reqs[i], &err) != NUCLEUS_OK)
        fail_msg("submit: %s", err.message);
    }
    nc_engine_step(e);
    for (int i = 0; i < n; i++) {
      nucleus_event ev;
      while (reqs[i] && !done[i] &&
             nucleus_request_next_event(reqs[i], &ev, 0) == NUCLEUS_OK) {
        if (ev.kind == NUCLEUS_EVENT_TOKEN) {
          out[i].tokens[out[i].n] = ev.token;
          out[i].logprobs[out[i].n++] = ev.logprob;
        } else if (ev.kind == NUCLEUS_EVENT_FINISH &&
                   ev.finish_reason == NUCLEUS_FINISH_ERROR) {
          fail_msg("request %d: %s", i, ev.error.message);
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
}

static bool same(const result *a, const result *b) {
  return a->n == b->n &&
         !memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n) &&
         !memcmp(a->logprobs, b->logprobs, sizeof(float) * (size_t)a->n);
}

static char *text_of(fixture *fx, const result *r) {
  char *text = NULL;
  size_t len = 0;
  nucleus_error err;
  assert_int_equal(nucleus_detokenize(fx->lm, r->tokens, (size_t)r->n, true,
                                      &text, &len, &err),
                   NUCLEUS_OK);
  return text;
}

/* llama-mtmd-cli's text for (wide, tall). */
static char *golden_text(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/vision/gemma4v_greedy.txt",
           root());
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("%s is missing (scripts/gen_vision_goldens.py)", path);
  char *buf = calloc(1, 4096);
  size_t n = fread(buf, 1, 4095, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void test_llama_greedy(void **state) {
  fixture *fx = need(state);
  size_t n = 0;
  int32_t *prompt = prompt_of(fx, fx->wide, fx->tall, &n);
  nucleus_engine *e = engine(fx, 512);
  job j = {prompt, n, {fx->wide, fx->tall}, 0};
  result r;
  run_on(e, &j, 1, &r);
  char *got = text_of(fx, &r), *want = golden_text();
  /* the golden holds llama.cpp's first N_GEN tokens' text exactly */
  if (strcmp(got, want) != 0)
    fail_msg("greedy text differs from llama.cpp's:\n got '%s'\nwant '%s'", got,
             want);
  /* other images, other text */
  size_t n2 = 0;
  int32_t *prompt2 = prompt_of(fx, fx->tall, fx->wide, &n2);
  job j2 = {prompt2, n2, {fx->tall, fx->wide}, 0};
  result r2;
  nucleus_engine_free(e);
  e = engine(fx, 512);
  run_on(e, &j2, 1, &r2);
  char *other = text_of(fx, &r2);
  assert_string_not_equal(other, got);
  nucleus_free(other);
  nucleus_free(got);
  free(want);
  nucleus_free(prompt);
  nucleus_free(prompt2);
  nucleus_engine_free(e);
}

static void test_invariance(void **state) {
  fixture *fx = need(state);
  size_t n = 0;
  int32_t *prompt = prompt_of(fx, fx->wide, fx->tall, &n);
  job alone = {prompt, n, {fx->wide, fx->tall}, 0};
  result ref;
  nucleus_engine *e = engine(fx, 512);
  run_on(e, &alone, 1, &ref);
  nucleus_engine_free(e);
  assert_int_equal(ref.n, N_GEN);

  /* chunks that must stop before an image (136 and 78 rows) */
  const int32_t budgets[] = {140, 150, 200};
  for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
    result r;
    e = engine(fx, budgets[b]);
    run_on(e, &alone, 1, &r);
    nucleus_engine_free(e);
    if (!same(&r, &ref)) fail_msg("chunks of %d: other output", budgets[b]);
  }

  /* beside a request with other images, arriving later */
  size_t n2 = 0;
  int32_t *prompt2 = prompt_of(fx, fx->square, fx->wide, &n2);
  job pair[2] = {{prompt, n, {fx->wide, fx->tall}, 0},
                 {prompt2, n2, {fx->square, fx->wide}, 1}};
  result rs[2];
  e = engine(fx, 160);
  run_on(e, pair, 2, rs);
  if (!same(&rs[0], &ref)) fail_msg("beside another request: other output");
  assert_false(same(&rs[1], &ref));

  /* a prefix-cache hit past both images */
  result again;
  run_on(e, &alone, 1, &again);
  if (!same(&again, &ref)) fail_msg("prefix hit: other output");
  const int32_t bt = 16;
  assert_int_equal(again.cached, ((int32_t)n - 1) / bt * bt);
  nucleus_engine_free(e);
  nucleus_free(prompt);
  nucleus_free(prompt2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_llama_greedy),
      cmocka_unit_test(test_invariance),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
