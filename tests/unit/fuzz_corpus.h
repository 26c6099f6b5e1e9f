/* Unit tests replay the committed fuzz corpora: fuzz_corpus_replay calls fn
 * on the bytes of every file in fuzz/corpus/NAME (below $NUCLEUS_ROOT, or
 * the current folder) and returns how many there were; a missing folder or
 * an unreadable file fails the test. */
#ifndef NUCLEUS_TESTS_FUZZ_CORPUS_H
#define NUCLEUS_TESTS_FUZZ_CORPUS_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*fuzz_corpus_fn)(const uint8_t *data, size_t len, void *ctx);

static inline int fuzz_corpus_replay(const char *name, fuzz_corpus_fn fn,
                                     void *ctx) {
  const char *root = getenv("NUCLEUS_ROOT");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", root ? root : ".", name);
  DIR *d = opendir(dir);
  assert_non_null(d);
  static uint8_t buf[1 << 20];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fn(buf, len, ctx);
    n++;
  }
  closedir(d);
  return n;
}

#endif
