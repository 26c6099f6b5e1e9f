/* jinja_tests: jinja2's tests (x is defined, x is string, x is divisibleby 3,
 * ...). Names follow jinja2.tests.TESTS, aliases included. */
#include <math.h>
#include <string.h>

#include "jinja_interp.h"

static bool name_is(const char *name, size_t len, const char *lit) {
  return strlen(lit) == len && memcmp(name, lit, len) == 0;
}

static bool need_arg(jinterp *I, size_t nargs, const char *name, size_t len) {
  if (nargs >= 1) return true;
  return jfail(I, NC_ERR_INVALID_ARGUMENT, "test '%.*s' needs an argument",
               (int)len, name);
}

static bool ordered(jinterp *I, jv a, jv b, int want, bool *out) {
  int c;
  if (a.t == JV_UNDEF) return jfail_undef(I, a);
  if (b.t == JV_UNDEF) return jfail_undef(I, b);
  bool ok;
  if (!jorder(I, a, b, &c, &ok)) return false;
  if (!ok)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "cannot compare '%s' with '%s'",
                 jv_type_name(a), jv_type_name(b));
  switch (want) {
  case JC_LT: *out = c == -1; break;
  case JC_LE: *out = c == -1 || c == 0; break;
  case JC_GT: *out = c == 1; break;
  default: *out = c == 1 || c == 0;
  }
  return true;
}

static bool same(jv a, jv b) {
  if (a.t != b.t) return false;
  switch (a.t) {
  case JV_UNDEF:
  case JV_NONE: return true;
  case JV_BOOL: return a.u.b == b.u.b;
  case JV_INT: return a.u.i == b.u.i && a.u.i >= -5 && a.u.i <= 256;
  case JV_FLOAT: return false;
  case JV_STR: return a.u.s.p == b.u.s.p && a.u.s.n == b.u.s.n;
  default: return a.u.l == b.u.l; /* the pointers of the union alias */
  }
}

static bool case_test(jinterp *I, jv v, bool upper, bool *out) {
  jv s, conv;
  if (!jv_to_str(I, v, &s)) return false;
  if (!jstr_case(I, s, upper ? JCASE_UPPER : JCASE_LOWER, &conv)) return false;
  bool has_cased = false;
  jv other;
  if (!jstr_case(I, s, upper ? JCASE_LOWER : JCASE_UPPER, &other)) return false;
  has_cased = !jv_equal(other, s) || !jv_equal(conv, s);
  *out = has_cased && jv_equal(conv, s);
  return true;
}

bool jtest(jinterp *I, const char *name, size_t len, jv v, const jv *args,
           size_t nargs, bool *out) {
#define IS(lit) name_is(name, len, lit)
  if (IS("defined"))
    *out = v.t != JV_UNDEF;
  else if (IS("undefined"))
    *out = v.t == JV_UNDEF;
  else if (IS("none"))
    *out = v.t == JV_NONE;
  else if (IS("string"))
    *out = v.t == JV_STR;
  else if (IS("mapping"))
    *out = v.t == JV_DICT;
  else if (IS("number"))
    *out = jv_is_num(v);
  else if (IS("integer"))
    *out = v.t == JV_INT;
  else if (IS("float"))
    *out = v.t == JV_FLOAT;
  else if (IS("boolean"))
    *out = v.t == JV_BOOL;
  else if (IS("true"))
    *out = v.t == JV_BOOL && v.u.b;
  else if (IS("false"))
    *out = v.t == JV_BOOL && !v.u.b;
  else if (IS("callable"))
    *out = v.t == JV_FUNC;
  else if (IS("escaped"))
    *out = false;
  else if (IS("iterable"))
    *out = v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT ||
           v.t == JV_UNDEF || v.t == JV_LOOP || v.t == JV_GEN;
  else if (IS("sequence"))
    *out = v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
  else if (IS("odd") || IS("even")) {
    if (!jv_is_num(v))
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "test '%.*s' needs a number",
                   (int)len, name);
    if (v.t == JV_FLOAT) {
      double m = fmod(fabs(v.u.f), 2.0); /* Python's x % 2 is >= 0 */
      *out = IS("odd") ? m == 1.0 : m == 0.0;
    } else {
      bool odd = ((v.t == JV_BOOL ? v.u.b : v.u.i) % 2) != 0;
      *out = IS("odd") ? odd : !odd;
    }
  } else if (IS("divisibleby")) {
    if (!need_arg(I, nargs, name, len)) return false;
    if (!jv_is_num(v) || !jv_is_num(args[0]))
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "divisibleby needs numbers");
    if (jv_num(args[0]) == 0)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "integer division or modulo by "
                   "zero");
    if (v.t == JV_FLOAT || args[0].t == JV_FLOAT) {
      *out = fmod(jv_num(v), jv_num(args[0])) == 0;
    } else {
      int64_t x = v.t == JV_BOOL ? v.u.b : v.u.i;
      int64_t y = args[0].t == JV_BOOL ? args[0].u.b : args[0].u.i;
      *out = y == -1 || x % y == 0;
    }
  } else if (IS("eq") || IS("equalto") || IS("==")) {
    if (!need_arg(I, nargs, name, len)) return false;
    return jequal(I, v, args[0], out);
  } else if (IS("ne") || IS("!=")) {
    if (!need_arg(I, nargs, name, len)) return false;
    if (!jequal(I, v, args[0], out)) return false;
    *out = !*out;
  } else if (IS("lt") || IS("lessthan") || IS("<")) {
    return need_arg(I, nargs, name, len) && ordered(I, v, args[0], JC_LT, out);
  } else if (IS("le") || IS("<=")) {
    return need_arg(I, nargs, name, len) && ordered(I, v, args[0], JC_LE, out);
  } else if (IS("gt") || IS("greaterthan") || IS(">")) {
    return need_arg(I, nargs, name, len) && ordered(I, v, args[0], JC_GT, out);
  } else if (IS("ge") || IS(">=")) {
    return need_arg(I, nargs, name, len) && ordered(I, v, args[0], JC_GE, out);
  } else if (IS("sameas")) {
    if (!need_arg(I, nargs, name, len)) return false;
    *out = same(v, args[0]);
  } else if (IS("in")) {
    if (!need_arg(I, nargs, name, len)) return false;
    jv seq = args[0];
    if (seq.t == JV_STR) {
      if (v.t != JV_STR)
        return jfail(I, NC_ERR_INVALID_ARGUMENT,
                     "'in <string>' requires string as left operand");
      *out = v.u.s.n == 0 ||
             memmem(seq.u.s.p, seq.u.s.n, v.u.s.p, v.u.s.n) != NULL;
    } else if (seq.t == JV_LIST) {
      *out = false;
      for (size_t i = 0; i < seq.u.l->n && !*out; i++)
        if (!jequal(I, v, seq.u.l->v[i], out)) return false;
    } else if (seq.t == JV_DICT || seq.t == JV_NS) {
      jv tmp;
      *out = jdict_get(seq.u.d, v, &tmp);
    } else if (seq.t == JV_UNDEF) {
      *out = false;
    } else {
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "argument of type '%s' is not iterable", jv_type_name(seq));
    }
  } else if (IS("lower") || IS("upper")) {
    return case_test(I, v, IS("upper"), out);
  } else if (IS("filter") || IS("test")) {
    *out = v.t == JV_STR; /* every known name is accepted */
  } else {
    return jfail(I, NC_ERR_FORMAT, "no test named '%.*s'",
                 (int)(len > 60 ? 60 : len), name);
  }
#undef IS
  return true;
}
