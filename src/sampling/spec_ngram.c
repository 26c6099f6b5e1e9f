/* spec_ngram: drafts by lookup (spec_ngram.h). */
#include "spec_ngram.h"

#include <string.h>

static bool key_at(const int32_t *source, int32_t i, const int32_t *key,
                   int32_t n) {
  return memcmp(source + i, key, (size_t)n * sizeof *key) == 0;
}

/* The chosen occurrence of the key of length n (a token must follow it in
 * the source), or -1. */
static int32_t find(const nc_ngram_query *q, int32_t n) {
  const int32_t *key = q->hist + (q->n_hist - n);
  const int32_t last = q->n_source - n - 1; /* the latest start */
  if (!q->predicted) {
    for (int32_t i = last; i >= 0; i--)
      if (key_at(q->source, i, key, n)) return i;
    return -1;
  }
  int32_t first = -1;
  for (int32_t i = 0; i <= last; i++)
    if (key_at(q->source, i, key, n)) {
      if (i + n >= q->from) return i;
      if (first < 0) first = i;
    }
  return first;
}

int32_t nc_ngram_draft(const nc_ngram_query *q, int32_t *out,
                       int32_t *source_at) {
  *source_at = -1;
  if (q->max_draft <= 0 || q->n_source <= 0 || !q->source) return 0;
  int32_t at = -1;
  if (q->predicted && q->n_output == 0) {
    at = 0;
  } else {
    for (int32_t n = q->n_max; n >= q->n_min && at < 0; n--) {
      if (n < 1 || n > q->n_hist || n >= q->n_source) continue;
      int32_t i = find(q, n);
      if (i >= 0) at = i + n;
    }
  }
  if (at < 0 && q->predicted && !q->keys_only && q->from >= 0 &&
      q->from < q->n_source)
    at = q->from; /* no match: go on where the last draft left off */
  if (at < 0) return 0;
  int32_t k = q->n_source - at < q->max_draft ? q->n_source - at : q->max_draft;
  memcpy(out, q->source + at, (size_t)k * sizeof *out);
  *source_at = at;
  return k;
}
