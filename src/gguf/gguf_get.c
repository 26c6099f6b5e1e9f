/* gguf_get: typed access to the metadata of a parsed GGUF file, and its
 * text form for `nucleus info`. Values were bounds-checked at load, so the
 * getters only read. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gguf_internal.h"

static const char *const TYPE_NAMES[GGUF_TYPE_COUNT] = {
    "UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
    "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};

static const uint8_t TYPE_SIZES[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4,
                                                    1, 0, 0, 8, 8, 8};

const char *gguf_value_type_name(gguf_value_type t) {
  return (unsigned)t < GGUF_TYPE_COUNT ? TYPE_NAMES[t] : "?";
}

size_t gguf_type_size(gguf_value_type t) {
  return (unsigned)t < GGUF_TYPE_COUNT ? TYPE_SIZES[t] : 0;
}

/* ---- numbers: one element of type t at p, as an exact integer or double */

typedef struct num {
  bool is_int;   /* integer (or bool) value in i/u */
  bool negative; /* is_int: value is i < 0 */
  int64_t i;
  uint64_t u; /* is_int && !negative: the value */
  double d;   /* always set (may be inexact for large integers) */
} num;

static bool load_num(gguf_value_type t, const uint8_t *p, num *n) {
  memset(n, 0, sizeof *n);
  n->is_int = true;
  switch (t) {
  case GGUF_TYPE_UINT8: n->u = p[0]; break;
  case GGUF_TYPE_BOOL: n->u = p[0]; break;
  case GGUF_TYPE_INT8: n->i = (int8_t)p[0]; break;
  case GGUF_TYPE_UINT16: n->u = gguf_rd16(p); break;
  case GGUF_TYPE_INT16: n->i = (int16_t)gguf_rd16(p); break;
  case GGUF_TYPE_UINT32: n->u = gguf_rd32(p); break;
  case GGUF_TYPE_INT32: n->i = (int32_t)gguf_rd32(p); break;
  case GGUF_TYPE_UINT64: n->u = gguf_rd64(p); break;
  case GGUF_TYPE_INT64: n->i = (int64_t)gguf_rd64(p); break;
  case GGUF_TYPE_FLOAT32: {
    uint32_t b = gguf_rd32(p);
    float v;
    memcpy(&v, &b, sizeof v);
    n->is_int = false;
    n->d = v;
    return true;
  }
  case GGUF_TYPE_FLOAT64: {
    uint64_t b = gguf_rd64(p);
    memcpy(&n->d, &b, sizeof n->d);
    n->is_int = false;
    return true;
  }
  default: return false;
  }
  bool is_signed = t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 ||
                   t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
  if (is_signed) {
    n->negative = n->i < 0;
    if (!n->negative) n->u = (uint64_t)n->i;
    n->d = (double)n->i;
  } else {
    n->d = (double)n->u;
  }
  return true;
}

static bool num_to_u64(const num *n, uint64_t *out) {
  if (!n->is_int || n->negative) return false;
  *out = n->u;
  return true;
}

static bool num_to_i64(const num *n, int64_t *out) {
  if (!n->is_int) return false;
  if (n->negative) {
    *out = n->i;
    return true;
  }
  if (n->u > (uint64_t)INT64_MAX) return false;
  *out = (int64_t)n->u;
  return true;
}

/* Floats as they are; integers only when a double holds them exactly. */
static bool num_to_f64(const num *n, double *out) {
  if (n->is_int) {
    const uint64_t exact = 1ull << 53;
    uint64_t mag = n->negative ? (uint64_t)0 - (uint64_t)n->i : n->u;
    if (mag > exact) return false;
  }
  *out = n->d;
  return true;
}

/* ---- metadata by index */

static const gguf_kv *kv_at(const gguf_file *f, int64_t i) {
  return f && i >= 0 && i < f->n_kv ? &f->kv[i] : NULL;
}

static const gguf_kv *kv_by_key(const gguf_file *f, const char *key) {
  return kv_at(f, gguf_find_key(f, key));
}

int64_t gguf_kv_count(const gguf_file *f) {
  return f ? f->n_kv : 0;
}

