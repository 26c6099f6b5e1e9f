/* stop_matcher: stop strings over a stream of text, with hold-back.
 *
 * Text arrives in pieces (as the incremental detokenizer releases it: whole
 * UTF-8 characters). The matcher releases only text that can no longer become
 * part of a stop string: a suffix that is a prefix of some stop string is held
 * back until the next piece decides it. On a match, the text before the stop
 * string is released (plus the stop string itself when include_stop is set)
 * and the matcher reports which stop string matched; nothing more is released
 * after that. Released text is never revised. The match is the first point in
 * the stream where a stop string is complete (on a tie, the longest one), so
 * streaming never waits for a longer stop string that might still complete.
 */
#ifndef NC_STOP_MATCHER_H
#define NC_STOP_MATCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef struct nc_stop_matcher nc_stop_matcher;

/* Stop string number index, len bytes at s: index below
 * NUCLEUS_MAX_STOP_STRINGS, 1 to NUCLEUS_MAX_STOP_STRING_BYTES bytes, no NUL
 * byte. The one message of each failure, on every surface
 * (nucleus_stop_string_check). */
nc_code nc_stop_check(size_t index, const char *s, size_t len, nc_error *err);

/* Copies the stop strings, which nucleus_engine_submit checked
 * (nc_stop_check; asserted here). */
nc_code nc_stop_matcher_create(const char *const *stops, size_t n_stops,
                               bool include_stop, nc_stop_matcher **out,
                               nc_error *err);
void nc_stop_matcher_free(nc_stop_matcher *m);

/* While disarmed (before min_tokens), stop strings do not end the stream;
 * hold-back still applies. Matchers start armed. */
void nc_stop_matcher_arm(nc_stop_matcher *m, bool armed);

/* Appends text; released (released_len bytes) is the text safe to emit now
 * (valid until the next call). Returns the index of the stop string that
 * matched, or -1. After a match, further pushes release nothing. */
int nc_stop_matcher_push(nc_stop_matcher *m, const char *text, size_t len,
                         const char **released, size_t *released_len);

/* End of stream without a match: releases everything held back. */
void nc_stop_matcher_flush(nc_stop_matcher *m, const char **released,
                           size_t *released_len);

const char *nc_stop_matcher_string(const nc_stop_matcher *m, int index);

#endif
