/* kernels against llama.cpp's own CPU library: the K-quant matmuls
 * (Q2_K..Q6_K weights times F32 activation rows) computed by ggml's
 * mul_mat, bit for bit against the tables that claim its orders; and the
 * same for IQ4_XS (vec_dot / tiled, like the K-quants), IQ4_NL (vec_dot
 * for one row, its llamafile GEMM from 2 rows), MXFP4, TQ1_0, TQ2_0, NVFP4,
 * Q1_0 and Q2_0 (vec_dot at every batch size), against ref_nl.c,
 * ref_lowbit.c and the tables; and F16 weights (F16 activation rows: ggml
 * rounds the F32 rows to F16 first): llamafile's tinyBLAS<16> for 2+ rows
 * when n % 16 == 0, ggml_vec_dot_f16 for one row or other n, against
 * ref_f16_order.c and the avx512 table (vec_dot, gemm; gemm_few for one
 * row).
 *
 * The library is llama-cpp-python's (libggml-base.so, libggml-cpu.so; the
 * reference llama.cpp of our goldens), loaded at run time from
 * $NUCLEUS_GGML_LIB_DIR, else from the directory the python3 package
 * llama_cpp keeps them in. Without it, or on a CPU without AVX2 + FMA
 * (where llama.cpp's K-quant orders are other ones), the tests skip and say
 * why.
 *
 * What llama.cpp does there (llama-cpp-python 0.3.36, x86): 1..7
 * activation rows go through ggml_vec_dot_qN_K_q8_K (the avx2 table's
 * order), 8 or more through its tiled matmul (ggml-cpu/tiled: per
 * superblock t = (float)S1 * d_w, t = fma(-dmin_w, S2, t), acc = fma(t,
 * d_a, acc); ref_tiled.c and the avx512 table). So llama.cpp's own values
 * depend on the batch size; nucleus's tables do not (each keeps one order
 * for every batch). Checked here: for every K type, 256..2048 columns and
 * 1..70 activation rows, ggml's Q8_K activations equal ours byte for byte;
 * below 8 rows every value equals the avx2 table's vec_dot, from 8 rows on
 * the avx512 table's vec_dot and gemm and ref_tiled's dots (Q4_K, Q5_K,
 * Q6_K). */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../reference/ref_f16_order.h"
#include "../reference/ref_tiled.h"
#include "kernels/kernels.h"
#include "kernels/ref.h"
#include "test_require.h"

/* ggml's C API, the few calls used (ggml.h, ggml-cpu.h). */
typedef struct ggml_init_params {
  size_t mem_size;
  void *mem_buffer;
  bool no_alloc;
} ggml_init_params;
typedef struct ggml_lib {
  void *base, *cpu;
  void *(*init)(ggml_init_params);
  void (*free)(void *);
  void *(*new_tensor_2d)(void *, int, int64_t, int64_t);
  void *(*mul_mat)(void *, void *, void *);
  void *(*new_graph)(void *);
  void (*build_forward_expand)(void *, void *);
  int (*graph_compute_with_ctx)(void *, void *, int);
  void *(*get_data)(const void *);
  void (*quantize_row_q8_k)(const float *, void *, int64_t);
  void (*quantize_row_q8_0)(const float *, void *, int64_t);
  char why[600];
} ggml_lib;

static void lib_close(ggml_lib *g) {
  if (g->cpu) dlclose(g->cpu);
  if (g->base) dlclose(g->base);
  g->cpu = g->base = NULL;
}

/* The directory of llama_cpp's libraries: $NUCLEUS_GGML_LIB_DIR, else
 * python3's answer; false when neither gives one. */
static bool lib_dir(char *dir, size_t len) {
  const char *env = getenv("NUCLEUS_GGML_LIB_DIR");
  if (env && *env) {
    snprintf(dir, len, "%s", env);
    return true;
  }
  FILE *p = popen("python3 -c 'import os, llama_cpp; print(os.path.join("
                  "os.path.dirname(llama_cpp.__file__), \"lib\"))' "
                  "2>/dev/null",
                  "r");
  if (!p) return false;
  const bool got = fgets(dir, (int)len, p) != NULL;
  pclose(p);
  if (!got) return false;
  dir[strcspn(dir, "\r\n")] = '\0';
  return dir[0] != '\0';
}

