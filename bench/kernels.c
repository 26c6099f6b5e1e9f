/* bench/kernels: nanoseconds per dot product for every weight type and
 * kernel table, single-row (vec_dot), multi-row (vec_dot_rows), gemm
 * (64-row weight panels x all activation rows, as the matmul driver calls
 * it; prefill) and gemm_few (the same panels through the decode rows'
 * matmul: rows = 1 is one-token decode), next to llama.cpp's own CPU vec_dot
 * measured in the same run (dlopen of libggml-cpu.so; path from $GGML_CPU_LIB,
 * else llama-cpp-python's copy if found); ratio = llama.cpp / the faster of
 * vec_dot_rows and gemm. Not a test: `make bench`, then
 * build/release/bench/kernels [n] [rows] [type]. Times are thread CPU time.
 *
 * Each case multiplies a weight matrix of W rows x n columns by A
 * activation rows, timing the best of several passes. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"

enum { W_ROWS = 256 };

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* shared machines */
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static float rng_float(uint64_t *s) {
  return (float)((rng_next(s) >> 40) * 0x1p-24) * 2.0f - 1.0f;
}

/* Random weight rows: dequantizable data from quantizing is not available
 * for weight types, so bytes are random with sane fp16 scale fields. */
static void fill_weights(nc_type t, uint8_t *w, size_t bytes, uint64_t *s) {
  if (t == NC_TYPE_F32 || t == NC_TYPE_F16 || t == NC_TYPE_BF16) {
    size_t esz = nc_type_traits_of(t)->type_size, n = bytes / esz;
    for (size_t i = 0; i < n; i++) {
      float f = rng_float(s);
      if (t == NC_TYPE_F32)
        memcpy(w + 4 * i, &f, 4);
      else {
        uint16_t h = t == NC_TYPE_F16 ? nc_fp32_to_fp16(f) : nc_fp32_to_bf16(f);
        memcpy(w + 2 * i, &h, 2);
      }
    }
    return;
  }
  for (size_t i = 0; i < bytes; i++)
    w[i] = (uint8_t)rng_next(s);
  size_t ts = nc_type_traits_of(t)->type_size;
  for (size_t b = 0; b < bytes / ts; b++) {
    if (t == NC_TYPE_MXFP4) /* E8M0: 2^-9 .. 2^-2, no denormal products */
      w[b * ts] = (uint8_t)(118 + rng_next(s) % 8);
    /* every 2-byte field that could be a scale: set all even offsets of
     * the block's fp16 slots to small finite values */
    static const int q_offs[NC_TYPE_COUNT][2] = {
        [NC_TYPE_Q4_0] = {0, -1},   [NC_TYPE_Q4_1] = {0, 2},
        [NC_TYPE_Q5_0] = {0, -1},   [NC_TYPE_Q5_1] = {0, 2},
        [NC_TYPE_Q8_0] = {0, -1},   [NC_TYPE_Q2_K] = {80, 82},
        [NC_TYPE_Q3_K] = {108, -1}, [NC_TYPE_Q4_K] = {0, 2},
        [NC_TYPE_Q5_K] = {0, 2},    [NC_TYPE_Q6_K] = {208, -1},
        [NC_TYPE_IQ4_NL] = {0, -1}, [NC_TYPE_IQ4_XS] = {0, -1},
        [NC_TYPE_MXFP4] = {-1, -1},
    };
    for (int k = 0; k < 2; k++) {
      int off = q_offs[t][k];
      if (off < 0 || (k == 1 && off == 0)) continue;
      uint16_t h = nc_fp32_to_fp16(rng_float(s) * 0.01f);
      memcpy(w + b * ts + off, &h, 2);
    }
  }
}

/* llama.cpp's CPU type traits (ggml-cpu.h), when the library is found. */
typedef void (*ggml_from_float_fn)(const float *, void *, int64_t);
typedef void (*ggml_vec_dot_fn)(int, float *, size_t, const void *, size_t,
                                const void *, size_t, int);
typedef struct ggml_cpu_traits {
  ggml_from_float_fn from_float;
  ggml_vec_dot_fn vec_dot;
  int vec_dot_type;
  int64_t nrows;
} ggml_cpu_traits;
typedef const ggml_cpu_traits *(*get_traits_fn)(int);

