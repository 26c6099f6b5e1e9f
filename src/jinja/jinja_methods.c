/* jinja_methods: the Python str, dict and list methods templates call
 * (message.content.startswith(...), tool.items(), ...). Methods that would
 * mutate a list or dict exist but refuse to run, like jinja2's
 * ImmutableSandboxedEnvironment. */
#include <string.h>

#include "jinja_interp.h"
#include "jinja_utf8.h"

enum {
  M_UNSAFE,
  /* str */
  M_STARTSWITH,
  M_ENDSWITH,
  M_SPLIT,
  M_RSPLIT,
  M_STRIP,
  M_LSTRIP,
  M_RSTRIP,
  M_UPPER,
  M_LOWER,
  M_TITLE,
  M_CAPITALIZE,
  M_SWAPCASE,
  M_REPLACE,
  M_FIND,
  M_RFIND,
  M_INDEX,
  M_RINDEX,
  M_COUNT,
  M_JOIN,
  M_ISDIGIT,
  M_ISALPHA,
  M_ISALNUM,
  M_ISSPACE,
  M_ISUPPER,
  M_ISLOWER,
  M_SPLITLINES,
  M_FORMAT,
  /* dict */
  M_GET,
  M_ITEMS,
  M_KEYS,
  M_VALUES,
  M_COPY,
  /* list */
  M_LCOUNT,
  M_LINDEX,
};

typedef struct method {
  jv_type type;
  const char *name;
  int id;
} method;

static const method METHODS[] = {
    {JV_STR, "startswith", M_STARTSWITH},
    {JV_STR, "endswith", M_ENDSWITH},
    {JV_STR, "split", M_SPLIT},
    {JV_STR, "rsplit", M_RSPLIT},
    {JV_STR, "strip", M_STRIP},
    {JV_STR, "lstrip", M_LSTRIP},
    {JV_STR, "rstrip", M_RSTRIP},
    {JV_STR, "upper", M_UPPER},
    {JV_STR, "lower", M_LOWER},
    {JV_STR, "title", M_TITLE},
    {JV_STR, "capitalize", M_CAPITALIZE},
    {JV_STR, "swapcase", M_SWAPCASE},
    {JV_STR, "replace", M_REPLACE},
    {JV_STR, "find", M_FIND},
    {JV_STR, "rfind", M_RFIND},
    {JV_STR, "index", M_INDEX},
    {JV_STR, "rindex", M_RINDEX},
    {JV_STR, "count", M_COUNT},
    {JV_STR, "join", M_JOIN},
    {JV_STR, "isdigit", M_ISDIGIT},
    {JV_STR, "isalpha", M_ISALPHA},
    {JV_STR, "isalnum", M_ISALNUM},
    {JV_STR, "isspace", M_ISSPACE},
    {JV_STR, "isupper", M_ISUPPER},
    {JV_STR, "islower", M_ISLOWER},
    {JV_STR, "splitlines", M_SPLITLINES},
    {JV_STR, "format", M_FORMAT},
    {JV_DICT, "get", M_GET},
    {JV_DICT, "items", M_ITEMS},
    {JV_DICT, "keys", M_KEYS},
    {JV_DICT, "values", M_VALUES},
    {JV_DICT, "copy", M_COPY},
    {JV_DICT, "pop", M_UNSAFE},
    {JV_DICT, "popitem", M_UNSAFE},
    {JV_DICT, "setdefault", M_UNSAFE},
    {JV_DICT, "update", M_UNSAFE},
    {JV_DICT, "clear", M_UNSAFE},
    {JV_LIST, "count", M_LCOUNT},
    {JV_LIST, "index", M_LINDEX},
    {JV_LIST, "copy", M_COPY},
    {JV_LIST, "append", M_UNSAFE},
    {JV_LIST, "extend", M_UNSAFE},
    {JV_LIST, "insert", M_UNSAFE},
    {JV_LIST, "pop", M_UNSAFE},
    {JV_LIST, "remove", M_UNSAFE},
    {JV_LIST, "reverse", M_UNSAFE},
    {JV_LIST, "sort", M_UNSAFE},
    {JV_LIST, "clear", M_UNSAFE},
};

bool jmethod_lookup(jinterp *I, jv self, const char *name, size_t len,
                    jv *out) {
  for (size_t i = 0; i < sizeof METHODS / sizeof METHODS[0]; i++) {
    const method *m = &METHODS[i];
    if (m->type != self.t || strlen(m->name) != len ||
        memcmp(m->name, name, len) != 0)
      continue;
    jfunc *fn = jinja_arena_alloc(I->a, sizeof *fn);
    if (!fn) return jfail_mem(I);
    memset(fn, 0, sizeof *fn);
    fn->kind = JF_METHOD;
    fn->id = m->id;
    fn->self = self;
    fn->node = (const jnode *)m; /* for the name in messages */
    out->t = JV_FUNC;
    out->u.fn = fn;
    return true;
  }
  return false;
}

