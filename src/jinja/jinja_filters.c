/* jinja_filters: jinja2's builtin filters as chat templates use them, plus
 * transformers' tojson (json.dumps with ensure_ascii=False). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_interp.h"
#include "jinja_utf8.h"

typedef struct fargs {
  const jv *args;
  size_t nargs;
  const jkw *kw;
  size_t nkw;
} fargs;

/* Argument i (positional) or the keyword name; NULL when not given. */
static const jv *arg(const fargs *a, size_t i, const char *name) {
  if (i < a->nargs) return &a->args[i];
  size_t n = strlen(name);
  for (size_t k = 0; k < a->nkw; k++)
    if (a->kw[k].len == n && memcmp(a->kw[k].name, name, n) == 0)
      return &a->kw[k].val;
  return NULL;
}

static bool name_is(const char *name, size_t len, const char *lit) {
  return strlen(lit) == len && memcmp(name, lit, len) == 0;
}

static bool new_list(jinterp *I, size_t n, jlist **l) {
  *l = jlist_new(I->a, n);
  return *l || jfail_mem(I);
}

static jv list_val(jlist *l) {
  jv v = {.t = JV_LIST};
  v.u.l = l;
  return v;
}

/* jinja2's map/select/... are generators: a bad input only fails once the
 * result is consumed. Returns true with a failing generator in *out when in
 * cannot be iterated. */
static bool lazy_not_iterable(jinterp *I, jv in, jv *out) {
  if (in.t == JV_STR || in.t == JV_LIST || in.t == JV_DICT || in.t == JV_NS ||
      in.t == JV_UNDEF || in.t == JV_GEN)
    return false;
  jgen *g = jinja_arena_alloc(I->a, sizeof *g);
  char msg[80];
  snprintf(msg, sizeof msg, "'%s' object is not iterable", jv_type_name(in));
  char *s = jinja_arena_strdup(I->a, msg, strlen(msg));
  if (!g || !s) return jfail_mem(I), true;
  g->l = NULL;
  g->pos = 0;
  g->err = s;
  out->t = JV_GEN;
  out->u.gen = g;
  return true;
}

/* Wraps a computed list as the generator jinja2 would return. */
static bool as_gen(jinterp *I, jv *v) {
  if (v->t != JV_LIST) return true;
  jgen *g = jinja_arena_alloc(I->a, sizeof *g);
  if (!g) return jfail_mem(I);
  g->l = v->u.l;
  g->pos = 0;
  g->err = NULL;
  v->t = JV_GEN;
  v->u.gen = g;
  return true;
}

/* jinja2's make_attrgetter: "a.b.0" looked up with item semantics. */
static bool attr_path(jinterp *I, jv item, jv path, jv *out) {
  if (path.t != JV_STR) return jgetitem(I, item, path, out);
  const char *p = path.u.s.p, *end = p + path.u.s.n;
  *out = item;
  while (p <= end) {
    const char *dot = memchr(p, '.', (size_t)(end - p));
    if (!dot) dot = end;
    size_t n = (size_t)(dot - p);
    bool digits = n > 0;
    for (size_t i = 0; i < n; i++)
      digits &= p[i] >= '0' && p[i] <= '9';
    jv key = jv_str(p, n);
    if (digits && n < 18) key = jv_int(strtoll(p, NULL, 10));
    if (!jgetitem(I, *out, key, out)) return false;
    p = dot + 1;
  }
  return true;
}

static bool soft_str(jinterp *I, jv v, jv *out) {
  return jv_to_str(I, v, out);
}

static bool f_default(jv in, const fargs *a, jv *out) {
  const jv *def = arg(a, 0, "default_value");
  const jv *boolean = arg(a, 1, "boolean");
  bool use =
      in.t == JV_UNDEF || (boolean && jv_truthy(*boolean) && !jv_truthy(in));
  *out = use ? (def ? *def : jv_str("", 0)) : in;
  return true;
}

