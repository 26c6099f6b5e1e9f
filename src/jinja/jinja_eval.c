/* jinja_eval: evaluating expressions with jinja2's semantics (attribute and
 * item lookup falling back to each other, Undefined, Python operators). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jinja_interp.h"
#include "jinja_utf8.h"

bool jfail(jinterp *I, nc_code code, const char *fmt, ...) {
  if (I->failed) return false;
  I->failed = true;
  I->code = code;
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  nc_fail(I->err, code, "template line %d: %s", I->line, msg);
  return false;
}

bool jfail_undef(jinterp *I, jv u) {
  if (u.u.s.p)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "%.*s",
                 (int)(u.u.s.n > 200 ? 200 : u.u.s.n), u.u.s.p);
  return jfail(I, NC_ERR_INVALID_ARGUMENT, "a value is undefined");
}

bool jfail_mem(jinterp *I) {
  return jfail(I, NC_ERR_LIMIT, "template used more than %zu bytes of memory",
               I->lim.max_memory);
}

bool jv_new_str(jinterp *I, const char *p, size_t n, jv *out) {
  char *s = jinja_arena_strdup(I->a, p, n);
  if (!s) return jfail_mem(I);
  *out = jv_str(s, n);
  return true;
}

/* Copying bytes costs steps too (one per 64 bytes), so that loops building
 * big strings run out of budget before they run out of memory. */
bool jcharge(jinterp *I, size_t n) {
  I->fuel -= (int64_t)(n / 64);
  if (I->fuel < 0)
    return jfail(I, NC_ERR_LIMIT, "template exceeded %lld evaluation steps",
                 (long long)I->lim.max_steps);
  return true;
}

static bool out_of_steps(jinterp *I) {
  return jfail(I, NC_ERR_LIMIT, "template exceeded %lld evaluation steps",
               (long long)I->lim.max_steps);
}

bool jequal(jinterp *I, jv a, jv b, bool *res) {
  *res = jv_equal_b(a, b, &I->fuel);
  return I->fuel >= 0 || out_of_steps(I);
}

bool jorder(jinterp *I, jv a, jv b, int *cmp, bool *ok) {
  *ok = jv_compare_b(a, b, cmp, &I->fuel);
  return I->fuel >= 0 || out_of_steps(I);
}

bool jv_concat(jinterp *I, jv a, jv b, jv *out) {
  size_t n = a.u.s.n + b.u.s.n;
  if (!jcharge(I, n)) return false;
  if (n > I->lim.max_output + I->lim.max_repeat)
    return jfail(I, NC_ERR_LIMIT, "string longer than the output limit");
  char *s = jinja_arena_alloc(I->a, n + 1);
  if (!s) return jfail_mem(I);
  if (a.u.s.n) memcpy(s, a.u.s.p, a.u.s.n);
  if (b.u.s.n) memcpy(s + a.u.s.n, b.u.s.p, b.u.s.n);
  s[n] = '\0';
  *out = jv_str(s, n);
  return true;
}

bool jv_from_buf(jinterp *I, jbuf *b, jv *out) {
  bool ok;
  if (!jcharge(I, b->n))
    ok = false;
  else if (b->over)
    ok = jfail(I, NC_ERR_LIMIT, "output longer than %zu bytes",
               I->lim.max_output);
  else if (b->oom)
    ok = jfail_mem(I);
  else
    ok = jv_new_str(I, b->p ? b->p : "", b->n, out);
  jbuf_free(b);
  return ok;
}

bool jv_to_str(jinterp *I, jv v, jv *out) {
  if (v.t == JV_STR) {
    *out = v;
    return true;
  }
  if (v.t == JV_UNDEF) {
    *out = jv_str("", 0);
    return true;
  }
  jbuf b;
  jbuf_init(&b, I->lim.max_output);
  jv_write_str(&b, v);
  return jv_from_buf(I, &b, out);
}

