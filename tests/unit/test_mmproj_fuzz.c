/* The projector fuzzer's corpus (fuzz/corpus/mmproj, written by
 * scripts/gen_mmproj_seeds.py) through its harness (fuzz/fuzz_mmproj.c):
 * - every seed replays without a crash, a leak or a sanitizer report;
 * - the ok_ seeds (each encoder kind at tiny widths, F32, F16 and Q8_0;
 *   gemma4v also with a 2 x 2 pool) load
 *   beside the made-up language model and encode both of the harness's
 *   images;
 * - each bad_ seed (a key out of range, of the wrong type or missing, a
 *   patch size, image size, merge factor or window pattern that does not
 *   fit, a tensor missing or of another shape, a cut file) is refused with
 *   its code and a message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/status.h"
#include "fuzz_corpus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
nc_code fuzz_mmproj_one(const uint8_t *data, size_t size, nc_error *err,
                        int *n_encoded);

typedef struct {
  uint8_t *p;
  size_t n;
} bytes;

static bytes read_seed(const char *name) {
  const char *root = getenv("NUCLEUS_ROOT");
  char path[4096];
  snprintf(path, sizeof path, "%s/fuzz/corpus/mmproj/%s.gguf",
           root ? root : ".", name);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s (scripts/gen_mmproj_seeds.py)", path);
  bytes b = {malloc(1 << 20), 0};
  assert_non_null(b.p);
  b.n = fread(b.p, 1, 1 << 20, f);
  fclose(f);
  return b;
}

static void replay_one(const uint8_t *data, size_t len, void *ctx) {
  (void)ctx;
  LLVMFuzzerTestOneInput(data, len);
}

static void test_fuzz_corpus(void **state) {
  (void)state;
  assert_true(fuzz_corpus_replay("mmproj", replay_one, NULL) >= 56);
}

static void test_ok_seeds(void **state) {
  (void)state;
  static const char *const names[] = {
      "ok_gemma3",  "ok_gemma3_f16",  "ok_gemma3_q8",
      "ok_qwen3vl", "ok_qwen3vl_f16", "ok_qwen3vl_q8",
      "ok_qwen2vl", "ok_qwen25vl",    "ok_qwen25vl_no_windows",
      "ok_gemma4v", "ok_gemma4v_f16", "ok_gemma4v_merge2",
  };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    bytes b = read_seed(names[i]);
    nc_error err = {0};
    int n_encoded = -1;
    nc_code rc = fuzz_mmproj_one(b.p, b.n, &err, &n_encoded);
    if (rc != NC_OK) fail_msg("%s: %s", names[i], err.message);
    assert_int_equal(n_encoded, 2);
    free(b.p);
  }
}

typedef struct {
  const char *name;
  nc_code code;
  const char *says; /* in the message */
} refusal;