static bool f_length(jinterp *I, jv in, jv *out) {
  switch (in.t) {
  case JV_UNDEF: *out = jv_int(0); return true;
  case JV_STR:
    *out = jv_int((int64_t)ju_count(in.u.s.p, in.u.s.n));
    return true;
  case JV_LIST: *out = jv_int((int64_t)in.u.l->n); return true;
  case JV_DICT:
  case JV_NS: *out = jv_int((int64_t)in.u.d->n); return true;
  case JV_LOOP: *out = jv_int(in.u.loop->length); return true;
  case JV_GEN:
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "object of type 'generator' has no len()");
  default:
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "object of type '%s' has no len()",
                 jv_type_name(in));
  }
}

static bool f_first_last(jinterp *I, jv in, bool last, jv *out) {
  jlist *items;
  if (in.t == JV_GEN) {
    jgen *g = in.u.gen;
    if (g->err) return jfail(I, NC_ERR_INVALID_ARGUMENT, "%s", g->err);
    if (last)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "'generator' object is not reversible");
    if (g->pos < g->l->n)
      *out = g->l->v[g->pos++];
    else
      *out = jv_undef("no first item, sequence was empty");
    return true;
  }
  if (!jv_iterate(I, in, &items)) return false;
  if (items->n == 0)
    *out = jv_undef("no first or last item, sequence was empty");
  else
    *out = items->v[last ? items->n - 1 : 0];
  return true;
}

static bool f_join(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *sep = arg(a, 0, "d");
  const jv *attr = arg(a, 1, "attribute");
  jv sepv = jv_str("", 0);
  jlist *items;
  if (sep && !soft_str(I, *sep, &sepv)) return false;
  if (!jv_iterate(I, in, &items)) return false;
  jbuf b;
  jbuf_init(&b, I->lim.max_output + I->lim.max_repeat);
  bool ok = true;
  for (size_t i = 0; i < items->n && ok; i++) {
    jv item = items->v[i];
    if (attr && attr->t != JV_NONE) ok = attr_path(I, item, *attr, &item);
    if (i) jbuf_add(&b, sepv.u.s.p, sepv.u.s.n);
    if (ok) jv_write_str(&b, item);
  }
  if (!ok) {
    jbuf_free(&b);
    return false;
  }
  return jv_from_buf(I, &b, out);
}

static bool f_items(jinterp *I, jv in, jv *out) {
  jlist *l;
  if (in.t == JV_UNDEF) return new_list(I, 0, &l) && (*out = list_val(l), true);
  if (in.t != JV_DICT)
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "can only get item pairs from a mapping");
  if (!new_list(I, in.u.d->n, &l)) return false;
  for (size_t i = 0; i < in.u.d->n; i++) {
    jlist *pair;
    if (!new_list(I, 2, &pair)) return false;
    pair->tuple = true;
    pair->v[0] = in.u.d->k[i];
    pair->v[1] = in.u.d->v[i];
    l->v[i] = list_val(pair);
  }
  *out = list_val(l);
  return true;
}

static bool f_reverse(jinterp *I, jv in, jv *out) {
  if (in.t == JV_STR) {
    jv none = jv_none(), step = jv_int(-1);
    return jstr_slice(I, in, &none, &none, &step, out);
  }
  jlist *items, *l;
  if (!jv_iterate(I, in, &items) || !new_list(I, items->n, &l)) return false;
  for (size_t i = 0; i < items->n; i++)
    l->v[i] = items->v[items->n - 1 - i];
  *out = list_val(l);
  return true;
}

