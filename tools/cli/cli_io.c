#include "cli_io.h"
#include <stdbool.h>

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

/* Prints a piece quoted: printable ASCII and valid multi-byte UTF-8 as is,
 * everything else escaped. */
void cli_print_piece(FILE *out, const char *s, size_t n) {
  fputc('\'', out);
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    size_t l = c >= 0xF0 && c <= 0xF4   ? 4
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xC2 && c <= 0xDF ? 2
                                        : 1;
    bool ok = l > 1 && i + l <= n;
    for (size_t k = 1; ok && k < l; k++)
      ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
    if (ok) {
      fwrite(s + i, 1, l, out);
      i += l;
      continue;
    }
    if (c == '\n')
      fputs("\\n", out);
    else if (c == '\t')
      fputs("\\t", out);
    else if (c == '\r')
      fputs("\\r", out);
    else if (c == '\\')
      fputs("\\\\", out);
    else if (c == '\'')
      fputs("\\'", out);
    else if (c >= 0x20 && c < 0x7F)
      fputc(c, out);
    else
      fprintf(out, "\\x%02x", c);
    i++;
  }
  fputc('\'', out);
}

void cli_note_template(const nucleus_model *model, const char *who) {
  const char *src = nucleus_model_chat_template_source(model);
  if (src && strcmp(src, "file") && strcmp(src, "override"))
    fprintf(stderr,
            "%s: the model file has no chat template; using the built-in "
            "'%s' template (--chat-template FILE overrides)\n",
            who, src);
}

bool cli_parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}
