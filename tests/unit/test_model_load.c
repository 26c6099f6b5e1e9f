/* model loading: tiny synthetic GGUF files (no real model needed) that are
 * refused with a message naming what is wrong: unknown arch, a missing key,
 * bad head counts, a missing tensor, a wrong shape, a wrong type; mixture
 * of experts counts and expert shapes; phi3's fused widths and LongRoPE
 * factors. */
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

typedef struct tdef {
  const char *name;
  uint64_t ne0, ne1, ne2; /* ne2 0: a 2-D (or 1-D) tensor */
} tdef;

typedef struct spec {
  const char *arch;
  bool no_eps;
  uint32_t n_head_kv;
  const char *skip_tensor; /* leave this tensor out */
  const char *bad_shape;   /* give this tensor shape {32, 32} */
  const char *f16_tensor;  /* store this tensor as F16 */
  const char *nl_tensor;   /* store this tensor as IQ4_NL, a bad scale in */
  int nl_bad_block;        /* this block (-1: none): an infinity */
  const tdef *tensors;     /* NULL: TENSORS (llama) */
  size_t n_tensors;
  const char *u32_key[4]; /* extra {arch}.KEY = u32_val (NULL: none) */
  uint32_t u32_val[4];
} spec;

/* n_embd 32, 2 heads of 16, 1 KV head, n_ff 64, vocab 8, one layer. */
static const tdef TENSORS[] = {
    {"token_embd.weight", 32, 8, 0},
    {"output_norm.weight", 32, 1, 0},
    {"blk.0.attn_norm.weight", 32, 1, 0},
    {"blk.0.attn_q.weight", 32, 32, 0},
    {"blk.0.attn_k.weight", 32, 16, 0},
    {"blk.0.attn_v.weight", 32, 16, 0},
    {"blk.0.attn_output.weight", 32, 32, 0},
    {"blk.0.ffn_norm.weight", 32, 1, 0},
    {"blk.0.ffn_gate.weight", 32, 64, 0},
    {"blk.0.ffn_up.weight", 32, 64, 0},
    {"blk.0.ffn_down.weight", 64, 32, 0},
};
#define N_TENSORS (sizeof TENSORS / sizeof TENSORS[0])

/* phi3: fused attn_qkv {32, 32 + 16 + 16} and ffn_up {32, 2 * 64}; LongRoPE
 * factors of n_rot / 2 = 8. PHI3_BAD_QKV gives attn_qkv a wrong width,
 * PHI3_BAD_UP ffn_up, PHI3_BAD_ROPE rope_factors_long a wrong length. */
#define PHI3_TENSORS(qkv, up, rope)                                            \
  {"token_embd.weight", 32, 8, 0}, {"output_norm.weight", 32, 1, 0},           \
      {"rope_factors_short.weight", 8, 1, 0},                                  \
      {"rope_factors_long.weight", rope, 1, 0},                                \
      {"blk.0.attn_norm.weight", 32, 1, 0},                                    \
      {"blk.0.attn_qkv.weight", 32, qkv, 0},                                   \
      {"blk.0.attn_output.weight", 32, 32, 0},                                 \
      {"blk.0.ffn_norm.weight", 32, 1, 0}, {"blk.0.ffn_up.weight", 32, up, 0}, \
  {                                                                            \
    "blk.0.ffn_down.weight", 64, 32, 0                                         \
  }
static const tdef PHI3_BAD_QKV[] = {PHI3_TENSORS(48, 128, 8)};
static const tdef PHI3_BAD_UP[] = {PHI3_TENSORS(64, 64, 8)};
static const tdef PHI3_BAD_ROPE[] = {PHI3_TENSORS(64, 128, 5)};
static const tdef PHI3_GOOD[] = {PHI3_TENSORS(64, 128, 8)};