/* select / reject / selectattr / rejectattr. */
static bool f_select(jinterp *I, jv in, const fargs *a, bool attr, bool keep,
                     jv *out) {
  jlist *items, *l;
  if (!jv_truthy(in)) in = jv_undef(NULL); /* jinja2: "if value:" */
  if (!jv_iterate(I, in, &items) || !new_list(I, items->n, &l)) return false;
  size_t first = 0;
  const jv *path = NULL;
  if (attr) {
    if (a->nargs < 1)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "missing attribute argument");
    path = &a->args[0];
    first = 1;
  }
  const jv *test = first < a->nargs ? &a->args[first] : NULL;
  if (test && test->t != JV_STR)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "the test name must be a string");
  size_t n = 0;
  for (size_t i = 0; i < items->n; i++) {
    jv v = items->v[i];
    if (path && !attr_path(I, v, *path, &v)) return false;
    bool res;
    if (test) {
      if (!jtest(I, test->u.s.p, test->u.s.n, v, a->args + first + 1,
                 a->nargs - first - 1, &res))
        return false;
    } else {
      res = jv_truthy(v);
    }
    if (res == keep) l->v[n++] = items->v[i];
  }
  l->n = n;
  *out = list_val(l);
  return true;
}

static bool f_map(jinterp *I, jv in, const fargs *a, jv *out) {
  jlist *items, *l;
  if (!jv_truthy(in)) in = jv_undef(NULL); /* jinja2: "if value:" */
  if (!jv_iterate(I, in, &items) || !new_list(I, items->n, &l)) return false;
  const jv *attr = NULL;
  for (size_t k = 0; k < a->nkw; k++)
    if (a->kw[k].len == 9 && memcmp(a->kw[k].name, "attribute", 9) == 0)
      attr = &a->kw[k].val;
  const jv *def = NULL;
  for (size_t k = 0; k < a->nkw; k++)
    if (a->kw[k].len == 7 && memcmp(a->kw[k].name, "default", 7) == 0)
      def = &a->kw[k].val;
  if (!attr && (a->nargs < 1 || a->args[0].t != JV_STR))
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "map needs a filter name or attribute=");
  for (size_t i = 0; i < items->n; i++) {
    jv v = items->v[i];
    if (attr) {
      if (!attr_path(I, v, *attr, &v)) return false;
      if (v.t == JV_UNDEF && def) v = *def;
    } else if (!jfilter(I, a->args[0].u.s.p, a->args[0].u.s.n, v, a->args + 1,
                        a->nargs - 1, NULL, 0, &v)) {
      return false;
    }
    l->v[i] = v;
  }
  *out = list_val(l);
  return true;
}

/* Sort key: lower-cased strings unless case_sensitive. */
static bool sort_key(jinterp *I, jv v, const jv *attr, bool cs, jv *key) {
  if (attr && attr->t != JV_NONE && !attr_path(I, v, *attr, &v)) return false;
  if (!cs && v.t == JV_STR) return jstr_case(I, v, JCASE_LOWER, key);
  *key = v;
  return true;
}

/* Does b sort strictly before a? (fails when they are not orderable) */
static bool sorts_before(jinterp *I, jv b, jv a, bool reverse, bool *res) {
  int c;
  bool ok;
  if (!jorder(I, b, a, &c, &ok)) return false;
  if (!ok)
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "'<' not supported between instances of '%s' and '%s'",
                 jv_type_name(b), jv_type_name(a));
  *res = reverse ? c > 0 : c < 0;
  return true;
}

/* Stable merge sort of l by keys (Python's sorted, reverse keeping equal
 * items in order); every comparison spends a step. */
static bool sort_items(jinterp *I, jlist *l, jv *keys, bool reverse) {
  size_t n = l->n;
  if (n < 2) return true;
  jv *tv = jinja_arena_alloc(I->a, n * sizeof *tv);
  jv *tk = jinja_arena_alloc(I->a, n * sizeof *tk);
  if (!tv || !tk) return jfail_mem(I);
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n;
      size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) {
        bool take_right = false;
        if (!sorts_before(I, keys[j], keys[i], reverse, &take_right))
          return false;
        size_t from = take_right ? j++ : i++;
        tv[o] = l->v[from];
        tk[o++] = keys[from];
      }
      while (i < mid)
        tv[o] = l->v[i], tk[o++] = keys[i++];
      while (j < hi)
        tv[o] = l->v[j], tk[o++] = keys[j++];
    }
    memcpy(l->v, tv, n * sizeof *tv);
    memcpy(keys, tk, n * sizeof *tk);
  }
  return true;
}

