/* quant: the type table, half/bfloat16 conversions, dequantization against
 * goldens (gguf-py, cross-checked with ggml) and the activation quantizers
 * against llama.cpp's x86 CPU backend. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gguf/iq_grids.h"
#include "gguf/quant.h"
#include "quant_golden.h"

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ------------------------------------------------------------ type table */

static void test_traits(void **state) {
  (void)state;
  static const struct {
    uint32_t id;
    const char *name;
    int64_t bs;
    size_t ts;
    bool supported;
  } want[] = {
      {0, "F32", 1, 4, true},         {1, "F16", 1, 2, true},
      {2, "Q4_0", 32, 18, true},      {3, "Q4_1", 32, 20, true},
      {6, "Q5_0", 32, 22, true},      {7, "Q5_1", 32, 24, true},
      {8, "Q8_0", 32, 34, true},      {9, "Q8_1", 32, 36, true},
      {10, "Q2_K", 256, 84, true},    {11, "Q3_K", 256, 110, true},
      {12, "Q4_K", 256, 144, true},   {13, "Q5_K", 256, 176, true},
      {14, "Q6_K", 256, 210, true},   {15, "Q8_K", 256, 292, true},
      {16, "IQ2_XXS", 256, 66, true}, {17, "IQ2_XS", 256, 74, true},
      {18, "IQ3_XXS", 256, 98, true}, {19, "IQ1_S", 256, 50, true},
      {20, "IQ4_NL", 32, 18, true},   {21, "IQ3_S", 256, 110, true},
      {22, "IQ2_S", 256, 82, true},   {23, "IQ4_XS", 256, 136, true},
      {24, "I8", 1, 1, false},        {25, "I16", 1, 2, false},
      {26, "I32", 1, 4, false},       {27, "I64", 1, 8, false},
      {28, "F64", 1, 8, false},       {29, "IQ1_M", 256, 56, true},
      {30, "BF16", 1, 2, true},       {34, "TQ1_0", 256, 54, true},
      {35, "TQ2_0", 256, 66, true},   {39, "MXFP4", 32, 17, true},
      {40, "NVFP4", 64, 36, true},    {41, "Q1_0", 128, 18, true},
      {42, "Q2_0", 64, 18, true},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const nc_type_traits *t = nc_type_traits_of(want[i].id);
    assert_non_null(t);
    assert_string_equal(t->name, want[i].name);
    assert_string_equal(nc_type_name(want[i].id), want[i].name);
    assert_int_equal(t->block_size, want[i].bs);
    assert_int_equal(t->type_size, want[i].ts);
    assert_int_equal(t->supported, want[i].supported);
  }
  static const uint32_t removed[] = {4,  5,  31, 32,   33,        36,
                                     37, 38, 43, 1000, UINT32_MAX};
  for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
    assert_null(nc_type_traits_of(removed[i]));
    assert_string_equal(nc_type_name(removed[i]), "?");
  }
  assert_int_equal(nc_type_traits_of(NC_TYPE_Q4_1)->vec_dot_type, NC_TYPE_Q8_1);
  assert_int_equal(nc_type_traits_of(NC_TYPE_Q5_0)->vec_dot_type, NC_TYPE_Q8_0);
  assert_int_equal(nc_type_traits_of(NC_TYPE_Q6_K)->vec_dot_type, NC_TYPE_Q8_K);
  assert_int_equal(nc_type_traits_of(NC_TYPE_F16)->vec_dot_type, NC_TYPE_F16);
}

