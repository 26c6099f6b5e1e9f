/* unicode_stream: turning a byte stream into valid UTF-8 as it arrives.
 *
 * Policy (the Unicode "maximal subpart" rule, as Python's
 * bytes.decode("utf-8", "replace") and WHATWG decoders apply it): a prefix
 * of a well-formed sequence is held back until it completes; a byte that
 * can never continue or start a well-formed sequence (C0, C1, F5..FF,
 * stray continuation bytes, overlong and surrogate second bytes) produces
 * one U+FFFD at once, as does an interrupted prefix. At the end of the
 * stream, a held-back prefix becomes one U+FFFD.
 */
#ifndef NC_UNICODE_STREAM_H
#define NC_UNICODE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nc_utf8_stream {
  unsigned char pend[4];
  uint8_t n_pend, need; /* bytes held, bytes the sequence needs in all */
} nc_utf8_stream;

/* Feeds bytes; writes the valid UTF-8 that is now final into out, which
 * must have room for 3 * n + 4 bytes. Returns bytes written. */
size_t nc_utf8_stream_feed(nc_utf8_stream *s, const char *in, size_t n,
                           char *out);
/* End of stream: writes U+FFFD (3 bytes) if a prefix was held. */
size_t nc_utf8_stream_flush(nc_utf8_stream *s, char *out);
/* Bytes currently held back (0..3). */
static inline size_t nc_utf8_stream_pending(const nc_utf8_stream *s) {
  return s->n_pend;
}

#endif