static bool f_sort(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *rev = arg(a, 0, "reverse"), *cs = arg(a, 1, "case_sensitive"),
           *attr = arg(a, 2, "attribute");
  jlist *items, *l;
  if (!jv_iterate(I, in, &items) || !new_list(I, items->n, &l)) return false;
  jv *keys = jinja_arena_alloc(I->a, (items->n + 1) * sizeof *keys);
  if (!keys) return jfail_mem(I);
  for (size_t i = 0; i < items->n; i++) {
    l->v[i] = items->v[i];
    if (!sort_key(I, items->v[i], attr, cs && jv_truthy(*cs), &keys[i]))
      return false;
  }
  if (!sort_items(I, l, keys, rev && jv_truthy(*rev))) return false;
  *out = list_val(l);
  return true;
}

static bool f_dictsort(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *cs = arg(a, 0, "case_sensitive"), *by = arg(a, 1, "by"),
           *rev = arg(a, 2, "reverse");
  jv pairs;
  if (!f_items(I, in, &pairs)) return false;
  jlist *l = pairs.u.l;
  bool by_value = by && jv_is_str(*by, "value");
  jv *keys = jinja_arena_alloc(I->a, (l->n + 1) * sizeof *keys);
  if (!keys) return jfail_mem(I);
  for (size_t i = 0; i < l->n; i++)
    if (!sort_key(I, l->v[i].u.l->v[by_value ? 1 : 0], NULL,
                  cs && jv_truthy(*cs), &keys[i]))
      return false;
  if (!sort_items(I, l, keys, rev && jv_truthy(*rev))) return false;
  *out = pairs;
  return true;
}

static bool f_unique(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *cs = arg(a, 0, "case_sensitive"), *attr = arg(a, 1, "attribute");
  jlist *items, *l;
  if (!jv_iterate(I, in, &items) || !new_list(I, items->n, &l)) return false;
  jv *seen = jinja_arena_alloc(I->a, (items->n + 1) * sizeof *seen);
  if (!seen) return jfail_mem(I);
  size_t n = 0;
  for (size_t i = 0; i < items->n; i++) {
    jv key;
    if (!sort_key(I, items->v[i], attr, cs && jv_truthy(*cs), &key))
      return false;
    bool dup = false;
    for (size_t k = 0; k < n && !dup; k++)
      if (!jequal(I, seen[k], key, &dup)) return false;
    if (dup) continue;
    seen[n] = key;
    l->v[n++] = items->v[i];
  }
  l->n = n;
  *out = list_val(l);
  return true;
}

static bool f_minmax(jinterp *I, jv in, const fargs *a, bool max, jv *out) {
  const jv *cs = arg(a, 0, "case_sensitive"), *attr = arg(a, 1, "attribute");
  jlist *items;
  if (!jv_iterate(I, in, &items)) return false;
  if (items->n == 0) {
    *out = jv_undef("no aggregated item, sequence was empty");
    return true;
  }
  jv best = items->v[0], bkey;
  if (!sort_key(I, best, attr, cs && jv_truthy(*cs), &bkey)) return false;
  for (size_t i = 1; i < items->n; i++) {
    jv key;
    int c;
    if (!sort_key(I, items->v[i], attr, cs && jv_truthy(*cs), &key))
      return false;
    bool ok;
    if (!jorder(I, key, bkey, &c, &ok)) return false;
    if (!ok)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "values are not comparable");
    if (max ? c > 0 : c < 0) {
      best = items->v[i];
      bkey = key;
    }
  }
  *out = best;
  return true;
}

