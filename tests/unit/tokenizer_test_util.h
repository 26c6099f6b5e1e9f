/* Helpers shared by the tokenizer tests: files, models, hex. */
#ifndef NC_TOKENIZER_TEST_UTIL_H
#define NC_TOKENIZER_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf.h"
#include "vocab.h"

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
  nc_vocab_options opt = {pre};
  if (nc_vocab_load_ex(f, &opt, &v, &err) != NC_OK)
    fprintf(stderr, "vocab load(%s): %s\n", path, err.message);
  gguf_close(f);
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

#endif
