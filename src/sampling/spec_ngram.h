/* spec_ngram: drafts by lookup (speculative decoding, docs/SPECULATIVE.md).
 *
 * Two sources:
 *
 *   - prompt lookup (the n-gram drafter): the source is the tokens so far
 *     (prompt and output). Each earlier position e of the source (a token
 *     follows it, so not the tail itself) has a match: how many tokens
 *     before e equal the tail of the tokens so far (up to match_cap). The
 *     longest match wins (at least n_min); where several positions share
 *     it, their continuations vote token by token: the draft takes the
 *     token most of them continue with (the latest on a tie) and stops
 *     where it has less than NC_NGRAM_VOTE times the support of the
 *     others (the continuation is ambiguous there), each position that
 *     went another way dropping out. With one position, its continuation
 *     is the draft. A continuation that reaches the end of the tokens so
 *     far goes on with the draft's own tokens, as the text it copied went
 *     on: a loop or a repeated line drafts its period on (A B C A B drafts
 *     C A B C ...);
 *   - predicted outputs: the key is the tail of the tokens so far (the
 *     last n of them, n from n_max down to n_min, the longest that matches
 *     first); the source is the caller's expected output: the first
 *     occurrence at or after `from` (where the last draft left off) wins,
 *     else the first one anywhere; with no match, the draft goes on from
 *     `from` (unless keys_only). With no output yet (n_output 0, the key is
 *     then not looked up) the draft is the source's beginning.
 *
 * Work is bounded by n_source * max(match_cap, n_max) comparisons, and the
 * vote by NC_NGRAM_MAX_VOTERS positions per drafted token. */
#ifndef NC_SPEC_NGRAM_H
#define NC_SPEC_NGRAM_H

#include <stdbool.h>
#include <stdint.h>

/* Key lengths tried by default (prompt lookup decoding's usual 1..3 would
 * draft on single-token matches; 2..4 is pickier); the longest match
 * prompt lookup measures. */
enum {
  NC_NGRAM_MIN_DEFAULT = 2,
  NC_NGRAM_MAX_DEFAULT = 4,
  NC_NGRAM_MATCH_CAP = 16
};
/* Prompt lookup's vote: the most supported continuation must have this
 * many times the support of the others; the latest positions that vote. */
#define NC_NGRAM_VOTE 2
enum { NC_NGRAM_MAX_VOTERS = 32 };

/* Match lengths in classes (2, 3, 4-5, 6-9, 10-15, 16+), each with its own
 * acceptance estimate per completion: a long match is copied text and is
 * kept more often than a two-token one. */
enum { NC_NGRAM_CLASSES = 6 };
int32_t nc_ngram_match_class(int32_t match);

typedef struct nc_ngram_query {
  const int32_t *hist; /* the tokens so far: the key is their tail */
  int32_t n_hist;
  const int32_t *source; /* where the key is looked up (may be hist) */
  int32_t n_source;
  int32_t n_min, n_max; /* key lengths, 1 <= n_min <= n_max */
  int32_t match_cap;    /* prompt lookup: the longest match measured (at
                           least n_min; 0: n_max) */
  bool predicted;       /* predicted outputs' rules (above) */
  int32_t n_output;     /* predicted: output tokens so far (0: the start) */
  int32_t from;         /* predicted: where the last draft left off */
  bool keys_only;       /* predicted: no draft on from the cursor without a
                           key match (0 instead) */
  int32_t max_draft;
} nc_ngram_query;

/* How many tokens before source[at] equal the tail of hist[0..n_hist), up
 * to cap. */
int32_t nc_ngram_match_before(const int32_t *source, int32_t at,
                              const int32_t *hist, int32_t n_hist, int32_t cap);

/* Writes up to q->max_draft tokens to out and returns how many (0: no
 * match); *source_at is the position in the source of the first drafted
 * token (-1 with none); *match (may be NULL) the length of the match that
 * drafted (0 with none, or for a prediction's start or cursor). */
int32_t nc_ngram_draft(const nc_ngram_query *q, int32_t *out,
                       int32_t *source_at, int32_t *match);

#endif