static bool parse_int_str(jv s, int64_t base, int64_t *out) {
  char buf[80];
  size_t n = 0;
  jv t;
  jstr_strip(NULL, s, NULL, true, true, &t);
  for (size_t i = 0; i < t.u.s.n && n < sizeof buf - 1; i++)
    if (t.u.s.p[i] != '_') buf[n++] = t.u.s.p[i];
  buf[n] = '\0';
  if (n == 0 || t.u.s.n >= sizeof buf - 1) return false;
  char *end;
  long long v = strtoll(buf, &end, (int)base);
  if (*end) return false;
  *out = v;
  return true;
}

static bool f_int(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *def = arg(a, 0, "default"), *base = arg(a, 1, "base");
  int64_t b = base && base->t == JV_INT ? base->u.i : 10, v;
  (void)I;
  if (in.t == JV_INT)
    *out = in;
  else if (in.t == JV_BOOL)
    *out = jv_int(in.u.b);
  else if (in.t == JV_FLOAT && isfinite(in.u.f) && fabs(in.u.f) < 9.2e18)
    *out = jv_int((int64_t)in.u.f);
  else if (in.t == JV_STR && b >= 2 && b <= 36 && parse_int_str(in, b, &v))
    *out = jv_int(v);
  else if (in.t == JV_STR && strtod(in.u.s.p, NULL) != 0 &&
           fabs(strtod(in.u.s.p, NULL)) < 9.2e18) {
    jv t;
    jstr_strip(NULL, in, NULL, true, true, &t);
    char buf[64];
    size_t n = t.u.s.n < 63 ? t.u.s.n : 63;
    memcpy(buf, t.u.s.p, n);
    buf[n] = '\0';
    char *end;
    double d = strtod(buf, &end);
    *out = *end ? (def ? *def : jv_int(0)) : jv_int((int64_t)d);
  } else
    *out = def ? *def : jv_int(0);
  return true;
}

static bool f_float(jv in, const fargs *a, jv *out) {
  const jv *def = arg(a, 0, "default");
  if (jv_is_num(in))
    *out = jv_float(jv_num(in));
  else if (in.t == JV_STR && in.u.s.n < 64) {
    char buf[64], *end;
    jv t;
    jstr_strip(NULL, in, NULL, true, true, &t);
    memcpy(buf, t.u.s.p, t.u.s.n);
    buf[t.u.s.n] = '\0';
    double d = strtod(buf, &end);
    *out = (t.u.s.n && !*end) ? jv_float(d) : (def ? *def : jv_float(0.0));
  } else
    *out = def ? *def : jv_float(0.0);
  return true;
}

static bool f_tojson(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *ascii = arg(a, 0, "ensure_ascii"), *indent = arg(a, 1, "indent"),
           *seps = arg(a, 2, "separators"), *sort = arg(a, 3, "sort_keys");
  jjson_opts o = {.indent = -1,
                  .item_sep = ", ",
                  .item_sep_len = 2,
                  .key_sep = ": ",
                  .key_sep_len = 2};
  o.ensure_ascii = ascii && jv_truthy(*ascii);
  o.sort_keys = sort && jv_truthy(*sort);
  if (indent && indent->t != JV_NONE) {
    if (indent->t == JV_STR) {
      o.indent_str = indent->u.s.p;
      o.indent_len = indent->u.s.n;
    } else if (indent->t == JV_INT || indent->t == JV_BOOL) {
      int64_t k = indent->t == JV_BOOL ? indent->u.b : indent->u.i;
      o.indent = k < 0 ? 0 : k > 64 ? 64 : (int)k;
    } else {
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "tojson indent must be an int "
                   "or a string");
    }
    o.item_sep = ",";
    o.item_sep_len = 1;
  }
  if (seps && seps->t != JV_NONE) {
    if (seps->t != JV_LIST || seps->u.l->n != 2 ||
        seps->u.l->v[0].t != JV_STR || seps->u.l->v[1].t != JV_STR)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "tojson separators must be two strings");
    o.item_sep = seps->u.l->v[0].u.s.p;
    o.item_sep_len = seps->u.l->v[0].u.s.n;
    o.key_sep = seps->u.l->v[1].u.s.p;
    o.key_sep_len = seps->u.l->v[1].u.s.n;
  }
  jbuf b;
  jbuf_init(&b, I->lim.max_output);
  if (!jjson_dump(I, in, &o, &b)) {
    jbuf_free(&b);
    return false;
  }
  return jv_from_buf(I, &b, out);
}

