/* grammar_memo: one matcher's interned automaton states and their memoized
 * transitions, so the token mask's trie walk costs a table lookup per edge
 * instead of a step of the pushdown automaton. Only states at a character
 * boundary are interned (the stacks of a partial character are those of
 * the state before it, filtered), so the number of states stays that of
 * the grammar's positions, not of the vocabulary's multi-byte prefixes:
 * a state's byte transitions (256 each: a state, DEAD, or PARTIAL for a
 * viable lead byte) and a table of (state, completed code point) -> state
 * for multi-byte characters. Bounded: at most NC_GMEMO_MAX_STATES states,
 * NC_GMEMO_MAX_WORDS stack words and NC_GMEMO_CP_CAP code point entries;
 * a full memo refuses new states (the caller flushes it and walks without)
 * and stops recording code points. */
#ifndef NC_GRAMMAR_MEMO_H
#define NC_GRAMMAR_MEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "grammar_state.h"

#define NC_GMEMO_MAX_STATES 1024u
#define NC_GMEMO_MAX_WORDS (1u << 18)
#define NC_GMEMO_CP_CAP 8192u /* a power of two */
#define NC_GMEMO_MASKS 8u     /* whole masks kept, by the state they start at */
#define NC_GMEMO_NONE UINT32_MAX          /* not computed / not interned */
#define NC_GMEMO_DEAD (UINT32_MAX - 1)    /* no stack survives */
#define NC_GMEMO_PARTIAL (UINT32_MAX - 2) /* a viable lead byte */
#define NC_GMEMO_MIXED (UINT32_MAX - 3)   /* plain[] only: see there */

typedef struct nc_gmemo_state {
  nc_gstate s;
  uint64_t hash;
} nc_gmemo_state;

typedef struct nc_gmemo_cp {
  uint32_t from, cp, to; /* from NONE: empty */
} nc_gmemo_cp;

typedef struct nc_gmemo {
  nc_gmemo_state *states;
  uint32_t n_states, cap_states;
  /* trans[id * 256 + b]: state id's transition on byte b (NONE: not
   * computed yet), cap_states rows. */
  uint32_t *trans;
  /* plain[id]: the state every plain character (NC_GRAMMAR_PLAIN and
   * those past ASCII) leads state id to, NC_GMEMO_DEAD when none continues
   * it, NC_GMEMO_MIXED when some do and lead to different states or some
   * do not, NONE not computed yet; cap_states of them. */
  uint32_t *plain;
  uint32_t *table; /* open addressing: state ids, NONE empty */
  size_t words;    /* stack words held by all states */
  nc_gmemo_cp *cps;
  uint32_t n_cps;
  /* Masks of the text tokens from the states mask_of (NONE: empty slot),
   * n_words each, replaced in turn. */
  uint32_t mask_of[NC_GMEMO_MASKS];
  uint64_t *masks;
  size_t n_words;
  const void *vocab;    /* the masks' vocabulary (the states are not its) */
  uint32_t fallbacks;   /* walks the memo could not hold (tests read it) */
  uint32_t plain_skips; /* subtrees plain runs left unwalked (tests read it) */
  uint32_t mask_turn;
} nc_gmemo;

void nc_gmemo_free(nc_gmemo *mm);
/* An empty memo for masks of n_words words. */
nc_code nc_gmemo_init(nc_gmemo *mm, size_t n_words);
/* The mask kept for state id, or NULL. */
const uint64_t *nc_gmemo_mask(const nc_gmemo *mm, uint32_t id);
/* Keeps a copy of mask as state id's (replacing the oldest). */
void nc_gmemo_keep_mask(nc_gmemo *mm, uint32_t id, const uint64_t *mask);
/* Drops every state and transition. */
void nc_gmemo_flush(nc_gmemo *mm);
/* The id of s's stacks at a character boundary (s's partial character, if
 * any, is ignored), interning a copy. NC_ERR_LIMIT: the memo is full;
 * NC_ERR_NOMEM. Sets no error. */
nc_code nc_gmemo_intern(nc_gmemo *mm, const nc_gstate *s, uint32_t *id);
/* The transition of state id on byte b: an id, NC_GMEMO_DEAD or
 * NC_GMEMO_PARTIAL; out is scratch. *full: the memo could not take the
 * new state (*next is then NONE). Errors: nc_gstate_step's, NC_ERR_NOMEM. */
nc_code nc_gmemo_next(nc_gmemo *mm, const nc_grammar *g, uint32_t id, uint8_t b,
                      nc_gstate *out, nc_gwork *w, uint32_t *next, bool *full,
                      nc_error *err);
/* The state every plain byte leads state id to (nc_gmemo.plain), out as
 * nc_gmemo_next's. */
nc_code nc_gmemo_plain_next(nc_gmemo *mm, const nc_grammar *g, uint32_t id,
                            nc_gstate *out, nc_gwork *w, uint32_t *next,
                            bool *full, nc_error *err);
/* The state after byte b, which continues the partial character p (its
 * cp, left, lead, seen) begun at state id: an id, NC_GMEMO_DEAD, or
 * NC_GMEMO_PARTIAL with *q the longer partial character. */
nc_code nc_gmemo_next_partial(nc_gmemo *mm, const nc_grammar *g, uint32_t id,
                              const nc_gstate *p, uint8_t b, nc_gstate *q,
                              nc_gstate *out, nc_gwork *w, uint32_t *next,
                              bool *full, nc_error *err);

#endif
