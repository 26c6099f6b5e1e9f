/* Projector files (src/vision/mmproj_load.c) and the image API
 * (include/nucleus.h, "images"):
 * - a small Gemma 3 mmproj written here loads beside the random gemma3
 *   language model (build/arch/gemma3.gguf); each malformed variant (a key
 *   missing or out of range, a tensor missing, of another shape or type, a
 *   width that is not the model's, a truncated file) is refused with the
 *   code and a message naming the key or tensor;
 * - the random pair of `make arch-models` (gemma3-mmproj.gguf) loads;
 * - nucleus_tokenize_with_images: one run of NUCLEUS_TOKEN_IMAGE per
 *   marker between the family's markers, the text around it tokenized as
 *   llama.cpp's mtmd does, and its refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gguf_writer.h"
#include "nucleus.h"
#include "test_image_util.h"
#include "test_require.h"

static const char *root(void) {
  const char *r = getenv("NUCLEUS_ROOT");
  return r && *r ? r : ".";
}

static nucleus_model *g_lm; /* the random gemma3 (n_embd 256) */

static int setup(void **state) {
  (void)state;
  return 0;
}

static nucleus_model *lm(void) {
  if (g_lm) return g_lm;
  char path[4096];
  snprintf(path, sizeof path, "%s/build/arch/gemma3.gguf", root());
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 1;
  nucleus_error err;
  if (nucleus_model_load(path, &mp, &g_lm, &err) != NUCLEUS_OK) {
    char why[4200];
    snprintf(why, sizeof why, "%s (make arch-models): %s", path, err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return g_lm;
}

static int teardown(void **state) {
  (void)state;
  nucleus_model_free(g_lm);
  g_lm = NULL;
  return 0;
}

/* ---- a small Gemma 3 projector, and its variants */

enum { E = 8, F = 16, HEADS = 2, IMG = 16, PATCH = 4, MERGE = 2, TEXT = 256 };

typedef struct mutation {
  const char *drop_key; /* leave this key out */
  const char *u32_key;  /* write this integer key with u32_val */
  uint32_t u32_val;
  const char *str_key; /* write this string key with str_val */
  const char *str_val;
  const char *drop_tensor; /* leave this tensor out */
  const char *bad_tensor;  /* this tensor's ne[0] + 1 */
  const char *q8_tensor;   /* this tensor as Q8_0 (rows of E: not blocks) */
  size_t truncate;         /* cut the file to this many bytes */
} mutation;

typedef struct tinfo {
  const char *name;
  uint64_t ne[4];
  uint32_t n_dims;
} tinfo;

static int tensors(tinfo *t) {
  int n = 0;
  t[n++] = (tinfo){"v.patch_embd.weight", {PATCH, PATCH, 3, E}, 4};
  t[n++] = (tinfo){"v.patch_embd.bias", {E, 1, 1, 1}, 1};
  const uint64_t side = IMG / PATCH;
  t[n++] = (tinfo){"v.position_embd.weight", {E, side * side, 1, 1}, 2};
  t[n++] = (tinfo){"v.blk.0.ln1.weight", {E, 1, 1, 1}, 1};
  t[n++] = (tinfo){"v.blk.0.ln1.bias", {E, 1, 1, 1}, 1};
  t[n++] = (tinfo){"v.blk.0.attn_q.weight", {E, E, 1, 1}, 2};
  t[n++] = (tinfo){"v.blk.0.attn_k.weight", {E, E, 1, 1}, 2};
  t[n++] = (tinfo){"v.blk.0.attn_v.weight", {E, E, 1, 1}, 2};
  t[n++] = (tinfo){"v.blk.0.attn_out.weight", {E, E, 1, 1}, 2};
  t[n++] = (tinfo){"v.blk.0.ln2.weight", {E, 1, 1, 1}, 1};
  t[n++] = (tinfo){"v.blk.0.ln2.bias", {E, 1, 1, 1}, 1};
  t[n++] = (tinfo){"v.blk.0.ffn_up.weight", {E, F, 1, 1}, 2};
  t[n++] = (tinfo){"v.blk.0.ffn_down.weight", {F, E, 1, 1}, 2};
  t[n++] = (tinfo){"v.post_ln.weight", {E, 1, 1, 1}, 1};
  t[n++] = (tinfo){"mm.soft_emb_norm.weight", {E, 1, 1, 1}, 1};
  t[n++] = (tinfo){"mm.input_projection.weight", {TEXT, E, 1, 1}, 2};
  return n;
}

static bool is(const char *a, const char *b) {
  return a && strcmp(a, b) == 0;
}

static void key_u32(gw *b, const mutation *m, const char *key, uint32_t v,
                    int *n_kv) {
  if (is(m->drop_key, key)) return;
  gw_kv_u32(b, key, is(m->u32_key, key) ? m->u32_val : v);
  (*n_kv)++;
}

static void key_str(gw *b, const mutation *m, const char *key, const char *v,
                    int *n_kv) {
  if (is(m->drop_key, key)) return;
  gw_kv_str(b, key, is(m->str_key, key) ? m->str_val : v);
  (*n_kv)++;
}

static void key_bool(gw *b, const mutation *m, const char *key, bool v,
                     int *n_kv) {
  if (is(m->drop_key, key)) return;
  gw_key(b, key, 7 /* BOOL */);
  gw_u8(b, v);
  (*n_kv)++;
}

static void key_f32(gw *b, const mutation *m, const char *key, float v,
                    int *n_kv) {
  if (is(m->drop_key, key)) return;
  gw_key(b, key, 6 /* FLOAT32 */);
  gw_f32(b, v);
  (*n_kv)++;
}

static void key_arr3(gw *b, const mutation *m, const char *key, float v,
                     int *n_kv) {
  if (is(m->drop_key, key)) return;
  gw_kv_arr(b, key, 6 /* FLOAT32 */, 3);
  for (int i = 0; i < 3; i++)
    gw_f32(b, v);
  (*n_kv)++;
}

/* Writes the projector with mutation m to path. */
static void write_mmproj(const char *path, const mutation *m) {
  gw kv = {0};
  int n_kv = 0;
  key_str(&kv, m, "general.architecture", "clip", &n_kv);
  key_bool(&kv, m, "clip.has_vision_encoder", true, &n_kv);
  key_str(&kv, m, "clip.projector_type", "gemma3", &n_kv);
  key_bool(&kv, m, "clip.use_gelu", true, &n_kv);
  key_u32(&kv, m, "clip.vision.image_size", IMG, &n_kv);
  key_u32(&kv, m, "clip.vision.patch_size", PATCH, &n_kv);
  key_u32(&kv, m, "clip.vision.embedding_length", E, &n_kv);
  key_u32(&kv, m, "clip.vision.feed_forward_length", F, &n_kv);
  key_u32(&kv, m, "clip.vision.block_count", 1, &n_kv);
  key_u32(&kv, m, "clip.vision.projection_dim", TEXT, &n_kv);
  key_u32(&kv, m, "clip.vision.attention.head_count", HEADS, &n_kv);
  key_f32(&kv, m, "clip.vision.attention.layer_norm_epsilon", 1e-6f, &n_kv);
  key_u32(&kv, m, "clip.vision.projector.scale_factor", MERGE, &n_kv);
  key_arr3(&kv, m, "clip.vision.image_mean", 0.5f, &n_kv);
  key_arr3(&kv, m, "clip.vision.image_std", 0.5f, &n_kv);

  tinfo t[32];
  const int nt_all = tensors(t);
  gw infos = {0};
  uint64_t off = 0, sizes[32];
  uint32_t types[32];
  int nt = 0;
  for (int i = 0; i < nt_all; i++) {
    if (is(m->drop_tensor, t[i].name)) continue;
    uint64_t ne[4];
    memcpy(ne, t[i].ne, sizeof ne);
    if (is(m->bad_tensor, t[i].name)) ne[0] += 1;
    uint64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    types[nt] = 0; /* F32 */
    sizes[nt] = n * 4;
    if (is(m->q8_tensor, t[i].name)) {
      types[nt] = 8; /* Q8_0: rows of 8 are not whole blocks of 32 */
      sizes[nt] = n / 32 * 34 + 34;
    }
    gw_tensor(&infos, t[i].name, t[i].n_dims, ne, types[nt], off);
    off += (sizes[nt] + 31) / 32 * 32;
    nt++;
  }
  gw file = {0};
  gw_header(&file, 3, (uint64_t)nt, (uint64_t)n_kv);
  gw_bytes(&file, kv.p, kv.len);
  gw_bytes(&file, infos.p, infos.len);
  gw_align(&file, 32);
  for (int i = 0; i < nt; i++) {
    for (uint64_t k = 0; k < sizes[i] / 4; k++)
      gw_f32(&file, 0.01f * (float)((k * 7) % 13) + 0.5f);
    gw_align(&file, 32);
  }
  size_t len = m->truncate && m->truncate < file.len ? m->truncate : file.len;
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(file.p, 1, len, f), len);
  fclose(f);
  gw_free(&kv);
  gw_free(&infos);
  gw_free(&file);
}

static void tmp_path(char *buf, size_t cap) {
  snprintf(buf, cap, "/tmp/nc_test_mmproj_%d.gguf", (int)getpid());
}

static void test_small_loads(void **state) {
  (void)state;
  char path[256];
  tmp_path(path, sizeof path);
  const mutation none = {0};
  write_mmproj(path, &none);
  nucleus_mmproj *mm = NULL;
  nucleus_error err = {0};
  nucleus_status rc = nucleus_mmproj_load(path, lm(), NULL, &mm, &err);
  unlink(path);
  assert_int_equal(rc, NUCLEUS_OK);
  assert_string_equal(nucleus_mmproj_projector(mm), "gemma3");
  assert_int_equal(nucleus_mmproj_n_embd(mm), TEXT);
  uint8_t px[3 * 5 * 7] = {0};
  nucleus_image *img = test_image(px, 5, 7);
  int32_t n = 0;
  assert_int_equal(nucleus_mmproj_image_tokens(mm, img, &n, &err), NUCLEUS_OK);
  const int32_t side = IMG / PATCH / MERGE;
  assert_int_equal(n, side * side);
  /* encode checks the room it is given first */
  float out[4];
  assert_int_equal(nucleus_mmproj_encode(mm, img, out, 4, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "'cap' 4 floats"));
  test_image_free(img);
  nucleus_mmproj_free(mm);
}

typedef struct refusal {
  mutation m;
  nucleus_status code;
  const char *says; /* a part of the message */
} refusal;

static void test_refusals(void **state) {
  (void)state;
  const refusal cases[] = {
      {{.str_key = "general.architecture", .str_val = "llama"},
       NUCLEUS_ERR_FORMAT,
       "general.architecture is 'llama', expected 'clip'"},
      {{.drop_key = "clip.has_vision_encoder"},
       NUCLEUS_ERR_UNSUPPORTED,
       "no vision encoder"},
      {{.str_key = "clip.projector_type", .str_val = "ultravox"},
       NUCLEUS_ERR_UNSUPPORTED,
       "clip.projector_type 'ultravox' is not supported"},
      {{.drop_key = "clip.projector_type"},
       NUCLEUS_ERR_FORMAT,
       "clip.projector_type is missing"},
      {{.drop_key = "clip.vision.embedding_length"},
       NUCLEUS_ERR_FORMAT,
       "key 'clip.vision.embedding_length' is missing"},
      {{.u32_key = "clip.vision.block_count", .u32_val = 0},
       NUCLEUS_ERR_FORMAT,
       "key 'clip.vision.block_count' is 0, must be in [1, 256]"},
      {{.u32_key = "clip.vision.patch_size", .u32_val = 5},
       NUCLEUS_ERR_FORMAT,
       "image_size 16 is not a multiple of clip.vision.patch_size 5"},
      {{.u32_key = "clip.vision.attention.head_count", .u32_val = 3},
       NUCLEUS_ERR_FORMAT,
       "embedding_length 8 is not a multiple of "
       "clip.vision.attention.head_count 3"},
      {{.u32_key = "clip.vision.projector.scale_factor", .u32_val = 3},
       NUCLEUS_ERR_FORMAT,
       "4 patches a side (image_size 16 / patch_size 4) is not a multiple of "
       "clip.vision.projector.scale_factor 3"},
      {{.u32_key = "clip.vision.projection_dim", .u32_val = 512},
       NUCLEUS_ERR_INVALID_ARGUMENT,
       "projection_dim 512 is not the language model's embedding width 256"},
      {{.drop_key = "clip.vision.image_std"},
       NUCLEUS_ERR_FORMAT,
       "'clip.vision.image_std' must be an array of at least 3 numbers"},
      {{.drop_key = "clip.vision.attention.layer_norm_epsilon"},
       NUCLEUS_ERR_FORMAT,
       "layer_norm_epsilon' must be a number in (0, 1)"},
      {{.drop_tensor = "v.blk.0.attn_k.weight"},
       NUCLEUS_ERR_FORMAT,
       "tensor 'v.blk.0.attn_k.weight' is missing"},
      {{.drop_tensor = "mm.input_projection.weight"},
       NUCLEUS_ERR_FORMAT,
       "tensor 'mm.input_projection.weight' is missing"},
      {{.bad_tensor = "v.position_embd.weight"},
       NUCLEUS_ERR_FORMAT,
       "tensor 'v.position_embd.weight' has shape [9, 16], expected [8, 16, "
       "1, 1]"},
      {{.bad_tensor = "v.patch_embd.weight"},
       NUCLEUS_ERR_FORMAT,
       "tensor 'v.patch_embd.weight' has shape [5, 4, 3, 8], expected [4, 4, "
       "3, 8]"},
      {{.q8_tensor = "v.blk.0.attn_q.weight"},
       NUCLEUS_ERR_FORMAT,
       "'v.blk.0.attn_q.weight' (info at offset 976): ne[0] = 8 is not a "
       "multiple of the Q8_0 block size 32"},
      {{.q8_tensor = "mm.input_projection.weight"},
       NUCLEUS_ERR_UNSUPPORTED,
       "'mm.input_projection.weight' has type Q8_0, expected F32, F16 or "
       "BF16"},
      {{.truncate = 200}, NUCLEUS_ERR_FORMAT, "mmproj: /tmp/nc_test_mmproj_"},
  };
  char path[256];
  tmp_path(path, sizeof path);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    write_mmproj(path, &cases[i].m);
    nucleus_mmproj *mm = NULL;
    nucleus_error err = {0};
    nucleus_status rc = nucleus_mmproj_load(path, lm(), NULL, &mm, &err);
    if (rc != cases[i].code || !strstr(err.message, cases[i].says))
      fail_msg("case %zu: got %s '%s', expected %s with '%s'", i,
               nucleus_status_name(rc), err.message,
               nucleus_status_name(cases[i].code), cases[i].says);
    assert_null(mm);
  }
  unlink(path);
  nucleus_mmproj *mm = NULL;
  nucleus_error err = {0};
  assert_int_equal(
      nucleus_mmproj_load("/nonexistent/x.gguf", lm(), NULL, &mm, &err),
      NUCLEUS_ERR_IO);
  assert_int_equal(nucleus_mmproj_load(path, NULL, NULL, &mm, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "needs its language model"));
  /* a language model is not a projector */
  char lm_path[4096];
  snprintf(lm_path, sizeof lm_path, "%s/build/arch/gemma3.gguf", root());
  assert_int_equal(nucleus_mmproj_load(lm_path, lm(), NULL, &mm, &err),
                   NUCLEUS_ERR_FORMAT);
  assert_non_null(strstr(err.message, "expected 'clip'"));
}

