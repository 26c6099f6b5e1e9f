/* bench/flash_split: how far flash attention's split order (the engine's
 * reuse orders' default, batch.h NC_FLASH_SPLIT) moves a model's logits
 * from llama.cpp's tiled order (NC_FLASH_TILED: llama.cpp's default for a
 * prompt's rows, which nucleus reproduces within 1e-6, docs/FIDELITY.md),
 * teacher-forced over a long text. The two orders run side by side, chunk
 * by chunk, every other step the same (the reuse orders' matmuls), so the
 * difference is the attention order alone. Prints top-1 agreement, mean
 * and max KL(tiled || split) and max |logit diff| per depth range and in
 * all. Not a test: `make bench-split`, then
 *   build/release/bench/flash_split MODEL TEXT [positions] [threads]
 * (positions default 4096, capped at the model's training context; the
 * text is repeated until it has enough tokens). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"
#include "nucleus.h"

enum { CHUNK = 256, BLOCK = 16, RANGES = 8 };

typedef struct side {
  nc_kv_cache *kv;
  nc_context *ctx;
  int32_t seq;
} side;

static int open_side(const nucleus_model *m, int32_t n, side *s) {
  nucleus_error err;
  if (nc_kv_cache_create_typed(nc_hp_kv_shape(nc_model_hparams(m)),
                               nc_model_kv_types(m), (n + BLOCK - 1) / BLOCK,
                               BLOCK, 1, &s->kv, &err) != NC_OK ||
      nc_context_create(m, s->kv, CHUNK, &s->ctx, &err) != NC_OK) {
    fprintf(stderr, "flash_split: %s\n", err.message);
    return 1;
  }
  nc_context_set_n_ctx(s->ctx, nc_model_hparams(m)->n_ctx_train);
  s->seq = nc_kv_seq_new(s->kv);
  if (nc_kv_seq_reserve(s->kv, s->seq, n, &err) != NC_OK) {
    fprintf(stderr, "flash_split: %s\n", err.message);
    return 1;
  }
  return 0;
}

/* Tokens [i0, i1) through one side in the given flash attention order. */
static int step(side *s, nc_batch *b, const int32_t *tok, int32_t i0,
                int32_t i1, nc_flash_order order, float *logits) {
  nc_batch_clear(b);
  for (int32_t i = i0; i < i1; i++) {
    nc_batch_add_reusable(b, tok[i], i, s->seq, true);
    b->prompt_order[b->n_tokens - 1] = (uint8_t)order;
  }
  nucleus_error err;
  if (nc_context_forward(s->ctx, b, logits, &err) != NC_OK) {
    fprintf(stderr, "flash_split: %s\n", err.message);
    return 1;
  }
  return 0;
}

typedef struct stats {
  int64_t n, top1;
  double kl_sum, kl_max, diff_max;
} stats;

static int32_t argmax(const float *x, int32_t n) {
  int32_t b = 0;
  for (int32_t i = 1; i < n; i++)
    if (x[i] > x[b]) b = i;
  return b;
}

/* log-sum-exp of a row, in double */
static double lse(const float *x, int32_t n) {
  double mx = x[0], s = 0;
  for (int32_t i = 1; i < n; i++)
    mx = x[i] > mx ? x[i] : mx;
  for (int32_t i = 0; i < n; i++)
    s += exp((double)x[i] - mx);
  return mx + log(s);
}

static void add_row(stats *st, const float *p, const float *q, int32_t nv) {
  const double lp = lse(p, nv), lq = lse(q, nv);
  double kl = 0, d = 0;
  for (int32_t i = 0; i < nv; i++) {
    const double a = (double)p[i] - lp, b = (double)q[i] - lq;
    kl += exp(a) * (a - b);
    d = fmax(d, fabs((double)p[i] - q[i]));
  }
  st->n++;
  st->top1 += argmax(p, nv) == argmax(q, nv);
  st->kl_sum += kl;
  st->kl_max = fmax(st->kl_max, kl);
  st->diff_max = fmax(st->diff_max, d);
}

