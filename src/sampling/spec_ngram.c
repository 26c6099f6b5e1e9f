/* spec_ngram: drafts by lookup (spec_ngram.h). */
#include "spec_ngram.h"

#include <string.h>

int32_t nc_ngram_match_class(int32_t match) {
  return match <= 2    ? 0
         : match == 3  ? 1
         : match <= 5  ? 2
         : match <= 9  ? 3
         : match <= 15 ? 4
                       : 5;
}

static bool key_at(const int32_t *source, int32_t i, const int32_t *key,
                   int32_t n) {
  return memcmp(source + i, key, (size_t)n * sizeof *key) == 0;
}

/* Predicted outputs: the chosen occurrence of the key of length n (a token
 * must follow it in the source), or -1. */
static int32_t find(const nc_ngram_query *q, int32_t n) {
  const int32_t *key = q->hist + (q->n_hist - n);
  const int32_t last = q->n_source - n - 1; /* the latest start */
  int32_t first = -1;
  for (int32_t i = 0; i <= last; i++)
    if (key_at(q->source, i, key, n)) {
      if (i + n >= q->from) return i;
      if (first < 0) first = i;
    }
  return first;
}

int32_t nc_ngram_match_before(const int32_t *source, int32_t at,
                              const int32_t *hist, int32_t n_hist,
                              int32_t cap) {
  int32_t m = 0;
  if (cap > at) cap = at;
  if (cap > n_hist) cap = n_hist;
  while (m < cap && source[at - 1 - m] == hist[n_hist - 1 - m])
    m++;
  return m;
}

static int32_t match_at(const nc_ngram_query *q, int32_t e, int32_t cap) {
  return nc_ngram_match_before(q->source, e, q->hist, q->n_hist, cap);
}

/* The continuation's token at source position pos; past the source's end,
 * where the source is the tokens so far, the draft's own (out[0..k), pos -
 * n_source < k): a continuation that reaches the present goes on as the
 * text it copied, a loop or a repeated line its period on. */
static int32_t cont_at(const nc_ngram_query *q, const int32_t *out,
                       int32_t pos) {
  return pos < q->n_source ? q->source[pos] : out[pos - q->n_source];
}

/* Prompt lookup (spec_ngram.h): the longest match's positions vote. */
static int32_t lookup(const nc_ngram_query *q, int32_t *out, int32_t *source_at,
                      int32_t *match) {
  int32_t cap = q->match_cap > 0 ? q->match_cap : q->n_max;
  if (cap < q->n_min) cap = q->n_min;
  if (cap > q->n_hist) cap = q->n_hist;
  int32_t best = 0, voters[NC_NGRAM_MAX_VOTERS], n_voters = 0;
  /* latest first: a tie keeps the latest positions */
  for (int32_t e = q->n_source - 1; e >= 1; e--) {
    const int32_t m = match_at(q, e, cap);
    if (m < q->n_min || m < best) continue;
    if (m > best) {
      best = m;
      n_voters = 0;
    }
    if (n_voters < NC_NGRAM_MAX_VOTERS) voters[n_voters++] = e;
  }
  if (best == 0) return 0;
  const bool cyclic = q->source == q->hist && q->n_source == q->n_hist;
  int32_t k = 0, first = -1;
  while (k < q->max_draft && n_voters > 0) {
    /* the token most voters continue with (the latest of equals: voters
     * are latest first) */
    int32_t top = 0, top_n = 0;
    for (int32_t v = 0; v < n_voters; v++) {
      const int32_t t = cont_at(q, out, voters[v] + k);
      int32_t same = 0;
      for (int32_t u = 0; u < n_voters; u++)
        same += cont_at(q, out, voters[u] + k) == t;
      if (same > top_n) {
        top_n = same;
        top = v;
      }
    }
    const int32_t others = n_voters - top_n;
    if (others > 0 && top_n < NC_NGRAM_VOTE * others) break;
    const int32_t t = cont_at(q, out, voters[top] + k);
    if (k == 0) first = voters[top];
    out[k++] = t;
    /* the voters that go on with it and have a token after it (any, past
     * the end, where the draft itself goes on) */
    int32_t stay = 0;
    for (int32_t v = 0; v < n_voters; v++)
      if (cont_at(q, out, voters[v] + k - 1) == t &&
          (cyclic || voters[v] + k < q->n_source))
        voters[stay++] = voters[v];
    n_voters = stay;
  }
  if (k == 0) return 0;
  *source_at = first;
  if (match) *match = best;
  return k;
}

int32_t nc_ngram_draft(const nc_ngram_query *q, int32_t *out,
                       int32_t *source_at, int32_t *match) {
  *source_at = -1;
  if (match) *match = 0;
  if (q->max_draft <= 0 || q->n_source <= 0 || !q->source) return 0;
  if (!q->predicted)
    return q->n_hist > 0 ? lookup(q, out, source_at, match) : 0;
  int32_t at = -1, m = 0;
  if (q->n_output > 0) {
    for (int32_t n = q->n_max; n >= q->n_min && at < 0; n--) {
      if (n < 1 || n > q->n_hist || n >= q->n_source) continue;
      int32_t i = find(q, n);
      if (i >= 0) {
        at = i + n;
        m = n;
      }
    }
  } else {
    at = 0;
  }
  if (at < 0 && !q->keys_only && q->from >= 0 && q->from < q->n_source)
    at = q->from; /* no match: go on where the last draft left off */
  if (at < 0) return 0;
  int32_t k = q->n_source - at < q->max_draft ? q->n_source - at : q->max_draft;
  memcpy(out, q->source + at, (size_t)k * sizeof *out);
  *source_at = at;
  if (match) *match = m;
  return k;
}
