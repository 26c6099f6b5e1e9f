/* spec_ngram: drafts by lookup (speculative decoding, docs/SPECULATIVE.md).
 *
 * The key is the tail of the tokens so far (the last n of them, n from
 * n_max down to n_min, the longest that matches first); the draft is what
 * followed an earlier occurrence of the key in a source, up to max_draft
 * tokens. Two sources:
 *
 *   - prompt lookup (the n-gram drafter): the source is the tokens so far
 *     (prompt and output); the latest occurrence that has a token after it
 *     (so not the tail itself) wins;
 *   - predicted outputs: the source is the caller's expected output; the
 *     first occurrence at or after `from` (where the last draft left off)
 *     wins, else the first one anywhere; with no match, the draft goes
 *     on from `from` (unless keys_only). With no output yet (n_output 0, the
 * key is then not looked up) the draft is the source's beginning.
 *
 * Work is bounded by n_source * n_max comparisons. */
#ifndef NC_SPEC_NGRAM_H
#define NC_SPEC_NGRAM_H

#include <stdbool.h>
#include <stdint.h>

/* Key lengths tried by default (prompt lookup decoding's usual 1..3 would
 * draft on single-token matches; 2..4 is pickier). */
enum { NC_NGRAM_MIN_DEFAULT = 2, NC_NGRAM_MAX_DEFAULT = 4 };

typedef struct nc_ngram_query {
  const int32_t *hist; /* the tokens so far: the key is their tail */
  int32_t n_hist;
  const int32_t *source; /* where the key is looked up (may be hist) */
  int32_t n_source;
  int32_t n_min, n_max; /* key lengths, 1 <= n_min <= n_max */
  bool predicted;       /* predicted outputs' rules (above) */
  int32_t n_output;     /* predicted: output tokens so far (0: the start) */
  int32_t from;         /* predicted: where the last draft left off */
  bool keys_only;       /* predicted: no draft on from the cursor without a
                           key match (0 instead) */
  int32_t max_draft;
} nc_ngram_query;

/* Writes up to q->max_draft tokens to out and returns how many (0: no
 * match); *source_at is the position in the source of the first drafted
 * token (-1 with none). */
int32_t nc_ngram_draft(const nc_ngram_query *q, int32_t *out,
                       int32_t *source_at);

#endif
