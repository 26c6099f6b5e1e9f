/* jinja_json: Python's json.dumps for the tojson filter, and turning the
 * caller's JSON (jansson) into template values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_interp.h"
#include "jinja_json.h"
#include "jinja_utf8.h"

#define JSON_MAX_DEPTH 512

static void dump_string(jbuf *b, const char *s, size_t n, bool ascii) {
  jbuf_addc(b, '"');
  size_t i = 0, adv;
  while (i < n) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"')
      jbuf_add(b, "\\\"", 2);
    else if (c == '\\')
      jbuf_add(b, "\\\\", 2);
    else if (c == '\n')
      jbuf_add(b, "\\n", 2);
    else if (c == '\r')
      jbuf_add(b, "\\r", 2);
    else if (c == '\t')
      jbuf_add(b, "\\t", 2);
    else if (c == '\b')
      jbuf_add(b, "\\b", 2);
    else if (c == '\f')
      jbuf_add(b, "\\f", 2);
    else if (c < 0x20)
      jbuf_printf(b, "\\u%04x", c);
    else if (c < 0x80 || !ascii) {
      uint32_t cp = ju_decode(s + i, n - i, &adv);
      (void)cp;
      jbuf_add(b, s + i, adv);
      i += adv;
      continue;
    } else {
      uint32_t cp = ju_decode(s + i, n - i, &adv);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        jbuf_printf(b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                    0xDC00 + (cp & 0x3FF));
      } else {
        jbuf_printf(b, "\\u%04x", cp);
      }
      i += adv;
      continue;
    }
    i++;
  }
  jbuf_addc(b, '"');
}

static void newline_indent(jbuf *b, const jjson_opts *o, int level) {
  jbuf_addc(b, '\n');
  for (int i = 0; i < level; i++) {
    if (o->indent_str)
      jbuf_add(b, o->indent_str, o->indent_len);
    else
      for (int k = 0; k < o->indent; k++)
        jbuf_addc(b, ' ');
  }
}

static bool indenting(const jjson_opts *o) {
  return o->indent_str != NULL || o->indent >= 0;
}

static bool dump(jinterp *I, jv v, const jjson_opts *o, jbuf *b, int level);

static bool dump_key(jinterp *I, jv k, const jjson_opts *o, jbuf *b) {
  char num[40];
  switch (k.t) {
  case JV_STR: dump_string(b, k.u.s.p, k.u.s.n, o->ensure_ascii); return true;
  case JV_INT: jbuf_printf(b, "\"%lld\"", (long long)k.u.i); return true;
  case JV_BOOL: jbuf_adds(b, k.u.b ? "\"true\"" : "\"false\""); return true;
  case JV_NONE: jbuf_adds(b, "\"null\""); return true;
  case JV_FLOAT:
    jv_format_float(k.u.f, num);
    if (isnan(k.u.f))
      strcpy(num, "NaN");
    else if (isinf(k.u.f))
      strcpy(num, k.u.f > 0 ? "Infinity" : "-Infinity");
    jbuf_printf(b, "\"%s\"", num);
    return true;
  default:
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "keys must be str, int, float, bool or None, not %s",
                 jv_type_name(k));
  }
}

/* Key order for sort_keys (keys must all be strings, like Python). */
static int key_cmp(const jv *a, const jv *b) {
  int c = 0;
  jv_compare(*a, *b, &c);
  return c;
}

static bool dump_dict(jinterp *I, const jdict *d, const jjson_opts *o, jbuf *b,
                      int level) {
  if (d->n == 0) return jbuf_add(b, "{}", 2);
  size_t *order = jinja_arena_alloc(I->a, d->n * sizeof *order);
  if (!order) return jfail_mem(I);
  for (size_t i = 0; i < d->n; i++)
    order[i] = i;
  if (o->sort_keys) {
    for (size_t i = 0; i < d->n; i++)
      if (d->k[i].t != JV_STR)
        return jfail(I, NC_ERR_INVALID_ARGUMENT, "sort_keys needs string keys");
    /* insertion sort on indices: dicts in templates are small */
    for (size_t i = 1; i < d->n; i++) {
      size_t k = order[i], j = i;
      while (j > 0 && key_cmp(&d->k[order[j - 1]], &d->k[k]) > 0) {
        order[j] = order[j - 1];
        j--;
      }
      order[j] = k;
    }
  }
  jbuf_addc(b, '{');
  for (size_t i = 0; i < d->n; i++) {
    if (i) jbuf_add(b, o->item_sep, o->item_sep_len);
    if (indenting(o)) newline_indent(b, o, level + 1);
    if (!dump_key(I, d->k[order[i]], o, b)) return false;
    jbuf_add(b, o->key_sep, o->key_sep_len);
    if (!dump(I, d->v[order[i]], o, b, level + 1)) return false;
  }
  if (indenting(o)) newline_indent(b, o, level);
  return jbuf_addc(b, '}');
}