static void test_row_size(void **state) {
  (void)state;
  assert_int_equal(nc_row_size(NC_TYPE_Q4_1, 576), 18 * 20);
  assert_int_equal(nc_row_size(NC_TYPE_Q8_0, 576), 18 * 34);
  assert_int_equal(nc_row_size(NC_TYPE_F32, 7), 28);
  assert_int_equal(nc_row_size(NC_TYPE_Q6_K, 512), 2 * 210);
  assert_int_equal(nc_row_size(NC_TYPE_Q6_K, 576), 0); /* not a multiple */
  assert_int_equal(nc_row_size(NC_TYPE_Q4_0, -32), 0);
  assert_int_equal(nc_row_size(NC_TYPE_Q4_0, 0), 0);
  assert_int_equal(nc_row_size((nc_type)4, 32), 0);         /* removed id */
  assert_int_equal(nc_row_size(NC_TYPE_F32, INT64_MAX), 0); /* overflow */
}

/* -------------------------------------------------------- half / bf16 */

static void test_fp16_roundtrip_all(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = nc_fp16_to_fp32((nc_fp16)h);
    bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (nan) {
      assert_true(isnan(f));
      assert_int_equal(nc_fp32_to_fp16(f), (h & 0x8000) | 0x7e00);
    } else {
      assert_int_equal(nc_fp32_to_fp16(f), h);
    }
  }
  assert_true(nc_fp16_to_fp32(0x3c00) == 1.0f);
  assert_true(nc_fp16_to_fp32(0xc000) == -2.0f);
  assert_true(nc_fp16_to_fp32(0x7bff) == 65504.0f);
  assert_true(nc_fp16_to_fp32(0x0001) == 0x1p-24f);
  assert_true(nc_fp16_to_fp32(0x03ff) == 1023 * 0x1p-24f);
  assert_true(isinf(nc_fp16_to_fp32(0xfc00)) && nc_fp16_to_fp32(0xfc00) < 0);
  assert_int_equal(bits(nc_fp16_to_fp32(0x8000)), 0x80000000u);
}

/* Every midpoint between neighbouring halves rounds to the even one, and
 * the floats just beside it round to the nearer neighbour. */
static void test_fp16_rounding(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 0x7c00; h++) {
    float lo = nc_fp16_to_fp32((nc_fp16)h);
    float hi = nc_fp16_to_fp32((nc_fp16)(h + 1));       /* 0x7c00 = inf */
    float mid = h == 0x7bff ? 65520.0f : (lo + hi) / 2; /* exact in f32 */
    uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    assert_int_equal(nc_fp32_to_fp16(mid), even);
    assert_int_equal(nc_fp32_to_fp16(-mid), even | 0x8000);
    assert_int_equal(nc_fp32_to_fp16(from_bits(bits(mid) - 1)), h);
    assert_int_equal(nc_fp32_to_fp16(from_bits(bits(mid) + 1)), h + 1);
  }
  assert_int_equal(nc_fp32_to_fp16(1e10f), 0x7c00);
  assert_int_equal(nc_fp32_to_fp16(-INFINITY), 0xfc00);
  assert_int_equal(nc_fp32_to_fp16(NAN) & 0x7fff, 0x7e00);
  assert_int_equal(nc_fp32_to_fp16(1e-30f), 0);
  assert_int_equal(nc_fp32_to_fp16(-1e-30f), 0x8000);
  assert_int_equal(nc_fp32_to_fp16(from_bits(1)), 0); /* f32 subnormal */
}

