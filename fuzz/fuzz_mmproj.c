/* libFuzzer target for projector files (src/vision/mmproj_load.c): any
 * bytes that parse as GGUF either load as a projector whose grid, rows and
 * encoding of small images hold together, or are refused with a
 * format, unsupported or argument error and a message; never a crash, UB,
 * a leak, a huge allocation or a hang. The language model beside it is
 * made up from the file (nc_mmproj_lm): the architecture its projector
 * type pairs with, its projection_dim as the width, the DeepStack layers
 * it marks, the plain-C kernels, flash attention on for odd sizes. Three
 * images: 5 x 3, 2 x 19 and one of a size the input picks. An
 * encode whose work the file's own sizes put past a budget is skipped
 * (its cost is the file's, not a loop of the loader's).
 * Seeds: scripts/gen_mmproj_seeds.py (fuzz/corpus/mmproj). Build: make
 * fuzz-mmproj. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "vision/image.h"
#include "vision/mmproj_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* One input: NC_OK when it loaded (*n_encoded: how many of the two fixed
 * images the budget let it encode), else the refusal's code, message in
 * err. */
nc_code fuzz_mmproj_one(const uint8_t *data, size_t size, nc_error *err,
                        int *n_encoded);

static void check(int ok) {
  if (!ok) abort();
}

static bool str_is(gguf_str s, const char *want) {
  return s.ptr && s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

/* The language model the file's projector pairs with. */
static nc_mmproj_lm made_up_lm(const gguf_file *f, size_t size) {
  nc_mmproj_lm lm = {.arch = "gemma3",
                     .n_embd = 8,
                     .kern = nc_kernels_ref(),
                     .n_threads = 1,
                     .flash = size % 2 == 1};
  gguf_str s = {0};
  if (gguf_get_str(f, "clip.projector_type", &s) ||
      gguf_get_str(f, "clip.vision.projector_type", &s)) {
    if (str_is(s, "qwen2vl_merger") || str_is(s, "qwen2.5vl_merger"))
      lm.arch = "qwen2vl";
    else if (str_is(s, "qwen3vl_merger"))
      lm.arch = "qwen3vl";
    else if (str_is(s, "gemma4v"))
      lm.arch = "gemma4";
  }
  int64_t v;
  if (gguf_get_i64(f, "clip.vision.projection_dim", &v) && v >= 1 && v <= 65536)
    lm.n_embd = (int32_t)v;
  gguf_value_type t;
  uint64_t n;
  if (gguf_get_arr(f, "clip.vision.is_deepstack_layers", &t, &n))
    for (uint64_t i = 0; i < n && i < 256; i++)
      if (gguf_get_arr_i64(f, "clip.vision.is_deepstack_layers", i, &v) &&
          v == 1)
        lm.n_deepstack++;
  return lm;
}

/* About the multiply-adds of encoding image (the resize, the layers'
 * matmuls and attention, the merger): the budget's measure. */
static double encode_work(const nucleus_mmproj *mm, const nucleus_image *img,
                          int32_t tokens) {
  const double E = mm->n_embd, F = mm->n_ff, P = mm->patch_size;
  double patches, pixels;
  if (nc_mmproj_dyn_size(mm)) {
    patches = (double)mm->n_merge * mm->n_merge * tokens;
    pixels = patches * P * P;
  } else {
    const double side = (double)mm->image_size / mm->patch_size;
    patches = side * side;
    pixels = (double)mm->image_size * mm->image_size;
  }
  const double layer = patches * (4 * E * E + 3 * E * F + 2 * patches * E);
  const double merge = patches * 16 * E * E + patches * E * mm->n_embd_text;
  return pixels * 64 + patches * 3 * P * P * E + mm->n_layer * layer + merge +
         (double)img->width * img->height;
}

static nucleus_image *test_image(int32_t w, int32_t h, uint8_t salt) {
  nucleus_image *img = NULL;
  nc_error err = {0};
  if (nc_image_alloc(w, h, &img, &err) != NC_OK) return NULL;
  for (int32_t i = 0; i < 3 * w * h; i++)
    img->rgb[i] = (uint8_t)(i * 37 + salt);
  nc_image_rehash(img);
  return img;
}

/* The grid, rows and (within the budget) the encoding of an image. */
static int use(const nucleus_mmproj *mm, int32_t w, int32_t h) {
  nucleus_image *img = test_image(w, h, (uint8_t)(w * 7 + h));
  check(img != NULL);
  int32_t nx = 0, ny = 0;
  nc_mmproj_image_grid(mm, img, &nx, &ny);
  const int32_t tokens = nc_mmproj_image_tokens(mm, img);
  const int32_t width = nc_mmproj_n_embd(mm);
  check(nx >= 1 && ny >= 1 && tokens == nx * ny && width >= 1);
  int encoded = 0;
  if (encode_work(mm, img, tokens) <= 2e7) {
    float *out = malloc((size_t)tokens * (size_t)width * sizeof *out);
    check(out != NULL);
    nc_error err = {0};
    nc_code rc = nc_mmproj_encode(mm, img, NULL, out, &err);
    /* gemma4v: a patch grid past the file's position tables is refused */
    check(rc == NC_OK || (rc == NC_ERR_NOMEM && err.message[0]) ||
          (rc == NC_ERR_INVALID_ARGUMENT &&
           mm->projector == NC_PROJECTOR_GEMMA4V && err.message[0]));
    free(out);
    encoded = 1;
  }
  nc_image_free(img);
  return encoded;
}

nc_code fuzz_mmproj_one(const uint8_t *data, size_t size, nc_error *err,
                        int *n_encoded) {
  *n_encoded = 0;
  /* an exact-size copy, so ASan sees any read past the end */
  uint8_t *copy = malloc(size ? size : 1);
  check(copy != NULL);
  if (size) memcpy(copy, data, size);
  gguf_file *f = NULL;
  nc_code rc = gguf_open_memory(copy, size, &f, err);
  if (rc == NC_OK) {
    const nc_mmproj_lm lm = made_up_lm(f, size);
    nucleus_mmproj *mm = NULL;
    rc = nc_mmproj_load_gguf(f, &lm, &mm, err);
    if (rc == NC_OK) {
      check(mm != NULL && err->message[0] == '\0');
      /* a third image of a size the input picks (1 .. 64 a side: Qwen's
       * grids past 64 patches, windows split across, odd aspect ratios) */
      const uint8_t a = size ? data[size / 2] : 0,
                    b = size ? data[size - 1] : 0;
      *n_encoded = use(mm, 5, 3) + use(mm, 2, 19);
      (void)use(mm, 1 + a % 64, 1 + b % 64);
      nc_mmproj_free(mm);
    } else {
      check(mm == NULL && err->message[0] != '\0' &&
            strncmp(err->message, "mmproj", 6) == 0 &&
            (rc == NC_ERR_FORMAT || rc == NC_ERR_UNSUPPORTED ||
             rc == NC_ERR_INVALID_ARGUMENT));
    }
  }
  free(copy);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nc_error err = {0};
  int n_encoded;
  (void)fuzz_mmproj_one(data, size, &err, &n_encoded);
  return 0;
}
