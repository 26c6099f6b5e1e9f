/* unicode: UTF-8 decoding (as llama.cpp does it, and strict), and the GPT-2
 * byte map. */
#include "unicode.h"

static inline bool is_cont(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

uint32_t nc_utf8_decode_lenient(const char *s, size_t len, size_t *off) {
  const unsigned char *p = (const unsigned char *)s + *off;
  size_t left = len - *off;
  unsigned char c = p[0];
  if (c < 0x80) {
    *off += 1;
    return c;
  }
  if (c < 0xC0) goto invalid;
  if (c < 0xE0) {
    if (left < 2 || !is_cont(p[1])) goto invalid;
    *off += 2;
    return ((uint32_t)(c & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (c < 0xF0) {
    if (left < 3 || !is_cont(p[1]) || !is_cont(p[2])) goto invalid;
    *off += 3;
    return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) |
           (p[2] & 0x3F);
  }
  if (c < 0xF8) {
    if (left < 4 || !is_cont(p[1]) || !is_cont(p[2]) || !is_cont(p[3]))
      goto invalid;
    uint32_t cp = ((uint32_t)(c & 0x07) << 18) |
                  ((uint32_t)(p[1] & 0x3F) << 12) |
                  ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    if (cp >= NC_UNICODE_MAX) goto invalid; /* llama.cpp aborts here */
    *off += 4;
    return cp;
  }
invalid:
  *off += 1;
  return NC_UNICODE_REPLACEMENT;
}

int nc_utf8_encode(uint32_t cp, char out[4]) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | ((cp >> 18) & 0x07));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Bytes that stand for themselves: '!'..'~', 0xA1..0xAC, 0xAE..0xFF. */
static bool gpt2_self(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

uint32_t nc_gpt2_byte_to_cp(uint8_t b) {
  if (gpt2_self(b)) return b;
  /* The others, in increasing order, map to U+0100, U+0101, ... */
  if (b <= 0x20) return 0x100u + b;               /* 0x00..0x20: 33 */
  if (b <= 0xA0) return 0x100u + 33 + (b - 0x7F); /* 0x7F..0xA0: 34 */
  return 0x100u + 67;                             /* 0xAD */
}

int nc_gpt2_cp_to_byte(uint32_t cp) {
  if (cp < 0x100) return gpt2_self(cp) ? (int)cp : -1;
  if (cp < 0x100 + 33) return (int)(cp - 0x100);
  if (cp < 0x100 + 67) return (int)(cp - 0x100 - 33 + 0x7F);
  if (cp == 0x100 + 67) return 0xAD;
  return -1;
}

int32_t nc_utf8_decode(const char *s, size_t n, size_t *len) {
  const unsigned char *p = (const unsigned char *)s;
  const int l = nc_utf8_lead_len(p[0]);
  *len = 1;
  if (l == 1) return p[0];
  if (l == 0 || n < (size_t)l || !nc_utf8_second_ok(p[0], p[1])) return -1;
  int32_t cp = p[0] & (0x7F >> l);
  for (int k = 1; k < l; k++) {
    if (!is_cont(p[k])) return -1;
    cp = (cp << 6) | (p[k] & 0x3F);
  }
  *len = (size_t)l;
  return cp;
}

bool nc_utf8_valid(const char *s, size_t len) {
  for (size_t i = 0, l; i < len; i += l)
    if (nc_utf8_decode(s + i, len - i, &l) < 0) return false;
  return true;
}