int64_t gguf_find_key(const gguf_file *f, const char *key) {
  if (!f || !key) return -1;
  return nc_name_index_find(&f->key_index, key, strlen(key));
}

gguf_str gguf_kv_key(const gguf_file *f, int64_t i) {
  const gguf_kv *kv = kv_at(f, i);
  return kv ? kv->key : (gguf_str){NULL, 0};
}

gguf_value_type gguf_kv_type(const gguf_file *f, int64_t i) {
  const gguf_kv *kv = kv_at(f, i);
  return kv ? kv->type : GGUF_TYPE_COUNT;
}

gguf_value_type gguf_kv_arr_type(const gguf_file *f, int64_t i) {
  const gguf_kv *kv = kv_at(f, i);
  return kv && kv->type == GGUF_TYPE_ARRAY ? kv->arr_type : GGUF_TYPE_COUNT;
}

uint64_t gguf_kv_arr_count(const gguf_file *f, int64_t i) {
  const gguf_kv *kv = kv_at(f, i);
  return kv && kv->type == GGUF_TYPE_ARRAY ? kv->arr_count : 0;
}

/* ---- typed getters by key */

static bool scalar_num(const gguf_file *f, const char *key, num *n) {
  const gguf_kv *kv = kv_by_key(f, key);
  if (!kv || kv->type == GGUF_TYPE_BOOL) return false;
  return load_num(kv->type, kv->val, n);
}

bool gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out) {
  num n;
  return scalar_num(f, key, &n) && num_to_u64(&n, out);
}

bool gguf_get_i64(const gguf_file *f, const char *key, int64_t *out) {
  num n;
  return scalar_num(f, key, &n) && num_to_i64(&n, out);
}

bool gguf_get_f64(const gguf_file *f, const char *key, double *out) {
  num n;
  return scalar_num(f, key, &n) && num_to_f64(&n, out);
}

bool gguf_get_bool(const gguf_file *f, const char *key, bool *out) {
  const gguf_kv *kv = kv_by_key(f, key);
  if (!kv || kv->type != GGUF_TYPE_BOOL) return false;
  *out = kv->val[0] != 0;
  return true;
}

static gguf_str str_at(const uint8_t *len_field) {
  return (gguf_str){(const char *)len_field + 8, gguf_rd64(len_field)};
}

bool gguf_get_str(const gguf_file *f, const char *key, gguf_str *out) {
  const gguf_kv *kv = kv_by_key(f, key);
  if (!kv || kv->type != GGUF_TYPE_STRING) return false;
  *out = str_at(kv->val);
  return true;
}

bool gguf_get_arr(const gguf_file *f, const char *key,
                  gguf_value_type *elem_type, uint64_t *count) {
  const gguf_kv *kv = kv_by_key(f, key);
  if (!kv || kv->type != GGUF_TYPE_ARRAY) return false;
  if (elem_type) *elem_type = kv->arr_type;
  if (count) *count = kv->arr_count;
  return true;
}

bool gguf_get_arr_str(const gguf_file *f, const char *key, uint64_t i,
                      gguf_str *out) {
  const gguf_kv *kv = kv_by_key(f, key);
  if (!kv || kv->type != GGUF_TYPE_ARRAY || kv->arr_type != GGUF_TYPE_STRING ||
      i >= kv->arr_count)
    return false;
  *out = str_at(kv->elems[i]);
  return true;
}

/* Element i of a numeric or bool array. */
static bool arr_num(const gguf_file *f, const char *key, uint64_t i, num *n) {
  const gguf_kv *kv = kv_by_key(f, key);
  if (!kv || kv->type != GGUF_TYPE_ARRAY || i >= kv->arr_count) return false;
  size_t esz = gguf_type_size(kv->arr_type);
  if (!esz) return false;
  return load_num(kv->arr_type, kv->val + i * esz, n);
}

bool gguf_get_arr_i64(const gguf_file *f, const char *key, uint64_t i,
                      int64_t *out) {
  num n;
  return arr_num(f, key, i, &n) && num_to_i64(&n, out);
}