/* qwen3moe with 4 experts of width 16: router {32, 4}, experts 3-D. */
static const tdef MOE_TENSORS[] = {
    {"token_embd.weight", 32, 8, 0},
    {"output_norm.weight", 32, 1, 0},
    {"blk.0.attn_norm.weight", 32, 1, 0},
    {"blk.0.attn_q.weight", 32, 32, 0},
    {"blk.0.attn_k.weight", 32, 16, 0},
    {"blk.0.attn_v.weight", 32, 16, 0},
    {"blk.0.attn_q_norm.weight", 16, 1, 0},
    {"blk.0.attn_k_norm.weight", 16, 1, 0},
    {"blk.0.attn_output.weight", 32, 32, 0},
    {"blk.0.ffn_norm.weight", 32, 1, 0},
    {"blk.0.ffn_gate_inp.weight", 32, 4, 0},
    {"blk.0.ffn_gate_exps.weight", 32, 16, 4},
    {"blk.0.ffn_up_exps.weight", 32, 16, 4},
    {"blk.0.ffn_down_exps.weight", 16, 32, 3}, /* one expert short */
};

static void write_model(const char *path, const spec *s) {
  const char *arch = s->arch ? s->arch : "llama";
  const tdef *tens = s->tensors ? s->tensors : TENSORS;
  const size_t n_tens = s->tensors ? s->n_tensors : N_TENSORS;
  size_t n_extra = 0;
  while (n_extra < 4 && s->u32_key[n_extra])
    n_extra++;
  gw b = {0};
  size_t n_t = 0;
  for (size_t i = 0; i < n_tens; i++)
    if (!s->skip_tensor || strcmp(s->skip_tensor, tens[i].name)) n_t++;
  gw_header(&b, 3, n_t, (s->no_eps ? 8 : 9) + n_extra);
  char key[128];
  gw_kv_str(&b, "general.architecture", arch);
  snprintf(key, sizeof key, "%s.context_length", arch);
  gw_kv_u32(&b, key, 64);
  snprintf(key, sizeof key, "%s.embedding_length", arch);
  gw_kv_u32(&b, key, 32);
  snprintf(key, sizeof key, "%s.block_count", arch);
  gw_kv_u32(&b, key, 1);
  snprintf(key, sizeof key, "%s.feed_forward_length", arch);
  gw_kv_u32(&b, key, 64);
  snprintf(key, sizeof key, "%s.attention.head_count", arch);
  gw_kv_u32(&b, key, 2);
  snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
  gw_kv_u32(&b, key, s->n_head_kv ? s->n_head_kv : 1);
  snprintf(key, sizeof key, "%s.vocab_size", arch);
  gw_kv_u32(&b, key, 8);
  if (!s->no_eps) {
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    gw_key(&b, key, 6 /* FLOAT32 */);
    gw_f32(&b, 1e-5f);
  }
  for (size_t i = 0; i < n_extra; i++) {
    snprintf(key, sizeof key, "%s.%s", arch, s->u32_key[i]);
    gw_kv_u32(&b, key, s->u32_val[i]);
  }
  uint64_t off = 0;
  size_t sizes[16];
  assert_true(n_tens <= 16);
  for (size_t i = 0; i < n_tens; i++) {
    const tdef *t = &tens[i];
    if (s->skip_tensor && !strcmp(s->skip_tensor, t->name)) continue;
    uint64_t ne[3] = {t->ne0, t->ne1, t->ne2 ? t->ne2 : 1};
    if (s->bad_shape && !strcmp(s->bad_shape, t->name)) ne[1] = 32;
    const bool f16 = s->f16_tensor && !strcmp(s->f16_tensor, t->name);
    const bool nl = s->nl_tensor && !strcmp(s->nl_tensor, t->name);
    gw_tensor(&b, t->name, t->ne2 ? 3 : (ne[1] == 1 ? 1 : 2), ne,
              nl    ? 20
              : f16 ? 1
                    : 0,
              off);
    sizes[i] = nl ? (size_t)(ne[0] / 32 * ne[1] * ne[2] * 18)
                  : (size_t)(ne[0] * ne[1] * ne[2] * (f16 ? 2 : 4));
    off += (sizes[i] + 31) / 32 * 32;
  }
  gw_align(&b, 32);
  for (size_t i = 0; i < n_tens; i++) {
    if (s->skip_tensor && !strcmp(s->skip_tensor, tens[i].name)) continue;
    const size_t at = b.len;
    const bool nl = s->nl_tensor && !strcmp(s->nl_tensor, tens[i].name);
    gw_fill(&b, sizes[i], 0);
    if (nl) /* zero blocks (the fill's pattern would spell NaN scales) */
      memset(b.p + at, 0, sizes[i]);
    if (nl && s->nl_bad_block >= 0) {
      const uint8_t inf_half[2] = {0x00, 0x7c}; /* the block's d */
      memcpy(b.p + at + (size_t)s->nl_bad_block * 18, inf_half, 2);
    }
    gw_align(&b, 32);
  }
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b.p, 1, b.len, f), b.len);
  fclose(f);
  gw_free(&b);
}