bool jv_iterate(jinterp *I, jv v, jlist **out) {
  switch (v.t) {
  case JV_LIST:
    if (!jcharge(I, v.u.l->n * 8)) return false; /* n/8 steps */
    *out = v.u.l;
    return true;
  case JV_GEN: {
    jgen *g = v.u.gen;
    if (g->err) return jfail(I, NC_ERR_INVALID_ARGUMENT, "%s", g->err);
    jlist *l = jlist_new(I->a, g->l->n - g->pos);
    if (!l) return jfail_mem(I);
    if (l->n) memcpy(l->v, g->l->v + g->pos, l->n * sizeof(jv));
    g->pos = g->l->n; /* consumed */
    *out = l;
    return true;
  }
  case JV_UNDEF: *out = jlist_new(I->a, 0); return *out || jfail_mem(I);
  case JV_DICT:
  case JV_NS: {
    jlist *l = jlist_new(I->a, v.u.d->n);
    if (!l) return jfail_mem(I);
    for (size_t i = 0; i < v.u.d->n; i++)
      l->v[i] = v.u.d->k[i];
    *out = l;
    return true;
  }
  case JV_STR: {
    size_t n = ju_count(v.u.s.p, v.u.s.n), i = 0, adv;
    if (!jcharge(I, n * 64)) return false;
    jlist *l = jlist_new(I->a, n);
    if (!l) return jfail_mem(I);
    for (size_t k = 0; k < n; k++) {
      ju_decode(v.u.s.p + i, v.u.s.n - i, &adv);
      l->v[k] = jv_str(v.u.s.p + i, adv);
      i += adv;
    }
    *out = l;
    return true;
  }
  default:
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "'%s' object is not iterable",
                 jv_type_name(v));
  }
}

static bool make_undef(jinterp *I, jv obj, const char *name, size_t len,
                       bool is_item, jv *out) {
  char msg[160];
  if (obj.t == JV_DICT && !is_item)
    snprintf(msg, sizeof msg, "'dict object' has no attribute '%.*s'",
             (int)(len > 80 ? 80 : len), name);
  else if (obj.t == JV_DICT)
    snprintf(msg, sizeof msg, "'dict object' has no key '%.*s'",
             (int)(len > 80 ? 80 : len), name);
  else
    snprintf(msg, sizeof msg, "'%s object' has no attribute '%.*s'",
             jv_type_name(obj), (int)(len > 80 ? 80 : len), name);
  char *s = jinja_arena_strdup(I->a, msg, strlen(msg));
  if (!s) return jfail_mem(I);
  *out = jv_undef(s);
  return true;
}

static bool loop_attr(jinterp *I, const jloop *L, const char *name, size_t len,
                      jv *out) {
#define IS(lit) (len == sizeof(lit) - 1 && memcmp(name, lit, len) == 0)
  if (IS("index"))
    *out = jv_int(L->index0 + 1);
  else if (IS("index0"))
    *out = jv_int(L->index0);
  else if (IS("revindex"))
    *out = jv_int(L->length - L->index0);
  else if (IS("revindex0"))
    *out = jv_int(L->length - L->index0 - 1);
  else if (IS("first"))
    *out = jv_bool(L->index0 == 0);
  else if (IS("last"))
    *out = jv_bool(L->index0 == L->length - 1);
  else if (IS("length"))
    *out = jv_int(L->length);
  else if (IS("previtem"))
    *out = L->prev;
  else if (IS("nextitem"))
    *out = L->next;
  else if (IS("depth"))
    *out = jv_int(1);
  else if (IS("depth0"))
    *out = jv_int(0);
  else if (IS("cycle")) {
    jfunc *fn = jinja_arena_alloc(I->a, sizeof *fn);
    if (!fn) return jfail_mem(I);
    memset(fn, 0, sizeof *fn);
    fn->kind = JF_CYCLE;
    fn->self.t = JV_LOOP;
    fn->self.u.loop = (jloop *)L;
    out->t = JV_FUNC;
    out->u.fn = fn;
  } else
    *out = jv_undef("'loop' has no such attribute");
#undef IS
  return true;
}

