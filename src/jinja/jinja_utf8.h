/* jinja_utf8: code-point level helpers so string operations follow Python's
 * str (which counts, slices and strips code points, not bytes). Invalid
 * UTF-8 bytes are treated as one code point each (their byte value). */
#ifndef NC_JINJA_UTF8_H
#define NC_JINJA_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes the code point at s (n > 0 bytes left); *adv gets its length. */
uint32_t ju_decode(const char *s, size_t n, size_t *adv);
/* Encodes cp into out (4 bytes room); returns the length. */
size_t ju_encode(uint32_t cp, char *out);
/* Number of code points in s. */
size_t ju_count(const char *s, size_t n);
/* Byte offset of code point index i (clamped to n). */
size_t ju_offset(const char *s, size_t n, size_t i);

/* Python's str.isspace() for one code point. */
bool ju_isspace(uint32_t cp);
bool ju_isalpha(uint32_t cp);
bool ju_isdigit(uint32_t cp);
/* Simple case mappings: ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic. */
uint32_t ju_upper(uint32_t cp);
uint32_t ju_lower(uint32_t cp);
bool ju_iscased(uint32_t cp);

#endif