static bool lib_open(ggml_lib *g) {
  memset(g, 0, sizeof *g);
  char dir[512], path[600];
  if (!lib_dir(dir, sizeof dir)) {
    snprintf(g->why, sizeof g->why,
             "llama.cpp's library not found (no NUCLEUS_GGML_LIB_DIR, no "
             "python3 package llama_cpp)");
    return false;
  }
  snprintf(path, sizeof path, "%s/libggml-base.so", dir);
  g->base = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  snprintf(path, sizeof path, "%s/libggml-cpu.so", dir);
  if (g->base) g->cpu = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!g->base || !g->cpu) {
    snprintf(g->why, sizeof g->why, "cannot load llama.cpp's library: %s",
             dlerror());
    lib_close(g);
    return false;
  }
#define SYM(h, field, name) *(void **)&g->field = dlsym(g->h, name)
  SYM(base, init, "ggml_init");
  SYM(base, free, "ggml_free");
  SYM(base, new_tensor_2d, "ggml_new_tensor_2d");
  SYM(base, mul_mat, "ggml_mul_mat");
  SYM(base, new_graph, "ggml_new_graph");
  SYM(base, build_forward_expand, "ggml_build_forward_expand");
  SYM(base, get_data, "ggml_get_data");
  SYM(cpu, graph_compute_with_ctx, "ggml_graph_compute_with_ctx");
  SYM(cpu, quantize_row_q8_k, "quantize_row_q8_K");
  SYM(cpu, quantize_row_q8_0, "quantize_row_q8_0");
#undef SYM
  void (*cpu_init)(void) = NULL;
  *(void **)&cpu_init = dlsym(g->cpu, "ggml_cpu_init");
  if (!g->init || !g->free || !g->new_tensor_2d || !g->mul_mat ||
      !g->new_graph || !g->build_forward_expand || !g->get_data ||
      !g->graph_compute_with_ctx || !g->quantize_row_q8_k ||
      !g->quantize_row_q8_0 || !cpu_init) {
    snprintf(g->why, sizeof g->why, "%s: a ggml function is missing", dir);
    lib_close(g);
    return false;
  }
  cpu_init();
  return true;
}

static int setup(void **state) {
  ggml_lib *g = calloc(1, sizeof *g);
  if (!g) return -1;
  if (!nc_kernels_by_name("avx2"))
    snprintf(g->why, sizeof g->why,
             "this CPU lacks AVX2 + FMA: llama.cpp's K-quant orders here are "
             "not the ones nucleus follows");
  else
    lib_open(g);
  *state = g;
  return 0;
}

/* The library stays loaded to the end (ggml keeps a few bytes of its own
 * state for the process; the sanitizer build names its module in the
 * suppression below). */
static int teardown(void **state) {
  free(*state);
  return 0;
}

#if NC_SANITIZED
/* llama.cpp's allocations are its own, not this test's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libggml-cpu.so\nleak:libggml-base.so\n";
}
#endif

static uint64_t next_u64(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static float next_unit(uint64_t *s) { /* [-1, 1) */
  return (float)((next_u64(s) >> 40) * 0x1p-24) * 2.0f - 1.0f;
}

/* IQ1_M's half scale h, nibble k in the top of its 16-bit scale word k. */
static void set_iq1m_half(uint8_t *block, nc_fp16 h) {
  uint8_t *sc = block + offsetof(block_iq1_m, scales);
  for (int k = 0; k < 4; k++)
    sc[2 * k + 1] =
        (uint8_t)((sc[2 * k + 1] & 0x0f) | (((h >> 4 * k) & 15) << 4));
}

