/* unicode_stream: incremental UTF-8 validation with U+FFFD replacement. */
#include "unicode_stream.h"

#include <string.h>

#include "unicode.h"

static const char k_fffd[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

/* Whether c may follow the bytes held so far. */
static bool continues(const nc_utf8_stream *s, unsigned char c) {
  if (s->n_pend == 1) return nc_utf8_second_ok(s->pend[0], c);
  return (c & 0xC0) == 0x80;
}

size_t nc_utf8_stream_feed(nc_utf8_stream *s, const char *in, size_t n,
                           char *out) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)in[i];
    if (s->n_pend) {
      if (continues(s, c)) {
        s->pend[s->n_pend++] = c;
        if (s->n_pend == s->need) {
          memcpy(out + w, s->pend, s->n_pend);
          w += s->n_pend;
          s->n_pend = 0;
        }
        continue;
      }
      memcpy(out + w, k_fffd, 3); /* an interrupted prefix */
      w += 3;
      s->n_pend = 0;
    }
    uint8_t l = (uint8_t)nc_utf8_lead_len(c);
    if (l == 1) {
      out[w++] = (char)c;
    } else if (l == 0) {
      memcpy(out + w, k_fffd, 3);
      w += 3;
    } else {
      s->pend[0] = c;
      s->n_pend = 1;
      s->need = l;
    }
  }
  return w;
}

size_t nc_utf8_stream_flush(nc_utf8_stream *s, char *out) {
  if (!s->n_pend) return 0;
  s->n_pend = 0;
  memcpy(out, k_fffd, 3);
  return 3;
}
