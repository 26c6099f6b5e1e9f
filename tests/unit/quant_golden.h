/* Loads the golden files of tests/data/quant (scripts/gen_quant_golden.py)
 * for test_quant and test_kernels. Header-only; tests only. */
#ifndef QUANT_GOLDEN_H
#define QUANT_GOLDEN_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Candidate paths of a golden file, tried in order: $NUCLEUS_ROOT/tests/
 * data/quant, relative to this source file (the build compiles from the
 * repository root), and relative to the test binary
 * (build/<variant>/tests/<test>). Returns false when i is past the last. */
static bool golden_path(int i, const char *name, char *buf, size_t cap) {
  if (i == 0) {
    const char *root = getenv("NUCLEUS_ROOT");
    snprintf(buf, cap, "%s/tests/data/quant/%s", root ? root : ".", name);
    return true;
  }
  if (i == 1) {
    const char *self = __FILE__; /* tests/unit/quant_golden.h */
    const char *slash = strrchr(self, '/');
    int dir = slash ? (int)(slash - self) : 0;
    snprintf(buf, cap, "%.*s%s../data/quant/%s", dir, self, slash ? "/" : "",
             name);
    return true;
  }
  if (i == 2) {
    char exe[768];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return true; /* buf keeps the previous candidate */
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(buf, cap, "%s/../../../tests/data/quant/%s", exe, name);
    return true;
  }
  return false;
}

/* Reads a whole golden file; returns NULL (and *len = 0) when absent. The
 * caller frees. */
static unsigned char *golden_read(const char *name, size_t *len) {
  char path[1024];
  *len = 0;
  FILE *f = NULL;
  for (int i = 0; !f && golden_path(i, name, path, sizeof path); i++)
    f = fopen(path, "rb");
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
