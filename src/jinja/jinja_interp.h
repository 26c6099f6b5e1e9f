/* jinja_interp: the interpreter state shared by the evaluator, filters,
 * tests, methods and globals (internal to the jinja_* files). */
#ifndef NC_JINJA_INTERP_H
#define NC_JINJA_INTERP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "jinja.h"
#include "jinja_ast.h"
#include "jinja_value.h"

#define JINJA_MAX_ARGS 16
#define JINJA_MAX_EVAL_DEPTH 512
#define JINJA_MAX_MACRO_DEPTH 256

typedef struct jframe jframe;
struct jframe {
  jframe *parent;
  jdict *vars;
};

/* Callable kinds. */
enum {
  JF_GLOBAL, /* id: a global function */
  JF_METHOD, /* id: a method of self */
  JF_MACRO,  /* macro node and its defining frame */
  JF_CALLER, /* the body of a {% call %} block */
  JF_CYCLE,  /* loop.cycle */
};

struct jfunc {
  int kind, id;
  jv self;
  const jnode *node;
  jframe *closure;
};

typedef struct jkw {
  const char *name;
  size_t len;
  jv val;
} jkw;

typedef struct jinterp {
  jinja_arena *a;
  nc_error *err;
  jinja_limits lim;
  int64_t fuel;
  int depth, macro_depth;
  jframe *frame;
  int line;
  bool failed;
  nc_code code; /* of the first failure */
  int ctl;      /* 0, or JN_BREAK / JN_CONTINUE while unwinding */
  jbuf *out;
  int64_t now; /* seconds since the epoch for strftime_now */
  bool now_utc;
} jinterp;

/* Records the first error ("template line N: ...") and returns false. */
bool jfail(jinterp *I, nc_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fails for use of an undefined value (jinja2's UndefinedError). */
bool jfail_undef(jinterp *I, jv u);
/* Python == and < that spend the step budget (big values cost more); false
 * with a recorded failure when the budget runs out. jorder sets *ok false
 * when the values are not orderable. */
bool jequal(jinterp *I, jv a, jv b, bool *res);
bool jorder(jinterp *I, jv a, jv b, int *cmp, bool *ok);
/* Charges the step budget for copying n bytes (one step per 64). */
bool jcharge(jinterp *I, size_t n);
/* Fails with the arena's out-of-memory limit. */
bool jfail_mem(jinterp *I);

/* Arena string helpers: NULL-free results or a recorded failure. */
bool jv_new_str(jinterp *I, const char *p, size_t n, jv *out);
bool jv_concat(jinterp *I, jv a, jv b, jv *out);
/* str(v) as a new string value. */
bool jv_to_str(jinterp *I, jv v, jv *out);
/* A string value from a finished buffer (frees the buffer). */
bool jv_from_buf(jinterp *I, jbuf *b, jv *out);
/* The items iteration over v gives (list items, dict keys, characters). */
bool jv_iterate(jinterp *I, jv v, jlist **out);

/* Evaluator (jinja_eval.c) and statement execution (jinja_exec.c). */
bool jeval(jinterp *I, const jnode *n, jv *out);
bool jexec(jinterp *I, const jnode *n);
bool jcall(jinterp *I, jv fn, const jv *args, size_t nargs, const jkw *kw,
           size_t nkw, jv *out);
bool jgetattr(jinterp *I, jv obj, const char *name, size_t len, jv *out);
bool jgetitem(jinterp *I, jv obj, jv key, jv *out);
bool jframe_set(jinterp *I, jframe *f, const char *name, size_t len, jv v);
jframe *jframe_new(jinterp *I, jframe *parent);
/* Renders a body into a new string (macros, set blocks, filter blocks). */
bool jcapture(jinterp *I, const jnode *body, jv *out);

/* jinja_filters.c / jinja_tests.c */
bool jfilter(jinterp *I, const char *name, size_t len, jv in, const jv *args,
             size_t nargs, const jkw *kw, size_t nkw, jv *out);
bool jtest(jinterp *I, const char *name, size_t len, jv v, const jv *args,
           size_t nargs, bool *out);

/* jinja_methods.c: str/dict/list methods bound to a receiver. */
bool jmethod_lookup(jinterp *I, jv self, const char *name, size_t len, jv *out);
bool jmethod_call(jinterp *I, const jfunc *fn, const jv *args, size_t nargs,
                  const jkw *kw, size_t nkw, jv *out);

/* jinja_globals.c: range, namespace, dict, raise_exception, strftime_now. */
bool jglobal_lookup(const char *name, size_t len, jv *out, jinterp *I);
bool jglobal_call(jinterp *I, const jfunc *fn, const jv *args, size_t nargs,
                  const jkw *kw, size_t nkw, jv *out);

/* jinja_json.c: json.dumps as transformers' tojson filter calls it. */
typedef struct jjson_opts {
  int indent; /* -1: None */
  const char *indent_str;
  size_t indent_len; /* indent given as a string */
  bool ensure_ascii, sort_keys;
  const char *item_sep, *key_sep;
  size_t item_sep_len, key_sep_len;
} jjson_opts;
bool jjson_dump(jinterp *I, jv v, const jjson_opts *o, jbuf *b);

/* HTML-escapes str(v) into a Markup string (Markup stays as it is). */
bool jescape(jinterp *I, jv v, jv *out);

/* jinja_format.c: "..." % args and "...".format(...). */
bool jformat_percent(jinterp *I, jv fmt, jv arg, jv *out);
bool jformat_method(jinterp *I, jv fmt, const jv *args, size_t nargs,
                    const jkw *kw, size_t nkw, jv *out);

/* String utilities (jinja_strings.c). */
bool jstr_strip(jinterp *I, jv s, const jv *chars, bool left, bool right,
                jv *out);
bool jstr_case(jinterp *I, jv s, int mode, jv *out); /* see JCASE_* */
enum {
  JCASE_UPPER,
  JCASE_LOWER,
  JCASE_CAPITALIZE,
  JCASE_TITLE_PY,
  JCASE_TITLE_JINJA,
  JCASE_SWAP
};
bool jstr_replace(jinterp *I, jv s, jv old, jv new_, int64_t count, jv *out);
bool jstr_split(jinterp *I, jv s, const jv *sep, int64_t maxsplit, bool right,
                jv *out);
bool jstr_find(jv s, jv sub, bool reverse, int64_t *pos);
bool jstr_slice(jinterp *I, jv s, const jv *start, const jv *stop,
                const jv *step, jv *out);
bool jlist_slice(jinterp *I, jv l, const jv *start, const jv *stop,
                 const jv *step, jv *out);
bool jstr_repeat(jinterp *I, jv s, int64_t times, jv *out);

#endif
