/* jinja_value: the values a template computes with, modelled on the Python
 * objects jinja2 sees (str, int, float, bool, None, list, tuple, dict) plus
 * jinja2's Undefined, namespace(), the loop object and callables.
 *
 * Values are small structs passed by value. Everything they point to lives
 * in a jinja_arena owned by the render, and is immutable once built (the
 * sandbox forbids mutating lists and dicts), except a namespace's slots. */
#ifndef NC_JINJA_VALUE_H
#define NC_JINJA_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jinja_arena.h"
#include "jinja_buf.h"

typedef enum jv_type {
  JV_UNDEF,
  JV_NONE,
  JV_BOOL,
  JV_INT,
  JV_FLOAT,
  JV_STR,
  JV_LIST, /* list or tuple (jlist.tuple) */
  JV_DICT,
  JV_NS,   /* namespace(): a dict whose slots may be reassigned */
  JV_LOOP, /* the loop variable of a for */
  JV_FUNC, /* a global function, bound method or macro */
  JV_GEN,  /* a one-shot iterator (what map, select, ... return) */
} jv_type;

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jloop jloop;
typedef struct jfunc jfunc;
typedef struct jgen jgen;

typedef struct jv {
  jv_type t;
  bool markup; /* JV_STR marked safe (jinja2's Markup): see jinja_eval.c */
  union {
    bool b;
    int64_t i;
    double f;
    struct {
      const char *p; /* JV_STR bytes; JV_UNDEF: what was missing (or NULL) */
      size_t n;
    } s;
    jlist *l;
    jdict *d;
    jloop *loop;
    jfunc *fn;
    jgen *gen;
  } u;
} jv;

struct jlist {
  size_t n;
  jv *v;
  bool tuple;
};

struct jdict {
  size_t n, cap;
  jv *k, *v; /* insertion order, like a Python dict */
};

/* Like a Python generator: always truthy, no len(), and iterating it
 * consumes it (a second loop over it sees nothing). */
struct jgen {
  jlist *l;
  size_t pos;
  const char *err; /* consuming it fails with this (a lazy error) */
};

struct jloop {
  int64_t index0, length;
  jv prev, next; /* JV_UNDEF at the ends */
};

static inline jv jv_undef(const char *what) {
  jv v = {.t = JV_UNDEF};
  v.u.s.p = what;
  v.u.s.n = what ? strlen(what) : 0;
  return v;
}
static inline jv jv_none(void) {
  return (jv){.t = JV_NONE};
}
static inline jv jv_bool(bool b) {
  jv v = {.t = JV_BOOL};
  v.u.b = b;
  return v;
}
static inline jv jv_int(int64_t i) {
  jv v = {.t = JV_INT};
  v.u.i = i;
  return v;
}
static inline jv jv_float(double f) {
  jv v = {.t = JV_FLOAT};
  v.u.f = f;
  return v;
}
static inline jv jv_str(const char *p, size_t n) {
  jv v = {.t = JV_STR};
  v.u.s.p = p;
  v.u.s.n = n;
  return v;
}
static inline bool jv_is_num(jv v) {
  return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
}
static inline bool jv_is_str(jv v, const char *s) {
  size_t n = strlen(s);
  return v.t == JV_STR && v.u.s.n == n && memcmp(v.u.s.p, s, n) == 0;
}

/* Python's name for the type ("str", "int", "dict", "NoneType", ...). */
const char *jv_type_name(jv v);
bool jv_truthy(jv v);
/* Python ==, deep for lists and dicts; 1 == 1.0 == True. */
bool jv_equal(jv a, jv b);
/* The same, spending *budget (one per element, one per 64 string bytes);
 * once it goes negative the answer is meaningless and the caller fails. */
bool jv_equal_b(jv a, jv b, int64_t *budget);
bool jv_compare_b(jv a, jv b, int *cmp, int64_t *budget);
/* Python ordering (<): numbers, strings (code point order), lists.
 * Returns false when the two are not orderable (a TypeError in Python). */
bool jv_compare(jv a, jv b, int *cmp);
double jv_num(jv v); /* numeric value of a number/bool */

/* Appends str(v) or repr(v) as Python writes it. false when buf is full. */
bool jv_write_str(jbuf *b, jv v);
bool jv_write_repr(jbuf *b, jv v);
/* Python's repr(float), e.g. 1.0, 0.1, 1e+16, inf, nan. */
void jv_format_float(double f, char out[40]);

/* A fresh list or dict with room for n items; NULL when the arena is full. */
jlist *jlist_new(jinja_arena *a, size_t n);
jdict *jdict_new(jinja_arena *a, size_t cap);
/* Sets key to val (replacing an equal key in place); false when full. */
bool jdict_set(jinja_arena *a, jdict *d, jv key, jv val);
/* Looks key up; false when absent. */
bool jdict_get(const jdict *d, jv key, jv *out);
bool jdict_get_str(const jdict *d, const char *key, size_t n, jv *out);

#endif
