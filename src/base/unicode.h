/* unicode: code point categories and UTF-8 helpers for the tokenizers.
 *
 * The decoder reproduces llama.cpp's (unicode_cpts_from_utf8): a lead byte
 * followed by enough continuation bytes decodes without overlong or
 * surrogate checks; anything else is U+FFFD and consumes one byte. One
 * deliberate difference: llama.cpp aborts on a 4-byte form above U+10FFFF,
 * we treat its lead byte as invalid (U+FFFD) instead.
 */
#ifndef NC_UNICODE_H
#define NC_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Category flags (general category, first letter), plus White_Space. */
enum {
  NC_UF_NUMBER = 1,      /* \p{N} */
  NC_UF_LETTER = 2,      /* \p{L} */
  NC_UF_SEPARATOR = 4,   /* \p{Z} */
  NC_UF_MARK = 8,        /* \p{M} */
  NC_UF_PUNCT = 16,      /* \p{P} */
  NC_UF_SYMBOL = 32,     /* \p{S} */
  NC_UF_CONTROL = 64,    /* \p{C} except unassigned */
  NC_UF_WHITESPACE = 128 /* \s */
};

#define NC_UNICODE_MAX 0x110000u
#define NC_UNICODE_REPLACEMENT 0xFFFDu

extern const uint16_t nc_unicode_stage1[NC_UNICODE_MAX >> 8];
extern const uint8_t nc_unicode_stage2[];

/* Flags of a code point; 0 for unassigned ones and anything >= 0x110000. */
static inline uint8_t nc_unicode_flags(uint32_t cp) {
  if (cp >= NC_UNICODE_MAX) return 0;
  return nc_unicode_stage2[(size_t)nc_unicode_stage1[cp >> 8] * 256 +
                           (cp & 255)];
}

/* Decodes one code point at s[*off] (llama.cpp rules above) and advances. */
uint32_t nc_utf8_decode_lenient(const char *s, size_t len, size_t *off);

/* Encodes cp (<= 0x10FFFF, surrogates allowed) into out; returns 1..4. */
int nc_utf8_encode(uint32_t cp, char out[4]);

/* Length of a UTF-8 sequence from its lead byte, as llama.cpp's
 * unicode_len_utf8 (continuation and invalid bytes count 1, F8..FF 4). */
static inline size_t nc_utf8_seq_len(unsigned char lead) {
  static const uint8_t lut[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                  1, 1, 1, 1, 2, 2, 3, 4};
  return lut[lead >> 4];
}

/* The GPT-2 byte-to-unicode map: byte b becomes this code point. */
uint32_t nc_gpt2_byte_to_cp(uint8_t b);
/* Inverse: the byte a code point stands for, or -1. */
int nc_gpt2_cp_to_byte(uint32_t cp);

/* Strict UTF-8: the well-formed sequences of the Unicode standard (no
 * overlongs, no surrogates, nothing above U+10FFFF), in two rules that
 * nc_utf8_decode, nc_utf8_valid and the stream decoder (unicode_stream.h)
 * share. */
/* Length (1..4) of the well-formed sequence a lead byte starts, or 0 when it
 * starts none (continuation bytes, C0, C1, F5..FF). */
static inline int nc_utf8_lead_len(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}
/* Whether c may follow lead as the second byte of a well-formed sequence
 * (the bytes after it need only be continuation bytes). */
static inline bool nc_utf8_second_ok(unsigned char lead, unsigned char c) {
  if ((c & 0xC0) != 0x80) return false;
  switch (lead) {
  case 0xE0: return c >= 0xA0; /* no overlongs */
  case 0xED: return c <= 0x9F; /* no surrogates */
  case 0xF0: return c >= 0x90; /* no overlongs */
  case 0xF4: return c <= 0x8F; /* <= U+10FFFF */
  default: return true;
  }
}
/* Decodes the well-formed sequence at s (n > 0 bytes left): its code point,
 * with its length in *len; -1 when s does not start one (*len = 1). */
int32_t nc_utf8_decode(const char *s, size_t n, size_t *len);
/* Whether all of s is well-formed UTF-8. */
bool nc_utf8_valid(const char *s, size_t len);

#endif