static void print_stats(const char *what, const stats *st) {
  if (st->n == 0) return;
  printf("| %s | %lld | %.2f%% | %.3g | %.3g | %.3g |\n", what,
         (long long)st->n, 100.0 * (double)st->top1 / (double)st->n,
         st->kl_sum / (double)st->n, st->kl_max, st->diff_max);
}

static char *read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = n > 0 ? malloc((size_t)n) : NULL;
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  fclose(f);
  *len = s ? (size_t)n : 0;
  return s;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: flash_split MODEL TEXT [positions] [threads]\n");
    return 2;
  }
  int32_t n = argc > 3 ? atoi(argv[3]) : 4096;
  const int threads = argc > 4 ? atoi(argv[4]) : 2;
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = threads;
  mp.flash_attn = NUCLEUS_FLASH_ATTN_ON;
  nucleus_model *m = NULL;
  nucleus_error err;
  if (nucleus_model_load(argv[1], &mp, &m, &err) != NUCLEUS_OK) {
    fprintf(stderr, "flash_split: %s\n", err.message);
    return 1;
  }
  const nc_hparams *hp = nc_model_hparams(m);
  if (n > hp->n_ctx_train) n = hp->n_ctx_train;
  if (n < 1) n = 1;
  size_t len = 0;
  char *text = read_text(argv[2], &len);
  int32_t *ids = NULL;
  size_t n_ids = 0;
  if (!text ||
      nucleus_tokenize(m, text, len, true, false, &ids, &n_ids, &err) !=
          NUCLEUS_OK ||
      n_ids < 2) {
    fprintf(stderr, "flash_split: cannot read or tokenize %s\n", argv[2]);
    return 1;
  }
  int32_t *tok = malloc(sizeof(int32_t) * (size_t)n);
  for (int32_t i = 0; i < n; i++) /* the text again after its end */
    tok[i] = ids[i < (int32_t)n_ids ? i : 1 + (i - 1) % ((int32_t)n_ids - 1)];
  const int32_t nv = hp->n_vocab;
  float *a = malloc(sizeof(float) * (size_t)CHUNK * (size_t)nv),
        *b = malloc(sizeof(float) * (size_t)CHUNK * (size_t)nv);
  side tiled = {0}, split = {0};
  nc_batch batch;
  if (!a || !b || open_side(m, n, &tiled) || open_side(m, n, &split) ||
      nc_batch_init(&batch, CHUNK, &err) != NC_OK)
    return 1;
  stats all = {0}, range[RANGES] = {{0}};
  const int32_t width = (n + RANGES - 1) / RANGES;
  for (int32_t i0 = 0; i0 < n; i0 += CHUNK) {
    const int32_t i1 = i0 + CHUNK < n ? i0 + CHUNK : n;
    if (step(&tiled, &batch, tok, i0, i1, NC_FLASH_TILED, a) ||
        step(&split, &batch, tok, i0, i1, NC_FLASH_SPLIT, b))
      return 1;
    for (int32_t i = i0; i < i1; i++) {
      const float *p = a + (size_t)(i - i0) * nv,
                  *q = b + (size_t)(i - i0) * nv;
      add_row(&all, p, q, nv);
      add_row(&range[i / width], p, q, nv);
    }
  }
  printf("%s, %d positions, %d threads, kernels %s: split vs tiled order\n\n",
         argv[1], (int)n, threads, nucleus_model_kernels(m));
  printf("| positions | rows | top-1 | mean KL | max KL | max |logit diff| |\n"
         "|---|---:|---:|---:|---:|---:|\n");
  for (int r = 0; r < RANGES; r++) {
    char what[64];
    const int32_t lo = r * width,
                  hi = (r + 1) * width < n ? (r + 1) * width : n;
    snprintf(what, sizeof what, "%d..%d", (int)lo, (int)hi - 1);
    print_stats(what, &range[r]);
  }
  print_stats("all", &all);
  nc_batch_free(&batch);
  nc_context_free(tiled.ctx);
  nc_context_free(split.ctx);
  nc_kv_cache_free(tiled.kv);
  nc_kv_cache_free(split.kv);
  nucleus_free(ids);
  free(tok), free(text), free(a), free(b);
  nucleus_model_free(m);
  return 0;
}