static const refusal refusals[] = {
    {"bad_architecture", NC_ERR_FORMAT,
     "general.architecture is 'llama', expected 'clip' (a"},
    {"bad_deepstack_count", NC_ERR_FORMAT,
     "key 'clip.vision.is_deepstack_layers' has 3"},
    {"bad_deepstack_unmarked", NC_ERR_FORMAT,
     "tensor 'v.deepstack.0.fc1.weight' for a layer that"},
    {"bad_deepstack_value", NC_ERR_FORMAT,
     "key 'clip.vision.is_deepstack_layers' element 0"},
    {"bad_embd_huge", NC_ERR_FORMAT,
     "key 'clip.vision.embedding_length' is 2147483648,"},
    {"bad_embd_zero", NC_ERR_FORMAT,
     "key 'clip.vision.embedding_length' is 0, must be in"},
    {"bad_eps_nan", NC_ERR_FORMAT,
     "key 'clip.vision.attention.layer_norm_epsilon' must"},
    {"bad_eps_zero", NC_ERR_FORMAT,
     "key 'clip.vision.attention.layer_norm_epsilon' must"},
    {"bad_ff_string", NC_ERR_FORMAT,
     "key 'clip.vision.feed_forward_length' is not an"},
    {"bad_gelu_and_silu", NC_ERR_FORMAT,
     "clip.use_gelu and clip.use_silu are both set"},
    {"bad_gemma3_quick_gelu", NC_ERR_UNSUPPORTED,
     "clip.use_gelu is not set: projector gemma3 runs a"},
    {"bad_gemma3_silu", NC_ERR_UNSUPPORTED,
     "clip.use_silu is set: a SiLU vision MLP is not"},
    {"bad_gemma4v_clamp_f16", NC_ERR_FORMAT,
     "tensor 'v.blk.0.attn_q.input_min' must be one F32"},
    {"bad_gemma4v_head_size", NC_ERR_FORMAT,
     "is not a multiple of 4: Gemma 4's 2-D RoPE"},
    {"bad_gemma4v_merge_zero", NC_ERR_FORMAT,
     "key 'clip.vision.projector.scale_factor' is 0, must"},
    {"bad_gemma4v_positions", NC_ERR_FORMAT,
     "tensor 'v.position_embd.weight' is missing"},
    {"bad_gemma4v_proj_missing", NC_ERR_FORMAT,
     "tensor 'mm.input_projection.weight' is missing"},
    {"bad_gemma4v_std_half", NC_ERR_FORMAT,
     "tensor 'v.std_bias' without 'v.std_scale'"},
    {"bad_heads", NC_ERR_FORMAT,
     "clip.vision.embedding_length 8 is not a multiple of"},
    {"bad_image_size_huge", NC_ERR_FORMAT,
     "key 'clip.vision.image_size' is 1048576, must be in"},
    {"bad_layers_huge", NC_ERR_FORMAT,
     "key 'clip.vision.block_count' is 100000, must be in"},
    {"bad_layers_missing", NC_ERR_FORMAT,
     "tensor 'v.blk.1.ln1.weight' is missing"},
    {"bad_mean_short", NC_ERR_FORMAT,
     "key 'clip.vision.image_mean' must be an array of at"},
    {"bad_merge_not_dividing", NC_ERR_FORMAT,
     "4 patches a side (image_size 16 / patch_size 4) is"},
    {"bad_merge_zero", NC_ERR_FORMAT,
     "key 'clip.vision.projector.scale_factor' is 0, must"},
    {"bad_merger_missing", NC_ERR_FORMAT, "tensor 'mm.2.bias' is missing"},
    {"bad_no_vision", NC_ERR_UNSUPPORTED,
     "clip.has_vision_encoder is not true: the file has"},
    {"bad_patch_not_dividing", NC_ERR_FORMAT,
     "clip.vision.image_size 16 is not a multiple of"},
    {"bad_patch_over_image", NC_ERR_FORMAT,
     "key 'clip.vision.patch_size' is 32, must be in [1,"},
    {"bad_patch_shape", NC_ERR_FORMAT,
     "tensor 'v.patch_embd.weight' has shape [4, 4, 3,"},
    {"bad_patch_zero", NC_ERR_FORMAT,
     "key 'clip.vision.patch_size' is 0, must be in [1,"},
    {"bad_positions_missing", NC_ERR_FORMAT,
     "tensor 'v.position_embd.weight' is missing"},
    {"bad_projector", NC_ERR_UNSUPPORTED,
     "clip.projector_type 'llava' is not supported"},
    {"bad_qwen25vl_no_pattern", NC_ERR_FORMAT,
     "key 'clip.vision.n_wa_pattern' is missing (an"},
    {"bad_qwen25vl_pattern_huge", NC_ERR_FORMAT,
     "key 'clip.vision.n_wa_pattern' is 1073741824, must"},
    {"bad_qwen25vl_window_patch", NC_ERR_UNSUPPORTED,
     "clip.vision.patch_size 64 is over 56: a window of"},
    {"bad_qwen2vl_second_kernel", NC_ERR_FORMAT,
     "tensor 'v.patch_embd.weight.1' is missing"},
    {"bad_qwen2vl_windows", NC_ERR_UNSUPPORTED,
     "key 'clip.vision.n_wa_pattern' is 2: projector"},
    {"bad_qwen3vl_no_bias", NC_ERR_FORMAT,
     "tensor 'v.patch_embd.bias' is missing (projector"},
    {"bad_qwen_head_size", NC_ERR_FORMAT,
     "head size 6 (clip.vision.embedding_length /"},
    {"bad_qwen_merge", NC_ERR_FORMAT,
     "key 'clip.vision.spatial_merge_size' is 4, must be"},
    {"bad_std_zero", NC_ERR_FORMAT,
     "key 'clip.vision.image_std' element 1 must be a"},
    {"bad_tensor_missing", NC_ERR_FORMAT,
     "tensor 'v.blk.0.attn_q.weight' is missing"},
    {"bad_truncated", NC_ERR_FORMAT, "extends past the end of the file"},
};

static void test_bad_seeds(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
    const refusal *r = &refusals[i];
    bytes b = read_seed(r->name);
    nc_error err = {0};
    int n_encoded = -1;
    nc_code rc = fuzz_mmproj_one(b.p, b.n, &err, &n_encoded);
    if (rc != r->code || !strstr(err.message, r->says))
      fail_msg("%s: code %d, message '%s'; expected code %d saying '%s'",
               r->name, (int)rc, err.message, (int)r->code, r->says);
    free(b.p);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuzz_corpus),
      cmocka_unit_test(test_ok_seeds),
      cmocka_unit_test(test_bad_seeds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
