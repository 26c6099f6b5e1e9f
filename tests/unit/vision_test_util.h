/* vision_test_util: what the projector tests share (test_mmproj_encode,
 * _qwen3vl, _qwen2vl, _gemma4v, test_mmproj, test_mmproj_job and the
 * engine's image tests): a random language model + projector pair of
 * `make arch-models` (build/arch/), scripts/gen_vision_goldens.py's pixels
 * and golden rows, an image's rows through nucleus_mmproj_encode and their
 * distance to llama.cpp's, a pairing the loader refuses. Header-only;
 * include after cmocka.h. */
#ifndef NC_TEST_VISION_TEST_UTIL_H
#define NC_TEST_VISION_TEST_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nucleus.h"
#include "test_image_util.h"
#include "test_require.h"

/* The tree the tests read: $NUCLEUS_ROOT, else the working folder. */
static inline const char *vt_root(void) {
  const char *r = getenv("NUCLEUS_ROOT");
  return r && *r ? r : ".";
}

/* scripts/gen_vision_goldens.py's pixels() (malloc'd, 3 w h bytes) */
static inline uint8_t *vt_pixels(int32_t w, int32_t h) {
  uint8_t *p = malloc((size_t)3 * w * h);
  for (int32_t y = 0; y < h; y++)
    for (int32_t x = 0; x < w; x++)
      for (int c = 0; c < 3; c++) {
        const int64_t v =
            (x * 37 + y * 91 + c * 53 + (x * y) % 17) * 7 + (x + 2 * y) * 3;
        p[((size_t)y * w + x) * 3 + c] = (uint8_t)(v & 255);
      }
  return p;
}

/* The image of those pixels (test_image_free). */
static inline nucleus_image *vt_image(int32_t w, int32_t h) {
  uint8_t *p = vt_pixels(w, h);
  nucleus_image *img = test_image(p, w, h);
  free(p);
  return img;
}

/* A language model and its projector. */
typedef struct vt_pair {
  nucleus_model *lm;
  nucleus_mmproj *mm;
} vt_pair;

/* build/arch/LM.gguf and build/arch/MM.gguf beside it (n_threads, the
 * plain-C kernels when reference, flash attention on or off) into *p; on
 * a failure both NULL, false and err says why. */
static inline bool vt_try_load(const char *lm, const char *mm, bool reference,
                               bool flash, int n_threads, vt_pair *p,
                               nucleus_error *err) {
  char lm_path[4096], mm_path[4096];
  snprintf(lm_path, sizeof lm_path, "%s/build/arch/%s.gguf", vt_root(), lm);
  snprintf(mm_path, sizeof mm_path, "%s/build/arch/%s.gguf", vt_root(), mm);
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = n_threads;
  mp.reference_kernels = reference;
  mp.flash_attn = flash ? NUCLEUS_FLASH_ATTN_ON : NUCLEUS_FLASH_ATTN_OFF;
  p->lm = NULL;
  p->mm = NULL;
  if (nucleus_model_load(lm_path, &mp, &p->lm, err) != NUCLEUS_OK ||
      nucleus_mmproj_load(mm_path, p->lm, &mp, &p->mm, err) != NUCLEUS_OK) {
    nucleus_model_free(p->lm);
    p->lm = NULL;
    return false;
  }
  return true;
}

/* The same, a failure ending the test (NC_MODEL_UNAVAILABLE). */
static inline vt_pair vt_load(const char *lm, const char *mm, bool reference,
                              bool flash, int n_threads) {
  vt_pair p;
  nucleus_error err = {0};
  if (!vt_try_load(lm, mm, reference, flash, n_threads, &p, &err)) {
    char why[4400];
    snprintf(why, sizeof why, "the random pair %s + %s (make arch-models): %s",
             lm, mm, err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return p;
}

static inline void vt_unload(vt_pair *p) {
  nucleus_mmproj_free(p->mm);
  nucleus_model_free(p->lm);
  p->mm = NULL;
  p->lm = NULL;
}

/* llama.cpp's rows of an image: tests/data/vision/KIND_emb_NAME[_fa].bin
 * (two int32, rows and width, then the floats; malloc'd), written by
 * scripts/gen_vision_goldens.py with the flag gen ("" or " --qwen3vl"...). */
static inline float *vt_golden(const char *kind, const char *name, bool flash,
                               const char *gen, int32_t *n_tok,
                               int32_t *n_embd) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/vision/%s_emb_%s%s.bin", vt_root(),
           kind, name, flash ? "_fa" : "");
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("%s is missing (scripts/gen_vision_goldens.py%s)", path, gen);
  int32_t hdr[2];
  assert_int_equal(fread(hdr, sizeof hdr, 1, f), 1);
  *n_tok = hdr[0];
  *n_embd = hdr[1];
  const size_t n = (size_t)hdr[0] * hdr[1];
  float *g = malloc(n * sizeof *g);
  assert_int_equal(fread(g, sizeof *g, n, f), n);
  fclose(f);
  return g;
}

/* The rows of the w x h test image through p's projector (malloc'd; *n_out
 * floats: nucleus_mmproj_image_tokens rows of nucleus_mmproj_n_embd). */
