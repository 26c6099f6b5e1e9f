/* nucleus serve: base64 encoding and decoding. */
#include "base64.h"

#include <stdlib.h>

static int sextet(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int base64_decode(const char *s, size_t len, uint8_t **out, size_t *n,
                  size_t *bad) {
  *out = NULL;
  *n = 0;
  size_t body = len;
  if (len % 4 == 0 && body && s[body - 1] == '=') body--;
  if (len % 4 == 0 && body && s[body - 1] == '=') body--;
  uint8_t *buf = malloc(body / 4 * 3 + 3);
  if (!buf) return -2;
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < body; i++) {
    int v = sextet((unsigned char)s[i]);
    if (v < 0) {
      free(buf);
      *bad = i;
      return -1;
    }
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf[o++] = (uint8_t)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (body % 4 == 1) { /* 6 bits left over: no encoding ends so */
    free(buf);
    *bad = len;
    return -1;
  }
  *out = buf;
  *n = o;
  return 0;
}

char *base64_encode(const uint8_t *s, size_t n, size_t *len) {
  static const char A[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const size_t out_len = (n + 2) / 3 * 4;
  char *out = malloc(out_len + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    const unsigned x = (unsigned)s[i] << 16 |
                       (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
                       (i + 2 < n ? s[i + 2] : 0);
    out[o++] = A[x >> 18 & 63];
    out[o++] = A[x >> 12 & 63];
    out[o++] = i + 1 < n ? A[x >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? A[x & 63] : '=';
  }
  out[o] = 0;
  *len = o;
  return out;
}
