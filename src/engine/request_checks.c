/* request_checks: stop token ids, the cache salt, n against beam_width. */
#include "request_checks.h"

#include <string.h>

nc_code nc_stop_token_id_check(size_t index, int32_t id, int32_t n_vocab,
                               nc_error *err) {
  if (index >= NUCLEUS_MAX_STOP_TOKEN_IDS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop_token_ids: at most %d token ids are allowed",
                   NUCLEUS_MAX_STOP_TOKEN_IDS);
  if (id < 0 || (n_vocab > 0 && id >= n_vocab))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop_token_ids[%zu]: token %d is not a token id: allowed "
                   "range [0, %d]",
                   index, id, n_vocab > 0 ? n_vocab - 1 : INT32_MAX);
  return NC_OK;
}

nc_code nc_cache_salt_check(const char *s, size_t len, nc_error *err) {
  if (len > NUCLEUS_MAX_CACHE_SALT_BYTES)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "cache_salt: %zu bytes; at most %d are allowed", len,
                   NUCLEUS_MAX_CACHE_SALT_BYTES);
  if (len && memchr(s, 0, len))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "cache_salt: must not contain NUL bytes");
  return NC_OK;
}

nc_code nc_beam_check(int32_t n, int32_t beam_width, nc_error *err) {
  if (beam_width > 1 && n > beam_width)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'n' (%d) must not exceed beam_width (%d): beam search "
                   "returns the best n of its beams",
                   n, beam_width);
  return NC_OK;
}
