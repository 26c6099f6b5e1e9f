/* jinja_globals: the global functions a chat template may call: jinja2's
 * range, namespace and dict, plus transformers' raise_exception and
 * strftime_now. */
#include <string.h>
#include <time.h>

#include "jinja_interp.h"

enum { G_RANGE, G_NAMESPACE, G_DICT, G_RAISE, G_STRFTIME, G_COUNT };

static const char *const GLOBALS[G_COUNT] = {"range", "namespace", "dict",
                                             "raise_exception", "strftime_now"};

bool jglobal_lookup(const char *name, size_t len, jv *out, jinterp *I) {
  for (int i = 0; i < G_COUNT; i++) {
    if (strlen(GLOBALS[i]) != len || memcmp(GLOBALS[i], name, len) != 0)
      continue;
    jfunc *fn = jinja_arena_alloc(I->a, sizeof *fn);
    if (!fn) return jfail_mem(I);
    memset(fn, 0, sizeof *fn);
    fn->kind = JF_GLOBAL;
    fn->id = i;
    out->t = JV_FUNC;
    out->u.fn = fn;
    return true;
  }
  return false;
}

static bool int_arg(jinterp *I, jv v, int64_t *out) {
  if (v.t == JV_INT)
    *out = v.u.i;
  else if (v.t == JV_BOOL)
    *out = v.u.b;
  else
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "'%s' object cannot be interpreted as an integer",
                 jv_type_name(v));
  return true;
}

static bool range(jinterp *I, const jv *args, size_t nargs, jv *out) {
  int64_t start = 0, stop = 0, step = 1;
  if (nargs < 1 || nargs > 3)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "range expected 1 to 3 arguments");
  if (nargs == 1) {
    if (!int_arg(I, args[0], &stop)) return false;
  } else if (!int_arg(I, args[0], &start) || !int_arg(I, args[1], &stop) ||
             (nargs == 3 && !int_arg(I, args[2], &step)))
    return false;
  if (step == 0)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "range() arg 3 must not be zero");
  /* count without overflow: work in double first as a bound */
  double span = step > 0 ? ((double)stop - (double)start)
                         : ((double)start - (double)stop);
  double mag = step > 0 ? (double)step : -(double)step;
  double count = span <= 0 ? 0 : (span + mag - 1) / mag;
  if (count > (double)I->lim.max_range)
    return jfail(I, NC_ERR_LIMIT,
                 "range() of more than %lld items is not allowed",
                 (long long)I->lim.max_range);
  size_t n = (size_t)count;
  /* building the list is work too: charge it against the step budget */
  I->fuel -= (int64_t)n;
  if (I->fuel < 0)
    return jfail(I, NC_ERR_LIMIT, "template exceeded %lld evaluation steps",
                 (long long)I->lim.max_steps);
  jlist *l = jlist_new(I->a, n);
  if (!l) return jfail_mem(I);
  for (size_t i = 0; i < n; i++)
    l->v[i] = jv_int(start + (int64_t)i * step);
  out->t = JV_LIST;
  out->u.l = l;
  return true;
}

static bool make_mapping(jinterp *I, jv_type t, const jv *args, size_t nargs,
                         const jkw *kw, size_t nkw, jv *out) {
  jdict *d = jdict_new(I->a, nkw + 4);
  if (!d) return jfail_mem(I);
  if (nargs > 1)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "expected at most 1 argument");
  if (nargs == 1) {
    if (args[0].t != JV_DICT && args[0].t != JV_NS)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "expected a mapping, got '%s'",
                   jv_type_name(args[0]));
    /* the keys of a mapping are distinct: copy without lookups */
    jdict *src = args[0].u.d;
    if (!jcharge(I, src->n * 8)) return false;
    jdict *big = jdict_new(I->a, src->n + nkw + 4);
    if (!big) return jfail_mem(I);
    memcpy(big->k, src->k, src->n * sizeof(jv));
    memcpy(big->v, src->v, src->n * sizeof(jv));
    big->n = src->n;
    d = big;
  }
  for (size_t i = 0; i < nkw; i++)
    if (!jdict_set(I->a, d, jv_str(kw[i].name, kw[i].len), kw[i].val))
      return jfail_mem(I);
  out->t = t;
  out->u.d = d;
  return true;
}

static bool strftime_now(jinterp *I, const jv *args, size_t nargs, jv *out) {
  if (nargs != 1 || args[0].t != JV_STR)
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "strftime_now() takes one format string");
  char fmt[128], buf[512];
  if (args[0].u.s.n >= sizeof fmt || memchr(args[0].u.s.p, 0, args[0].u.s.n))
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "strftime_now() format too long");
  memcpy(fmt, args[0].u.s.p, args[0].u.s.n);
  fmt[args[0].u.s.n] = '\0';
  time_t t = I->now ? (time_t)I->now : time(NULL);
  struct tm tm;
  if (I->now ? !gmtime_r(&t, &tm) : !localtime_r(&t, &tm))
    return jfail(I, NC_ERR_INTERNAL, "cannot read the clock");
  size_t n = strftime(buf, sizeof buf, fmt, &tm);
  return jv_new_str(I, buf, n, out);
}

bool jglobal_call(jinterp *I, const jfunc *fn, const jv *args, size_t nargs,
                  const jkw *kw, size_t nkw, jv *out) {
  switch (fn->id) {
  case G_RANGE: return range(I, args, nargs, out);
  case G_NAMESPACE: return make_mapping(I, JV_NS, args, nargs, kw, nkw, out);
  case G_DICT: return make_mapping(I, JV_DICT, args, nargs, kw, nkw, out);
  case G_RAISE: {
    jv msg = jv_str("", 0);
    if (nargs > 0 && !jv_to_str(I, args[0], &msg)) return false;
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "%.*s",
                 (int)(msg.u.s.n > 300 ? 300 : msg.u.s.n), msg.u.s.p);
  }
  default: return strftime_now(I, args, nargs, out);
  }
}
