/* nucleus serve: base64 (RFC 4648, the standard alphabet), as data: URIs
 * and Anthropic's image blocks carry files and embeddings their floats. */
#ifndef NUCLEUS_SERVER_BASE64_H
#define NUCLEUS_SERVER_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Decodes s[0..len) into a malloc'd *out of *n bytes. Padding ('=') is
 * optional at the end and nowhere else; whitespace is not taken. Returns 0,
 * or -1 with *bad the offset of the first character that is not base64
 * (len for a length that no encoding has), *out NULL; -2 when out of
 * memory. */
int base64_decode(const char *s, size_t len, uint8_t **out, size_t *n,
                  size_t *bad);

/* s[0..n) in base64, padded, in a malloc'd string of *len characters
 * (NUL-terminated); NULL when out of memory. */
char *base64_encode(const uint8_t *s, size_t n, size_t *len);

#endif