static bool f_indent(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *width = arg(a, 0, "width"), *first = arg(a, 1, "first"),
           *blank = arg(a, 2, "blank");
  jv ind, s;
  if (in.t == JV_UNDEF) return jfail_undef(I, in);
  if (in.t != JV_STR) /* jinja2 appends "\n" to the value itself */
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "unsupported operand type(s) for +=: '%s' and 'str'",
                 jv_type_name(in));
  if (width && width->t == JV_STR)
    ind = *width;
  else {
    int64_t w = width && width->t == JV_INT ? width->u.i : 4;
    if (!jstr_repeat(I, jv_str(" ", 1), w, &ind)) return false;
  }
  if (!soft_str(I, in, &s)) return false;
  jv lines;
  jv nl = jv_str("\n", 1);
  if (!jv_concat(I, s, nl, &s)) return false;
  /* jinja2 splits s + "\n" into lines */
  jv pieces;
  if (!jstr_split(I, s, &nl, -1, false, &pieces)) return false;
  lines = pieces;
  if (lines.u.l->n && lines.u.l->v[lines.u.l->n - 1].u.s.n == 0) lines.u.l->n--;
  jbuf b;
  jbuf_init(&b, I->lim.max_output);
  if (first && jv_truthy(*first)) jbuf_add(&b, ind.u.s.p, ind.u.s.n);
  for (size_t i = 0; i < lines.u.l->n; i++) {
    jv line = lines.u.l->v[i];
    if (i) {
      jbuf_addc(&b, '\n');
      if (line.u.s.n || (blank && jv_truthy(*blank)))
        jbuf_add(&b, ind.u.s.p, ind.u.s.n);
    }
    jbuf_add(&b, line.u.s.p, line.u.s.n);
  }
  return jv_from_buf(I, &b, out);
}

static bool f_round(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *prec = arg(a, 0, "precision"), *method = arg(a, 1, "method");
  if (!jv_is_num(in))
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "round needs a number");
  int64_t p = prec && prec->t == JV_INT ? prec->u.i : 0;
  if (p > 15) p = 15;
  if (p < -15) p = -15;
  double scale = pow(10.0, (double)p), x = jv_num(in) * scale, r;
  if ((!method || jv_is_str(*method, "common")) && in.t != JV_FLOAT) {
    /* Python's round() keeps an int an int */
    int64_t v = in.t == JV_BOOL ? in.u.b : in.u.i;
    *out = jv_int(p >= 0 ? v : (int64_t)(nearbyint(x) / scale));
    return true;
  }
  if (method && jv_is_str(*method, "ceil"))
    r = ceil(x);
  else if (method && jv_is_str(*method, "floor"))
    r = floor(x);
  else
    r = nearbyint(x); /* round half to even, like Python's round */
  *out = jv_float(r / scale);
  return true;
}

bool jescape(jinterp *I, jv in, jv *out) {
  jv s;
  if (in.t == JV_STR && in.markup) {
    *out = in;
    return true;
  }
  if (!soft_str(I, in, &s)) return false;
  jbuf b;
  jbuf_init(&b, I->lim.max_output);
  for (size_t i = 0; i < s.u.s.n; i++) {
    switch (s.u.s.p[i]) {
    case '&': jbuf_adds(&b, "&amp;"); break;
    case '<': jbuf_adds(&b, "&lt;"); break;
    case '>': jbuf_adds(&b, "&gt;"); break;
    case '"': jbuf_adds(&b, "&#34;"); break;
    case '\'': jbuf_adds(&b, "&#39;"); break;
    default: jbuf_addc(&b, s.u.s.p[i]);
    }
  }
  if (!jv_from_buf(I, &b, out)) return false;
  out->markup = true;
  return true;
}