/* Random K-quant rows: random bytes, small finite fp16 scales. */
static void fill_weights(nc_type t, uint8_t *w, size_t bytes, uint64_t *s) {
  static const int offs[NC_TYPE_COUNT][2] = {
      [NC_TYPE_Q2_K] = {80, 82},   [NC_TYPE_Q3_K] = {108, -1},
      [NC_TYPE_Q4_K] = {0, 2},     [NC_TYPE_Q5_K] = {0, 2},
      [NC_TYPE_Q6_K] = {208, -1},  [NC_TYPE_IQ4_NL] = {0, -1},
      [NC_TYPE_IQ4_XS] = {0, -1},  [NC_TYPE_TQ1_0] = {52, -1},
      [NC_TYPE_TQ2_0] = {64, -1},  [NC_TYPE_MXFP4] = {-1, -1},
      [NC_TYPE_NVFP4] = {-1, -1},  [NC_TYPE_Q1_0] = {0, -1},
      [NC_TYPE_Q2_0] = {0, -1},    [NC_TYPE_IQ2_XXS] = {0, -1},
      [NC_TYPE_IQ2_XS] = {0, -1},  [NC_TYPE_IQ2_S] = {0, -1},
      [NC_TYPE_IQ3_XXS] = {0, -1}, [NC_TYPE_IQ3_S] = {0, -1},
      [NC_TYPE_IQ1_S] = {0, -1},   [NC_TYPE_IQ1_M] = {-1, -1},
  };
  const size_t bs = nc_type_traits_of(t)->type_size;
  for (size_t i = 0; i < bytes; i++)
    w[i] = (uint8_t)next_u64(s);
  for (size_t b = 0; b < bytes / bs; b++) {
    for (int k = 0; k < 2; k++)
      if (offs[t][k] >= 0) {
        const nc_fp16 h = nc_fp32_to_fp16(next_unit(s) * 0.01f);
        memcpy(w + b * bs + offs[t][k], &h, sizeof h);
      }
    if (t == NC_TYPE_MXFP4) /* E8M0 scale 2^-10 .. 2^-6 */
      w[b * bs] = (uint8_t)(118 + next_u64(s) % 5);
    if (t == NC_TYPE_NVFP4) /* UE4M3 exponents 1..3: 2^-7 .. 2^-4 */
      for (int k = 0; k < 4; k++)
        w[b * bs + (size_t)k] = (uint8_t)(8 + next_u64(s) % 24);
    if (t == NC_TYPE_IQ1_M) /* the half in the scale words' top nibbles */
      set_iq1m_half(w + b * bs, nc_fp32_to_fp16(next_unit(s) * 0.01f));
  }
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* ref_tiled's dot of type t, NULL for the types it leaves out. */
static nc_vec_dot_fn ref_tiled(nc_type t) {
  switch (t) {
  case NC_TYPE_Q4_K: return nc_ref_dot_tiled_q4_k;
  case NC_TYPE_Q5_K: return nc_ref_dot_tiled_q5_k;
  case NC_TYPE_Q6_K: return nc_ref_dot_tiled_q6_k;
  case NC_TYPE_IQ4_XS: return nc_ref_dot_iq4_xs_tiled;
  case NC_TYPE_IQ4_NL: return nc_ref_dot_iq4_nl_tinyblas;
  case NC_TYPE_IQ2_XXS: return nc_ref_dot_iq2_xxs_tiled;
  case NC_TYPE_IQ2_XS: return nc_ref_dot_iq2_xs_tiled;
  case NC_TYPE_IQ2_S: return nc_ref_dot_iq2_s_tiled;
  case NC_TYPE_IQ3_XXS: return nc_ref_dot_iq3_xxs_tiled;
  case NC_TYPE_IQ3_S: return nc_ref_dot_iq3_s_tiled;
  case NC_TYPE_IQ1_S: return nc_ref_dot_iq1_s_tiled;
  case NC_TYPE_IQ1_M: return nc_ref_dot_iq1_m_tiled;
  default: return NULL;
  }
}

enum { W_ROWS = 40, MAX_A = 70 };

/* From how many activation rows llama.cpp leaves vec_dot for another
 * order: 8 for its tiled matmul (the K-quants, IQ4_XS), 2 for its llamafile
 * GEMM (IQ4_NL); 0 where it keeps vec_dot's order at every batch size. */
static int batch_order_from(nc_type t) {
  switch (t) {
  case NC_TYPE_IQ4_NL: return 2;
  case NC_TYPE_MXFP4:
  case NC_TYPE_NVFP4:
  case NC_TYPE_Q1_0:
  case NC_TYPE_Q2_0:
  case NC_TYPE_TQ1_0:
  case NC_TYPE_TQ2_0: return 0;
  default: return 8;
  }
}

/* The types whose ref dot is llama.cpp's x86 vec_dot (ref_nl.c). */
static bool is_new_type(nc_type t) {
  return t == NC_TYPE_IQ4_XS || t == NC_TYPE_IQ2_XXS || t == NC_TYPE_IQ2_XS ||
         t == NC_TYPE_IQ2_S || t == NC_TYPE_IQ3_XXS || t == NC_TYPE_IQ3_S ||
         t == NC_TYPE_IQ1_S || t == NC_TYPE_IQ1_M || batch_order_from(t) != 8;
}

/* The values of one dot kernel against ggml's y (y[a * W_ROWS + r]);
 * returns how many differ. */
static int64_t count_diff(nc_vec_dot_fn dot, int64_t n, const uint8_t *w,
                          size_t w_row, const uint8_t *qa, size_t a_row, int na,
                          const float *y) {
  int64_t bad = 0;
  for (int a = 0; a < na; a++)
    for (int r = 0; r < W_ROWS; r++)
      bad += bits(dot(n, w + (size_t)r * w_row, qa + (size_t)a * a_row)) !=
             bits(y[(size_t)a * W_ROWS + r]);
  return bad;
}

/* One ggml mul_mat of W_ROWS random rows of type t (n columns) by na
 * random F32 rows, and every check of the top. */
static void check_case(const ggml_lib *g, nc_type t, int64_t n, int na,
                       uint64_t *s) {
  const size_t w_row = nc_row_size(t, n);
  const nc_type at = nc_type_traits_of(t)->vec_dot_type;
  const size_t a_row = nc_row_size(at, n);
  const ggml_init_params ip = {(size_t)16 << 20, NULL, false};
  void *ctx = g->init(ip);
  assert_non_null(ctx);
  void *wt = g->new_tensor_2d(ctx, (int)t, n, W_ROWS);
  void *xt = g->new_tensor_2d(ctx, (int)NC_TYPE_F32, n, na);
  assert_non_null(wt);
  assert_non_null(xt);
  uint8_t *w = g->get_data(wt);
  float *x = g->get_data(xt);
  fill_weights(t, w, w_row * W_ROWS, s);
  for (int64_t i = 0; i < n * na; i++)
    x[i] = next_unit(s);
  void *yt = g->mul_mat(ctx, wt, xt);
  void *graph = g->new_graph(ctx);
  g->build_forward_expand(graph, yt);
  assert_int_equal(g->graph_compute_with_ctx(ctx, graph, 2), 0);
  const float *y = g->get_data(yt);

  /* the activations: ggml's Q8_K (Q8_0) rows and ours, byte for byte */
  uint8_t *qg = malloc(a_row * (size_t)na), *qa = malloc(a_row * (size_t)na);
  assert_non_null(qg);
  assert_non_null(qa);
  const nc_kernels *avx2 = nc_kernels_by_name("avx2");
  const nc_kernels *avx512 = nc_kernels_by_name("avx512");
  for (int a = 0; a < na; a++) {
    (at == NC_TYPE_Q8_K ? g->quantize_row_q8_k : g->quantize_row_q8_0)(
        x + (size_t)a * n, qg + (size_t)a * a_row, n);
    nc_kernels_ref()->quantize_act[at](x + (size_t)a * n,
                                       qa + (size_t)a * a_row, n);
  }
  if (memcmp(qg, qa, a_row * (size_t)na) != 0)
    fail_msg("%s n=%lld: ggml's %s activations differ from ours",
             nc_type_name(t), (long long)n, nc_type_name(at));

  char what[96];
  snprintf(what, sizeof what, "%s, %lld columns, %d activation rows",
           nc_type_name(t), (long long)n, na);
  const bool one_order = batch_order_from(t) == 0;
  if (na < batch_order_from(t) || one_order) { /* llama.cpp's vec_dot */
    const int64_t bad =
        count_diff(avx2->vec_dot[t], n, w, w_row, qg, a_row, na, y);
    if (bad)
      fail_msg("%s: %lld of %d values differ from the avx2 table's vec_dot",
               what, (long long)bad, W_ROWS * na);
    /* the newer types' ref is in this order; and the avx512 table's, where
     * llama.cpp has one order for every batch */
    const int64_t bad_ref = is_new_type(t)
                                ? count_diff(nc_kernels_ref()->vec_dot[t], n, w,
                                             w_row, qg, a_row, na, y)
                                : 0;
    const int64_t bad_512 =
        one_order && avx512
            ? count_diff(avx512->vec_dot[t], n, w, w_row, qg, a_row, na, y)
            : 0;
    /* the avx512 table's decode rows (gemm_few) take this order */
    int64_t bad_few = 0;
    if (avx512 && avx512->gemm_few[t]) {
      float *out = malloc(sizeof(float) * W_ROWS * (size_t)na);
      assert_non_null(out);
      avx512->gemm_few[t](n, w, w_row, W_ROWS, qg, a_row, na, out, W_ROWS);
      for (int i = 0; i < W_ROWS * na; i++)
        bad_few += bits(out[i]) != bits(y[i]);
      free(out);
    }
    if (bad_ref || bad_512 || bad_few)
      fail_msg("%s: %lld (ref), %lld (avx512), %lld (avx512 gemm_few) of %d "
               "values differ",
               what, (long long)bad_ref, (long long)bad_512, (long long)bad_few,
               W_ROWS * na);
  } else { /* its tiled matmul (llamafile's GEMM for IQ4_NL) */
    const nc_vec_dot_fn rt = ref_tiled(t);
    const int64_t bad = rt ? count_diff(rt, n, w, w_row, qg, a_row, na, y) : 0;
    if (bad)
      fail_msg("%s: %lld of %d values differ from ref_tiled", what,
               (long long)bad, W_ROWS * na);
    if (avx512) {
      const int64_t bad_dot =
          count_diff(avx512->vec_dot[t], n, w, w_row, qg, a_row, na, y);
      float *out = malloc(sizeof(float) * W_ROWS * (size_t)na);
      assert_non_null(out);
      if (avx512->gemm[t])
        avx512->gemm[t](n, w, w_row, W_ROWS, qg, a_row, na, out, W_ROWS);
      else /* no gemm: callers loop vec_dot_rows */
        for (int r = 0; r < W_ROWS; r++)
          avx512->vec_dot_rows[t](n, w + (size_t)r * w_row, qg, a_row, na,
                                  out + r, W_ROWS);
      int64_t bad_gemm = 0;
      for (int i = 0; i < W_ROWS * na; i++)
        bad_gemm += bits(out[i]) != bits(y[i]);
      free(out);
      if (bad_dot || bad_gemm)
        fail_msg("%s: %lld (vec_dot), %lld (gemm) of %d values differ from "
                 "the avx512 table",
                 what, (long long)bad_dot, (long long)bad_gemm, W_ROWS * na);
    }
  }
  free(qg);
  free(qa);
  g->free(ctx);
}

static const nc_type k_types[] = {
    NC_TYPE_Q4_K,    NC_TYPE_Q6_K,    NC_TYPE_Q5_K,   NC_TYPE_Q2_K,
    NC_TYPE_Q3_K,    NC_TYPE_IQ4_XS,  NC_TYPE_IQ4_NL, NC_TYPE_MXFP4,
    NC_TYPE_TQ1_0,   NC_TYPE_TQ2_0,   NC_TYPE_NVFP4,  NC_TYPE_Q1_0,
    NC_TYPE_Q2_0,    NC_TYPE_IQ2_XXS, NC_TYPE_IQ2_XS, NC_TYPE_IQ2_S,
    NC_TYPE_IQ3_XXS, NC_TYPE_IQ3_S,   NC_TYPE_IQ1_S,  NC_TYPE_IQ1_M};

static void run_cases(void **state, const int *rows, int n_rows) {
  const ggml_lib *g = *state;
  if (!g->cpu) NC_SKIP_BECAUSE("%s", g->why);
  /* 2304: 9 superblocks; 2336: 73 blocks of 32 (an odd block last);
   * 2368: 37 blocks of 64 */
  static const int64_t cols[] = {256, 1280, 2048, 2304, 2336, 2368};
  uint64_t s = 0x6a11ull;
  int cases = 0;
  for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++)
    for (size_t ci = 0; ci < sizeof cols / sizeof cols[0]; ci++)
      for (int ri = 0; ri < n_rows; ri++) {
        if (cols[ci] % nc_type_traits_of(k_types[ti])->block_size) continue;
        check_case(g, k_types[ti], cols[ci], rows[ri], &s);
        cases++;
      }
  print_message("%d ggml mul_mats bit-identical (%d rows x 1..%d "
                "activation rows each)\n",
                cases, W_ROWS, rows[n_rows - 1]);
}

