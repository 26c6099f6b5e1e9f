/* grammar internals: the compiled rule tables shared by grammar_parse.c
 * (builds them), grammar_check.c (validates and prunes them) and
 * grammar_match.c (runs them). */
#ifndef NC_GRAMMAR_INTERNAL_H
#define NC_GRAMMAR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "grammar.h"

enum {
  NC_GE_END = 0, /* end of an alternative */
  NC_GE_ALT,     /* builder only: separates alternatives */
  NC_GE_CLASS,   /* a: first range, b: range count, neg: negated */
  NC_GE_REF,     /* a: rule */
};

typedef struct nc_gelem {
  uint8_t kind;
  uint8_t neg;
  uint32_t a, b;
} nc_gelem;

typedef struct nc_grule {
  uint32_t first_alt; /* into alts */
  uint32_t n_alts;
} nc_grule;

struct nc_grammar {
  nc_gelem *elems; /* alternatives, each ended by NC_GE_END */
  uint32_t n_elems;
  uint32_t *alts; /* element index where each alternative starts */
  uint32_t n_alts;
  nc_grule *rules;
  uint32_t n_rules;
  uint32_t *ranges; /* lo, hi pairs (inclusive code points) */
  uint32_t n_ranges;
  uint32_t root;
  /* canon[e]: the element a stack may hold instead of e without changing
   * which strings of at most NC_GRAMMAR_CANON_DEPTH bytes can follow (a
   * long bounded repetition's step mapped to its step D + 1 from the end;
   * grammar_canon.c); NULL when no element maps elsewhere. */
  uint32_t *canon;
  /* Dominance among a bounded repetition's steps (grammar_canon.c): for
   * an element of a chain rule Rk with k >= 2, dom_key[e] is the element at
   * the same place in the chain's R2 and dom_level[e] is k (UINT32_MAX
   * key: none). A stack that differs from another only in holding lower
   * steps of the same chains matches a subset of its strings, so the
   * automaton drops it (grammar_state.c): x{0,n} costs one stack, not one
   * per count so far. NULL when no chain has two steps. */
  uint32_t *dom_key;
  uint32_t *dom_level;
  /* uniqueItems directives (grammar_unique.h); NULL: none. */
  struct nc_guniq_spec *uniq;
};

#define NC_GRAMMAR_CANON_DEPTH 16u

/* A plain byte: one a JSON string holds as itself (printable ASCII but
 * '"' and '\\'); the token mask's plain runs (grammar_trie.h). */
#define NC_GRAMMAR_PLAIN(b)                                                    \
  ((b) >= 0x20 && (b) < 0x7F && (b) != '"' && (b) != '\\')

/* Sets g->canon (NC_ERR_NOMEM). */
nc_code nc_grammar_canon_build(nc_grammar *g);

/* The body of a rule while parsing: alternatives separated by NC_GE_ALT. */
typedef struct nc_gvec {
  nc_gelem *v;
  size_t n, cap;
} nc_gvec;

/* Prunes alternatives that can never finish and refuses an empty language
 * or left recursion; names[r] (lens[r] bytes) name rules in messages. */
nc_code nc_grammar_check(nc_grammar *g, const char *const *names,
                         const size_t *lens, nc_error *err);

/* Whether code point c is in class element e. */
bool nc_grammar_class_has(const nc_grammar *g, const nc_gelem *e, uint32_t c);
/* Whether class element e holds some code point in [lo, hi]. */
bool nc_grammar_class_meets(const nc_grammar *g, const nc_gelem *e, uint32_t lo,
                            uint32_t hi);

#endif
