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

#define MAX_DEPTH 64
#define MAX_RULES 20000
#define MAX_REFS 512
#define MAX_COUNT 1024
#define MAX_INT_RANGE 1000
#define MAX_ENUM 4096 /* values of one enum */
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

typedef struct ctx {
  const json_t *root;
  sb out; /* finished rules */
  int n_rules;
  const char *ref_names[MAX_REFS];
  int ref_ids[MAX_REFS];
  int n_refs;
  nc_error *err;
  nc_code code; /* of the first failure; NC_OK until then */
} ctx;

void js_sb_add(sb *b, const char *s, size_t len);
void js_sb_printf(sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A GBNF literal for bytes s. */
void js_sb_lit(sb *b, const char *s, size_t len);

/* The first failure wins: its code and message are what the caller gets.
 * Each returns -1. */
int js_fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A bound on what the schema makes (rules, $refs, the grammar's size). */
int js_fail_limit(ctx *c, const char *fmt, ...)
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

/* A JSON string matching pattern p (a regex subset) into b. */
int js_pattern(ctx *c, const char *p, sb *b);

/* One schema as a rule: its number, or -1. */
int js_gen(ctx *c, const json_t *s, int depth);
/* The body of a schema of one type into b. */
int js_gen_string(ctx *c, const json_t *s, sb *b);
int js_gen_integer(ctx *c, const json_t *s, sb *b, bool number);
int js_gen_array(ctx *c, const json_t *s, sb *b, int depth);
int js_gen_object(ctx *c, const json_t *s, sb *b, int depth);

#endif
