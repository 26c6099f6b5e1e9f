/* jinja_value: truthiness, equality, ordering and Python str()/repr(). */
#include "jinja_value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "jinja_utf8.h"

const char *jv_type_name(jv v) {
  switch (v.t) {
  case JV_UNDEF: return "Undefined";
  case JV_NONE: return "NoneType";
  case JV_BOOL: return "bool";
  case JV_INT: return "int";
  case JV_FLOAT: return "float";
  case JV_STR: return "str";
  case JV_LIST: return v.u.l->tuple ? "tuple" : "list";
  case JV_DICT: return "dict";
  case JV_NS: return "Namespace";
  case JV_LOOP: return "LoopContext";
  case JV_FUNC: return "function";
  case JV_GEN: return "generator";
  }
  return "object";
}

bool jv_truthy(jv v) {
  switch (v.t) {
  case JV_UNDEF:
  case JV_NONE: return false;
  case JV_BOOL: return v.u.b;
  case JV_INT: return v.u.i != 0;
  case JV_FLOAT: return v.u.f != 0.0;
  case JV_STR: return v.u.s.n > 0;
  case JV_LIST: return v.u.l->n > 0;
  case JV_DICT: return v.u.d->n > 0;
  default: return true;
  }
}

double jv_num(jv v) {
  if (v.t == JV_FLOAT) return v.u.f;
  if (v.t == JV_INT) return (double)v.u.i;
  if (v.t == JV_BOOL) return v.u.b ? 1.0 : 0.0;
  return 0.0;
}

static int64_t as_int(jv v) {
  return v.t == JV_BOOL ? (int64_t)v.u.b : v.u.i;
}

bool jv_equal_b(jv a, jv b, int64_t *budget) {
  if (--*budget < 0) return false;
  if (jv_is_num(a) && jv_is_num(b)) {
    if (a.t != JV_FLOAT && b.t != JV_FLOAT) return as_int(a) == as_int(b);
    return jv_num(a) == jv_num(b);
  }
  if (a.t != b.t) return false;
  switch (a.t) {
  case JV_UNDEF:
  case JV_NONE: return true;
  case JV_STR:
    if (a.u.s.n != b.u.s.n) return false;
    *budget -= (int64_t)(a.u.s.n / 64);
    return *budget >= 0 && memcmp(a.u.s.p, b.u.s.p, a.u.s.n) == 0;
  case JV_LIST:
    if (a.u.l->n != b.u.l->n || a.u.l->tuple != b.u.l->tuple) return false;
    for (size_t i = 0; i < a.u.l->n; i++)
      if (!jv_equal_b(a.u.l->v[i], b.u.l->v[i], budget)) return false;
    return true;
  case JV_DICT:
    if (a.u.d->n != b.u.d->n) return false;
    for (size_t i = 0; i < a.u.d->n; i++) {
      jv other;
      if (!jdict_get(b.u.d, a.u.d->k[i], &other)) return false;
      *budget -= (int64_t)(b.u.d->n / 8); /* the key lookup */
      if (!jv_equal_b(a.u.d->v[i], other, budget)) return false;
    }
    return true;
  case JV_NS: return a.u.d == b.u.d;
  case JV_LOOP: return a.u.loop == b.u.loop;
  case JV_FUNC: return a.u.fn == b.u.fn;
  case JV_GEN: return a.u.gen == b.u.gen;
  default: return false;
  }
}

bool jv_equal(jv a, jv b) {
  int64_t budget = INT64_MAX;
  return jv_equal_b(a, b, &budget);
}

bool jv_compare_b(jv a, jv b, int *cmp, int64_t *budget) {
  *cmp = 0;
  if (--*budget < 0) return true; /* the caller fails on the budget */
  if (jv_is_num(a) && jv_is_num(b)) {
    if (a.t != JV_FLOAT && b.t != JV_FLOAT) {
      int64_t x = as_int(a), y = as_int(b);
      *cmp = x < y ? -1 : x > y;
    } else {
      double x = jv_num(a), y = jv_num(b);
      if (isnan(x) || isnan(y))
        *cmp = 2; /* every comparison is false */
      else
        *cmp = x < y ? -1 : x > y;
    }
    return true;
  }
  if (a.t == JV_STR && b.t == JV_STR) {
    size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
    *budget -= (int64_t)(n / 64);
    int c = n ? memcmp(a.u.s.p, b.u.s.p, n) : 0;
    if (c == 0) c = a.u.s.n < b.u.s.n ? -1 : a.u.s.n > b.u.s.n;
    *cmp = c < 0 ? -1 : c > 0;
    return true;
  }
  if (a.t == JV_LIST && b.t == JV_LIST && a.u.l->tuple == b.u.l->tuple) {
    size_t n = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
    for (size_t i = 0; i < n; i++) {
      if (jv_equal_b(a.u.l->v[i], b.u.l->v[i], budget)) continue;
      if (*budget < 0) return true;
      return jv_compare_b(a.u.l->v[i], b.u.l->v[i], cmp, budget);
    }
    *cmp = a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    return true;
  }
  return false;
}