static void expect_refused(const spec *s, nucleus_status code,
                           const char *needle) {
  char path[] = "/tmp/nc_model_load_XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  write_model(path, s);
  nucleus_model *m = (nucleus_model *)1;
  nucleus_error err;
  memset(&err, 0, sizeof err);
  const nucleus_status rc = nucleus_model_load(path, NULL, &m, &err);
  unlink(path);
  if (rc != code || !strstr(err.message, needle))
    fail_msg("expected %s with '%s', got %s: %s", nucleus_status_name(code),
             needle, nucleus_status_name(rc), err.message);
  assert_null(m);
}

/* An IQ4_NL matrix loads (all-zero blocks); one whose block 5 has an
 * infinite scale is refused, naming the tensor, the block and the type. */
static void test_bad_quant_scale(void **state) {
  (void)state;
  spec bad = {.nl_tensor = "blk.0.ffn_up.weight", .nl_bad_block = 5};
  expect_refused(&bad, NUCLEUS_ERR_FORMAT,
                 "tensor 'blk.0.ffn_up.weight': block 5 of 64 (IQ4_NL) has a "
                 "scale that is not a finite number");
  /* the same file with every scale finite is refused for another reason
   * only: the tokenizer this synthetic file lacks */
  spec good = {.nl_tensor = "blk.0.ffn_up.weight", .nl_bad_block = -1};
  expect_refused(&good, NUCLEUS_ERR_FORMAT, "tokenizer");
}

static void test_unknown_arch(void **state) {
  (void)state;
  spec s = {.arch = "foo"};
  expect_refused(&s, NUCLEUS_ERR_UNSUPPORTED,
                 "architecture 'foo' is not supported");
}

static void test_missing_key(void **state) {
  (void)state;
  spec s = {.no_eps = true};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "missing metadata key "
                 "'llama.attention.layer_norm_rms_epsilon'");
}

static void test_bad_head_counts(void **state) {
  (void)state;
  spec s = {.n_head_kv = 3};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "2 attention heads are not a multiple of 3 KV heads");
}

static void test_missing_tensor(void **state) {
  (void)state;
  spec s = {.skip_tensor = "blk.0.ffn_down.weight"};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "missing tensor 'blk.0.ffn_down.weight' (expected shape "
                 "{64, 32})");
}

static void test_wrong_shape(void **state) {
  (void)state;
  spec s = {.bad_shape = "blk.0.attn_k.weight"};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'blk.0.attn_k.weight' has shape {32, 32, 1, 1}, "
                 "expected {32, 16}");
}

static void test_wrong_type(void **state) {
  (void)state;
  spec s = {.f16_tensor = "blk.0.ffn_norm.weight"};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'blk.0.ffn_norm.weight' has type F16, expected F32");
}

/* Mixture-of-experts counts: used > count, used 0, count 0 (qwen3moe), and
 * a llama file (Mixtral) with used > count. */
