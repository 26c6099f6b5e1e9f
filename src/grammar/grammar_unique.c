/* uniqueItems beside the automaton (grammar_unique.h): the directives, the
 * JSON scanner that follows the output's paths and records the open unique
 * array's items, and the canonical forms items are compared in. */
#include "grammar_unique.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ directives */
static const char k_tag[] = "#@unique-items ";

static nc_code bad(nc_error *err, const char *why) {
  return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "grammar: #@unique-items: %s",
                 why);
}

static nc_code parse_path(const char *s, size_t n, nc_guniq_spec *sp,
                          nc_error *err) {
  if (sp->n == NC_GUNIQ_MAX_PATHS) return bad(err, "more than 64 paths");
  json_error_t je;
  json_t *p = json_loadb(s, n, 0, &je);
  if (!json_is_array(p) || json_array_size(p) > NC_GUNIQ_MAX_STEPS) {
    json_decref(p);
    return bad(err, "a path is a JSON list of at most 32 steps");
  }
  size_t k = json_array_size(p);
  nc_guniq_step *st = calloc(k ? k : 1, sizeof *st);
  if (!st) {
    json_decref(p);
    return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  }
  for (size_t i = 0; i < k; i++) {
    const json_t *x = json_array_get(p, i);
    if (json_is_string(x) && json_string_length(x) < NC_GUNIQ_MAX_KEY) {
      st[i].kind = NC_GUNIQ_KEY;
      st[i].klen = (uint32_t)json_string_length(x);
      memcpy(st[i].key, json_string_value(x), st[i].klen);
    } else if (json_is_integer(x) && json_integer_value(x) >= 0 &&
               json_integer_value(x) < UINT32_MAX) {
      st[i].kind = NC_GUNIQ_INDEX;
      st[i].index = (uint32_t)json_integer_value(x);
    } else if (json_is_array(x) && json_array_size(x) == 1 &&
               json_is_integer(json_array_get(x, 0)) &&
               json_integer_value(json_array_get(x, 0)) >= 0 &&
               json_integer_value(json_array_get(x, 0)) < UINT32_MAX) {
      st[i].kind = NC_GUNIQ_FROM;
      st[i].index = (uint32_t)json_integer_value(json_array_get(x, 0));
    } else {
      free(st);
      json_decref(p);
      return bad(err, "a step is a key (shorter than 256 bytes), an index "
                      "or [first index]");
    }
  }
  json_decref(p);
  sp->steps[sp->n] = st;
  sp->len[sp->n++] = (uint32_t)k;
  return NC_OK;
}

nc_code nc_guniq_spec_parse(const char *text, size_t len, nc_guniq_spec **out,
                            nc_error *err) {
  *out = NULL;
  nc_guniq_spec *sp = NULL;
  for (size_t i = 0; i < len;) {
    const char *nl = memchr(text + i, '\n', len - i);
    size_t e = nl ? (size_t)(nl - text) : len;
    if (e - i >= sizeof k_tag - 1 &&
        !memcmp(text + i, k_tag, sizeof k_tag - 1)) {
      if (!sp && !(sp = calloc(1, sizeof *sp)))
        return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
      nc_code rc = parse_path(text + i + sizeof k_tag - 1,
                              e - i - (sizeof k_tag - 1), sp, err);
      if (rc != NC_OK) {
        nc_guniq_spec_free(sp);
        return rc;
      }
    }
    i = e + 1;
  }
  *out = sp;
  return NC_OK;
}

void nc_guniq_spec_free(nc_guniq_spec *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->n; i++)
    free(s->steps[i]);
  free(s);
}

