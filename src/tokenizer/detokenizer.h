/* detokenizer: token ids back to text.
 *
 * nc_token_to_piece and nc_detokenize follow llama.cpp's token_to_piece and
 * llama_detokenize(remove_special = skip_special, unparse_special =
 * !skip_special): control/unknown tokens render as nothing unless special,
 * byte-level BPE text is unmapped to bytes, SPM "\u2581" becomes a space,
 * <0xNN> tokens are that byte, the first piece loses one leading space when
 * add_space_prefix is set (kept when a leading BOS was skipped), and
 * clean_spaces vocabularies get llama.cpp's three clean-up passes. Output
 * is the raw bytes, which may be invalid UTF-8.
 *
 * The incremental detokenizer (nc_detok) releases only text that will never
 * change: valid UTF-8 with the unicode_stream.h replacement policy. It
 * applies the leading-space rule but not clean_spaces (which needs the
 * future); its stream equals nc_utf8_sanitize(nc_detokenize_ex(clean =
 * false)) of the same ids. (One exception: nc_detokenize drops a trailing
 * EOS when the vocab adds EOS and skip_special is set; a stream cannot
 * know a token is the last, so it renders it like any other. EOS is a
 * control token in practice, rendered as nothing when skipping.)
 */
#ifndef NC_DETOKENIZER_H
#define NC_DETOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "vocab.h"

/* Copies min(cap, needed) bytes of the piece into buf (no NUL) and returns
 * the bytes needed; 0 for ids out of range. */
size_t nc_token_to_piece(const nc_vocab *v, int32_t id, bool special, char *buf,
                         size_t cap);

/* *out is malloc'd and NUL-terminated; *len_out excludes the NUL. Ids out
 * of range are an NC_ERR_INVALID_ARGUMENT error. */
nc_code nc_detokenize(const nc_vocab *v, const int32_t *ids, size_t n,
                      bool skip_special, char **out, size_t *len_out,
                      nc_error *err);
/* As nc_detokenize, choosing whether clean_spaces passes run (when the
 * vocab asks for them). */
nc_code nc_detokenize_ex(const nc_vocab *v, const int32_t *ids, size_t n,
                         bool skip_special, bool clean, char **out,
                         size_t *len_out, nc_error *err);

typedef struct nc_detok nc_detok;

/* NULL when out of memory. */
nc_detok *nc_detok_create(const nc_vocab *v, bool skip_special);
void nc_detok_free(nc_detok *d);
/* Pushes one token; (*text, *len) is the text released now (maybe empty),
 * valid until the next call on d. Ids out of range release nothing. */
void nc_detok_push(nc_detok *d, int32_t id, const char **text, size_t *len);
/* End of stream: a dangling partial sequence becomes U+FFFD. */
void nc_detok_flush(nc_detok *d, const char **text, size_t *len);

/* Whole-buffer version of the stream policy: malloc'd, NUL-terminated. */
char *nc_utf8_sanitize(const char *s, size_t n, size_t *len_out);

#endif