static void test_moe_counts(void **state) {
  (void)state;
  const size_t n = sizeof MOE_TENSORS / sizeof MOE_TENSORS[0];
  spec s = {.arch = "qwen3moe",
            .tensors = MOE_TENSORS,
            .n_tensors = n,
            .u32_key = {"expert_count", "expert_used_count"},
            .u32_val = {4, 5}};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "metadata 'qwen3moe.expert_used_count' = 5 exceeds "
                 "'qwen3moe.expert_count' = 4");
  s.u32_val[1] = 0;
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "metadata 'qwen3moe.expert_used_count' is 0");
  s.u32_key[0] = "expert_used_count";
  s.u32_key[1] = NULL;
  s.u32_val[0] = 0;
  expect_refused(&s, NUCLEUS_ERR_FORMAT, "'qwen3moe.expert_count' is absent");
  spec l = {.u32_key = {"expert_count", "expert_used_count"},
            .u32_val = {2, 3}};
  expect_refused(&l, NUCLEUS_ERR_FORMAT,
                 "metadata 'llama.expert_used_count' = 3 exceeds "
                 "'llama.expert_count' = 2");
}

/* A 3-D expert tensor of the wrong shape names it. */
static void test_moe_expert_shape(void **state) {
  (void)state;
  spec s = {.arch = "qwen3moe",
            .tensors = MOE_TENSORS,
            .n_tensors = sizeof MOE_TENSORS / sizeof MOE_TENSORS[0],
            .u32_key = {"expert_count", "expert_used_count",
                        "expert_feed_forward_length"},
            .u32_val = {4, 2, 16}};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'blk.0.ffn_down_exps.weight' has shape {16, 32, 3, "
                 "1}, expected {16, 32, 4}");
  s.skip_tensor = "blk.0.ffn_gate_inp.weight";
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "missing tensor 'blk.0.ffn_gate_inp.weight'");
}

/* phi3: a fused attn_qkv or ffn_up of the wrong width, LongRoPE factors of
 * the wrong length. */
static void test_phi3_fused_widths(void **state) {
  (void)state;
  spec s = {.arch = "phi3",
            .tensors = PHI3_BAD_QKV,
            .n_tensors = sizeof PHI3_BAD_QKV / sizeof PHI3_BAD_QKV[0]};
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'blk.0.attn_qkv.weight' has shape {32, 48, 1, 1}, "
                 "expected {32, 64}");
  s.tensors = PHI3_BAD_UP;
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'blk.0.ffn_up.weight' has shape {32, 64, 1, 1}, "
                 "expected {32, 128}");
  s.tensors = PHI3_BAD_ROPE;
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'rope_factors_long.weight' has shape {5, 1, 1, 1}, "
                 "expected {8, 1}");
  s.skip_tensor = "rope_factors_short.weight";
  s.tensors = PHI3_GOOD;
  expect_refused(&s, NUCLEUS_ERR_FORMAT,
                 "tensor 'rope_factors_long.weight' without "
                 "'rope_factors_short.weight'");
}

/* The fuzz seeds of the bad files (fuzz/corpus/gguf/seed_bad_*.gguf,
 * written by gguf-py: scripts/gen_gguf_golden.py --bad-model-seeds and
 * --quant-seeds) are refused naming the key or tensor. */