static void test_bf16(void **state) {
  (void)state;
  assert_int_equal(nc_fp32_to_bf16(1.0f), 0x3f80);
  assert_true(nc_bf16_to_fp32(0x3f80) == 1.0f);
  assert_true(nc_bf16_to_fp32(0xc0a0) == -5.0f);
  /* ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 */
  assert_int_equal(nc_fp32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  assert_int_equal(nc_fp32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  assert_int_equal(nc_fp32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  assert_int_equal(nc_fp32_to_bf16(INFINITY), 0x7f80);
  assert_int_equal(nc_fp32_to_bf16(3.4e38f), 0x7f80); /* rounds up to inf */
  /* NaN stays NaN and becomes quiet, even a signalling one whose payload
   * sits in the low bits that get dropped */
  uint16_t q = nc_fp32_to_bf16(from_bits(0x7f800001u));
  assert_true(isnan(nc_bf16_to_fp32(q)));
  assert_int_equal(q & 0x40, 0x40);
  for (uint32_t h = 0; h < 65536; h++) {
    float f = nc_bf16_to_fp32((nc_bf16)h);
    if (!isnan(f)) assert_int_equal(nc_fp32_to_bf16(f), h);
  }
}

/* ------------------------------------------------------- dequantization */

static void check_deq_golden(nc_type type, const char *file) {
  const nc_type_traits *t = nc_type_traits_of(type);
  size_t len;
  unsigned char *buf = golden_read(file, &len);
  if (!buf) fail_msg("golden %s missing (scripts/gen_quant_golden.py)", file);
  /* raw bytes (nb blocks) followed by nb * block_size f32 */
  size_t per_block = t->type_size + (size_t)t->block_size * sizeof(float);
  assert_int_equal(len % per_block, 0);
  int64_t n = (int64_t)(len / per_block) * t->block_size;
  size_t raw = (size_t)(n / t->block_size) * t->type_size;
  float *want = malloc((size_t)n * sizeof(float));
  float *got = malloc((size_t)n * sizeof(float));
  memcpy(want, buf + raw, (size_t)n * sizeof(float));
  nc_dequantize_row(type, buf, got, n);
  for (int64_t i = 0; i < n; i++)
    if (bits(want[i]) != bits(got[i]))
      fail_msg("%s element %lld: got %.9g (0x%08x), want %.9g (0x%08x)",
               t->name, (long long)i, got[i], bits(got[i]), want[i],
               bits(want[i]));
  free(want);
  free(got);
  free(buf);
}

static void test_dequantize_goldens(void **state) {
  (void)state;
  static const struct {
    nc_type type;
    const char *file;
  } cases[] = {
      {NC_TYPE_F16, "deq_F16.bin"},
      {NC_TYPE_BF16, "deq_BF16.bin"},
      {NC_TYPE_Q4_0, "deq_Q4_0.bin"},
      {NC_TYPE_Q4_1, "deq_Q4_1.bin"},
      {NC_TYPE_Q5_0, "deq_Q5_0.bin"},
      {NC_TYPE_Q5_1, "deq_Q5_1.bin"},
      {NC_TYPE_Q8_0, "deq_Q8_0.bin"},
      {NC_TYPE_Q2_K, "deq_Q2_K.bin"},
      {NC_TYPE_Q3_K, "deq_Q3_K.bin"},
      {NC_TYPE_Q4_K, "deq_Q4_K.bin"},
      {NC_TYPE_Q5_K, "deq_Q5_K.bin"},
      {NC_TYPE_Q6_K, "deq_Q6_K.bin"},
      /* with the extreme scales (scripts/gen_quant_golden.py NEW_TYPES) */
      {NC_TYPE_IQ4_NL, "deq_IQ4_NL.bin"},
      {NC_TYPE_IQ4_XS, "deq_IQ4_XS.bin"},
      {NC_TYPE_MXFP4, "deq_MXFP4.bin"},
      {NC_TYPE_TQ1_0, "deq_TQ1_0.bin"},
      {NC_TYPE_TQ2_0, "deq_TQ2_0.bin"},
      {NC_TYPE_NVFP4, "deq_NVFP4.bin"},
      {NC_TYPE_Q1_0, "deq_Q1_0.bin"},
      {NC_TYPE_Q2_0, "deq_Q2_0.bin"},
      {NC_TYPE_IQ2_XXS, "deq_IQ2_XXS.bin"},
      {NC_TYPE_IQ2_XS, "deq_IQ2_XS.bin"},
      {NC_TYPE_IQ2_S, "deq_IQ2_S.bin"},
      {NC_TYPE_IQ3_XXS, "deq_IQ3_XXS.bin"},
      {NC_TYPE_IQ3_S, "deq_IQ3_S.bin"},
      {NC_TYPE_IQ1_S, "deq_IQ1_S.bin"},
      {NC_TYPE_IQ1_M, "deq_IQ1_M.bin"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_deq_golden(cases[i].type, cases[i].file);
}

/* The generated IQ tables (iq_grids.c) have their construction's shape:
 * sign bytes with an even count of minus signs over their 7 stored bits;
 * grid points of distinct coordinates from each type's value set. */
static bool all_in(uint64_t point, int width, const uint8_t *vals, int nv) {
  for (int j = 0; j < width; j++) {
    const uint8_t c = (uint8_t)(point >> (8 * j));
    bool ok = false;
    for (int v = 0; v < nv; v++)
      ok |= c == vals[v];
    if (!ok) return false;
  }
  return true;
}

static void test_iq_grids(void **state) {
  (void)state;
  for (int i = 0; i < 128; i++) {
    assert_int_equal(nc_ksigns_iq2xs[i] & 127, i);
    assert_int_equal(__builtin_popcount(nc_ksigns_iq2xs[i]) % 2, 0);
  }
  static const uint8_t v2[] = {8, 25, 43}, v1[] = {0xff, 0, 1};
  static const uint8_t v3xxs[] = {4, 12, 20, 28, 36, 44, 52, 62};
  static const uint8_t v3s[] = {1, 3, 5, 7, 9, 11, 13, 15};
  for (int i = 0; i < 1024; i++) {
    if (i < 256) assert_true(all_in(nc_iq2xxs_grid[i], 8, v2, 3));
    if (i < 512) assert_true(all_in(nc_iq2xs_grid[i], 8, v2, 3));
    assert_true(all_in(nc_iq2s_grid[i], 8, v2, 3));
    if (i < 256) assert_true(all_in(nc_iq3xxs_grid[i], 4, v3xxs, 8));
    if (i < 512) assert_true(all_in(nc_iq3s_grid[i], 4, v3s, 8));
  }
  for (int i = 0; i < 2048; i++)
    assert_true(all_in(nc_iq1s_grid[i], 8, v1, 3));
  for (int i = 1; i < 256; i++) /* sorted, hence distinct */
    assert_true(nc_iq2xxs_grid[i - 1] < nc_iq2xxs_grid[i]);
}

static void test_dequantize_q8_k_and_f32(void **state) {
  (void)state;
  block_q8_K b;
  memset(&b, 0, sizeof b);
  b.d = -0.25f;
  for (int i = 0; i < QK_K; i++)
    b.qs[i] = (int8_t)(i - 128);
  float y[QK_K];
  nc_dequantize_row(NC_TYPE_Q8_K, &b, y, QK_K);
  for (int i = 0; i < QK_K; i++)
    assert_true(y[i] == -0.25f * (i - 128));
  float x[3] = {1.5f, -2.0f, 3.25f}, z[3] = {0};
  nc_dequantize_row(NC_TYPE_F32, x, z, 3);
  assert_memory_equal(x, z, sizeof x);
  /* unsupported types write zeros instead of leaving garbage */
  uint8_t i8[256] = {0xff};
  float w[256];
  for (int i = 0; i < 256; i++)
    w[i] = 7.0f;
  nc_dequantize_row(24 /* I8 */, i8, w, 256);
  for (int i = 0; i < 256; i++)
    assert_true(w[i] == 0.0f);
}

/* MXFP4's scale byte e is 2^(e - 128) (the values are doubled), ggml's
 * reading: e = 0 and 1 subnormal, 255 the finite 2^127, never NaN. */
static void test_e8m0_scale(void **state) {
  (void)state;
  assert_true(nc_e8m0_to_fp32_half(0) == 0x1p-128f);
  assert_true(nc_e8m0_to_fp32_half(1) == 0x1p-127f);
  assert_true(nc_e8m0_to_fp32_half(2) == 0x1p-126f);
  assert_true(nc_e8m0_to_fp32_half(128) == 1.0f);
  assert_true(nc_e8m0_to_fp32_half(255) == 0x1p127f);
  for (int e = 0; e < 256; e++)
    assert_true(isfinite(nc_e8m0_to_fp32_half((uint8_t)e)));
}

/* NVFP4's UE4M3 scale, halved: 0x00 and 0x7f are 0, exponent 0 is
 * subnormal (m x 2^-9), 0x7e the largest (448), bit 7 ignored but for 0xff
 * (not 0x7f's zero). */
static void test_ue4m3_scale(void **state) {
  (void)state;
  assert_true(nc_ue4m3_to_fp32_half(0x00) == 0.0f);
  assert_true(nc_ue4m3_to_fp32_half(0x7f) == 0.0f);
  assert_true(nc_ue4m3_to_fp32_half(0x01) == 0x1p-9f * 0.5f);
  assert_true(nc_ue4m3_to_fp32_half(0x38) == 0.5f); /* 1.0 */
  assert_true(nc_ue4m3_to_fp32_half(0x7e) == 224.0f);
  assert_true(nc_ue4m3_to_fp32_half(0xb8) == 0.5f);
  assert_true(nc_ue4m3_to_fp32_half(0xff) == 240.0f);
  for (int x = 0; x < 256; x++)
    assert_true(isfinite(nc_ue4m3_to_fp32_half((uint8_t)x)));
}

/* TQ1_0's base-3 digits: byte b's digit n is trit(b * 3^n); the 243 bytes
 * below 3^5 each spell a different 5-digit number, most significant first. */
static void test_tq1_trits(void **state) {
  (void)state;
  static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  bool seen[243] = {false};
  for (int v = 0; v < 243; v++) {
    /* ggml's packing of the digits t0..t4 of v: ceil(v * 256 / 243) */
    const uint8_t b = (uint8_t)((v * 256 + 242) / 243);
    int got = 0;
    for (int n = 0; n < 5; n++) {
      const int t = nc_tq1_trit((uint8_t)(b * pow3[n]));
      assert_in_range(t, 0, 2);
      got = got * 3 + t;
    }
    assert_int_equal(got, v);
    seen[got] = true;
  }
  for (int v = 0; v < 243; v++)
    assert_true(seen[v]);
}

/* A half scale that is NaN or infinite marks its block bad (the loader
 * refuses the tensor); every finite one, subnormals and +-65504 included,
 * passes; MXFP4 and the older types are not checked. */
/* IQ1_M's half sits in the top nibbles of its scale words (nibble k of
 * the half in the top of word k), the rest of those words being scales. */
static void set_iq1m_half(block_iq1_m *x, uint16_t h) {
  for (int k = 0; k < 4; k++)
    x->scales[2 * k + 1] =
        (uint8_t)((x->scales[2 * k + 1] & 0x0f) | (((h >> 4 * k) & 15) << 4));
}

static void check_iq1m_bad_block(const uint16_t *finite, int nf,
                                 const uint16_t *bad, int nbad) {
  enum { NB = 7 };
  block_iq1_m x[NB];
  memset(x, 0xff, sizeof x);
  for (int i = 0; i < NB; i++) {
    set_iq1m_half(&x[i], finite[i % nf]);
    assert_int_equal(nc_iq1m_half_scale(&x[i]), finite[i % nf]);
  }
  assert_int_equal(nc_first_bad_block(NC_TYPE_IQ1_M, x, NB), -1);
  for (int k = 0; k < nbad; k++) {
    set_iq1m_half(&x[5], bad[k]);
    assert_int_equal(nc_first_bad_block(NC_TYPE_IQ1_M, x, NB), 5);
    assert_int_equal(nc_first_bad_block(NC_TYPE_IQ1_M, x, 5), -1);
  }
}

static void test_first_bad_block(void **state) {
  (void)state;
  static const struct {
    nc_type t;
    size_t off;
  } cases[] = {
      {NC_TYPE_IQ4_NL, offsetof(block_iq4_nl, d)},
      {NC_TYPE_IQ4_XS, offsetof(block_iq4_xs, d)},
      {NC_TYPE_TQ1_0, offsetof(block_tq1_0, d)},
      {NC_TYPE_TQ2_0, offsetof(block_tq2_0, d)},
      {NC_TYPE_Q1_0, offsetof(block_q1_0, d)},
      {NC_TYPE_Q2_0, offsetof(block_q2_0, d)},
      {NC_TYPE_IQ2_XXS, offsetof(block_iq2_xxs, d)},
      {NC_TYPE_IQ2_XS, offsetof(block_iq2_xs, d)},
      {NC_TYPE_IQ2_S, offsetof(block_iq2_s, d)},
      {NC_TYPE_IQ3_XXS, offsetof(block_iq3_xxs, d)},
      {NC_TYPE_IQ3_S, offsetof(block_iq3_s, d)},
      {NC_TYPE_IQ1_S, offsetof(block_iq1_s, d)},
  };
  static const uint16_t finite[] = {0x0000, 0x8000, 0x0001,
                                    0x7bff, 0xfbff, 0x3c00};
  static const uint16_t bad[] = {0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xffff};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const size_t bs = nc_type_traits_of(cases[c].t)->type_size;
    enum { NB = 7 };
    uint8_t *blocks = calloc(NB, bs);
    assert_non_null(blocks);
    memset(blocks, 0xff, NB * bs); /* codes: anything */
    for (int i = 0; i < NB; i++) {
      const uint16_t h = finite[i % 6];
      memcpy(blocks + i * bs + cases[c].off, &h, 2);
    }
    assert_int_equal(nc_first_bad_block(cases[c].t, blocks, NB), -1);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      uint8_t *b5 = blocks + 5 * bs + cases[c].off;
      uint16_t keep;
      memcpy(&keep, b5, 2);
      memcpy(b5, &bad[k], 2);
      assert_int_equal(nc_first_bad_block(cases[c].t, blocks, NB), 5);
      assert_int_equal(nc_first_bad_block(cases[c].t, blocks, 5), -1);
      memcpy(b5, &keep, 2);
    }
    free(blocks);
  }
  check_iq1m_bad_block(finite, 6, bad, 5);
  uint8_t mx[17 * 2];
  memset(mx, 0xff, sizeof mx);
  assert_int_equal(nc_first_bad_block(NC_TYPE_MXFP4, mx, 2), -1);
  assert_int_equal(nc_first_bad_block(NC_TYPE_Q8_0, mx, 1), -1);
}

/* ------------------------------------------------ activation quantizers */

static float *load_act(int64_t *n) {
  size_t len;
  float *act = (float *)golden_read("act.f32", &len);
  if (!act) fail_msg("golden act.f32 missing");
  *n = (int64_t)(len / sizeof(float));
  return act;
}

static void check_quant_golden(nc_type type, const char *file) {
  int64_t n;
  float *act = load_act(&n);
  size_t len;
  unsigned char *want = golden_read(file, &len);
  if (!want) fail_msg("golden %s missing", file);
  assert_int_equal(len, nc_row_size(type, n));
  unsigned char *got = calloc(1, len);
  nc_quantize_row(type, act, got, n);
  for (size_t i = 0; i < len; i++)
    if (got[i] != want[i])
      fail_msg("%s byte %zu (block %zu): got %d, want %d", nc_type_name(type),
               i, i / nc_type_traits_of(type)->type_size, got[i], want[i]);
  free(got);
  free(want);
  free(act);
}

/* Bit for bit what llama.cpp's x86 CPU backend produces (the second half of
 * the activation holds exact .5 ties, where the rounding mode shows). */
static void test_quantize_goldens(void **state) {
  (void)state;
  check_quant_golden(NC_TYPE_Q8_0, "act_Q8_0.bin");
  check_quant_golden(NC_TYPE_Q8_1, "act_Q8_1.bin");
  check_quant_golden(NC_TYPE_Q8_K, "act_Q8_K.bin");
  check_quant_golden(NC_TYPE_F16, "act_F16.bin");
  check_quant_golden(NC_TYPE_BF16, "act_BF16.bin");
}

/* test-quantize-fns: x = 0.1 + 2 cos(i + offset), 4096 elements, error
 * sqrt(sum (x - deq(q(x)))^2) / n below 0.002. */
static void test_quantize_roundtrip_error(void **state) {
  (void)state;
  enum { N = 4096 };
  static const nc_type types[] = {NC_TYPE_Q8_0, NC_TYPE_Q8_1, NC_TYPE_Q8_K,
                                  NC_TYPE_F16, NC_TYPE_BF16};
  float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
  void *q = malloc(nc_row_size(NC_TYPE_F32, N));
  for (int i = 0; i < N; i++)
    x[i] = 0.1f + 2 * cosf((float)i + 0.0f);
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    nc_quantize_row(types[t], x, q, N);
    nc_dequantize_row(types[t], q, y, N);
    double sum = 0, maxerr = 0;
    for (int i = 0; i < N; i++) {
      double e = (double)x[i] - y[i];
      sum += e * e;
      if (fabs(e) > maxerr) maxerr = fabs(e);
    }
    double err = sqrt(sum) / N;
    if (err >= 0.002)
      fail_msg("%s round-trip error %g", nc_type_name(types[t]), err);
    /* and a per-element bound: half a quantization step (amax 2.1 / 127),
     * plus the rounding of d to half for Q8_0/Q8_1 (2^-11 relative) */
    if (maxerr > 2.1 / 127 / 2 + 2.1 * 0x1p-11)
      fail_msg("%s max element error %g", nc_type_name(types[t]), maxerr);
  }
  free(x);
  free(y);
  free(q);
}

static void test_quantize_q8_1_sum(void **state) {
  (void)state;
  float x[64];
  for (int i = 0; i < 64; i++)
    x[i] = sinf((float)i) * (i < 32 ? 3.0f : 0.01f);
  block_q8_1 b[2];
  nc_quantize_row(NC_TYPE_Q8_1, x, b, 64);
  for (int k = 0; k < 2; k++) {
    int sum = 0, amax = 0;
    for (int j = 0; j < 32; j++) {
      sum += b[k].qs[j];
      if (abs(b[k].qs[j]) > amax) amax = abs(b[k].qs[j]);
    }
    assert_int_equal(amax, 127);
    float d = nc_fp16_to_fp32(b[k].d);
    assert_true(fabsf(nc_fp16_to_fp32(b[k].s) - d * sum) <=
                fabsf(d * sum) * 1e-3f + 1e-6f);
  }
}

static void test_quantize_q8_k_sign_and_bsums(void **state) {
  (void)state;
  float x[QK_K];
  for (int i = 0; i < QK_K; i++)
    x[i] = 0.5f * cosf((float)i * 0.3f);
  x[77] = 4.0f; /* the largest magnitude is positive: d comes out < 0 */
  block_q8_K b;
  nc_quantize_row(NC_TYPE_Q8_K, x, &b, QK_K);
  assert_true(b.d < 0.0f);
  assert_int_equal(b.qs[77], -127); /* (-127 / max) * max */
  assert_true(fabsf(b.d - (-4.0f / 127.0f)) < 1e-7f);
  for (int i = 0; i < QK_K; i++) /* same sign as -x, within half a step */
    assert_true(fabsf(b.d * b.qs[i] - x[i]) <= 4.0f / 127 / 2 * 1.001f);
  for (int k = 0; k < 16; k++) {
    int sum = 0;
    for (int l = 0; l < 16; l++)
      sum += b.qs[16 * k + l];
    assert_int_equal(b.bsums[k], sum);
  }
}

/* Zero, NaN and infinite inputs give defined output and never crash. */
static void test_quantize_degenerate(void **state) {
  (void)state;
  float x[QK_K] = {0};
  block_q8_K k;
  memset(&k, 0x55, sizeof k);
  nc_quantize_row(NC_TYPE_Q8_K, x, &k, QK_K);
  assert_true(k.d == 0.0f);
  for (int i = 0; i < QK_K; i++)
    assert_int_equal(k.qs[i], 0);
  block_q8_0 q[8];
  nc_quantize_row(NC_TYPE_Q8_0, x, q, 32);
  assert_int_equal(q[0].d, 0);
  for (int i = 0; i < 32; i++)
    assert_int_equal(q[0].qs[i], 0);
  x[3] = NAN;
  x[40] = INFINITY;
  x[41] = -1.0f;
  nc_quantize_row(NC_TYPE_Q8_0, x, q, QK_K);
  nc_quantize_row(NC_TYPE_Q8_1, x, q, 64);
  nc_quantize_row(NC_TYPE_Q8_K, x, &k, QK_K);
  for (int i = 0; i < 32; i++)
    assert_true(abs(q[0].qs[i]) <= 127);
  /* not an activation format, or n <= 0: nothing written */
  memset(q, 0x11, sizeof q);
  nc_quantize_row(NC_TYPE_Q5_0, x, q, 32);
  nc_quantize_row(NC_TYPE_Q8_0, x, q, 0);
  assert_int_equal(((unsigned char *)q)[0], 0x11);
}

/* Q4_0 (a KV cache type) as ggml's quantize_row_q4_0_ref: d = (value of
 * largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)). */
static void test_quantize_q4_0_ref(void **state) {
  (void)state;
  float x[32], y[32];
  for (int j = 0; j < 32; j++)
    x[j] = (float)(j - 16); /* largest magnitude: -16, d = 2 */
  block_q4_0 b;
  nc_quantize_row(NC_TYPE_Q4_0, x, &b, 32);
  assert_int_equal(b.d, nc_fp32_to_fp16(2.0f));
  assert_int_equal(b.qs[0] & 0x0f, 0); /* -16 / 2 + 8.5 = 0.5 -> 0 */
  assert_int_equal(b.qs[15] >> 4, 15); /* 15 / 2 + 8.5 = 16 -> 15 */
  assert_int_equal(b.qs[1] & 0x0f, 1); /* -15 / 2 + 8.5 = 1 -> 1 */
  nc_dequantize_row(NC_TYPE_Q4_0, &b, y, 32);
  for (int j = 0; j < 32; j++)
    assert_true(fabsf(y[j] - x[j]) <= 2.0f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quantize_q4_0_ref),
      cmocka_unit_test(test_traits),
      cmocka_unit_test(test_row_size),
      cmocka_unit_test(test_fp16_roundtrip_all),
      cmocka_unit_test(test_fp16_rounding),
      cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_dequantize_goldens),
      cmocka_unit_test(test_dequantize_q8_k_and_f32),
      cmocka_unit_test(test_e8m0_scale),
      cmocka_unit_test(test_ue4m3_scale),
      cmocka_unit_test(test_tq1_trits),
      cmocka_unit_test(test_first_bad_block),
      cmocka_unit_test(test_iq_grids),
      cmocka_unit_test(test_quantize_goldens),
      cmocka_unit_test(test_quantize_roundtrip_error),
      cmocka_unit_test(test_quantize_q8_1_sum),
      cmocka_unit_test(test_quantize_q8_k_sign_and_bsums),
      cmocka_unit_test(test_quantize_degenerate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