static nucleus_mmproj *random_pair(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/build/arch/gemma3-mmproj.gguf", root());
  nucleus_mmproj *mm = NULL;
  nucleus_error err = {0};
  if (nucleus_mmproj_load(path, lm(), NULL, &mm, &err) != NUCLEUS_OK) {
    char why[4200];
    snprintf(why, sizeof why, "%s (make arch-models): %s", path, err.message);
    NC_MODEL_UNAVAILABLE(why);
  }
  return mm;
}

static void test_random_pair_loads(void **state) {
  (void)state;
  nucleus_mmproj *mm = random_pair();
  uint8_t px[3 * 4 * 4];
  memset(px, 7, sizeof px);
  nucleus_image *img = NULL;
  nucleus_error err;
  img = test_image(px, 4, 4);
  int32_t n = 0;
  assert_int_equal(nucleus_mmproj_image_tokens(mm, img, &n, &err), NUCLEUS_OK);
  assert_int_equal(n, 16); /* 64 / 8 patches a side, pooled 2 x 2 */
  test_image_free(img);
  nucleus_mmproj_free(mm);
}

static size_t tokenize(const char *text, int32_t **ids) {
  size_t n = 0;
  nucleus_error err;
  assert_int_equal(
      nucleus_tokenize(lm(), text, strlen(text), false, true, ids, &n, &err),
      NUCLEUS_OK);
  return n;
}