static void test_bad_model_seeds(void **state) {
  (void)state;
  static const struct {
    const char *file, *needle;
  } seeds[] = {
      {"seed_bad_moe_used.gguf", "metadata 'qwen3moe.expert_used_count' = 5 "
                                 "exceeds 'qwen3moe.expert_count' = 4"},
      {"seed_bad_phi3_qkv.gguf", "tensor 'blk.0.attn_qkv.weight' has shape "
                                 "{32, 48, 1, 1}, expected {32, 64}"},
      {"seed_bad_phi3_rope.gguf", "tensor 'rope_factors_long.weight' has "
                                  "shape {5, 1, 1, 1}, expected {8, 1}"},
      /* issue 40's (scripts/gen_gguf_golden.py --quant-seeds) */
      {"seed_bad_iq4_nl_scale.gguf",
       "tensor 'blk.0.ffn_up.weight': block 5 of 64 (IQ4_NL) has a scale "
       "that is not a finite number"},
      {"seed_bad_iq4_xs_width.gguf", "tensor 'blk.0.ffn_down.weight' has "
                                     "shape {256, 32, 1, 1}, expected {64, "
                                     "32}"},
      {"seed_bad_iq1_m_scale.gguf",
       "tensor 'blk.0.ffn_down.weight': block 5 of 32 (IQ1_M) has a scale "
       "that is not a finite number"},
      {"seed_bad_iq2_xxs_width.gguf", "tensor 'blk.0.ffn_down.weight' has "
                                      "shape {256, 32, 1, 1}, expected {64, "
                                      "32}"},
  };
  const char *root = getenv("NUCLEUS_ROOT");
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fuzz/corpus/gguf/%s",
             root && *root ? root : ".", seeds[i].file);
    nucleus_model *m = (nucleus_model *)1;
    nucleus_error err;
    memset(&err, 0, sizeof err);
    const nucleus_status rc = nucleus_model_load(path, NULL, &m, &err);
    if (rc != NUCLEUS_ERR_FORMAT || !strstr(err.message, seeds[i].needle))
      fail_msg("%s: expected a format error with '%s', got %s: %s", path,
               seeds[i].needle, nucleus_status_name(rc), err.message);
    assert_null(m);
  }
}

/* load_mode: names parsed and printed; a value outside the enum refused
 * naming it, before the file is opened. */
static void test_load_mode_param(void **state) {
  (void)state;
  static const char *const names[] = {"auto", "read", "mmap"};
  for (int i = 0; i < 3; i++) {
    nucleus_load_mode m = (nucleus_load_mode)9;
    assert_true(nucleus_load_mode_parse(names[i], &m));
    assert_int_equal(m, i);
    assert_string_equal(nucleus_load_mode_name(m), names[i]);
  }
  nucleus_load_mode m = NUCLEUS_LOAD_READ;
  assert_false(nucleus_load_mode_parse("mlock", &m));
  assert_false(nucleus_load_mode_parse(NULL, &m));
  assert_int_equal(m, NUCLEUS_LOAD_READ);
  assert_string_equal(nucleus_load_mode_name((nucleus_load_mode)7), "?");
  assert_int_equal(nucleus_model_default_params().load_mode, NUCLEUS_LOAD_AUTO);
  assert_int_equal(nucleus_model_load_mode(NULL), NUCLEUS_LOAD_MMAP);
  assert_int_equal(nucleus_model_huge_page_bytes(NULL), 0);
  nucleus_model_params p = nucleus_model_default_params();
  p.load_mode = (nucleus_load_mode)7;
  nucleus_model *model = (nucleus_model *)1;
  nucleus_error err;
  memset(&err, 0, sizeof err);
  assert_int_equal(nucleus_model_load("/nonexistent.gguf", &p, &model, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_non_null(
      strstr(err.message, "'load_mode' must be auto, read or mmap, got 7"));
  assert_null(model);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_quant_scale),
      cmocka_unit_test(test_unknown_arch),
      cmocka_unit_test(test_missing_key),
      cmocka_unit_test(test_bad_head_counts),
      cmocka_unit_test(test_missing_tensor),
      cmocka_unit_test(test_wrong_shape),
      cmocka_unit_test(test_wrong_type),
      cmocka_unit_test(test_moe_counts),
      cmocka_unit_test(test_moe_expert_shape),
      cmocka_unit_test(test_phi3_fused_widths),
      cmocka_unit_test(test_bad_model_seeds),
      cmocka_unit_test(test_load_mode_param),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