bool jgetattr(jinterp *I, jv obj, const char *name, size_t len, jv *out) {
  switch (obj.t) {
  case JV_UNDEF: return jfail_undef(I, obj);
  case JV_LOOP: return loop_attr(I, obj.u.loop, name, len, out);
  case JV_NS:
    if (jdict_get_str(obj.u.d, name, len, out)) return true;
    return make_undef(I, obj, name, len, false, out);
  case JV_DICT:
    if (jmethod_lookup(I, obj, name, len, out)) return true;
    if (I->failed) return false;
    if (!jcharge(I, obj.u.d->n * 8)) return false; /* a linear lookup */
    if (jdict_get_str(obj.u.d, name, len, out)) return true;
    return make_undef(I, obj, name, len, false, out);
  default:
    if (jmethod_lookup(I, obj, name, len, out)) return true;
    if (I->failed) return false;
    return make_undef(I, obj, name, len, false, out);
  }
}

static bool index_of(jv key, size_t n, size_t *idx) {
  if (key.t != JV_INT && key.t != JV_BOOL) return false;
  int64_t i = key.t == JV_BOOL ? key.u.b : key.u.i;
  if (i < 0) i += (int64_t)n;
  if (i < 0 || (uint64_t)i >= n) return false;
  *idx = (size_t)i;
  return true;
}

bool jgetitem(jinterp *I, jv obj, jv key, jv *out) {
  size_t idx;
  switch (obj.t) {
  case JV_UNDEF: return jfail_undef(I, obj);
  case JV_DICT:
  case JV_NS:
    if (!jcharge(I, obj.u.d->n * 8)) return false; /* a linear lookup */
    if (jdict_get(obj.u.d, key, out)) return true;
    break;
  case JV_LIST:
    if (index_of(key, obj.u.l->n, &idx)) {
      *out = obj.u.l->v[idx];
      return true;
    }
    break;
  case JV_STR:
    if (key.t == JV_INT || key.t == JV_BOOL) {
      if (!jcharge(I, obj.u.s.n)) return false;
      size_t n = ju_count(obj.u.s.p, obj.u.s.n);
      if (index_of(key, n, &idx)) {
        size_t off = ju_offset(obj.u.s.p, obj.u.s.n, idx), adv;
        ju_decode(obj.u.s.p + off, obj.u.s.n - off, &adv);
        *out = jv_str(obj.u.s.p + off, adv);
        return true;
      }
    }
    break;
  case JV_LOOP:
    if (key.t == JV_STR)
      return loop_attr(I, obj.u.loop, key.u.s.p, key.u.s.n, out);
    break;
  default: break;
  }
  if (key.t == JV_STR && obj.t != JV_NS && obj.t != JV_LOOP) {
    if (jmethod_lookup(I, obj, key.u.s.p, key.u.s.n, out)) return true;
    if (I->failed) return false;
    return make_undef(I, obj, key.u.s.p, key.u.s.n, true, out);
  }
  jbuf b;
  jbuf_init(&b, 100);
  jv_write_repr(&b, key);
  char msg[200];
  snprintf(msg, sizeof msg, "'%s object' has no element %.*s",
           jv_type_name(obj), (int)b.n, b.p ? b.p : "");
  jbuf_free(&b);
  char *s = jinja_arena_strdup(I->a, msg, strlen(msg));
  if (!s) return jfail_mem(I);
  *out = jv_undef(s);
  return true;
}

/* ------------------------------------------------------------ operators */

static bool type_error(jinterp *I, const char *op, jv a, jv b) {
  if (a.t == JV_UNDEF) return jfail_undef(I, a);
  if (b.t == JV_UNDEF) return jfail_undef(I, b);
  return jfail(I, NC_ERR_INVALID_ARGUMENT,
               "unsupported operand type(s) for %s: '%s' and '%s'", op,
               jv_type_name(a), jv_type_name(b));
}

static int64_t ival(jv v) {
  return v.t == JV_BOOL ? (int64_t)v.u.b : v.u.i;
}