/* 1..7 activation rows: llama.cpp's vec_dot, the avx2 table's order and
 * the avx512 table's gemm_few's. */
static void test_few_rows_are_vec_dot(void **state) {
  static const int rows[] = {1, 2, 7};
  run_cases(state, rows, 3);
}

/* 8+ rows: llama.cpp's tiled matmul (its narrow path up to 16 rows, its
 * 256-row windows beyond), ref_tiled's and the avx512 table's order. */
static void test_batches_are_tiled(void **state) {
  static const int rows[] = {8, 16, 17, MAX_A};
  run_cases(state, rows, NC_SHORT ? 2 : 4);
}

/* F16 weights: W_ROWS random rows of n halves by na random F32 rows. */
static void check_f16_case(const ggml_lib *g, const nc_kernels *k, int64_t n,
                           int na, uint64_t *s) {
  const ggml_init_params ip = {(size_t)16 << 20, NULL, false};
  void *ctx = g->init(ip);
  assert_non_null(ctx);
  void *wt = g->new_tensor_2d(ctx, (int)NC_TYPE_F16, n, W_ROWS);
  void *xt = g->new_tensor_2d(ctx, (int)NC_TYPE_F32, n, na);
  assert_non_null(wt);
  assert_non_null(xt);
  nc_fp16 *w = g->get_data(wt);
  float *x = g->get_data(xt);
  for (int64_t i = 0; i < n * W_ROWS; i++)
    w[i] = nc_fp32_to_fp16(next_unit(s));
  for (int64_t i = 0; i < n * na; i++)
    x[i] = next_unit(s) * 4.0f;
  void *yt = g->mul_mat(ctx, wt, xt);
  void *graph = g->new_graph(ctx);
  g->build_forward_expand(graph, yt);
  assert_int_equal(g->graph_compute_with_ctx(ctx, graph, 2), 0);
  const float *y = g->get_data(yt);
  const size_t row = sizeof(nc_fp16) * (size_t)n;
  nc_fp16 *a = malloc(row * (size_t)na);
  float *out = malloc(sizeof(float) * W_ROWS * (size_t)na);
  assert_non_null(a);
  assert_non_null(out);
  k->quantize_act[NC_TYPE_F16](x, a, n * na);
  /* llama.cpp's order for this batch */
  const bool tinyblas = na >= 2 && n % 16 == 0;
  int64_t bad_ref = 0, bad_dot = 0, bad_mm = 0;
  for (int j = 0; j < na; j++)
    for (int r = 0; r < W_ROWS; r++) {
      const nc_fp16 *wr = w + (size_t)r * (size_t)n, *aj = a + (size_t)j * n;
      const float want = y[(size_t)j * W_ROWS + r];
      bad_ref += bits(tinyblas ? nc_ref_dot_f16_tinyblas(n, wr, aj)
                               : nc_ref_dot_f16_vec16(n, wr, aj)) != bits(want);
      if (na >= 2)
        bad_dot += bits(k->vec_dot[NC_TYPE_F16](n, wr, aj)) != bits(want);
    }
  const nc_gemm_fn mm =
      na >= 2 ? k->gemm[NC_TYPE_F16] : k->gemm_few[NC_TYPE_F16];
  mm(n, w, row, W_ROWS, a, row, na, out, W_ROWS);
  for (int i = 0; i < W_ROWS * na; i++)
    bad_mm += bits(out[i]) != bits(y[i]);
  if (bad_ref || bad_dot || bad_mm)
    fail_msg("F16, %lld columns, %d activation rows (%s): %lld (ref), %lld "
             "(%s vec_dot), %lld (%s %s) of %d values differ from ggml",
             (long long)n, na, tinyblas ? "tinyBLAS" : "vec_dot",
             (long long)bad_ref, (long long)bad_dot, k->name, (long long)bad_mm,
             k->name, na >= 2 ? "gemm" : "gemm_few", W_ROWS * na);
  free(a);
  free(out);
  g->free(ctx);
}

/* F16 at 1..70 activation rows, n with and without a tail past the last
 * 16 and 64 (the avx512 table's orders are those of llama.cpp's AVX-512
 * build: the library here must be one, else the test skips). */
static void test_f16(void **state) {
  const ggml_lib *g = *state;
  if (!g->cpu) NC_SKIP_BECAUSE("%s", g->why);
  const nc_kernels *k = nc_kernels_by_name("avx512");
  if (!k) NC_SKIP_BECAUSE("this CPU lacks AVX-512: no avx512 table");
  static const int64_t cols[] = {16, 100, 384, 400, 1536, 1541};
  static const int rows[] = {1, 2, 3, 7, 16, MAX_A};
  uint64_t s = 0xf16ull;
  int cases = 0;
  for (size_t ci = 0; ci < sizeof cols / sizeof cols[0]; ci++)
    for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
      check_f16_case(g, k, cols[ci], rows[ri], &s);
      cases++;
    }
  print_message("%d F16 ggml mul_mats bit-identical (%d rows x 1..%d "
                "activation rows each)\n",
                cases, W_ROWS, MAX_A);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_few_rows_are_vec_dot),
      cmocka_unit_test(test_batches_are_tiled),
      cmocka_unit_test(test_f16),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
