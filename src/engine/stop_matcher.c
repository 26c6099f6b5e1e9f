#include "stop_matcher.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct nc_stop_matcher {
  char **stops;
  size_t *stop_lens;
  size_t n_stops;
  bool include_stop;
  bool armed;
  bool matched;
  /* Held-back text: always shorter than the longest stop string. */
  char *pending;
  size_t pending_len, pending_cap;
  /* What the last call released. */
  char *out;
  size_t out_cap;
};

void nc_stop_matcher_free(nc_stop_matcher *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n_stops; i++)
    free(m->stops[i]);
  free(m->stops);
  free(m->stop_lens);
  free(m->pending);
  free(m->out);
  free(m);
}

nc_code nc_stop_check(size_t index, const char *s, size_t len, nc_error *err) {
  if (index >= NUCLEUS_MAX_STOP_STRINGS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop: at most %d stop strings are allowed",
                   NUCLEUS_MAX_STOP_STRINGS);
  if (!s || len == 0 || len > NUCLEUS_MAX_STOP_STRING_BYTES)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop[%zu]: %zu bytes; each stop string must be 1 to %d "
                   "bytes",
                   index, s ? len : 0, NUCLEUS_MAX_STOP_STRING_BYTES);
  if (memchr(s, 0, len))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "stop[%zu]: stop strings must not contain NUL bytes", index);
  return NC_OK;
}

nc_code nc_stop_matcher_create(const char *const *stops, size_t n_stops,
                               bool include_stop, nc_stop_matcher **out,
                               nc_error *err) {
  *out = NULL;
  for (size_t i = 0; i < n_stops; i++)
    assert(nc_stop_check(i, stops[i], stops[i] ? strlen(stops[i]) : 0, NULL) ==
           NC_OK);
  nc_stop_matcher *m = calloc(1, sizeof *m);
  if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  m->include_stop = include_stop;
  m->armed = true;
  m->stops = calloc(n_stops ? n_stops : 1, sizeof *m->stops);
  m->stop_lens = calloc(n_stops ? n_stops : 1, sizeof *m->stop_lens);
  if (!m->stops || !m->stop_lens) goto nomem;
  for (size_t i = 0; i < n_stops; i++) {
    size_t len = strlen(stops[i]);
    m->stops[i] = malloc(len + 1);
    if (!m->stops[i]) goto nomem;
    memcpy(m->stops[i], stops[i], len + 1);
    m->stop_lens[i] = len;
    m->n_stops = i + 1;
  }
  *out = m;
  return NC_OK;
nomem:
  nc_stop_matcher_free(m);
  return nc_fail(err, NC_ERR_NOMEM, "out of memory");
}

void nc_stop_matcher_arm(nc_stop_matcher *m, bool armed) {
  m->armed = armed;
}

const char *nc_stop_matcher_string(const nc_stop_matcher *m, int index) {
  if (index < 0 || (size_t)index >= m->n_stops) return NULL;
  return m->stops[index];
}

static bool reserve(char **buf, size_t *cap, size_t need) {
  if (need <= *cap) return true;
  size_t cap2 = *cap ? *cap : 64;
  while (cap2 < need)
    cap2 *= 2;
  char *p = realloc(*buf, cap2);
  if (!p) return false;
  *buf = p;
  *cap = cap2;
  return true;
}

/* The stop string occurrence that completes first (smallest end; on a tie
 * the one that starts earliest, i.e. the longest). Returns its start or -1.
 * Earlier pushes found no complete match, so every match here ends inside
 * the newest piece: this is the first point in the stream where a stop
 * string is complete. */
static long find_match(const nc_stop_matcher *m, int *which) {
  long best_start = -1;
  size_t best_end = 0;
  for (size_t i = 0; i < m->n_stops; i++) {
    size_t sl = m->stop_lens[i];
    for (size_t p = 0; p + sl <= m->pending_len; p++) {
      if (memcmp(m->pending + p, m->stops[i], sl) != 0) continue;
      size_t end = p + sl;
      if (best_start < 0 || end < best_end ||
          (end == best_end && (long)p < best_start)) {
        best_start = (long)p;
        best_end = end;
        *which = (int)i;
      }
      break; /* later occurrences of this stop end later */
    }
  }
  return best_start;
}

/* Smallest p such that pending[p..] is a proper prefix of some stop string
 * (pending_len when no suffix is). */
static size_t holdback_start(const nc_stop_matcher *m) {
  for (size_t p = 0; p < m->pending_len; p++) {
    size_t tail = m->pending_len - p;
    for (size_t i = 0; i < m->n_stops; i++)
      if (tail < m->stop_lens[i] &&
          memcmp(m->pending + p, m->stops[i], tail) == 0)
        return p;
  }
  return m->pending_len;
}

/* Moves pending[0..n) to the output buffer and shifts the rest down. */
static void release(nc_stop_matcher *m, size_t n) {
  memcpy(m->out, m->pending, n);
  memmove(m->pending, m->pending + n, m->pending_len - n);
  m->pending_len -= n;
}

int nc_stop_matcher_push(nc_stop_matcher *m, const char *text, size_t len,
                         const char **released, size_t *released_len) {
  *released = "";
  *released_len = 0;
  if (m->matched || len == 0) return -1;
  if (!reserve(&m->pending, &m->pending_cap, m->pending_len + len) ||
      !reserve(&m->out, &m->out_cap, m->pending_len + len)) {
    return -1; /* out of memory: the piece is lost, nothing is revised */
  }
  memcpy(m->pending + m->pending_len, text, len);
  m->pending_len += len;

  if (m->armed) {
    int which = -1;
    long at = find_match(m, &which);
    if (at >= 0) {
      size_t keep = (size_t)at + (m->include_stop ? m->stop_lens[which] : 0);
      memcpy(m->out, m->pending, keep);
      *released = m->out;
      *released_len = keep;
      m->pending_len = 0;
      m->matched = true;
      return which;
    }
  }
  size_t n = holdback_start(m);
  release(m, n);
  *released = m->out;
  *released_len = n;
  return -1;
}

void nc_stop_matcher_flush(nc_stop_matcher *m, const char **released,
                           size_t *released_len) {
  *released = "";
  *released_len = 0;
  if (m->matched || m->pending_len == 0) return;
  if (!reserve(&m->out, &m->out_cap, m->pending_len)) return;
  size_t n = m->pending_len;
  release(m, n);
  *released = m->out;
  *released_len = n;
}
