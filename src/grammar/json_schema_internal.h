/* json_schema's parts (json_schema.h): the text builder and the errors
 * (json_schema_text.c), patterns (json_schema_regex.c), strings, numbers,
 * arrays and objects (json_schema_{string,number,array,object}.c); the
 * schema walk, $ref and the combinators are json_schema.c's. */
#ifndef NC_JSON_SCHEMA_INTERNAL_H
#define NC_JSON_SCHEMA_INTERNAL_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "grammar.h"
#include "json_schema.h"

#define MAX_DEPTH 64
#define MAX_RULES 20000
#define MAX_REFS 512
#define MAX_COUNT 1024
#define MAX_INT_RANGE 1000
#define MAX_ENUM 4096       /* values of one enum */
#define MAX_ONEOF 64        /* branches of one oneOf, nested ones' counted */
#define MAX_ONEOF_NESTING 4 /* anyOf/oneOf branches of a oneOf taken apart */
#define MAX_PATTERNS 8      /* patterns one string takes (allOf merges them) */
/* Properties (and required names) of one object. */
#define MAX_PROPERTIES 2048
/* The grammar the schema becomes: no longer than the engine takes. */
#define MAX_GBNF NC_GRAMMAR_MAX_TEXT

typedef struct sb {
  char *s;
  size_t n, cap;
  bool oom;
  bool big; /* would pass MAX_GBNF: nothing more is added */
} sb;

/* The JSON pointer of the schema being compiled (for messages). */
#define MAX_POINTER 512
/* Ignored keywords named in the GBNF's leading comments (then a count). */
#define MAX_NOTES 32

typedef struct ctx {
  js_syntax syntax;   /* what the values are written in */
  const json_t *root; /* the document: '#' refs resolve here... */
  const json_t *base; /* ...or in the nearest schema with a '$id' */
  sb out;             /* finished rules */
  int n_rules;
  const json_t *ref_targets[MAX_REFS]; /* $ref targets, converted once */
  int ref_ids[MAX_REFS];
  /* A target being converted, one used again while it was (a recursion:
   * its rule serves other instance paths), one whose rule holds uniqueItems
   * directives' arrays (not shared: its paths are one reference's); the
   * rules each took, and those converted again for another path. */
  bool ref_busy[MAX_REFS], ref_again[MAX_REFS], ref_pathed[MAX_REFS];
  bool ref_lost[MAX_REFS]; /* converted where the path was lost */
  int ref_size[MAX_REFS];
  int ref_copied;
  int n_refs;
  const json_t *shaped[MAX_REFS]; /* documents js_check_shapes passed */
  int n_shaped;
  char ptr[MAX_POINTER]; /* where we are, as a JSON pointer */
  size_t ptr_len;
  sb notes; /* "# ignored ..." lines, put before the rules */
  int n_notes;
  json_t *owned; /* schemas made while compiling (merges), freed at the end */
  nc_error *err;
  nc_code code; /* of the first failure; NC_OK until then */
  bool unsat;   /* the first failure says no value matches */
  /* uniqueItems checked exactly (the grammar is the whole output, JS_DOC):
   * the instance path of the value being compiled (a JSON list of steps,
   * grammar_unique.h), valid while every step from the root was a
   * property, an item, a prefix item or a $ref (no branch); the step the
   * next js_gen takes (NULL: the call is not one of those); the
   * "#@unique-items" lines. */
  bool doc;
  json_t *ipath;
  bool ivalid;
  json_t *istep;
  sb uniq;
} ctx;

/* Where the output stands, to undo a part no value satisfies. */
typedef struct {
  size_t out_n, notes_n, uniq_n;
  int n_rules, n_refs, n_notes;
  bool out_big;
} js_mark;
js_mark js_mark_here(const ctx *c);
/* After a failure saying no value matches (js_fail_unsat): undoes what was
 * written since m, clears the failure and returns true; else false. */
bool js_recover(ctx *c, js_mark m);
/* The same after any failure of NC_ERR_INVALID_ARGUMENT (a shape not
 * taken one way, to be made another). */
bool js_retry(ctx *c, js_mark m);
/* Undoes what was written since m and any failure since (a question asked
 * by writing rules, not a part of the grammar; c had not failed at m). */
void js_undo(ctx *c, js_mark m);

/* Appends /seg to c->ptr (escaped as RFC 6901 says); returns the length
 * to give js_ptr_pop. */