static bool want_str(jinterp *I, const jv *args, size_t nargs, size_t i,
                     const char *what) {
  if (i < nargs && args[i].t == JV_STR) return true;
  return jfail(I, NC_ERR_INVALID_ARGUMENT, "%s() argument %zu must be str",
               what, i + 1);
}

static bool affix(jv s, jv a, bool end) {
  if (a.u.s.n > s.u.s.n) return false;
  const char *p = end ? s.u.s.p + s.u.s.n - a.u.s.n : s.u.s.p;
  return memcmp(p, a.u.s.p, a.u.s.n) == 0;
}

static bool str_pred(jv s, int id) {
  size_t i = 0, adv;
  bool any = false, cased = false;
  if (s.u.s.n == 0) return false;
  while (i < s.u.s.n) {
    uint32_t cp = ju_decode(s.u.s.p + i, s.u.s.n - i, &adv);
    i += adv;
    switch (id) {
    case M_ISDIGIT:
      if (!ju_isdigit(cp)) return false;
      break;
    case M_ISALPHA:
      if (!ju_isalpha(cp)) return false;
      break;
    case M_ISALNUM:
      if (!ju_isalpha(cp) && !ju_isdigit(cp)) return false;
      break;
    case M_ISSPACE:
      if (!ju_isspace(cp)) return false;
      break;
    case M_ISUPPER:
      if (ju_lower(cp) != cp)
        cased = true;
      else if (ju_upper(cp) != cp)
        return false;
      break;
    default: /* M_ISLOWER */
      if (ju_upper(cp) != cp)
        cased = true;
      else if (ju_lower(cp) != cp)
        return false;
    }
    any = true;
  }
  return (id == M_ISUPPER || id == M_ISLOWER) ? cased : any;
}

static bool splitlines(jinterp *I, jv s, jv *out) {
  size_t cap = s.u.s.n + 1, n = 0, i = 0, start = 0;
  jlist *l = jlist_new(I->a, cap);
  if (!l) return jfail_mem(I);
  while (i < s.u.s.n) {
    char c = s.u.s.p[i];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x1c ||
        c == 0x1d || c == 0x1e) {
      l->v[n++] = jv_str(s.u.s.p + start, i - start);
      if (c == '\r' && i + 1 < s.u.s.n && s.u.s.p[i + 1] == '\n') i++;
      start = ++i;
    } else {
      i++;
    }
  }
  if (start < s.u.s.n) l->v[n++] = jv_str(s.u.s.p + start, s.u.s.n - start);
  l->n = n;
  out->t = JV_LIST;
  out->u.l = l;
  return true;
}

static bool str_join(jinterp *I, jv sep, jv seq, jv *out) {
  jlist *items;
  if (!jv_iterate(I, seq, &items)) return false;
  jbuf b;
  jbuf_init(&b, I->lim.max_output + I->lim.max_repeat);
  for (size_t i = 0; i < items->n; i++) {
    if (items->v[i].t != JV_STR) {
      jbuf_free(&b);
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "sequence item %zu: expected str instance, %s found", i,
                   jv_type_name(items->v[i]));
    }
    if (i) jbuf_add(&b, sep.u.s.p, sep.u.s.n);
    jbuf_add(&b, items->v[i].u.s.p, items->v[i].u.s.n);
  }
  return jv_from_buf(I, &b, out);
}

static bool pairs(jinterp *I, jv d, int id, jv *out) {
  jlist *l = jlist_new(I->a, d.u.d->n);
  if (!l) return jfail_mem(I);
  for (size_t i = 0; i < d.u.d->n; i++) {
    if (id == M_KEYS)
      l->v[i] = d.u.d->k[i];
    else if (id == M_VALUES)
      l->v[i] = d.u.d->v[i];
    else {
      jlist *pair = jlist_new(I->a, 2);
      if (!pair) return jfail_mem(I);
      pair->tuple = true;
      pair->v[0] = d.u.d->k[i];
      pair->v[1] = d.u.d->v[i];
      l->v[i].t = JV_LIST;
      l->v[i].u.l = pair;
    }
  }
  out->t = JV_LIST;
  out->u.l = l;
  return true;
}

