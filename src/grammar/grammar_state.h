/* grammar_state: one position of the pushdown automaton (a set of parse
 * stacks and a partial UTF-8 character) and the byte step on it, shared by
 * the matcher (grammar_match.c) and the token mask (grammar_mask.c). */
#ifndef NC_GRAMMAR_STATE_H
#define NC_GRAMMAR_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "grammar_internal.h"

/* Stacks packed in one buffer: stack i is data[off[i]] (its length) then
 * that many element indices, bottom first. A stack whose top is a class
 * waits for a character; the empty stack means "accepted so far". */
typedef struct nc_gstacks {
  uint32_t *data;
  size_t n, cap;
  uint32_t *off;
  uint64_t *hash;
  uint32_t count, cap_off;
} nc_gstacks;

typedef struct nc_gstate {
  nc_gstacks st;
  uint32_t cp;  /* the partial character's bits so far */
  uint8_t left; /* continuation bytes still expected */
  uint8_t lead; /* its first byte */
  uint8_t seen; /* bytes of it seen */
} nc_gstate;

/* Scratch for the expansions of one step (reused across steps), and the
 * budget of one call (a mask, a token fed): spent counts units of work
 * (an expansion, a stack looked at, a dominance comparison) since the
 * call began (nc_gwork_begin); past budget a step fails with NC_ERR_LIMIT,
 * and when cancel is set (polled every 4,096 units) with
 * NC_ERR_CANCELLED. */
typedef struct nc_gwork {
  nc_gstacks pending;
  uint64_t limit; /* each call's budget (nc_grammar_matcher_set_budget) */
  uint32_t *tmp;  /* NC_GRAMMAR_MAX_DEPTH + 2 */
  uint64_t spent, budget;
  const atomic_bool *cancel;
  /* The dominance pass's scratch, cap_dom stacks. */
  struct nc_gshape *shape;
  uint8_t *dead;
  uint32_t cap_dom;
} nc_gwork;

/* The matcher (grammar_match.c; the mask in grammar_mask.c reads it). */
struct nc_grammar_matcher {
  const nc_grammar *g;
  nc_gstate cur, spare, saved;
  nc_gwork work;
  /* The mask's scratch: one state per trie depth, the walk's stack. */
  nc_gstate *levels;
  uint32_t n_levels;
  uint32_t *walk;
  size_t cap_walk;
  /* The memo walk's: each depth's state id (grammar_memo.h), the memo,
   * the canonical form of cur (nc_grammar.canon). */
  uint32_t *lid;
  struct nc_gmemo *memo;
  nc_gstate canon;
  /* The uniqueItems check (grammar_unique.h); NULL: the grammar has no
   * directives. */
  struct nc_guniq *uniq;
};

void nc_gstacks_free(nc_gstacks *s);
void nc_gstacks_clear(nc_gstacks *s);
nc_code nc_gstate_copy(nc_gstate *dst, const nc_gstate *src);
void nc_gwork_free(nc_gwork *w);
/* A call's start: nothing spent, budget units allowed. */
void nc_gwork_begin(nc_gwork *w, uint64_t budget);
/* Adds units to w's spending: NC_ERR_LIMIT past the budget, NC_ERR_CANCELLED
 * when w's cancel flag is set (each with err's message). */
nc_code nc_gwork_charge(nc_gwork *w, uint64_t units, nc_error *err);

/* The start position: the root's alternatives expanded. */
nc_code nc_gstate_init(const nc_grammar *g, nc_gstate *s, nc_gwork *w,
                       nc_error *err);
/* out = in after byte b; *ok false when no stack survives (out is then
 * meaningless). NC_ERR_LIMIT when a bound is hit. */
nc_code nc_gstate_step(const nc_grammar *g, const nc_gstate *in, uint8_t b,
                       nc_gstate *out, nc_gwork *w, bool *ok, nc_error *err);
bool nc_gstate_accepting(const nc_gstate *s);
/* The UTF-8 decoder's step alone: out's cp, left, lead and seen after
 * byte b from in's (its stacks untouched); false for a byte no valid text
 * has here. */
bool nc_gstate_utf8(const nc_gstate *in, uint8_t b, nc_gstate *out);
/* No stack waits for a character (only the end remains). */
bool nc_gstate_complete(const nc_gstate *s);

/* out = in with every stack entry e replaced by map[e] (stacks that become
 * equal merged); *changed: some entry moved. NC_ERR_NOMEM. */
nc_code nc_gstate_map(const nc_gstate *in, const uint32_t *map, nc_gstate *out,
                      bool *changed);

/* The budget of m's calls (nc_grammar_matcher_set_budget). */
uint64_t nc_grammar_matcher_budget(const nc_grammar_matcher *m);

/* The mask by a plain walk of the whole trie, one automaton step per edge
 * (no memo): what nc_grammar_matcher_mask must equal (tests, benchmarks). */
nc_code nc_grammar_mask_reference(nc_grammar_matcher *m,
                                  const nc_grammar_vocab *gv, uint64_t *mask,
                                  nc_error *err);

#endif
