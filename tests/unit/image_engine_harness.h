/* image_engine_harness: the engine over a random language model +
 * projector pair of `make arch-models` (vision_test_util.h), requests with
 * two images each on one chat prompt (greedy, logprobs, N_GEN tokens, EOS
 * ignored), stepped by hand; and the checks the image-engine tests share:
 * llama-mtmd-cli's greedy text (a golden of scripts/gen_vision_goldens.py)
 * and a request's invariance (alone, in chunks, beside another request, on
 * a prefix-cache hit). test_engine_images, test_engine_qwen_images and
 * test_engine_gemma4v_images. Header-only; include after cmocka.h. */
#ifndef NC_TEST_IMAGE_ENGINE_HARNESS_H
#define NC_TEST_IMAGE_ENGINE_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "nucleus.h"
#include "vision_test_util.h"

enum { MAX_GEN = 64, N_GEN = 16 };

/* The prompt: two images, then text (llama-mtmd-cli's goldens'). */
static const char *const k_chat =
    "<|im_start|>user\n<__media__><__media__>Describe "
    "the two images.<|im_end|>\n<|im_start|>assistant\n";

/* A test group's state: the pair (p.lm NULL when it did not load: each
 * test then ends through ie_need) and its test images. */
typedef struct ie_fixture {
  vt_pair p;
  char what[256]; /* the pair, for NC_MODEL_UNAVAILABLE */
  nucleus_image *img[4];
  int n_img;
} ie_fixture;

/* cmocka's group setup: the pair build/arch/LM.gguf + MM.gguf at 2
 * threads, flash attention off (as the goldens) or on, and the test images
 * of sizes[i] = {w, h} (vt_image) in img[i]. */
static inline int ie_setup(void **state, const char *lm, const char *mm,
                           bool flash, const int32_t (*sizes)[2], int n) {
  ie_fixture *fx = calloc(1, sizeof *fx);
  *state = fx;
  snprintf(fx->what, sizeof fx->what,
           "the random pair %s + %s (make arch-models)", lm, mm);
  nucleus_error err = {0};
  vt_try_load(lm, mm, false, flash, 2, &fx->p, &err);
  fx->n_img = n < 4 ? n : 4;
  for (int i = 0; i < fx->n_img; i++)
    fx->img[i] = vt_image(sizes[i][0], sizes[i][1]);
  return 0;
}

static inline int ie_teardown(void **state) {
  ie_fixture *fx = *state;
  vt_unload(&fx->p);
  for (int i = 0; i < fx->n_img; i++)
    test_image_free(fx->img[i]);
  free(fx);
  return 0;
}

/* The group's state, the test ended when its pair did not load. */
static inline ie_fixture *ie_need(void **state) {
  ie_fixture *fx = *state;
  if (!fx->p.lm) NC_MODEL_UNAVAILABLE(fx->what);
  return fx;
}

/* k_chat's tokens with the images a, b (nucleus_free). */
static inline int32_t *prompt_of(const vt_pair *p, const nucleus_image *a,
                                 const nucleus_image *b, size_t *n) {
  const nucleus_image *imgs[2] = {a, b};
  int32_t *ids = NULL;
  nucleus_error err = {0};
  assert_int_equal(nucleus_tokenize_with_images(p->lm, p->mm, k_chat,
                                                strlen(k_chat), imgs, 2, &ids,
                                                n, &err),
                   NUCLEUS_OK);
  return ids;
}

/* What a request gave: its tokens and their logprobs, the prompt tokens
 * the prefix cache held. */
typedef struct result {
  int32_t tokens[MAX_GEN];
  float logprobs[MAX_GEN];
  int32_t n, cached;
} result;

/* A request: its prompt, its two images, the step it arrives at. */
typedef struct job {
  const int32_t *prompt;
  size_t n_prompt;
  const nucleus_image *images[2];
  int arrival;
} job;

/* A stepped engine with p's projector: 512 positions, budget rows a step,
 * every sliding-window block kept when swa_full. */
static inline nucleus_engine *engine_with(const vt_pair *p, int32_t budget,
                                          bool swa_full) {
  nucleus_engine_params ep = nucleus_engine_default_params();
  ep.n_ctx = 512;
  ep.max_batch_tokens = budget;
  ep.mmproj = p->mm;
  ep.swa_full = swa_full;
  nucleus_engine *e = NULL;
  nucleus_error err = {0};
  if (nc_engine_create_stepped(p->lm, &ep, &e, &err) != NUCLEUS_OK)
    fail_msg("engine: %s", err.message);
  return e;
}

static inline nucleus_engine *engine(const vt_pair *p, int32_t budget) {
  return engine_with(p, budget, false);
}

/* The n (at most 4) jobs through e, each submitted at its arrival step,
 * until all are done; their results into out. */