static void test_tokenize_with_images(void **state) {
  (void)state;
  nucleus_mmproj *mm = random_pair();
  uint8_t px[3] = {1, 2, 3};
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  img = test_image(px, 1, 1);
  const nucleus_image *imgs[2] = {img, img};
  const char *text = "look<__media__>and<__media__>done";
  int32_t *ids = NULL;
  size_t n = 0;
  assert_int_equal(nucleus_tokenize_with_images(lm(), mm, text, strlen(text),
                                                imgs, 2, &ids, &n, &err),
                   NUCLEUS_OK);
  /* BOS as the model asks, then each piece alone */
  int32_t *want = malloc(4096 * sizeof *want);
  size_t nw = 0;
  if (nucleus_token_bos(lm()) >= 0) {
    int32_t *bos_ids = NULL;
    size_t nb = 0;
    assert_int_equal(nucleus_tokenize_chat(lm(), "", 0, &bos_ids, &nb, &err),
                     NUCLEUS_OK);
    if (nb) memcpy(want, bos_ids, nb * sizeof *want);
    nw = nb;
    nucleus_free(bos_ids);
  }
  const char *pieces[] = {"look", "<start_of_image>", NULL, "<end_of_image>",
                          "and",  "<start_of_image>", NULL, "<end_of_image>",
                          "done"};
  for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
    if (!pieces[p]) {
      for (int r = 0; r < 16; r++)
        want[nw++] = NUCLEUS_TOKEN_IMAGE;
      continue;
    }
    int32_t *t = NULL;
    size_t nt = tokenize(pieces[p], &t);
    if (nt) memcpy(want + nw, t, nt * sizeof *t);
    nw += nt;
    nucleus_free(t);
  }
  assert_int_equal(n, nw);
  assert_memory_equal(ids, want, n * sizeof *ids);
  nucleus_free(ids);
  free(want);

  /* refusals */
  assert_int_equal(nucleus_tokenize_with_images(lm(), mm, text, strlen(text),
                                                imgs, 1, &ids, &n, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "the text has 2 image markers ('<__media__>') for 1 "
                      "images: one marker per image");
  assert_int_equal(nucleus_tokenize_with_images(lm(), NULL, text, strlen(text),
                                                imgs, 2, &ids, &n, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "needs an mmproj"));
  const nucleus_image *holes[2] = {img, NULL};
  assert_int_equal(nucleus_tokenize_with_images(lm(), mm, text, strlen(text),
                                                holes, 2, &ids, &n, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "image 1 is NULL");
  assert_int_equal(nucleus_tokenize_with_images(lm(), mm, text, strlen(text),
                                                imgs, NUCLEUS_MAX_IMAGES + 1,
                                                &ids, &n, &err),
                   NUCLEUS_ERR_LIMIT);
  /* no images: plain chat tokenization */
  assert_int_equal(nucleus_tokenize_with_images(lm(), mm, "done", 4, NULL, 0,
                                                &ids, &n, &err),
                   NUCLEUS_OK);
  int32_t *plain = NULL;
  size_t np = 0;
  assert_int_equal(nucleus_tokenize_chat(lm(), "done", 4, &plain, &np, &err),
                   NUCLEUS_OK);
  assert_int_equal(n, np);
  assert_memory_equal(ids, plain, n * sizeof *ids);
  nucleus_free(ids);
  nucleus_free(plain);
  test_image_free(img);
  nucleus_mmproj_free(mm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_loads),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_random_pair_loads),
      cmocka_unit_test(test_tokenize_with_images),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