static get_traits_fn load_llama(void) {
  const char *path = getenv("GGML_CPU_LIB");
  const char *guess[] = {
      path,
      "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/llama_cpp/"
      "lib/libggml-cpu.so",
      "libggml-cpu.so",
  };
  for (size_t i = 0; i < sizeof guess / sizeof guess[0]; i++) {
    if (!guess[i]) continue;
    void *h = dlopen(guess[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    void (*init)(void) = (void (*)(void))dlsym(h, "ggml_cpu_init");
    get_traits_fn get = (get_traits_fn)dlsym(h, "ggml_get_type_traits_cpu");
    if (init && get) {
      init();
      return get;
    }
  }
  return NULL;
}

typedef struct bench_case {
  nc_type t;
  int64_t n;
  int a_rows;
  uint8_t *w;   /* W_ROWS weight rows */
  float *act;   /* a_rows f32 rows */
  float *out;   /* W_ROWS x a_rows */
  size_t w_row; /* bytes */
} bench_case;

enum { PANEL = 64 }; /* weight rows per gemm call, as the matmul driver */

/* ns per dot: the best of `reps` passes over the W_ROWS x a_rows matrix,
 * by vec_dot (mode 0), vec_dot_rows (1), gemm in PANEL-row panels (2) or
 * gemm_few in the same panels (3: the decode rows' matmul; NAN when the
 * table has no gemm or gemm_few for the type). */
static double time_table(const bench_case *c, const nc_kernels *k, int mode) {
  if (mode == 2 && !k->gemm[c->t]) return NAN;
  if (mode == 3 && !k->gemm_few[c->t]) return NAN;
  const nc_gemm_fn panel_fn = mode == 2 ? k->gemm[c->t] : k->gemm_few[c->t];
  nc_type at = nc_type_traits_of(c->t)->vec_dot_type;
  size_t a_row = nc_row_size(at, c->n);
  uint8_t *qa = malloc(a_row * (size_t)c->a_rows);
  for (int r = 0; r < c->a_rows; r++)
    k->quantize_act[at](c->act + (size_t)r * c->n, qa + r * a_row, c->n);
  double best = 1e30;
  for (int rep = 0; rep < 15; rep++) {
    double t0 = now_ns();
    for (int i = 0; i < W_ROWS && mode >= 2; i += PANEL)
      panel_fn(c->n, c->w + (size_t)i * c->w_row, c->w_row,
               W_ROWS - i < PANEL ? W_ROWS - i : PANEL, qa, a_row, c->a_rows,
               c->out + i, W_ROWS);
    for (int i = 0; i < W_ROWS && mode < 2; i++) {
      const uint8_t *wr = c->w + (size_t)i * c->w_row;
      if (mode == 1)
        k->vec_dot_rows[c->t](c->n, wr, qa, a_row, c->a_rows, c->out + i,
                              W_ROWS);
      else
        for (int r = 0; r < c->a_rows; r++)
          c->out[(size_t)r * W_ROWS + i] =
              k->vec_dot[c->t](c->n, wr, qa + r * a_row);
    }
    double dt = now_ns() - t0;
    if (dt < best) best = dt;
  }
  free(qa);
  return best / ((double)W_ROWS * c->a_rows);
}

static double time_llama(const bench_case *c, get_traits_fn get) {
  if (!get) return NAN;
  const ggml_cpu_traits *tr = get((int)c->t);
  if (!tr || !tr->vec_dot) return NAN;
  nc_type at = (nc_type)tr->vec_dot_type;
  const ggml_cpu_traits *atr = get((int)at);
  size_t a_row = nc_row_size(at, c->n);
  if (!a_row || !atr || (at != NC_TYPE_F32 && !atr->from_float)) return NAN;
  uint8_t *qa = malloc(a_row * (size_t)c->a_rows);
  for (int r = 0; r < c->a_rows; r++) {
    if (at == NC_TYPE_F32)
      memcpy(qa + r * a_row, c->act + (size_t)r * c->n, a_row);
    else
      atr->from_float(c->act + (size_t)r * c->n, qa + r * a_row, c->n);
  }
  double best = 1e30;
  for (int rep = 0; rep < 15; rep++) {
    double t0 = now_ns();
    for (int i = 0; i < W_ROWS; i++)
      for (int r = 0; r < c->a_rows; r++)
        tr->vec_dot((int)c->n, &c->out[(size_t)r * W_ROWS + i], 0,
                    c->w + (size_t)i * c->w_row, 0, qa + r * a_row, 0, 1);
    double dt = now_ns() - t0;
    if (dt < best) best = dt;
  }
  free(qa);
  return best / ((double)W_ROWS * c->a_rows);
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 1536;
  int a_rows = argc > 2 ? atoi(argv[2]) : 64;
  const char *only = argc > 3 ? argv[3] : NULL; /* one type, e.g. Q4_1 */
  if (n <= 0 || n % 32 || a_rows <= 0 || a_rows > 4096) {
    fprintf(stderr, "usage: kernels [n (multiple of 32)] [rows 1..4096] "
                    "[type]\n");
    return 2;
  }
  static const nc_type types[] = {
      NC_TYPE_F32,     NC_TYPE_F16,     NC_TYPE_BF16,   NC_TYPE_Q4_0,
      NC_TYPE_Q4_1,    NC_TYPE_Q5_0,    NC_TYPE_Q5_1,   NC_TYPE_Q8_0,
      NC_TYPE_Q2_K,    NC_TYPE_Q3_K,    NC_TYPE_Q4_K,   NC_TYPE_Q5_K,
      NC_TYPE_Q6_K,    NC_TYPE_IQ2_XXS, NC_TYPE_IQ2_XS, NC_TYPE_IQ2_S,
      NC_TYPE_IQ3_XXS, NC_TYPE_IQ3_S,   NC_TYPE_IQ1_S,  NC_TYPE_IQ1_M,
      NC_TYPE_IQ4_NL,  NC_TYPE_IQ4_XS,  NC_TYPE_MXFP4,
  };
  const char *tables[] = {"ref", "avx2", "avx512", "amx"};
  get_traits_fn llama = load_llama();
  printf("n = %lld, %d weight rows x %d activation rows; ns per dot "
         "(GMAC/s); llama.cpp = its CPU vec_dot%s\n",
         (long long)n, W_ROWS, a_rows, llama ? "" : " (not found)");
  printf("%-7s %-7s %16s %16s %16s %16s %16s %7s\n", "type", "table", "vec_dot",
         "vec_dot_rows", "gemm", "gemm_few", "llama.cpp", "ratio");
  uint64_t seed = 0x1234567;
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    if (only && strcmp(only, nc_type_name(types[ti])) != 0) continue;
    if (n % nc_type_traits_of(types[ti])->block_size) continue;
    bench_case c = {.t = types[ti], .n = n, .a_rows = a_rows};
    c.w_row = nc_row_size(c.t, n);
    c.w = malloc(c.w_row * W_ROWS);
    c.act = malloc(sizeof(float) * (size_t)n * a_rows);
    c.out = malloc(sizeof(float) * W_ROWS * (size_t)a_rows);
    fill_weights(c.t, c.w, c.w_row * W_ROWS, &seed);
    for (int64_t i = 0; i < n * a_rows; i++)
      c.act[i] = rng_float(&seed);
    double ll = time_llama(&c, llama);
    for (size_t k = 0; k < sizeof tables / sizeof tables[0]; k++) {
      const nc_kernels *kt = nc_kernels_by_name(tables[k]);
      if (!kt) continue;
      double single = time_table(&c, kt, 0);
      double multi = time_table(&c, kt, 1);
      double gemm = time_table(&c, kt, 2);
      double few = time_table(&c, kt, 3);
      double best = gemm < multi ? gemm : multi; /* NAN compares false */
      printf("%-7s %-7s %8.1f (%5.1f) %8.1f (%5.1f) %8.1f (%5.1f) %8.1f "
             "(%5.1f) %8.1f (%5.1f) %7.2f\n",
             nc_type_name(c.t), kt->name, single, n / single, multi, n / multi,
             gemm, n / gemm, few, n / few, ll, n / ll, ll / best);
    }
    free(c.w);
    free(c.act);
    free(c.out);
  }
  return 0;
}