static bool both_int(jv a, jv b) {
  return (a.t == JV_INT || a.t == JV_BOOL) && (b.t == JV_INT || b.t == JV_BOOL);
}

static bool overflow(jinterp *I) {
  return jfail(I, NC_ERR_LIMIT, "integer overflow (beyond 64 bits)");
}

static bool list_concat(jinterp *I, jv a, jv b, jv *out) {
  jlist *l = jlist_new(I->a, a.u.l->n + b.u.l->n);
  if (!l) return jfail_mem(I);
  if (a.u.l->n) memcpy(l->v, a.u.l->v, a.u.l->n * sizeof(jv));
  if (b.u.l->n) memcpy(l->v + a.u.l->n, b.u.l->v, b.u.l->n * sizeof(jv));
  l->tuple = a.u.l->tuple;
  out->t = JV_LIST;
  out->u.l = l;
  return true;
}

static bool repeat(jinterp *I, jv seq, int64_t times, jv *out) {
  if (times < 0) times = 0;
  if (seq.t == JV_STR) return jstr_repeat(I, seq, times, out);
  size_t n = seq.u.l->n;
  if (n && (uint64_t)times > I->lim.max_repeat / (n * sizeof(jv)))
    return jfail(I, NC_ERR_LIMIT, "list repetition larger than %zu bytes",
                 I->lim.max_repeat);
  jlist *l = jlist_new(I->a, n * (size_t)times);
  if (!l) return jfail_mem(I);
  for (int64_t t = 0; t < times; t++)
    if (n) memcpy(l->v + (size_t)t * n, seq.u.l->v, n * sizeof(jv));
  l->tuple = seq.u.l->tuple;
  out->t = JV_LIST;
  out->u.l = l;
  return true;
}

static double py_fmod(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

static bool arith(jinterp *I, int op, jv a, jv b, jv *out) {
  char opname[3] = {(char)op, 0, 0};
  if (op == 'F') strcpy(opname, "//");
  if (op == 'P') strcpy(opname, "**");
  if (op == '+') {
    if (a.t == JV_STR && b.t == JV_STR && a.markup != b.markup) {
      /* Markup + str escapes the plain side, like markupsafe */
      jv ea, eb;
      if (!jescape(I, a, &ea) || !jescape(I, b, &eb) ||
          !jv_concat(I, ea, eb, out))
        return false;
      out->markup = true;
      return true;
    }
    if (a.t == JV_STR && b.t == JV_STR) {
      bool m = a.markup;
      if (!jv_concat(I, a, b, out)) return false;
      out->markup = m;
      return true;
    }
    if (a.t == JV_LIST && b.t == JV_LIST && a.u.l->tuple == b.u.l->tuple)
      return list_concat(I, a, b, out);
  }
  if (op == '*') {
    if ((a.t == JV_STR || a.t == JV_LIST) && both_int(b, b))
      return repeat(I, a, ival(b), out);
    if ((b.t == JV_STR || b.t == JV_LIST) && both_int(a, a))
      return repeat(I, b, ival(a), out);
  }
  if (op == '%' && a.t == JV_STR) return jformat_percent(I, a, b, out);
  if (!jv_is_num(a) || !jv_is_num(b)) return type_error(I, opname, a, b);
  if (both_int(a, b) && op != '/') {
    int64_t x = ival(a), y = ival(b), r;
    switch (op) {
    case '+':
      if (__builtin_add_overflow(x, y, &r)) return overflow(I);
      break;
    case '-':
      if (__builtin_sub_overflow(x, y, &r)) return overflow(I);
      break;
    case '*':
      if (__builtin_mul_overflow(x, y, &r)) return overflow(I);
      break;
    case 'F':
    case '%':
      if (y == 0)
        return jfail(I, NC_ERR_INVALID_ARGUMENT,
                     "integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) return overflow(I);
      r = op == 'F' ? x / y : x % y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) r = op == 'F' ? r - 1 : r + y;
      break;
    default: /* ** */
      if (y < 0) {
        if (x == 0)
          return jfail(I, NC_ERR_INVALID_ARGUMENT,
                       "0.0 cannot be raised to a negative power");
        *out = jv_float(pow((double)x, (double)y));
        return true;
      }
      r = 1;
      for (int64_t k = 0; k < y; k++) {
        if (__builtin_mul_overflow(r, x, &r)) return overflow(I);
        if (r == 0 || r == 1) break;
      }
      if (r == 1 && x == -1 && (y & 1)) r = -1;
    }
    *out = jv_int(r);
    return true;
  }
  double x = jv_num(a), y = jv_num(b), r;
  switch (op) {
  case '+': r = x + y; break;
  case '-': r = x - y; break;
  case '*': r = x * y; break;
  case '/':
  case 'F':
  case '%':
    if (y == 0) return jfail(I, NC_ERR_INVALID_ARGUMENT, "division by zero");
    r = op == '/' ? x / y : op == 'F' ? floor(x / y) : py_fmod(x, y);
    break;
  default:
    if (x == 0 && y < 0)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "0.0 cannot be raised to a negative power");
    r = pow(x, y);
  }
  *out = jv_float(r);
  return true;
}

