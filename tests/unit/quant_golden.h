/* Loads the golden files of tests/data/quant (scripts/gen_quant_golden.py)
 * for test_quant and test_kernels. Header-only; tests only. */
#ifndef QUANT_GOLDEN_H
#define QUANT_GOLDEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The golden directory: $NUCLEUS_ROOT/tests/data/quant, else relative to
 * this source file (the build compiles from the repository root). */
static void golden_path(const char *name, char *buf, size_t cap) {
  const char *root = getenv("NUCLEUS_ROOT");
  if (root && *root) {
    snprintf(buf, cap, "%s/tests/data/quant/%s", root, name);
    return;
  }
  const char *self = __FILE__; /* tests/unit/quant_golden.h */
  const char *slash = strrchr(self, '/');
  int dir = slash ? (int)(slash - self) : 0;
  snprintf(buf, cap, "%.*s%s../data/quant/%s", dir, self, slash ? "/" : "",
           name);
}

/* Reads a whole golden file; returns NULL (and *len = 0) when absent. The
 * caller frees. */
static unsigned char *golden_read(const char *name, size_t *len) {
  char path[1024];
  golden_path(name, path, sizeof path);
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long sz = ftell(f);
    if (sz >= 0 && fseek(f, 0, SEEK_SET) == 0) {
      buf = malloc((size_t)sz + 1);
      if (buf && fread(buf, 1, (size_t)sz, f) == (size_t)sz) {
        *len = (size_t)sz;
      } else {
        free(buf);
        buf = NULL;
      }
    }
  }
  fclose(f);
  return buf;
}

#endif