static bool dump(jinterp *I, jv v, const jjson_opts *o, jbuf *b, int level) {
  char num[40];
  if (level > JSON_MAX_DEPTH)
    return jfail(I, NC_ERR_LIMIT, "tojson: value nested too deeply");
  if (b->over) return jfail(I, NC_ERR_LIMIT, "tojson output too long");
  switch (v.t) {
  case JV_NONE: return jbuf_add(b, "null", 4);
  case JV_BOOL: return jbuf_adds(b, v.u.b ? "true" : "false");
  case JV_INT: return jbuf_printf(b, "%lld", (long long)v.u.i);
  case JV_FLOAT:
    if (isnan(v.u.f)) return jbuf_adds(b, "NaN");
    if (isinf(v.u.f)) return jbuf_adds(b, v.u.f > 0 ? "Infinity" : "-Infinity");
    jv_format_float(v.u.f, num);
    return jbuf_adds(b, num);
  case JV_STR: dump_string(b, v.u.s.p, v.u.s.n, o->ensure_ascii); return true;
  case JV_LIST:
    if (v.u.l->n == 0) return jbuf_add(b, "[]", 2);
    jbuf_addc(b, '[');
    for (size_t i = 0; i < v.u.l->n; i++) {
      if (i) jbuf_add(b, o->item_sep, o->item_sep_len);
      if (indenting(o)) newline_indent(b, o, level + 1);
      if (!dump(I, v.u.l->v[i], o, b, level + 1)) return false;
    }
    if (indenting(o)) newline_indent(b, o, level);
    return jbuf_addc(b, ']');
  case JV_DICT: return dump_dict(I, v.u.d, o, b, level);
  case JV_UNDEF:
  default:
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "Object of type %s is not JSON serializable", jv_type_name(v));
  }
}

bool jjson_dump(jinterp *I, jv v, const jjson_opts *o, jbuf *b) {
  if (!dump(I, v, o, b, 0)) return false;
  if (b->over) return jfail(I, NC_ERR_LIMIT, "tojson output too long");
  if (b->oom) return jfail_mem(I);
  return true;
}

/* ------------------------------------------------------ JSON -> values */

static bool from_json(jinja_arena *a, const json_t *j, jv *out, int depth) {
  if (depth > JSON_MAX_DEPTH) return false;
  switch (json_typeof(j)) {
  case JSON_NULL: *out = jv_none(); return true;
  case JSON_TRUE: *out = jv_bool(true); return true;
  case JSON_FALSE: *out = jv_bool(false); return true;
  case JSON_INTEGER: *out = jv_int((int64_t)json_integer_value(j)); return true;
  case JSON_REAL: *out = jv_float(json_real_value(j)); return true;
  case JSON_STRING: {
    size_t n = json_string_length(j);
    char *s = jinja_arena_strdup(a, json_string_value(j), n);
    if (!s) return false;
    *out = jv_str(s, n);
    return true;
  }
  case JSON_ARRAY: {
    size_t n = json_array_size(j);
    jlist *l = jlist_new(a, n);
    if (!l) return false;
    for (size_t i = 0; i < n; i++)
      if (!from_json(a, json_array_get(j, i), &l->v[i], depth + 1))
        return false;
    out->t = JV_LIST;
    out->u.l = l;
    return true;
  }
  case JSON_OBJECT: {
    jdict *d = jdict_new(a, json_object_size(j));
    if (!d) return false;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)j, key, val) {
      size_t kn = strlen(key);
      char *k = jinja_arena_strdup(a, key, kn);
      if (!k || d->n >= d->cap) return false;
      d->k[d->n] = jv_str(k, kn);
      if (!from_json(a, val, &d->v[d->n], depth + 1)) return false;
      d->n++; /* jansson keys are unique: append without a lookup */
    }
    out->t = JV_DICT;
    out->u.d = d;
    return true;
  }
  }
  return false;
}

bool jinja_value_from_json(jinja_arena *a, const json_t *j, jv *out) {
  return from_json(a, j, out, 0);
}