/* Python's "a in b". */
static bool contains(jinterp *I, jv item, jv box, bool *res) {
  switch (box.t) {
  case JV_UNDEF: *res = false; return true;
  case JV_STR:
    if (item.t != JV_STR)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "'in <string>' requires string as left operand, not %s",
                   jv_type_name(item));
    if (!jcharge(I, box.u.s.n)) return false;
    if (item.u.s.n == 0)
      *res = true;
    else
      *res = memmem(box.u.s.p, box.u.s.n, item.u.s.p, item.u.s.n) != NULL;
    return true;
  case JV_GEN: {
    jlist *l;
    if (!jv_iterate(I, box, &l)) return false;
    box.t = JV_LIST;
    box.u.l = l;
  }
    /* fall through */
  case JV_LIST:
    *res = false;
    for (size_t i = 0; i < box.u.l->n && !*res; i++)
      if (!jequal(I, item, box.u.l->v[i], res)) return false;
    return true;
  case JV_DICT:
  case JV_NS: {
    jv tmp;
    *res = jdict_get(box.u.d, item, &tmp);
    return true;
  }
  default:
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "argument of type '%s' is not iterable", jv_type_name(box));
  }
}

static bool compare(jinterp *I, int op, jv a, jv b, bool *res) {
  static const char *const names[] = {"==", "!=", "<", "<=", ">", ">="};
  int c;
  switch (op) {
  case JC_EQ: return jequal(I, a, b, res);
  case JC_NE:
    if (!jequal(I, a, b, res)) return false;
    *res = !*res;
    return true;
  case JC_IN: return contains(I, a, b, res);
  case JC_NOTIN:
    if (!contains(I, a, b, res)) return false;
    *res = !*res;
    return true;
  default:
    if (a.t == JV_UNDEF) return jfail_undef(I, a);
    if (b.t == JV_UNDEF) return jfail_undef(I, b);
    bool orderable;
    if (!jorder(I, a, b, &c, &orderable)) return false;
    if (!orderable)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "'%s' not supported between instances of '%s' and '%s'",
                   names[op], jv_type_name(a), jv_type_name(b));
    if (c == 2)
      *res = false; /* NaN */
    else if (op == JC_LT)
      *res = c < 0;
    else if (op == JC_LE)
      *res = c <= 0;
    else if (op == JC_GT)
      *res = c > 0;
    else
      *res = c >= 0;
    return true;
  }
}

/* --------------------------------------------------------------- lookup */

static bool lookup(jinterp *I, const char *name, size_t len, jv *out) {
  for (jframe *f = I->frame; f; f = f->parent)
    if (jdict_get_str(f->vars, name, len, out)) return true;
  if (jglobal_lookup(name, len, out, I)) return true;
  if (I->failed) return false;
  char msg[120];
  snprintf(msg, sizeof msg, "'%.*s' is undefined", (int)(len > 80 ? 80 : len),
           name);
  char *s = jinja_arena_strdup(I->a, msg, strlen(msg));
  if (!s) return jfail_mem(I);
  *out = jv_undef(s);
  return true;
}

