/* unicode_stream: incremental UTF-8 validation with U+FFFD replacement. */
#include "unicode_stream.h"

#include <string.h>

static const char k_fffd[3] = {(char)0xEF, (char)0xBF, (char)0xBD};

/* Length of the sequence a lead byte starts, or 0 if it starts none. */
static uint8_t lead_len(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

/* Whether c may follow the bytes held so far. */
static bool continues(const nc_utf8_stream *s, unsigned char c) {
  if ((c & 0xC0) != 0x80) return false;
  if (s->n_pend == 1) {
    switch (s->pend[0]) {
    case 0xE0: return c >= 0xA0; /* no overlongs */
    case 0xED: return c <= 0x9F; /* no surrogates */
    case 0xF0: return c >= 0x90; /* no overlongs */
    case 0xF4: return c <= 0x8F; /* <= U+10FFFF */
    default: return true;
    }
  }
  return true;
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
    uint8_t l = lead_len(c);
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
