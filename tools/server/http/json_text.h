/* nucleus serve: JSON strings from arbitrary bytes (invalid UTF-8 becomes
 * U+FFFD, so a token piece can never make a response unencodable). */
#ifndef NUCLEUS_SERVER_JSON_TEXT_H
#define NUCLEUS_SERVER_JSON_TEXT_H

#include <jansson.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
size_t utf8_sequence_length(const unsigned char *s, size_t n);

/* A JSON string of the bytes (never NULL unless out of memory). */
json_t *json_text(const char *s, size_t n);

/* A JSON number that is always finite (non-finite values become -9999,
 * as vLLM does for -inf logprobs). */
json_t *json_finite(double v);

#endif