bool jv_compare(jv a, jv b, int *cmp) {
  int64_t budget = INT64_MAX;
  return jv_compare_b(a, b, cmp, &budget);
}

void jv_format_float(double f, char out[40]) {
  if (isnan(f)) {
    strcpy(out, "nan");
    return;
  }
  if (isinf(f)) {
    strcpy(out, f < 0 ? "-inf" : "inf");
    return;
  }
  char tmp[40];
  int prec;
  for (prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
    if (strtod(tmp, NULL) == f) break;
  }
  /* tmp: [-]d[.ddd]e[+-]xx -> sign, digits, exponent */
  const char *p = tmp;
  char *o = out;
  if (*p == '-') *o++ = *p++;
  char digits[24];
  size_t nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p != '.') digits[nd++] = *p;
  while (nd > 1 && digits[nd - 1] == '0')
    nd--;
  int exp = atoi(p + 1);
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      for (int i = 0; i <= exp; i++)
        *o++ = (size_t)i < nd ? digits[i] : '0';
      *o++ = '.';
      if ((size_t)exp + 1 < nd)
        for (size_t i = (size_t)exp + 1; i < nd; i++)
          *o++ = digits[i];
      else
        *o++ = '0';
    } else {
      *o++ = '0';
      *o++ = '.';
      for (int i = 0; i < -exp - 1; i++)
        *o++ = '0';
      for (size_t i = 0; i < nd; i++)
        *o++ = digits[i];
    }
    *o = '\0';
    return;
  }
  *o++ = digits[0];
  if (nd > 1) {
    *o++ = '.';
    for (size_t i = 1; i < nd; i++)
      *o++ = digits[i];
  }
  snprintf(o, 12, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}

static bool write_str_repr(jbuf *b, const char *s, size_t n) {
  bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
  char q = (has_sq && !has_dq) ? '"' : '\'';
  jbuf_addc(b, q);
  size_t i = 0, adv;
  while (i < n) {
    uint32_t cp = ju_decode(s + i, n - i, &adv);
    if (cp == '\\')
      jbuf_add(b, "\\\\", 2);
    else if (cp == (uint32_t)q) {
      jbuf_addc(b, '\\');
      jbuf_addc(b, q);
    } else if (cp == '\n')
      jbuf_add(b, "\\n", 2);
    else if (cp == '\r')
      jbuf_add(b, "\\r", 2);
    else if (cp == '\t')
      jbuf_add(b, "\\t", 2);
    else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD)
      jbuf_printf(b, "\\x%02x", cp);
    else if (cp != ' ' && ju_isspace(cp))
      jbuf_printf(b, "\\u%04x", cp);
    else
      jbuf_add(b, s + i, adv);
    i += adv;
  }
  return jbuf_addc(b, q);
}

static bool write_repr_depth(jbuf *b, jv v, int depth);

static bool write_container(jbuf *b, jv v, int depth) {
  if (depth > 200) return jbuf_add(b, "...", 3);
  if (v.t == JV_LIST) {
    jbuf_addc(b, v.u.l->tuple ? '(' : '[');
    for (size_t i = 0; i < v.u.l->n; i++) {
      if (i) jbuf_add(b, ", ", 2);
      write_repr_depth(b, v.u.l->v[i], depth + 1);
    }
    if (v.u.l->tuple && v.u.l->n == 1) jbuf_addc(b, ',');
    return jbuf_addc(b, v.u.l->tuple ? ')' : ']');
  }
  if (v.t == JV_NS) jbuf_adds(b, "<Namespace ");
  jbuf_addc(b, '{');
  for (size_t i = 0; i < v.u.d->n; i++) {
    if (i) jbuf_add(b, ", ", 2);
    write_repr_depth(b, v.u.d->k[i], depth + 1);
    jbuf_add(b, ": ", 2);
    write_repr_depth(b, v.u.d->v[i], depth + 1);
  }
  jbuf_addc(b, '}');
  return v.t == JV_NS ? jbuf_addc(b, '>') : !b->over;
}