static bool f_sum(jinterp *I, jv in, const fargs *a, jv *out) {
  const jv *attr = arg(a, 0, "attribute"), *start = arg(a, 1, "start");
  jlist *items;
  if (!jv_iterate(I, in, &items)) return false;
  jv acc = start ? *start : jv_int(0);
  for (size_t i = 0; i < items->n; i++) {
    jv v = items->v[i];
    if (attr && attr->t != JV_NONE && !attr_path(I, v, *attr, &v)) return false;
    if (!jv_is_num(v) || !jv_is_num(acc))
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "sum needs numbers");
    if (acc.t == JV_FLOAT || v.t == JV_FLOAT)
      acc = jv_float(jv_num(acc) + jv_num(v));
    else if (__builtin_add_overflow((int64_t)jv_num(acc), (int64_t)jv_num(v),
                                    &acc.u.i))
      return jfail(I, NC_ERR_LIMIT, "integer overflow");
    else
      acc.t = JV_INT;
  }
  *out = acc;
  return true;
}

static bool f_wordcount(jinterp *I, jv in, jv *out) {
  jv s;
  if (!soft_str(I, in, &s)) return false;
  int64_t n = 0;
  bool in_word = false;
  size_t i = 0, adv;
  while (i < s.u.s.n) {
    uint32_t cp = ju_decode(s.u.s.p + i, s.u.s.n - i, &adv);
    bool w = cp == '_' || ju_isalpha(cp) || ju_isdigit(cp);
    if (w && !in_word) n++;
    in_word = w;
    i += adv;
  }
  *out = jv_int(n);
  return true;
}