/* ------------------------------------------------------- canonical forms */
int nc_gudec_byte(nc_gudec *d, uint8_t b, uint8_t out[8], bool *closed) {
  *closed = false;
  uint32_t cp;
  int n = 0;
  if (d->esc == 0) {
    if (b < 0x20) return -1;
    if (b == '\\') {
      d->esc = 1;
      return 0;
    }
    if (d->hi) { /* a lone high surrogate before this byte */
      cp = d->hi;
      d->hi = 0;
      out[n++] = (uint8_t)(0xE0 | (cp >> 12));
      out[n++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
      out[n++] = (uint8_t)(0x80 | (cp & 0x3F));
    }
    if (b == '"') {
      *closed = true;
      return n;
    }
    out[n++] = b; /* raw UTF-8 is its own canonical form */
    return n;
  }
  if (d->esc == 1) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (b == 'u') {
      d->esc = 2;
      d->u = 0;
      return 0;
    }
    const char *at = b ? strchr(from, b) : NULL;
    if (!at) return -1;
    d->esc = 0;
    cp = (uint8_t)to[at - from];
  } else {
    int h = b >= '0' && b <= '9'   ? b - '0'
            : b >= 'a' && b <= 'f' ? b - 'a' + 10
            : b >= 'A' && b <= 'F' ? b - 'A' + 10
                                   : -1;
    if (h < 0) return -1;
    d->u = d->u * 16 + (uint32_t)h;
    if (++d->esc < 6) return 0;
    d->esc = 0;
    cp = d->u;
    if (d->hi && cp >= 0xDC00 && cp <= 0xDFFF) {
      cp = 0x10000 + ((d->hi - 0xD800) << 10) + (cp - 0xDC00);
      d->hi = 0;
    } else if (cp >= 0xD800 && cp <= 0xDBFF && !d->hi) {
      d->hi = cp;
      return 0;
    }
  }
  if (d->hi) { /* lone: written as itself, then this one */
    uint32_t h = d->hi;
    d->hi = 0;
    out[n++] = (uint8_t)(0xE0 | (h >> 12));
    out[n++] = (uint8_t)(0x80 | ((h >> 6) & 0x3F));
    out[n++] = (uint8_t)(0x80 | (h & 0x3F));
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      d->hi = cp;
      return n;
    }
  }
  if (cp < 0x80) {
    out[n++] = (uint8_t)cp;
  } else if (cp < 0x800) {
    out[n++] = (uint8_t)(0xC0 | (cp >> 6));
    out[n++] = (uint8_t)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out[n++] = (uint8_t)(0xE0 | (cp >> 12));
    out[n++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[n++] = (uint8_t)(0x80 | (cp & 0x3F));
  } else {
    out[n++] = (uint8_t)(0xF0 | (cp >> 18));
    out[n++] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[n++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[n++] = (uint8_t)(0x80 | (cp & 0x3F));
  }
  return n;
}

/* Numbers as Python's json and jsonschema compare them: an integer literal
 * is an exact integer, any other number a double; an int equals a double
 * of the same value. Integral values are written as exact decimal
 * integers, other doubles in hexadecimal. */
size_t nc_guniq_number_canon(const char *t, size_t n, uint8_t *out) {
  bool integer = true;
  for (size_t i = 0; i < n; i++)
    if (t[i] == '.' || t[i] == 'e' || t[i] == 'E') integer = false;
  size_t k = 0;
  out[k++] = 'n';
  if (integer) {
    size_t i = 0;
    bool neg = n && t[0] == '-';
    if (neg) i++;
    while (i + 1 < n && t[i] == '0') /* no leading zeros in JSON; still */
      i++;
    if (neg && !(n - i == 1 && t[i] == '0')) out[k++] = '-';
    memcpy(out + k, t + i, n - i);
    return k + (n - i);
  }
  char buf[400];
  char *s = n < sizeof buf ? buf : malloc(n + 1);
  if (!s) { /* out of memory: the text itself (never equal to another) */
    memcpy(out + k, t, n);
    return k + n;
  }
  memcpy(s, t, n);
  s[n] = '\0';
  double d = strtod(s, NULL);
  if (s != buf) free(s);
  int w;
  if (!isfinite(d))
    w = sprintf((char *)out + k, "%s", d > 0 ? "inf" : "-inf");
  else if (d == floor(d) && fabs(d) < 1e300)
    w = sprintf((char *)out + k, "%.0f", d == 0 ? 0.0 : d);
  else
    w = sprintf((char *)out + k, "x%a", d);
  return k + (size_t)w;
}

/* ------------------------------------------------------------ the record */
/* a then b against c: <0, 0, >0 (as bytes; a prefix is less). */
static int cmp2(const uint8_t *a, size_t an, const uint8_t *b, size_t bn,
                const uint8_t *c, size_t cn) {
  size_t m = an < cn ? an : cn;
  int r = m ? memcmp(a, c, m) : 0;
  if (r) return r;
  if (an > cn) return 1;
  size_t rest = cn - an, m2 = bn < rest ? bn : rest;
  r = m2 ? memcmp(b, c + an, m2) : 0;
  if (r) return r;
  if (bn > rest) return 1;
  return bn < rest ? -1 : 0;
}

/* The first entry not below a.b. */
static uint32_t lower(const nc_guniq_rec *r, const uint8_t *a, size_t an,
                      const uint8_t *b, size_t bn) {
  uint32_t lo = 0, hi = r->n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (cmp2(a, an, b, bn, r->v[mid], r->len[mid]) > 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static bool starts(const uint8_t *c, size_t cn, const uint8_t *a, size_t an,
                   const uint8_t *b, size_t bn) {
  return cn >= an + bn && (!an || !memcmp(c, a, an)) &&
         (!bn || !memcmp(c + an, b, bn));
}

bool nc_guniq_set_has(const nc_guniq_set *s, const uint8_t *a, size_t an,
                      const uint8_t *b, size_t bn) {
  if (s->rec) {
    uint32_t i = lower(s->rec, a, an, b, bn);
    if (i < s->rec->n && s->rec->len[i] == an + bn &&
        starts(s->rec->v[i], s->rec->len[i], a, an, b, bn))
      return true;
  }
  for (uint32_t i = 0; s->loc && i < s->loc->count; i++)
    if (s->loc->len[i] == an + bn &&
        starts(s->loc->buf + s->loc->off[i], s->loc->len[i], a, an, b, bn))
      return true;
  return false;
}

bool nc_guniq_set_prefix(const nc_guniq_set *s, const uint8_t *a, size_t an,
                         const uint8_t *b, size_t bn) {
  if (s->rec) {
    uint32_t i = lower(s->rec, a, an, b, bn);
    if (i < s->rec->n && starts(s->rec->v[i], s->rec->len[i], a, an, b, bn))
      return true;
  }
  for (uint32_t i = 0; s->loc && i < s->loc->count; i++)
    if (starts(s->loc->buf + s->loc->off[i], s->loc->len[i], a, an, b, bn))
      return true;
  return false;
}

bool nc_guniq_set_empty(const nc_guniq_set *s) {
  return !(s->rec && s->rec->n) && !(s->loc && s->loc->count);
}

static void rec_clear(nc_guniq_rec *r) {
  for (uint32_t i = 0; i < r->n; i++)
    free(r->v[i]);
  r->n = 0;
}

static nc_code rec_add(nc_guniq_rec *r, const uint8_t *a, size_t an) {
  uint32_t i = lower(r, a, an, NULL, 0);
  if (i < r->n && r->len[i] == an && (!an || !memcmp(r->v[i], a, an)))
    return NC_OK;
  if (r->n == r->cap) {
    uint32_t cap = r->cap ? r->cap * 2 : 16;
    uint8_t **v = realloc(r->v, cap * sizeof *v);
    if (!v) return NC_ERR_NOMEM;
    r->v = v;
    uint32_t *l = realloc(r->len, cap * sizeof *l);
    if (!l) return NC_ERR_NOMEM;
    r->len = l;
    r->cap = cap;
  }
  uint8_t *c = malloc(an ? an : 1);
  if (!c) return NC_ERR_NOMEM;
  if (an) memcpy(c, a, an);
  memmove(r->v + i + 1, r->v + i, (r->n - i) * sizeof *r->v);
  memmove(r->len + i + 1, r->len + i, (r->n - i) * sizeof *r->len);
  r->v[i] = c;
  r->len[i] = (uint32_t)an;
  r->n++;
  return NC_OK;
}

/* ----------------------------------------------------------- the scanner */
/* Where a scanner's events go: the record (a real feed) or a run's closed
 * items (a dry run). */
typedef struct sink {
  const nc_guniq_spec *sp;
  nc_guniq_rec *rec;   /* real */
  nc_guniq_local *loc; /* dry */
  const nc_guniq_rec *base;
} sink;

static nc_code put(nc_guniq_item *it, const uint8_t *b, size_t n) {
  if (it->n + n > it->cap) {
    size_t cap = it->cap ? it->cap * 2 : 64;
    while (cap < it->n + n)
      cap *= 2;
    uint8_t *p = realloc(it->loc, cap);
    if (!p) return NC_ERR_NOMEM;
    it->loc = p;
    it->cap = cap;
  }
  memcpy(it->loc + it->n, b, n);
  it->n += n;
  return NC_OK;
}

static void item_reset(nc_guniq_item *it) {
  it->base = NULL;
  it->base_n = 0;
  it->n = 0;
}

/* The closed item it (canonical) against the set, then into it. */
static nc_code closed_item(sink *k, const uint8_t *a, size_t an,
                           const uint8_t *b, size_t bn) {
  if (k->rec) {
    if (k->rec->n >= NC_GUNIQ_MAX_ITEMS) return NC_OK;
    uint8_t *t = malloc(an + bn + 1);
    if (!t) return NC_ERR_NOMEM;
    if (an) memcpy(t, a, an);
    if (bn) memcpy(t + an, b, bn);
    nc_code rc = rec_add(k->rec, t, an + bn);
    free(t);
    return rc;
  }
  nc_guniq_local *l = k->loc;
  nc_guniq_set s = {l->fresh ? NULL : k->base, l};
  if (nc_guniq_set_has(&s, a, an, b, bn)) {
    l->dup = true;
    return NC_OK;
  }
  if (l->count == 64) {
    l->over = true;
    return NC_OK;
  }
  size_t need = l->n + an + bn;
  if (need > l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 256;
    while (cap < need)
      cap *= 2;
    uint8_t *p = realloc(l->buf, cap);
    if (!p) return NC_ERR_NOMEM;
    l->buf = p;
    l->cap = cap;
  }
  if (an) memcpy(l->buf + l->n, a, an);
  if (bn) memcpy(l->buf + l->n + an, b, bn);
  l->off[l->count] = (uint32_t)l->n;
  l->len[l->count++] = (uint32_t)(an + bn);
  l->n = need;
  return NC_OK;
}

static nc_code close_number(sink *k, nc_guniq_item *it) {
  size_t n = it->base_n + it->n; /* 'N' then the text */
  if (n < 2) return NC_OK;
  char stack[512] = {0};
  char *t = n < sizeof stack ? stack : malloc(n + 1);
  uint8_t cstack[600];
  uint8_t *c = n + 48 < sizeof cstack ? cstack : malloc(n + 48);
  if (!t || !c) {
    if (t != stack) free(t);
    if (c != cstack) free(c);
    return NC_ERR_NOMEM;
  }
  if (it->base_n) memcpy(t, it->base, it->base_n);
  if (it->n) memcpy(t + it->base_n, it->loc, it->n);
  size_t cn = nc_guniq_number_canon(t + 1, n - 1, c);
  nc_code rc = closed_item(k, c, cn, NULL, 0);
  if (t != stack) free(t);
  if (c != cstack) free(c);
  return rc;
}

static void unique_event(sink *k) { /* a unique array opens or closes */
  if (k->rec) rec_clear(k->rec);
  if (k->loc) {
    k->loc->fresh = true;
    k->loc->count = 0;
    k->loc->n = 0;
  }
}

/* The directives a new value's path matches: the root's all; an array
 * item's by index; an object member's from its key (cmatch). */
static uint64_t value_match(const nc_guniq_spec *sp, const nc_guniq_lex *L) {
  if (L->depth == 0) return sp->n == 64 ? ~0ull : (1ull << sp->n) - 1;
  if (L->depth > NC_GUNIQ_FRAMES) return 0;
  const nc_guniq_frame *f = &L->f[L->depth - 1];
  if (f->obj) return f->cmatch;
  uint64_t m = 0;
  for (uint32_t d = 0; d < sp->n; d++) {
    if (!(f->match >> d & 1) || sp->len[d] < L->depth) continue;
    const nc_guniq_step *s = &sp->steps[d][L->depth - 1];
    if ((s->kind == NC_GUNIQ_INDEX && s->index == f->index) ||
        (s->kind == NC_GUNIQ_FROM && f->index >= s->index))
      m |= 1ull << d;
  }
  return m;
}

static void key_done(const nc_guniq_spec *sp, nc_guniq_lex *L) {
  if (L->depth == 0 || L->depth > NC_GUNIQ_FRAMES) return;
  nc_guniq_frame *f = &L->f[L->depth - 1];
  f->cmatch = 0;
  for (uint32_t d = 0; d < sp->n && !L->klong; d++) {
    if (!(f->match >> d & 1) || sp->len[d] < L->depth) continue;
    const nc_guniq_step *s = &sp->steps[d][L->depth - 1];
    if (s->kind == NC_GUNIQ_KEY && s->klen == L->klen &&
        !memcmp(s->key, L->key, L->klen))
      f->cmatch |= 1ull << d;
  }
}

static bool in_item(const nc_guniq_lex *L) {
  return L->uniq >= 0 && (int32_t)L->depth - 1 == L->uniq;
}

static nc_code lex_byte(sink *k, nc_guniq_lex *L, nc_guniq_item *it,
                        uint8_t b) {
  const nc_guniq_spec *sp = k->sp;
  nc_code rc = NC_OK;
  if (L->mode == NC_GU_STR) {
    uint8_t out[8];
    bool closed;
    int n = nc_gudec_byte(&L->dec, b, out, &closed);
    if (n < 0) n = 0; /* not JSON: the grammar refuses it anyway */
    if (L->is_key) {
      for (int i = 0; i < n; i++)
        if (L->klen < NC_GUNIQ_MAX_KEY)
          L->key[L->klen++] = (char)out[i];
        else
          L->klong = 1;
      if (closed) key_done(sp, L);
    } else if (L->is_item && n) {
      rc = put(it, out, (size_t)n);
    }
    if (closed) {
      if (L->is_item && rc == NC_OK)
        rc = closed_item(k, it->base, it->base_n, it->loc, it->n);
      L->mode = NC_GU_VALUE;
    }
    return rc;
  }
  if (L->mode == NC_GU_NUM) {
    if ((b >= '0' && b <= '9') || b == '-' || b == '+' || b == '.' ||
        b == 'e' || b == 'E')
      return L->is_item ? put(it, &b, 1) : NC_OK;
    if (L->is_item) rc = close_number(k, it);
    L->mode = NC_GU_VALUE;
    if (rc != NC_OK) return rc;
  } else if (L->mode == NC_GU_LIT) {
    if (b >= 'a' && b <= 'z') return NC_OK;
    L->mode = NC_GU_VALUE;
  }
  nc_guniq_frame *top =
      L->depth && L->depth <= NC_GUNIQ_FRAMES ? &L->f[L->depth - 1] : NULL;
  switch (b) {
  case '{':
  case '[': {
    uint64_t m = value_match(sp, L);
    if (L->depth < NC_GUNIQ_FRAMES) {
      nc_guniq_frame *f = &L->f[L->depth];
      f->obj = b == '{';
      f->want_key = 1;
      f->match = m;
      f->cmatch = 0;
      f->index = 0;
    }
    L->depth++;
    if (b == '[' && L->uniq < 0 && L->depth <= NC_GUNIQ_FRAMES) {
      for (uint32_t d = 0; d < sp->n; d++)
        if ((m >> d & 1) && sp->len[d] == L->depth - 1) {
          L->uniq = (int32_t)L->depth - 1;
          L->slot = 1;
          unique_event(k);
          break;
        }
    }
    return NC_OK;
  }
  case '}':
  case ']':
    L->slot = 0;
    if (L->depth) {
      if ((int32_t)L->depth - 1 == L->uniq) {
        L->uniq = -1;
        unique_event(k);
      }
      L->depth--;
    }
    return NC_OK;
  case ',':
    if (top && top->obj) top->want_key = 1;
    if (top && !top->obj) top->index++;
    if (in_item(L) && top->index >= NC_GUNIQ_MAX_ITEMS && k->loc)
      k->loc->dup = true; /* the record is full: no further item */
    L->slot = in_item(L);
    return NC_OK;
  case ':':
    if (top && top->obj) top->want_key = 0;
    return NC_OK;
  case '"':
    L->mode = NC_GU_STR;
    L->dec = (nc_gudec){0};
    L->is_key = top && top->obj && top->want_key;
    L->is_item = !L->is_key && in_item(L);
    L->klen = 0;
    L->klong = 0;
    L->slot = 0;
    if (L->is_item) {
      item_reset(it);
      return put(it, (const uint8_t *)"s", 1);
    }
    return NC_OK;
  default:
    if (b == '-' || (b >= '0' && b <= '9')) {
      L->mode = NC_GU_NUM;
      L->is_item = in_item(L);
      L->slot = 0;
      if (L->is_item) {
        item_reset(it);
        uint8_t two[2] = {'N', b};
        return put(it, two, 2);
      }
    } else if (b >= 'a' && b <= 'z') {
      L->mode = NC_GU_LIT;
    }
    return NC_OK;
  }
}

static void lex_copy(nc_guniq_lex *d, const nc_guniq_lex *s) {
  size_t head = offsetof(nc_guniq_lex, key);
  memcpy(d, s, head);
  memcpy(d->key, s->key, s->klen);
  uint32_t nf = s->depth < NC_GUNIQ_FRAMES ? s->depth : NC_GUNIQ_FRAMES;
  memcpy(d->f, s->f, nf * sizeof *s->f);
}

nc_code nc_guniq_create(const nc_guniq_spec *spec, nc_guniq **out) {
  *out = calloc(1, sizeof **out);
  if (!*out) return NC_ERR_NOMEM;
  (*out)->spec = spec;
  (*out)->lex.uniq = -1;
  return NC_OK;
}

void nc_guniq_free(nc_guniq *u) {
  if (!u) return;
  rec_clear(&u->rec);
  free(u->rec.v);
  free(u->rec.len);
  free(u->item.loc);
  free(u->ditem.loc);
  free(u->dloc.buf);
  for (uint32_t i = 0; i < u->n_lv; i++)
    nc_gstacks_free(&u->lv[i].st);
  free(u->lv);
  free(u->q);
  nc_gstacks_free(&u->ta.st);
  nc_gstacks_free(&u->tb.st);
  free(u);
}

nc_code nc_guniq_clone(const nc_guniq *u, nc_guniq **out) {
  nc_code rc = nc_guniq_create(u->spec, out);
  if (rc != NC_OK) return rc;
  nc_guniq *c = *out;
  lex_copy(&c->lex, &u->lex);
  for (uint32_t i = 0; rc == NC_OK && i < u->rec.n; i++)
    rc = rec_add(&c->rec, u->rec.v[i], u->rec.len[i]);
  if (rc == NC_OK && u->item.n) rc = put(&c->item, u->item.loc, u->item.n);
  if (rc != NC_OK) {
    nc_guniq_free(c);
    *out = NULL;
  }
  return rc;
}

nc_code nc_guniq_dry(nc_guniq *u, const uint8_t *b, size_t n) {
  lex_copy(&u->dlex, &u->lex);
  u->ditem.base = u->item.loc;
  u->ditem.base_n = u->item.n;
  u->ditem.n = 0;
  u->dloc.count = 0;
  u->dloc.n = 0;
  u->dloc.fresh = false;
  u->dloc.dup = false;
  u->dloc.over = false;
  sink k = {.sp = u->spec, .loc = &u->dloc, .base = &u->rec};
  for (size_t i = 0; i < n && !u->dloc.dup; i++) {
    nc_code rc = lex_byte(&k, &u->dlex, &u->ditem, b[i]);
    if (rc != NC_OK) return rc;
  }
  return NC_OK;
}

nc_code nc_guniq_feed(nc_guniq *u, const uint8_t *b, size_t n) {
  sink k = {.sp = u->spec, .rec = &u->rec};
  for (size_t i = 0; i < n; i++) {
    nc_code rc = lex_byte(&k, &u->lex, &u->item, b[i]);
    if (rc != NC_OK) return rc;
  }
  return NC_OK;
}

nc_guniq_set nc_guniq_dry_set(const nc_guniq *u) {
  nc_guniq_set s = {u->dloc.fresh ? NULL : &u->rec, &u->dloc};
  return s;
}