/* Evaluates positional and keyword arguments of a call/filter/test node. */
static bool eval_args(jinterp *I, const jnode *n, jv *args, jkw *kw) {
  if (n->n_kids > JINJA_MAX_ARGS || n->n_kw > JINJA_MAX_ARGS)
    return jfail(I, NC_ERR_LIMIT, "more than %d arguments in one call",
                 JINJA_MAX_ARGS);
  for (size_t i = 0; i < n->n_kids; i++)
    if (!jeval(I, n->kids[i], &args[i])) return false;
  for (size_t i = 0; i < n->n_kw; i++) {
    kw[i].name = n->kwnames[i];
    kw[i].len = n->kwlens[i];
    if (!jeval(I, n->kwvals[i], &kw[i].val)) return false;
  }
  return true;
}

static bool eval_slice(jinterp *I, const jnode *n, jv *out) {
  jv obj, parts[3];
  const jnode *pn[3] = {n->b, n->c, n->d};
  if (!jeval(I, n->a, &obj)) return false;
  for (int i = 0; i < 3; i++) {
    parts[i] = jv_none();
    if (pn[i] && !jeval(I, pn[i], &parts[i])) return false;
  }
  if (obj.t == JV_UNDEF) return jfail_undef(I, obj);
  if (obj.t == JV_STR)
    return jstr_slice(I, obj, &parts[0], &parts[1], &parts[2], out);
  if (obj.t == JV_LIST)
    return jlist_slice(I, obj, &parts[0], &parts[1], &parts[2], out);
  /* jinja2 compiles a slice as a plain Python subscript: no Undefined */
  if (obj.t == JV_DICT || obj.t == JV_NS)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "unhashable type: 'slice'");
  return jfail(I, NC_ERR_INVALID_ARGUMENT, "'%s' object is not subscriptable",
               jv_type_name(obj));
}

static bool eval_collection(jinterp *I, const jnode *n, jv *out) {
  if (n->kind == JN_DICT) {
    jdict *d = jdict_new(I->a, n->n_kids / 2);
    if (!d) return jfail_mem(I);
    for (size_t i = 0; i + 1 < n->n_kids; i += 2) {
      jv k, v;
      if (!jeval(I, n->kids[i], &k) || !jeval(I, n->kids[i + 1], &v))
        return false;
      if (k.t == JV_LIST || k.t == JV_DICT || k.t == JV_NS)
        return jfail(I, NC_ERR_INVALID_ARGUMENT, "unhashable type: '%s'",
                     jv_type_name(k));
      if (!jcharge(I, d->n * 8)) return false;
      if (!jdict_set(I->a, d, k, v)) return jfail_mem(I);
    }
    out->t = JV_DICT;
    out->u.d = d;
    return true;
  }
  jlist *l = jlist_new(I->a, n->n_kids);
  if (!l) return jfail_mem(I);
  l->tuple = n->kind == JN_TUPLE;
  for (size_t i = 0; i < n->n_kids; i++)
    if (!jeval(I, n->kids[i], &l->v[i])) return false;
  out->t = JV_LIST;
  out->u.l = l;
  return true;
}

/* Calls, filters and tests: kept apart so the argument arrays only take
 * stack space where they are used. */
static __attribute__((noinline)) bool eval_applied(jinterp *I, const jnode *n,
                                                   jv *out) {
  jv a, args[JINJA_MAX_ARGS];
  jkw kw[JINJA_MAX_ARGS];
  bool res;
  if (n->kind == JN_FILTER && !n->a)
    return jfail(I, NC_ERR_INTERNAL, "filter without input");
  if (!jeval(I, n->a, &a) || !eval_args(I, n, args, kw)) return false;
  I->line = n->line;
  if (n->kind == JN_CALL) return jcall(I, a, args, n->n_kids, kw, n->n_kw, out);
  if (n->kind == JN_FILTER)
    return jfilter(I, n->name, n->name_len, a, args, n->n_kids, kw, n->n_kw,
                   out);
  if (!jtest(I, n->name, n->name_len, a, args, n->n_kids, &res)) return false;
  *out = jv_bool(n->op ? !res : res);
  return true;
}

