#include "cli_io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *cli_read_stream(FILE *f, size_t *len) {
  size_t cap = 1 << 14, n = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  for (;;) {
    if (cap - n < 2) {
      char *grown = cap > ((size_t)1 << 40) ? NULL : realloc(buf, cap * 2);
      if (!grown) {
        free(buf);
        errno = ENOMEM;
        return NULL;
      }
      buf = grown;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

char *cli_read_file(const char *path, size_t *len) {
  if (!strcmp(path, "-")) return cli_read_stream(stdin, len);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = cli_read_stream(f, len);
  int saved = errno;
  fclose(f);
  errno = saved;
  return buf;
}