static bool str_method(jinterp *I, int id, const char *name, jv s,
                       const jv *args, size_t nargs, jv *out) {
  int64_t pos;
  const jv *a0 = nargs > 0 ? &args[0] : NULL;
  switch (id) {
  case M_STARTSWITH:
  case M_ENDSWITH: {
    if (a0 && a0->t == JV_LIST) { /* a tuple of prefixes */
      bool hit = false;
      for (size_t i = 0; i < a0->u.l->n && !hit; i++)
        hit = a0->u.l->v[i].t == JV_STR &&
              affix(s, a0->u.l->v[i], id == M_ENDSWITH);
      *out = jv_bool(hit);
      return true;
    }
    if (!want_str(I, args, nargs, 0, name)) return false;
    *out = jv_bool(affix(s, *a0, id == M_ENDSWITH));
    return true;
  }
  case M_SPLIT:
  case M_RSPLIT: {
    int64_t maxsplit = -1;
    if (nargs > 1 && args[1].t == JV_INT) maxsplit = args[1].u.i;
    return jstr_split(I, s, a0, maxsplit, id == M_RSPLIT, out);
  }
  case M_STRIP:
  case M_LSTRIP:
  case M_RSTRIP:
    if (a0 && a0->t != JV_STR && a0->t != JV_NONE)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "%s arg must be None or str",
                   name);
    return jstr_strip(I, s, a0, id != M_RSTRIP, id != M_LSTRIP, out);
  case M_UPPER: return jstr_case(I, s, JCASE_UPPER, out);
  case M_LOWER: return jstr_case(I, s, JCASE_LOWER, out);
  case M_TITLE: return jstr_case(I, s, JCASE_TITLE_PY, out);
  case M_CAPITALIZE: return jstr_case(I, s, JCASE_CAPITALIZE, out);
  case M_SWAPCASE: return jstr_case(I, s, JCASE_SWAP, out);
  case M_REPLACE:
    if (!want_str(I, args, nargs, 0, name) ||
        !want_str(I, args, nargs, 1, name))
      return false;
    return jstr_replace(I, s, args[0], args[1],
                        nargs > 2 && args[2].t == JV_INT ? args[2].u.i : -1,
                        out);
  case M_FIND:
  case M_RFIND:
  case M_INDEX:
  case M_RINDEX: {
    if (!want_str(I, args, nargs, 0, name)) return false;
    bool found = jstr_find(s, *a0, id == M_RFIND || id == M_RINDEX, &pos);
    if (!found && (id == M_INDEX || id == M_RINDEX))
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "substring not found");
    *out = jv_int(pos);
    return true;
  }
  case M_COUNT: {
    if (!want_str(I, args, nargs, 0, name)) return false;
    int64_t c = 0;
    if (a0->u.s.n == 0)
      c = (int64_t)ju_count(s.u.s.p, s.u.s.n) + 1;
    else
      for (const char *p = s.u.s.p, *end = s.u.s.p + s.u.s.n;
           (p = memmem(p, (size_t)(end - p), a0->u.s.p, a0->u.s.n));
           p += a0->u.s.n)
        c++;
    *out = jv_int(c);
    return true;
  }
  case M_JOIN:
    if (!a0)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "join() takes 1 argument");
    return str_join(I, s, *a0, out);
  case M_SPLITLINES: return splitlines(I, s, out);
  default: *out = jv_bool(str_pred(s, id)); return true;
  }
}

bool jmethod_call(jinterp *I, const jfunc *fn, const jv *args, size_t nargs,
                  const jkw *kw, size_t nkw, jv *out) {
  const method *m = (const method *)fn->node;
  jv self = fn->self;
  if (self.t == JV_STR && !jcharge(I, self.u.s.n)) return false;
  if (self.t == JV_LIST && !jcharge(I, self.u.l->n * 8)) return false;
  if (self.t == JV_DICT && !jcharge(I, self.u.d->n * 8)) return false;
  if (fn->id == M_FORMAT)
    return jformat_method(I, self, args, nargs, kw, nkw, out);
  if (nkw)
    return jfail(I, NC_ERR_UNSUPPORTED,
                 "keyword arguments to %s() are not supported", m->name);
  switch (fn->id) {
  case M_UNSAFE:
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "access to attribute '%s' of '%s' object is unsafe "
                 "(the sandbox forbids changing values)",
                 m->name, jv_type_name(self));
  case M_GET:
    if (nargs < 1)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "get expected at least 1 "
                   "argument");
    if (!jdict_get(self.u.d, args[0], out))
      *out = nargs > 1 ? args[1] : jv_none();
    return true;
  case M_ITEMS:
  case M_KEYS:
  case M_VALUES: return pairs(I, self, fn->id, out);
  case M_COPY: *out = self; return true; /* values are immutable */
  case M_LCOUNT:
  case M_LINDEX: {
    if (nargs < 1)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "%s() takes 1 argument",
                   m->name);
    int64_t c = 0;
    for (size_t i = 0; i < self.u.l->n; i++) {
      bool eq;
      if (!jequal(I, self.u.l->v[i], args[0], &eq)) return false;
      if (!eq) continue;
      if (fn->id == M_LINDEX) {
        *out = jv_int((int64_t)i);
        return true;
      }
      c++;
    }
    if (fn->id == M_LINDEX)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "value is not in list");
    *out = jv_int(c);
    return true;
  }
  default: return str_method(I, fn->id, m->name, self, args, nargs, out);
  }
}