static inline float *vt_encode(const vt_pair *p, int32_t w, int32_t h,
                               size_t *n_out) {
  nucleus_image *img = vt_image(w, h);
  nucleus_error err = {0};
  int32_t n_tok = 0;
  assert_int_equal(nucleus_mmproj_image_tokens(p->mm, img, &n_tok, &err),
                   NUCLEUS_OK);
  const size_t n = (size_t)n_tok * nucleus_mmproj_n_embd(p->mm);
  float *out = malloc(n * sizeof *out);
  if (nucleus_mmproj_encode(p->mm, img, out, n, &err) != NUCLEUS_OK)
    fail_msg("encode: %s", err.message);
  test_image_free(img);
  *n_out = n;
  return out;
}

/* How far n rows' values a are from the golden g: the largest |g| (scale),
 * the largest and the mean |a - g|. */
typedef struct vt_diff {
  double scale, worst, mean;
} vt_diff;

static inline vt_diff vt_diff_of(const float *a, const float *g, size_t n) {
  vt_diff d = {0, 0, 0};
  double sum = 0;
  for (size_t k = 0; k < n; k++)
    if (fabs(g[k]) > d.scale) d.scale = fabs(g[k]);
  for (size_t k = 0; k < n; k++) {
    const double e = fabs(a[k] - g[k]);
    sum += e;
    if (e > d.worst) d.worst = e;
  }
  d.mean = sum / (double)n;
  return d;
}

/* One image of a table: its name in the goldens, its size, the rows it
 * must give (0: unchecked) and, when nonzero, its own mean bound with
 * flash attention on. */
typedef struct vt_table_image {
  const char *name;
  int32_t w, h, rows;
  double flash_mean;
} vt_table_image;

/* A projector's images against llama.cpp's rows: the pair build/arch/LM +
 * MM, the goldens KIND_emb_*.bin (written by gen_vision_goldens.py's flag
 * gen), each image within max_bound and mean_bound (0: the mean
 * unchecked) of its rows' largest value (index: flash off, on). */
typedef struct vt_table {
  const char *lm, *mm, *kind, *gen;
  const vt_table_image *images;
  size_t n_images;
  double max_bound[2], mean_bound[2];
} vt_table;

/* Each image of t through the pair at 1 and 3 threads (the same bits:
 * threads split output rows only), the rows' count and width llama.cpp's,
 * within t's bounds of them; one failure naming the images off. */
static inline void vt_check_table(const vt_table *t, bool reference,
                                  bool flash) {
  vt_pair p1 = vt_load(t->lm, t->mm, reference, flash, 1),
          p3 = vt_load(t->lm, t->mm, reference, flash, 3);
  int bad = 0;
  for (size_t i = 0; i < t->n_images; i++) {
    const vt_table_image *im = &t->images[i];
    int32_t n_tok, n_embd;
    float *g = vt_golden(t->kind, im->name, flash, t->gen, &n_tok, &n_embd);
    assert_int_equal(n_embd, nucleus_mmproj_n_embd(p1.mm));
    size_t n1, n3;
    float *a = vt_encode(&p1, im->w, im->h, &n1);
    float *b = vt_encode(&p3, im->w, im->h, &n3);
    if (im->rows) assert_int_equal(n_tok, im->rows);
    assert_int_equal(n1, (size_t)n_tok * n_embd);
    assert_memory_equal(a, b, n1 * sizeof *a);
    const vt_diff d = vt_diff_of(a, g, n1);
    print_message("%s, %s kernels, flash %s, image %s (%d rows): max |diff| "
                  "%.3g, mean %.3g, of max |value| %.3g (%.3g and %.3g "
                  "relative)\n",
                  t->kind, reference ? "ref" : "best", flash ? "on" : "off",
                  im->name, (int)n_tok, d.worst, d.mean, d.scale,
                  d.worst / d.scale, d.mean / d.scale);
    const double mean_bound =
        flash && im->flash_mean > 0 ? im->flash_mean : t->mean_bound[flash];
    if (!(d.worst <= t->max_bound[flash] * d.scale) ||
        (mean_bound > 0 && !(d.mean <= mean_bound * d.scale)))
      bad++;
    free(a);
    free(b);
    free(g);
  }
  vt_unload(&p1);
  vt_unload(&p3);
  if (bad)
    fail_msg("%s: %d images off by more than %g (max) or %g (mean) relative",
             t->kind, bad, t->max_bound[flash], t->mean_bound[flash]);
}

/* The projector build/arch/MM.gguf beside build/arch/LM.gguf, a language
 * model it does not feed: refused, the message saying needle. */
static inline void vt_check_refused(const char *lm, const char *mm,
                                    const char *needle) {
  char lm_path[4096], mm_path[4096];
  snprintf(lm_path, sizeof lm_path, "%s/build/arch/%s.gguf", vt_root(), lm);
  snprintf(mm_path, sizeof mm_path, "%s/build/arch/%s.gguf", vt_root(), mm);
  nucleus_model_params mp = nucleus_model_default_params();
  nucleus_model *model = NULL;
  nucleus_mmproj *proj = NULL;
  nucleus_error err = {0};
  if (nucleus_model_load(lm_path, &mp, &model, &err) != NUCLEUS_OK)
    NC_MODEL_UNAVAILABLE(lm_path);
  assert_int_not_equal(nucleus_mmproj_load(mm_path, model, &mp, &proj, &err),
                       NUCLEUS_OK);
  assert_null(proj);
  if (!strstr(err.message, needle))
    fail_msg("%s: '%s' does not say '%s'", lm, err.message, needle);
  nucleus_model_free(model);
}

#endif
