/* jinja_ast: the syntax tree the parser builds and the interpreter walks.
 * One node type for everything; which fields mean what depends on kind. */
#ifndef NC_JINJA_AST_H
#define NC_JINJA_AST_H

#include <stddef.h>

#include "jinja_value.h"

typedef enum jnode_kind {
  /* expressions */
  JN_LIT,       /* value */
  JN_NAME,      /* name */
  JN_LIST,      /* kids */
  JN_TUPLE,     /* kids */
  JN_DICT,      /* kids: key0, val0, key1, val1, ... */
  JN_ATTR,      /* a.name */
  JN_SUBSCRIPT, /* a[b] */
  JN_SLICE,     /* a[b:c:d], each of b, c, d may be NULL */
  JN_CALL,      /* a(kids..., kwnames=kwvals...) */
  JN_FILTER,    /* a|name(kids..., kw...); a is NULL in a filter block */
  JN_TEST,      /* a is [not] name(kids...); op = 1 when negated */
  JN_UNARY,     /* op a: '-', '+', '!' (not) */
  JN_BINARY,    /* a op b: + - * / F(//) % P(**) ~ & (and) | (or) */
  JN_COMPARE,   /* kids[0] ops[0] kids[1] ops[1] kids[2] ... */
  JN_COND,      /* b if a else c (c may be NULL) */
  /* statements */
  JN_BODY,        /* kids: statements */
  JN_TEXT,        /* value: template text */
  JN_PRINT,       /* {{ a }} */
  JN_IF,          /* if a: b (body) else c (body or NULL) */
  JN_FOR,         /* for target a in b [if c]: d (body) else e */
  JN_SET,         /* set target a = b */
  JN_SETBLOCK,    /* set target a: body b, filter c (JN_FILTER chain or NULL) */
  JN_MACRO,       /* macro name(kwnames = kwvals defaults): body b */
  JN_CALLBLOCK,   /* call a (JN_CALL): caller body b, caller params kw */
  JN_FILTERBLOCK, /* filter a (JN_FILTER chain on NULL): body b */
  JN_NSSET,       /* set name.attr = b (name: the namespace variable) */
  JN_WITH,        /* with kwnames = kwvals: body b */
  JN_BREAK,
  JN_CONTINUE,
} jnode_kind;

/* Comparison operators of JN_COMPARE. */
enum { JC_EQ, JC_NE, JC_LT, JC_LE, JC_GT, JC_GE, JC_IN, JC_NOTIN };

typedef struct jnode jnode;
struct jnode {
  jnode_kind kind;
  int op;
  int line;
  jv value;
  const char *name;
  size_t name_len;
  jnode *a, *b, *c, *d, *e;
  jnode **kids;
  size_t n_kids;
  int *ops;
  const char **kwnames;
  size_t *kwlens;
  jnode **kwvals;
  size_t n_kw;
};

#endif