size_t js_ptr_push(ctx *c, const char *seg);
size_t js_ptr_push_index(ctx *c, size_t i);
void js_ptr_pop(ctx *c, size_t len);
/* A line saying what was ignored at the current pointer. */
void js_note(ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* v, kept until the compile ends (c->owned holds it); NULL: out of memory
 * (failed). */
json_t *js_own(ctx *c, json_t *v);

void js_sb_add(sb *b, const char *s, size_t len);
void js_sb_printf(sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A GBNF literal for bytes s. */
void js_sb_lit(sb *b, const char *s, size_t len);

/* The value syntax's parts (json_schema_syntax.c). Its shared rules (char,
 * string, key: a further key of an object, value, object, array), before
 * the formats'. */
const char *js_syntax_values(js_syntax s);
/* The GBNF literal around a string, and around a key. */
const char *js_quote(const ctx *c);
const char *js_key_quote(const ctx *c);
/* The rule of a further key ("string" in JSON). */
const char *js_key_rule(const ctx *c);
/* The GBNF literal of declared key name (quoted or bare); -1 when the
 * syntax cannot write it (c failed). */
int js_key_lit(ctx *c, sb *b, const char *name);
/* Value x as the syntax writes it (malloc'd); NULL after a failure (out of
 * memory, or a value the syntax cannot write). */
char *js_value_text(ctx *c, const json_t *x);

/* The first failure wins: its code and message are what the caller gets.
 * Each returns -1. */
int js_fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A bound on what the schema makes (rules, $refs, the grammar's size). */
int js_fail_limit(ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A failure saying no value matches: an optional property or a branch may
 * be left out instead (js_recover). */
int js_fail_unsat(ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int js_fail_oom(ctx *c);
int js_fail_big(ctx *c);

/* A new rule's number (or -1: too many). */
int js_new_rule(ctx *c);
/* Writes rule r<id> ::= body, and frees body. */
void js_emit(ctx *c, int id, sb *body);
/* s[key], an integer in [0, MAX_COUNT], or dflt when absent. */
int js_get_count(ctx *c, const json_t *s, const char *key, long long dflt,
                 long long *out);
/* x repeated {min, max} (max < 0: unbounded) with separator sep between. */
void js_repeat_sep(sb *b, const char *x, const char *sep, long long min,
                   long long max);

/* Any JSON string of lo to hi characters (hi -1: no most) into b. */
void js_string_lengths(ctx *c, long long lo, long long hi, sb *b);
/* The shared rules (numbers, the formats) every grammar holds. */
const char *js_shared_rules(void);
/* The JSON strings that each of n string bodies (GBNF over the shared
 * rules and the rules written to c->out from offset since on, quotes
 * included) makes, or with negated[i] does not make (body 0 not negated),
 * as rules (json_schema_meet.c) and a reference to the first into b. */
int js_string_meet(ctx *c, const char *const *bodies, const bool *negated,
                   size_t n, size_t since, sb *b);
/* A JSON string matching pattern p (a regex subset) into b; lo >= 0: with
 * minLength lo and maxLength hi (-1: none) too. */
int js_pattern(ctx *c, const char *p, long long lo, long long hi, sb *b);
/* Pattern p with lookaheads (json_schema_lookahead.c) into b as
 * js_pattern: 1 when p has none (nothing written), 0 written, -1 failed. */
int js_pattern_looks(ctx *c, const char *p, long long lo, long long hi, sb *b);
/* p[0..n) with its groups that hold anchors (no quantifier) replaced by
 * their alternatives, as top-level alternatives of the whole
 * (json_schema_anchor.c); NULL when nothing changes (or too many). */
char *js_anchors_out(const char *p, size_t n);

typedef enum {
  JS_KW_UNKNOWN,    /* ignored, with a note */
  JS_KW_ANNOTATION, /* ignored quietly */
  JS_KW_ENFORCED,   /* the converter enforces it (where it applies) */
  JS_KW_REFUSED,    /* constrains, cannot be enforced: an error */
} js_keyword;
js_keyword js_keyword_kind(const char *k);
/* Enforced or refused: a keyword that changes what validates. */
bool js_constrains(const char *k);
/* Notes s's unknown keywords; fails on a refused one. */
int js_check_keywords(ctx *c, const json_t *s);

/* Each keyword of s and its subschemas of the JSON type the spec gives it
 * (json_schema_shape.c): a failure names the keyword and where. Checked
 * once per s. */
int js_check_shapes(ctx *c, const json_t *s);

/* $ref resolution (json_schema_ref.c): the schema ref points to, from
 * c->base (then the document's root); *base: the resource it lies in. */
int js_resolve_ref(ctx *c, const char *ref, const json_t **target,
                   const json_t **base);

/* The schema that validates exactly what both a and b validate (allOf),
 * with no $ref or allOf at its top (json_schema_merge.c); NULL after a
 * failure. Its values live until the compile ends. */
const json_t *js_merge(ctx *c, const json_t *a, const json_t *b, int depth);
/* s without $ref and allOf at its top (the same schema when it has
 * neither). */
const json_t *js_flatten(ctx *c, const json_t *s, int depth);
/* The types 'type' names, as bits (null, boolean, object, array, string,
 * integer, number from bit 0); absent: all. */
unsigned js_type_bits(const json_t *type);
/* s without 'not', narrowed so that nothing made validates under it
 * (json_schema_not.c); NULL after a failure. */
const json_t *js_apply_not(ctx *c, const json_t *s);
/* oneOf's branches, narrowed to be pairwise disjoint (json_schema_merge.c);
 * a branch that is an anyOf or oneOf (up to MAX_ONEOF_NESTING deep) gives
 * its own branches, origin[k] (MAX_ONEOF entries) saying which of list's
 * each came from. NULL: branches *bi and *bj of list may still overlap (c
 * not failed), or a failure. */
const json_t *js_oneof_branches(ctx *c, const json_t *list, int depth,
                                size_t *origin, size_t *bi, size_t *bj);
/* A oneOf whose branches (at most MAX_PATTERNS) make strings alone, each
 * without the others' strings, into b (json_schema_oneof.c): 1 when the
 * branches are not such (nothing written), 0 written, -1 failed. */
int js_oneof_strings(ctx *c, const json_t *list, int depth, sb *b);
/* Whether no string validates under both a and b, each a string schema of
 * patterns alone (one, or a merge's list) that json_schema_regex.c makes
 * exactly as a validator reads them (literals, positive classes, groups, |,
 * quantifiers, anchors: no '.', no \d \w \s or their negations, no [^...],
 * no control characters), decided on the product of their automata
 * (json_schema_oneof.c); false when not such. */
bool js_patterns_disjoint(ctx *c, const json_t *a, const json_t *b);
/* Whether no string matches both regexes p and q, each exact as above. */
bool js_regexes_disjoint(ctx *c, const char *p, const char *q);
/* The types a schema without 'type' takes from its keywords (bits as
 * js_type_bits; 0: none named). */
unsigned js_inferred_types(const json_t *s);

/* Whether value x validates under schema s (json_schema_value.c): 1 yes, 0
 * no, -1 cannot tell (a keyword this check does not evaluate). */
int js_value_valid(ctx *c, const json_t *s, const json_t *x, int depth);
/* Whether x is of type name t ("integer" takes 2.0). */
bool js_of_type_name(const char *t, const json_t *x);

/* One schema as a rule, at pointer segments seg (and seg2 when not NULL)
 * under the current one. */
int js_gen_at(ctx *c, const json_t *s, int depth, const char *seg,
              const char *seg2);
int js_gen_at_index(ctx *c, const json_t *s, int depth, const char *seg,
                    size_t i);
/* One schema as a rule: its number, or -1. */
int js_gen(ctx *c, const json_t *s, int depth);
/* The body of a schema of one type into b. */
int js_gen_string(ctx *c, const json_t *s, sb *b);
int js_gen_integer(ctx *c, const json_t *s, sb *b, bool number);
int js_gen_array(ctx *c, const json_t *s, sb *b, int depth);
/* Arrays of items that are strings or numbers, unique by the matcher's
 * check (json_schema_unique.c): 1 when s is not such an array here
 * (nothing written), 0 the directive written (the caller makes the array
 * with hi items at most, *hi capped), -1 failed. */
int js_unique_exact(ctx *c, const json_t *s, const json_t *items, int depth,
                    long long lo, long long *hi);
/* With minItems lo of 2 or more: whether the items (rule id) take lo
 * distinct values; fewer is a failure saying no array matches. */
int js_unique_count(ctx *c, int id, long long lo);
int js_gen_object(ctx *c, const json_t *s, sb *b, int depth);

#endif
