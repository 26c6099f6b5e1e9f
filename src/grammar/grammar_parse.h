/* grammar_parse: the parser's builder state (rules as bodies of elements
 * with NC_GE_ALT between alternatives, the character ranges), shared by
 * grammar_parse.c (reads GBNF into it, then flattens it into nc_grammar)
 * and grammar_rewrite.c (rewrites it before flattening). */
#ifndef NC_GRAMMAR_PARSE_H
#define NC_GRAMMAR_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar_internal.h"

typedef struct brule {
  const char *name; /* into the text; NULL for generated rules */
  size_t name_len;
  nc_gvec body;
  bool defined;
  bool repeats;   /* x* or a step of x{m,n}: body.v[0] is x */
  size_t ref_pos; /* first reference, for "undefined rule" */
} brule;

/* The chain of x{0,k} steps built so far for one term x: steps[k - 1] is
 * Rk (grammar_parse.c's repeat). */
typedef struct nc_gchain {
  nc_gelem term;
  uint32_t *steps;
  uint32_t n;
} nc_gchain;

typedef struct parser {
  const char *s;
  size_t n, pos;
  nc_error *err;
  brule *rules;
  uint32_t n_rules, cap_rules;
  uint32_t *ranges;
  size_t n_ranges, cap_ranges; /* uint32 count */
  size_t n_elems;              /* over all bodies */
  unsigned depth;
  nc_gchain *chains;
  uint32_t n_chains, cap_chains;
} parser;

/* err's "grammar: line L column C: msg 'arg'" for text position pos. */
nc_code nc_gparse_fail_at(parser *p, size_t pos, nc_code code, const char *msg,
                          const char *arg, size_t arg_len);
/* Appends e to v (NC_ERR_LIMIT past NC_GRAMMAR_MAX_ELEMS symbols). */
nc_code nc_gparse_push(parser *p, nc_gvec *v, nc_gelem e);
/* Appends the range lo..hi to the ranges. */
nc_code nc_gparse_range(parser *p, uint32_t lo, uint32_t hi);
/* A new rule (name NULL: generated, defined), its id in *id
 * (NC_ERR_LIMIT past NC_GRAMMAR_MAX_RULES). */
nc_code nc_gparse_new_rule(parser *p, const char *name, size_t len,
                           uint32_t *id);

/* grammar_factor.c: elements x and y are the same (classes by their
 * ranges). */
bool nc_gparse_elem_equal(const parser *p, const nc_gelem *x,
                          const nc_gelem *y);

/* grammar_rewrite.c: every repetition of a term that can match "" repeats
 * the term without "" instead. */
nc_code nc_gparse_nonempty_repeats(parser *p);
/* grammar_factor.c: alternatives that begin alike share their beginning,
 * and one-class alternatives with the same rest become one class. */
nc_code nc_gparse_factor(parser *p);

#endif