bool gguf_get_arr_f64(const gguf_file *f, const char *key, uint64_t i,
                      double *out) {
  num n;
  return arr_num(f, key, i, &n) && num_to_f64(&n, out);
}

/* ---- text form */

typedef struct sbuf {
  char *p;
  size_t cap, len; /* len may pass cap: then the text was cut */
} sbuf;

static void put(sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = b->len < b->cap ? b->cap - b->len : 0;
  int n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0) b->len += (size_t)n;
}

/* A quoted, escaped string, cut after max bytes. */
static void put_str(sbuf *b, gguf_str s, size_t max) {
  put(b, "\"");
  uint64_t n = s.len < max ? s.len : max;
  for (uint64_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s.ptr[i];
    if (c == '"' || c == '\\')
      put(b, "\\%c", c);
    else if (c == '\n')
      put(b, "\\n");
    else if (c == '\t')
      put(b, "\\t");
    else if (c == '\r')
      put(b, "\\r");
    else if (c < 0x20 || c == 0x7f)
      put(b, "\\x%02x", c);
    else
      put(b, "%c", c);
  }
  put(b, s.len > max ? "\"...(%" PRIu64 " bytes)" : "\"", s.len);
}

static void put_num(sbuf *b, gguf_value_type t, const uint8_t *p) {
  num n;
  if (!load_num(t, p, &n)) return;
  if (t == GGUF_TYPE_BOOL)
    put(b, "%s", n.u ? "true" : "false");
  else if (!n.is_int)
    put(b, "%.9g", n.d);
  else if (n.negative)
    put(b, "%" PRId64, n.i);
  else
    put(b, "%" PRIu64, n.u);
}

#define FORMAT_MAX_ELEMS 8
#define FORMAT_MAX_STR 120
#define FORMAT_MAX_ELEM_STR 40

void gguf_format_value(const gguf_file *f, int64_t i, char *buf, size_t cap) {
  if (!buf || !cap) return;
  buf[0] = '\0';
  const gguf_kv *kv = kv_at(f, i);
  if (!kv) return;
  sbuf b = {buf, cap, 0};
  if (kv->type == GGUF_TYPE_STRING) {
    put_str(&b, str_at(kv->val), FORMAT_MAX_STR);
  } else if (kv->type != GGUF_TYPE_ARRAY) {
    put_num(&b, kv->type, kv->val);
  } else {
    uint64_t n = kv->arr_count;
    put(&b, "[%" PRIu64 " x %s]", n, gguf_value_type_name(kv->arr_type));
    size_t esz = gguf_type_size(kv->arr_type);
    for (uint64_t j = 0; j < n && j < FORMAT_MAX_ELEMS; j++) {
      put(&b, j ? ", " : " ");
      if (kv->arr_type == GGUF_TYPE_STRING)
        put_str(&b, str_at(kv->elems[j]), FORMAT_MAX_ELEM_STR);
      else
        put_num(&b, kv->arr_type, kv->val + j * esz);
    }
    if (n > FORMAT_MAX_ELEMS) put(&b, ", ...");
  }
  if (b.len >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
}

/* ---- raw entries */

/* The end of a string value at p (its u64 length, then the bytes). */
static const uint8_t *str_end(const uint8_t *p) {
  return p + 8 + gguf_rd64(p);
}

void gguf_kv_raw(const gguf_file *f, int64_t i, const void **bytes,
                 size_t *len) {
  const gguf_kv *kv = &f->kv[i];
  const uint8_t *end;
  if (kv->type == GGUF_TYPE_STRING)
    end = str_end(kv->val);
  else if (kv->type != GGUF_TYPE_ARRAY)
    end = kv->val + gguf_type_size(kv->type);
  else if (kv->arr_count == 0)
    end = kv->val;
  else if (kv->arr_type == GGUF_TYPE_STRING)
    end = str_end(kv->elems[kv->arr_count - 1]);
  else
    end = kv->val + kv->arr_count * gguf_type_size(kv->arr_type);
  *bytes = f->base + kv->offset;
  *len = (size_t)(end - (f->base + kv->offset));
}