bool jfilter(jinterp *I, const char *name, size_t len, jv in, const jv *args,
             size_t nargs, const jkw *kw, size_t nkw, jv *out) {
  fargs a = {args, nargs, kw, nkw};
  /* string filters walk their input: charge its length */
  if (in.t == JV_STR && !jcharge(I, in.u.s.n)) return false;
  jv s;
  jlist *l;
#define IS(lit) name_is(name, len, lit)
  if (IS("default") || IS("d")) return f_default(in, &a, out);
  if (IS("length") || IS("count")) return f_length(I, in, out);
  if (IS("tojson")) return f_tojson(I, in, &a, out);
  if (IS("safe")) { /* Markup(value): a string marked safe */
    if (!soft_str(I, in, out)) return false;
    out->markup = true;
    return true;
  }
  if (IS("string")) return soft_str(I, in, out);
  if (IS("trim")) {
    const jv *chars = arg(&a, 0, "chars");
    return soft_str(I, in, &s) && jstr_strip(I, s, chars, true, true, out);
  }
  if (IS("upper") || IS("lower") || IS("capitalize") || IS("title")) {
    int mode = IS("upper")        ? JCASE_UPPER
               : IS("lower")      ? JCASE_LOWER
               : IS("capitalize") ? JCASE_CAPITALIZE
                                  : JCASE_TITLE_JINJA;
    return soft_str(I, in, &s) && jstr_case(I, s, mode, out);
  }
  if (IS("replace")) {
    const jv *old = arg(&a, 0, "old"), *new_ = arg(&a, 1, "new"),
             *count = arg(&a, 2, "count");
    jv o, n;
    if (!old || !new_)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "replace needs old and new");
    return soft_str(I, in, &s) && soft_str(I, *old, &o) &&
           soft_str(I, *new_, &n) &&
           jstr_replace(I, s, o, n,
                        count && count->t == JV_INT ? count->u.i : -1, out);
  }
  if (IS("first") || IS("last")) return f_first_last(I, in, IS("last"), out);
  if (IS("join")) return f_join(I, in, &a, out);
  if (IS("list")) {
    if (!jv_iterate(I, in, &l)) return false;
    jlist *copy;
    if (!new_list(I, l->n, &copy)) return false;
    if (l->n) memcpy(copy->v, l->v, l->n * sizeof(jv));
    *out = list_val(copy);
    return true;
  }
  if (IS("items")) return f_items(I, in, out) && as_gen(I, out);
  if (IS("reverse")) return f_reverse(I, in, out);
  bool lazy = IS("select") || IS("reject") || IS("selectattr") ||
              IS("rejectattr") || IS("map");
  if ((lazy && jv_truthy(in)) || IS("unique"))
    if (lazy_not_iterable(I, in, out)) return !I->failed;
  if (IS("select"))
    return f_select(I, in, &a, false, true, out) && as_gen(I, out);
  if (IS("reject"))
    return f_select(I, in, &a, false, false, out) && as_gen(I, out);
  if (IS("selectattr"))
    return f_select(I, in, &a, true, true, out) && as_gen(I, out);
  if (IS("rejectattr"))
    return f_select(I, in, &a, true, false, out) && as_gen(I, out);
  if (IS("map")) return f_map(I, in, &a, out) && as_gen(I, out);
  if ((IS("int") || IS("float")) && in.t == JV_UNDEF)
    return jfail_undef(I, in); /* Undefined.__int__ raises in jinja2 */
  if (IS("int")) return f_int(I, in, &a, out);
  if (IS("float")) return f_float(in, &a, out);
  if (IS("abs")) {
    if (in.t == JV_FLOAT)
      *out = jv_float(fabs(in.u.f));
    else if (in.t == JV_INT && in.u.i != INT64_MIN)
      *out = jv_int(in.u.i < 0 ? -in.u.i : in.u.i);
    else if (in.t == JV_BOOL)
      *out = jv_int(in.u.b);
    else
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "bad operand type for abs()");
    return true;
  }
  if (IS("sort")) return f_sort(I, in, &a, out);
  if (IS("dictsort")) return f_dictsort(I, in, &a, out);
  if (IS("unique")) return f_unique(I, in, &a, out) && as_gen(I, out);
  if (IS("min") || IS("max")) return f_minmax(I, in, &a, IS("max"), out);
  if (IS("sum")) return f_sum(I, in, &a, out);
  if (IS("indent")) return f_indent(I, in, &a, out);
  if (IS("round")) return f_round(I, in, &a, out);
  if (IS("escape") || IS("e")) return jescape(I, in, out);
  if (IS("forceescape")) {
    in.markup = false;
    return jescape(I, in, out);
  }
  if (IS("wordcount")) return f_wordcount(I, in, out);
  if (IS("format")) {
    if (nargs && nkw)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "format takes positional or keyword arguments, not both");
    jv arg;
    if (nkw) {
      jdict *d = jdict_new(I->a, nkw);
      if (!d) return jfail_mem(I);
      for (size_t k = 0; k < nkw; k++)
        if (!jdict_set(I->a, d, jv_str(kw[k].name, kw[k].len), kw[k].val))
          return jfail_mem(I);
      arg.t = JV_DICT;
      arg.u.d = d;
    } else {
      if (!new_list(I, nargs, &l)) return false;
      l->tuple = true;
      if (nargs) memcpy(l->v, args, nargs * sizeof(jv));
      arg = list_val(l);
    }
    return soft_str(I, in, &s) && jformat_percent(I, s, arg, out);
  }
  if (IS("attr")) {
    const jv *name_arg = arg(&a, 0, "name");
    if (!name_arg || name_arg->t != JV_STR)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "attr needs a name");
    return jgetattr(I, in, name_arg->u.s.p, name_arg->u.s.n, out);
  }
#undef IS
  return jfail(I, NC_ERR_FORMAT, "no filter named '%.*s'",
               (int)(len > 60 ? 60 : len), name);
}