static inline void run_on(nucleus_engine *e, const job *jobs, int n,
                          result *out) {
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

/* The same tokens and the same logprobs, bit for bit. */
static inline bool same(const result *a, const result *b) {
  return a->n == b->n &&
         !memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n) &&
         !memcmp(a->logprobs, b->logprobs, sizeof(float) * (size_t)a->n);
}

/* r's tokens as text (nucleus_free). */
static inline char *text_of(const vt_pair *p, const result *r) {
  char *text = NULL;
  size_t len = 0;
  nucleus_error err;
  assert_int_equal(nucleus_detokenize(p->lm, r->tokens, (size_t)r->n, true,
                                      &text, &len, &err),
                   NUCLEUS_OK);
  return text;
}

/* The images e has encoded (images_encoded_total). */
static inline int64_t encoded(nucleus_engine *e) {
  nucleus_engine_stats st;
  nucleus_engine_get_stats(e, &st);
  return st.images_encoded_total;
}

/* The greedy text of one request with the images a, b alone on a fresh
 * engine (nucleus_free). */
static inline char *greedy_text(const vt_pair *p, const nucleus_image *a,
                                const nucleus_image *b) {
  size_t n = 0;
  int32_t *prompt = prompt_of(p, a, b, &n);
  nucleus_engine *e = engine(p, 512);
  job j = {prompt, n, {a, b}, 0};
  result r;
  run_on(e, &j, 1, &r);
  nucleus_engine_free(e);
  nucleus_free(prompt);
  return text_of(p, &r);
}

/* llama-mtmd-cli's greedy text, tests/data/vision/NAME (malloc'd). */
static inline char *golden_text(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/vision/%s", vt_root(), name);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("%s is missing (scripts/gen_vision_goldens.py)", path);
  char *buf = calloc(1, 4096);
  size_t n = fread(buf, 1, 4095, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

/* The greedy text with the images a, b is the golden's (llama.cpp's first
 * N_GEN tokens' text exactly); with the images c, d it is other text. */
static inline void check_greedy(const vt_pair *p, const char *golden,
                                const nucleus_image *a, const nucleus_image *b,
                                const nucleus_image *c,
                                const nucleus_image *d) {
  char *got = greedy_text(p, a, b), *want = golden_text(golden);
  if (strcmp(got, want) != 0)
    fail_msg("greedy text differs from llama.cpp's:\n got '%s'\nwant '%s'", got,
             want);
  char *other = greedy_text(p, c, d);
  assert_string_not_equal(other, got);
  nucleus_free(other);
  nucleus_free(got);
  free(want);
}

/* The request with the images a, b gives the same tokens and logprobs as
 * alone (512 rows a step) in chunks of budgets[i] rows (each must stop
 * before an image), beside a request with the images c, d arriving a step
 * later (pair_budget rows a step), and on a prefix-cache hit past both
 * images after them on that engine (block-aligned, short of the last
 * prompt token; neither image encoded again). That engine is freed, or handed
 * to the caller in *keep. */
static inline void
check_invariance(const vt_pair *p, const nucleus_image *a,
                 const nucleus_image *b, const nucleus_image *c,
                 const nucleus_image *d, const int32_t *budgets, int n_budgets,
                 int32_t pair_budget, nucleus_engine **keep) {
  size_t n = 0;
  int32_t *prompt = prompt_of(p, a, b, &n);
  job alone = {prompt, n, {a, b}, 0};
  result ref;
  nucleus_engine *e = engine(p, 512);
  run_on(e, &alone, 1, &ref);
  nucleus_engine_free(e);
  assert_int_equal(ref.n, N_GEN);

  for (int i = 0; i < n_budgets; i++) {
    result r;
    e = engine(p, budgets[i]);
    run_on(e, &alone, 1, &r);
    nucleus_engine_free(e);
    if (!same(&r, &ref)) fail_msg("chunks of %d: other output", budgets[i]);
  }

  size_t n2 = 0;
  int32_t *prompt2 = prompt_of(p, c, d, &n2);
  job pair[2] = {{prompt, n, {a, b}, 0}, {prompt2, n2, {c, d}, 1}};
  result rs[2];
  e = engine(p, pair_budget);
  run_on(e, pair, 2, rs);
  if (!same(&rs[0], &ref)) fail_msg("beside another request: other output");
  assert_false(same(&rs[1], &ref));

  result again;
  const int64_t before = encoded(e);
  run_on(e, &alone, 1, &again);
  if (!same(&again, &ref)) fail_msg("prefix hit: other output");
  /* the hit is past both images: neither is encoded again */
  assert_int_equal(encoded(e), before);
  const int32_t bt = 16; /* the engine's default kv_block_tokens */
  assert_int_equal(again.cached, ((int32_t)n - 1) / bt * bt);
  if (keep)
    *keep = e;
  else
    nucleus_engine_free(e);
  nucleus_free(prompt);
  nucleus_free(prompt2);
}

#endif