static bool write_scalar(jbuf *b, jv v, int depth) {
  char num[40];
  switch (v.t) {
  case JV_NONE: return jbuf_add(b, "None", 4);
  case JV_BOOL: return jbuf_adds(b, v.u.b ? "True" : "False");
  case JV_INT: return jbuf_printf(b, "%lld", (long long)v.u.i);
  case JV_FLOAT: jv_format_float(v.u.f, num); return jbuf_adds(b, num);
  case JV_LOOP:
    return jbuf_printf(b, "<LoopContext %lld/%lld>",
                       (long long)v.u.loop->index0 + 1,
                       (long long)v.u.loop->length);
  case JV_FUNC: return jbuf_adds(b, "<function>");
  case JV_GEN: return jbuf_adds(b, "<generator object>");
  default: return write_container(b, v, depth);
  }
}

bool jv_write_str(jbuf *b, jv v) {
  if (v.t == JV_UNDEF) return !b->over;
  if (v.t == JV_STR) return jbuf_add(b, v.u.s.p, v.u.s.n);
  return write_scalar(b, v, 0);
}

static bool write_repr_depth(jbuf *b, jv v, int depth) {
  if (v.t == JV_UNDEF) return jbuf_adds(b, "Undefined");
  if (v.t == JV_STR) return write_str_repr(b, v.u.s.p, v.u.s.n);
  return write_scalar(b, v, depth);
}

bool jv_write_repr(jbuf *b, jv v) {
  return write_repr_depth(b, v, 0);
}

jlist *jlist_new(jinja_arena *a, size_t n) {
  if (n > SIZE_MAX / sizeof(jv) / 2) return NULL;
  jlist *l = jinja_arena_alloc(a, sizeof *l);
  if (!l) return NULL;
  l->n = n;
  l->tuple = false;
  l->v = jinja_arena_alloc(a, n * sizeof(jv));
  if (!l->v) return NULL;
  return l;
}

jdict *jdict_new(jinja_arena *a, size_t cap) {
  if (cap < 4) cap = 4;
  if (cap > SIZE_MAX / sizeof(jv) / 2) return NULL;
  jdict *d = jinja_arena_alloc(a, sizeof *d);
  if (!d) return NULL;
  d->n = 0;
  d->cap = cap;
  d->k = jinja_arena_alloc(a, cap * sizeof(jv));
  d->v = jinja_arena_alloc(a, cap * sizeof(jv));
  if (!d->k || !d->v) return NULL;
  return d;
}

static bool key_eq(jv a, jv b) {
  if (a.t == JV_STR && b.t == JV_STR)
    return a.u.s.n == b.u.s.n && memcmp(a.u.s.p, b.u.s.p, a.u.s.n) == 0;
  return jv_equal(a, b);
}

bool jdict_get(const jdict *d, jv key, jv *out) {
  for (size_t i = 0; i < d->n; i++)
    if (key_eq(d->k[i], key)) {
      *out = d->v[i];
      return true;
    }
  return false;
}

bool jdict_get_str(const jdict *d, const char *key, size_t n, jv *out) {
  return jdict_get(d, jv_str(key, n), out);
}

bool jdict_set(jinja_arena *a, jdict *d, jv key, jv val) {
  for (size_t i = 0; i < d->n; i++)
    if (key_eq(d->k[i], key)) {
      d->v[i] = val;
      return true;
    }
  if (d->n == d->cap) {
    size_t cap = d->cap * 2;
    jv *k = jinja_arena_alloc(a, cap * sizeof(jv));
    jv *v = jinja_arena_alloc(a, cap * sizeof(jv));
    if (!k || !v) return false;
    memcpy(k, d->k, d->n * sizeof(jv));
    memcpy(v, d->v, d->n * sizeof(jv));
    d->k = k;
    d->v = v;
    d->cap = cap;
  }
  d->k[d->n] = key;
  d->v[d->n] = val;
  d->n++;
  return true;
}
