/* Helpers shared by the tokenizer tests: files, models, hex. */
#ifndef NC_TOKENIZER_TEST_UTIL_H
#define NC_TOKENIZER_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf_writer.h"
#include "test_require.h"
#include "tokenizer/vocab.h"

/* Reads a whole file (NUL-terminated) or returns NULL. */
static inline char *tt_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *p = malloc(cap + 1);
  size_t r;
  while (p && (r = fread(p + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      cap *= 2;
      char *q = realloc(p, cap + 1);
      if (!q) {
        free(p);
        p = NULL;
      }
      p = q;
    }
  }
  fclose(f);
  if (p) p[n] = '\0';
  if (len) *len = n;
  return p;
}

static inline const char *tt_root(void) {
  const char *r = getenv("NUCLEUS_ROOT");
  return r && *r ? r : ".";
}

/* The default model (SmolLM2) or NULL when absent. */
static inline const char *tt_smollm_path(void) {
  static char buf[4096];
  const char *m = getenv("NUCLEUS_MODEL");
  if (m && *m) return access(m, R_OK) == 0 ? m : NULL;
  snprintf(buf, sizeof buf, "%s/models/SmolLM2-135M-Instruct.Q4_1.gguf",
           tt_root());
  return access(buf, R_OK) == 0 ? buf : NULL;
}

static inline const char *tt_gemma_path(void) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/models/gemma-3-270m-q4_k_m.gguf", tt_root());
  return access(buf, R_OK) == 0 ? buf : NULL;
}

/* Which file a test wanted when its path function returned NULL. */
static inline const char *tt_model_hint(bool gemma) {
  return gemma ? "models/gemma-3-270m-q4_k_m.gguf is missing "
                 "(scripts/fetch_gemma.sh)"
               : "the default model ($NUCLEUS_MODEL or "
                 "models/SmolLM2-135M-Instruct.Q4_1.gguf) is missing (make "
                 "model)";
}

/* Loads a vocab from a GGUF path (pre may be NULL); NULL on failure. */
static inline nc_vocab *tt_load_vocab(const char *path, const char *pre) {
  if (!path) return NULL;
  gguf_file *f = NULL;
  nc_error err = {0};
  if (gguf_open(path, &f, &err) != NC_OK) {
    fprintf(stderr, "gguf_open(%s): %s\n", path, err.message);
    return NULL;
  }
  nc_vocab *v = NULL;
  nc_vocab_options opt = {.pre_override = pre};
  if (nc_vocab_load_ex(f, &opt, &v, &err) != NC_OK)
    fprintf(stderr, "vocab load(%s): %s\n", path, err.message);
  gguf_close(f);
  return v;
}

/* The vocab of a model the test needs (tt_smollm_path() or tt_gemma_path()):
 * a missing file or a load error fails the test, or skips it under
 * NUCLEUS_TESTS_WITHOUT_MODEL=1 (test_require.h). */
static inline nc_vocab *tt_need_vocab(const char *path, bool gemma,
                                      const char *pre) {
  if (!path) NC_MODEL_UNAVAILABLE(tt_model_hint(gemma));
  nc_vocab *v = tt_load_vocab(path, pre);
  if (!v) {
    char why[4200];
    snprintf(why, sizeof why, "cannot load the vocab of %s (see above)", path);
    NC_MODEL_UNAVAILABLE(why);
  }
  return v;
}

static inline int tt_hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes n hex digits at s into out (n/2 bytes); returns bytes or -1. */
static inline long tt_unhex(const char *s, size_t n, char *out) {
  if (n % 2) return -1;
  for (size_t i = 0; i < n; i += 2) {
    int a = tt_hexval(s[i]), b = tt_hexval(s[i + 1]);
    if (a < 0 || b < 0) return -1;
    out[i / 2] = (char)(a * 16 + b);
  }
  return (long)(n / 2);
}

/* ------------------------------------------------ in-memory vocabularies */

typedef struct spec {
  const char *model; /* tokenizer.ggml.model */
  const char *pre;   /* NULL: absent */
  const char *const *tokens;
  size_t n_tokens;
  const float *scores; /* NULL: absent */
  size_t n_scores;
  const int32_t *types; /* NULL: absent */
  size_t n_types;
  const char *const *merges; /* NULL: absent */
  size_t n_merges;
  int64_t bos;          /* < 0: absent */
  int add_bos;          /* -1: absent */
  int add_space_prefix; /* -1: absent */
} spec;

static inline void kv_bool(gw *b, const char *key, bool v) {
  gw_key(b, key, 7);
  gw_u8(b, v);
}

/* Writes the GGUF and loads it; returns the load status. */
static inline nc_code load_spec(const spec *s, nc_vocab **v, nc_error *err) {
  gw b = {0};
  uint64_t n_kv = 2 + (s->pre != NULL) + (s->scores != NULL) +
                  (s->types != NULL) + (s->merges != NULL) + (s->bos >= 0) +
                  (s->add_bos >= 0) + (s->add_space_prefix >= 0);
  gw_header(&b, 3, 0, n_kv);
  gw_kv_str(&b, "tokenizer.ggml.model", s->model);
  if (s->pre) gw_kv_str(&b, "tokenizer.ggml.pre", s->pre);
  gw_kv_arr(&b, "tokenizer.ggml.tokens", 8, s->n_tokens);
  for (size_t i = 0; i < s->n_tokens; i++)
    gw_str(&b, s->tokens[i]);
  if (s->scores) {
    gw_kv_arr(&b, "tokenizer.ggml.scores", 6, s->n_scores);
    for (size_t i = 0; i < s->n_scores; i++)
      gw_f32(&b, s->scores[i]);
  }
  if (s->types) {
    gw_kv_arr(&b, "tokenizer.ggml.token_type", 5, s->n_types);
    for (size_t i = 0; i < s->n_types; i++)
      gw_u32(&b, (uint32_t)s->types[i]);
  }
  if (s->merges) {
    gw_kv_arr(&b, "tokenizer.ggml.merges", 8, s->n_merges);
    for (size_t i = 0; i < s->n_merges; i++)
      gw_str(&b, s->merges[i]);
  }
  if (s->bos >= 0)
    gw_kv_u32(&b, "tokenizer.ggml.bos_token_id", (uint32_t)s->bos);
  if (s->add_bos >= 0) kv_bool(&b, "tokenizer.ggml.add_bos_token", s->add_bos);
  if (s->add_space_prefix >= 0)
    kv_bool(&b, "tokenizer.ggml.add_space_prefix", s->add_space_prefix);
  gw_align(&b, 32);
  gguf_file *f = NULL;
  nc_code rc = gguf_open_memory(b.p, b.len, &f, err);
  if (rc == NC_OK) {
    rc = nc_vocab_load(f, v, err);
    gguf_close(f);
  }
  gw_free(&b);
  return rc;
}

#endif