static bool eval_inner(jinterp *I, const jnode *n, jv *out) {
  jv a, b;
  bool res = true;
  switch (n->kind) {
  case JN_LIT: *out = n->value; return true;
  case JN_NAME: return lookup(I, n->name, n->name_len, out);
  case JN_LIST:
  case JN_TUPLE:
  case JN_DICT: return eval_collection(I, n, out);
  case JN_ATTR:
    return jeval(I, n->a, &a) && jgetattr(I, a, n->name, n->name_len, out);
  case JN_SUBSCRIPT:
    return jeval(I, n->a, &a) && jeval(I, n->b, &b) && jgetitem(I, a, b, out);
  case JN_SLICE: return eval_slice(I, n, out);
  case JN_CALL:
  case JN_FILTER:
  case JN_TEST: return eval_applied(I, n, out);
  case JN_UNARY:
    if (!jeval(I, n->a, &a)) return false;
    if (n->op == '!') {
      *out = jv_bool(!jv_truthy(a));
      return true;
    }
    if (a.t == JV_UNDEF) return jfail_undef(I, a);
    if (!jv_is_num(a))
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "bad operand type for unary %c: "
                   "'%s'",
                   n->op, jv_type_name(a));
    if (a.t == JV_FLOAT)
      *out = jv_float(n->op == '-' ? -a.u.f : a.u.f);
    else if (n->op == '-' && ival(a) == INT64_MIN)
      return overflow(I);
    else
      *out = jv_int(n->op == '-' ? -ival(a) : ival(a));
    return true;
  case JN_BINARY:
    if (!jeval(I, n->a, &a)) return false;
    if (n->op == '&' || n->op == '|') {
      bool t = jv_truthy(a);
      if ((n->op == '&') != t) {
        *out = a;
        return true;
      }
      return jeval(I, n->b, out);
    }
    if (!jeval(I, n->b, &b)) return false;
    I->line = n->line;
    if (n->op == '~') {
      jv sa, sb;
      return jv_to_str(I, a, &sa) && jv_to_str(I, b, &sb) &&
             jv_concat(I, sa, sb, out);
    }
    return arith(I, n->op, a, b, out);
  case JN_COMPARE:
    if (!jeval(I, n->kids[0], &a)) return false;
    for (size_t i = 1; i < n->n_kids; i++) {
      if (!jeval(I, n->kids[i], &b)) return false;
      I->line = n->line;
      if (!compare(I, n->ops[i - 1], a, b, &res)) return false;
      if (!res) break;
      a = b;
    }
    *out = jv_bool(res);
    return true;
  case JN_COND:
    if (!jeval(I, n->a, &a)) return false;
    if (jv_truthy(a)) return jeval(I, n->b, out);
    if (n->c) return jeval(I, n->c, out);
    *out = jv_undef("the inline if expression evaluated to false and no "
                    "else section was defined");
    return true;
  default: return jfail(I, NC_ERR_INTERNAL, "statement used as an expression");
  }
}

bool jeval(jinterp *I, const jnode *n, jv *out) {
  if (I->failed) return false;
  if (!n) return jfail(I, NC_ERR_INTERNAL, "missing expression");
  if (--I->fuel < 0)
    return jfail(I, NC_ERR_LIMIT, "template exceeded %lld evaluation steps",
                 (long long)I->lim.max_steps);
  if (++I->depth > JINJA_MAX_EVAL_DEPTH) {
    I->depth--;
    return jfail(I, NC_ERR_LIMIT, "template recursion deeper than %d",
                 JINJA_MAX_EVAL_DEPTH);
  }
  I->line = n->line;
  bool ok = eval_inner(I, n, out);
  I->depth--;
  return ok;
}
