/* jinja_strings: Python str operations on UTF-8 (code point semantics). */
#include <string.h>

#include "jinja_interp.h"
#include "jinja_utf8.h"

static bool in_chars(uint32_t cp, const jv *chars) {
  if (!chars || chars->t != JV_STR) return ju_isspace(cp);
  size_t i = 0, adv;
  while (i < chars->u.s.n) {
    if (ju_decode(chars->u.s.p + i, chars->u.s.n - i, &adv) == cp) return true;
    i += adv;
  }
  return false;
}

bool jstr_strip(jinterp *I, jv s, const jv *chars, bool left, bool right,
                jv *out) {
  (void)I;
  if (chars && chars->t == JV_NONE) chars = NULL;
  size_t start = 0, end = s.u.s.n, adv;
  if (left)
    while (start < end) {
      uint32_t cp = ju_decode(s.u.s.p + start, end - start, &adv);
      if (!in_chars(cp, chars)) break;
      start += adv;
    }
  if (right)
    while (end > start) {
      size_t k = end - 1;
      while (k > start && ((unsigned char)s.u.s.p[k] & 0xC0) == 0x80 &&
             end - k < 4)
        k--;
      uint32_t cp = ju_decode(s.u.s.p + k, end - k, &adv);
      if (k + adv != end) {
        k = end - 1;
        cp = (unsigned char)s.u.s.p[k];
      }
      if (!in_chars(cp, chars)) break;
      end = k;
    }
  *out = jv_str(s.u.s.p + start, end - start);
  return true;
}

static bool jinja_title_sep(uint32_t cp) {
  return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' ||
         ju_isspace(cp);
}

bool jstr_case(jinterp *I, jv s, int mode, jv *out) {
  char *o = jinja_arena_alloc(I->a, s.u.s.n * 2 + 1);
  if (!o) return jfail_mem(I);
  size_t i = 0, n = 0, adv;
  bool prev_cased = false, first = true;
  uint32_t prev = 0;
  while (i < s.u.s.n) {
    uint32_t cp = ju_decode(s.u.s.p + i, s.u.s.n - i, &adv), r = cp;
    if (cp == 0xDF) { /* sharp s: upper "SS", title "Ss" */
      bool start = mode == JCASE_TITLE_PY     ? !prev_cased
                   : mode == JCASE_CAPITALIZE ? first
                   : mode == JCASE_TITLE_JINJA
                       ? (first || jinja_title_sep(prev))
                       : false;
      bool up = mode == JCASE_UPPER || mode == JCASE_SWAP ||
                (mode == JCASE_TITLE_JINJA && start);
      if (up || start) {
        o[n++] = 'S';
        o[n++] = up ? 'S' : 's';
      } else {
        n += ju_encode(cp, o + n);
      }
      prev_cased = true;
      prev = cp;
      first = false;
      i += adv;
      continue;
    }
    switch (mode) {
    case JCASE_UPPER: r = ju_upper(cp); break;
    case JCASE_LOWER: r = ju_lower(cp); break;
    case JCASE_CAPITALIZE: r = first ? ju_upper(cp) : ju_lower(cp); break;
    case JCASE_SWAP:
      r = ju_upper(cp) != cp ? ju_upper(cp) : ju_lower(cp);
      break;
    case JCASE_TITLE_PY:
      r = prev_cased ? ju_lower(cp) : ju_upper(cp);
      prev_cased = ju_iscased(cp);
      break;
    default: /* jinja2's title filter */
      r = (first || jinja_title_sep(prev)) ? ju_upper(cp) : ju_lower(cp);
    }
    if (adv == 1 && cp >= 0x80)
      o[n++] = s.u.s.p[i]; /* invalid byte */
    else
      n += ju_encode(r, o + n);
    prev = cp;
    first = false;
    i += adv;
  }
  o[n] = '\0';
  *out = jv_str(o, n);
  return true;
}

bool jstr_repeat(jinterp *I, jv s, int64_t times, jv *out) {
  if (times <= 0 || s.u.s.n == 0) {
    *out = jv_str("", 0);
    return true;
  }
  if ((uint64_t)times > I->lim.max_repeat / s.u.s.n)
    return jfail(I, NC_ERR_LIMIT, "string repetition longer than %zu bytes",
                 I->lim.max_repeat);
  size_t n = s.u.s.n * (size_t)times;
  if (!jcharge(I, n)) return false;
  char *o = jinja_arena_alloc(I->a, n + 1);
  if (!o) return jfail_mem(I);
  for (int64_t t = 0; t < times; t++)
    memcpy(o + (size_t)t * s.u.s.n, s.u.s.p, s.u.s.n);
  o[n] = '\0';
  *out = jv_str(o, n);
  return true;
}

bool jstr_replace(jinterp *I, jv s, jv old, jv new_, int64_t count, jv *out) {
  jbuf b;
  jbuf_init(&b, I->lim.max_output + I->lim.max_repeat);
  size_t i = 0, adv;
  int64_t done = 0;
  if (old.u.s.n == 0) {
    while (count < 0 || done < count) {
      jbuf_add(&b, new_.u.s.p, new_.u.s.n);
      done++;
      if (i >= s.u.s.n) break;
      ju_decode(s.u.s.p + i, s.u.s.n - i, &adv);
      jbuf_add(&b, s.u.s.p + i, adv);
      i += adv;
    }
    jbuf_add(&b, s.u.s.p + i, s.u.s.n - i);
    return jv_from_buf(I, &b, out);
  }
  while (i <= s.u.s.n && (count < 0 || done < count)) {
    const char *hit = memmem(s.u.s.p + i, s.u.s.n - i, old.u.s.p, old.u.s.n);
    if (!hit) break;
    size_t at = (size_t)(hit - s.u.s.p);
    jbuf_add(&b, s.u.s.p + i, at - i);
    jbuf_add(&b, new_.u.s.p, new_.u.s.n);
    i = at + old.u.s.n;
    done++;
  }
  jbuf_add(&b, s.u.s.p + i, s.u.s.n - i);
  return jv_from_buf(I, &b, out);
}

typedef struct piece {
  size_t start, len;
} piece;

static bool pieces_to_list(jinterp *I, jv s, const piece *p, size_t n,
                           bool reversed, jv *out) {
  jlist *l = jlist_new(I->a, n);
  if (!l) return jfail_mem(I);
  for (size_t i = 0; i < n; i++) {
    const piece *q = &p[reversed ? n - 1 - i : i];
    l->v[i] = jv_str(s.u.s.p + q->start, q->len);
  }
  out->t = JV_LIST;
  out->u.l = l;
  return true;
}

bool jstr_split(jinterp *I, jv s, const jv *sep, int64_t maxsplit, bool right,
                jv *out) {
  if (sep && sep->t == JV_NONE) sep = NULL;
  if (sep && sep->t != JV_STR)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "must be str or None, not %s",
                 jv_type_name(*sep));
  if (sep && sep->u.s.n == 0)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "empty separator");
  size_t cap = s.u.s.n + 2;
  piece *p = jinja_arena_alloc(I->a, cap * sizeof *p);
  if (!p) return jfail_mem(I);
  size_t n = 0, adv;
  const char *str = s.u.s.p;
  size_t len = s.u.s.n;
  if (sep) {
    size_t sl = sep->u.s.n;
    if (!right) {
      size_t i = 0;
      for (;;) {
        const char *hit = (maxsplit < 0 || (int64_t)n < maxsplit)
                              ? memmem(str + i, len - i, sep->u.s.p, sl)
                              : NULL;
        if (!hit) {
          p[n++] = (piece){i, len - i};
          break;
        }
        size_t at = (size_t)(hit - str);
        p[n++] = (piece){i, at - i};
        i = at + sl;
      }
    } else {
      size_t end = len;
      for (;;) {
        size_t found = SIZE_MAX;
        if ((maxsplit < 0 || (int64_t)n < maxsplit) && end >= sl)
          for (size_t k = end - sl + 1; k-- > 0;)
            if (memcmp(str + k, sep->u.s.p, sl) == 0) {
              found = k;
              break;
            }
        if (found == SIZE_MAX) {
          p[n++] = (piece){0, end};
          break;
        }
        p[n++] = (piece){found + sl, end - found - sl};
        end = found;
      }
    }
    return pieces_to_list(I, s, p, n, right, out);
  }
  /* whitespace split: runs of whitespace, no empty pieces */
  if (!right) {
    size_t i = 0;
    while (i < len) {
      while (i < len && ju_isspace(ju_decode(str + i, len - i, &adv)))
        i += adv;
      if (i >= len) break;
      if (maxsplit >= 0 && (int64_t)n == maxsplit) {
        p[n++] = (piece){i, len - i};
        break;
      }
      size_t start = i;
      while (i < len && !ju_isspace(ju_decode(str + i, len - i, &adv)))
        i += adv;
      p[n++] = (piece){start, i - start};
    }
    return pieces_to_list(I, s, p, n, false, out);
  }
  /* rsplit(None, maxsplit): work on code points from the right */
  jv stripped;
  jstr_strip(I, s, NULL, false, true, &stripped);
  size_t end = stripped.u.s.n;
  while (end > 0) {
    if (maxsplit >= 0 && (int64_t)n == maxsplit) {
      p[n++] = (piece){0, end};
      break;
    }
    size_t k = end;
    while (k > 0) {
      size_t b = k - 1;
      while (b > 0 && ((unsigned char)str[b] & 0xC0) == 0x80)
        b--;
      if (ju_isspace(ju_decode(str + b, k - b, &adv))) break;
      k = b;
    }
    p[n++] = (piece){k, end - k};
    while (k > 0) {
      size_t b = k - 1;
      while (b > 0 && ((unsigned char)str[b] & 0xC0) == 0x80)
        b--;
      if (!ju_isspace(ju_decode(str + b, k - b, &adv))) break;
      k = b;
    }
    end = k;
  }
  return pieces_to_list(I, s, p, n, true, out);
}

bool jstr_find(jv s, jv sub, bool reverse, int64_t *pos) {
  const char *hit = NULL;
  if (!reverse) {
    hit = memmem(s.u.s.p, s.u.s.n, sub.u.s.p, sub.u.s.n);
  } else if (sub.u.s.n <= s.u.s.n) {
    for (size_t k = s.u.s.n - sub.u.s.n + 1; k-- > 0;)
      if (memcmp(s.u.s.p + k, sub.u.s.p, sub.u.s.n) == 0) {
        hit = s.u.s.p + k;
        break;
      }
  }
  if (!hit && sub.u.s.n == 0) hit = reverse ? s.u.s.p + s.u.s.n : s.u.s.p;
  *pos = hit ? (int64_t)ju_count(s.u.s.p, (size_t)(hit - s.u.s.p)) : -1;
  return hit != NULL;
}

/* Python's PySlice_AdjustIndices. */
static bool slice_indices(jinterp *I, int64_t len, const jv *start,
                          const jv *stop, const jv *step, int64_t *o_start,
                          int64_t *o_step, int64_t *o_count) {
  const jv *parts[3] = {start, stop, step};
  for (int i = 0; i < 3; i++)
    if (parts[i]->t != JV_NONE && parts[i]->t != JV_INT &&
        parts[i]->t != JV_BOOL)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "slice indices must be integers or None");
#define IV(v) ((v)->t == JV_BOOL ? (int64_t)(v)->u.b : (v)->u.i)
  int64_t st = step->t == JV_NONE ? 1 : IV(step);
  if (st == 0)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
  if (st == INT64_MIN) st = -INT64_MAX;
  int64_t a, b;
  if (start->t == JV_NONE)
    a = st < 0 ? len - 1 : 0;
  else {
    a = IV(start);
    if (a < 0) {
      a = a < -len ? (st < 0 ? -1 : 0) : a + len;
    } else if (a >= len)
      a = st < 0 ? len - 1 : len;
  }
  if (stop->t == JV_NONE)
    b = st < 0 ? -1 : len;
  else {
    b = IV(stop);
    if (b < 0) {
      b = b < -len ? (st < 0 ? -1 : 0) : b + len;
    } else if (b >= len)
      b = st < 0 ? len - 1 : len;
  }
#undef IV
  int64_t count = 0;
  if (st < 0) {
    if (b < a) count = (a - b - 1) / (-st) + 1;
  } else if (a < b)
    count = (b - a - 1) / st + 1;
  *o_start = a;
  *o_step = st;
  *o_count = count;
  return true;
}

bool jstr_slice(jinterp *I, jv s, const jv *start, const jv *stop,
                const jv *step, jv *out) {
  int64_t len = (int64_t)ju_count(s.u.s.p, s.u.s.n), a, st, count;
  if (!slice_indices(I, len, start, stop, step, &a, &st, &count)) return false;
  if (st == 1) {
    size_t from = ju_offset(s.u.s.p, s.u.s.n, (size_t)a);
    size_t to = from + ju_offset(s.u.s.p + from, s.u.s.n - from, (size_t)count);
    *out = jv_str(s.u.s.p + from, to - from);
    return true;
  }
  size_t *offs = jinja_arena_alloc(I->a, ((size_t)len + 1) * sizeof *offs);
  char *o = jinja_arena_alloc(I->a, s.u.s.n + 1);
  if (!offs || !o) return jfail_mem(I);
  size_t i = 0, k = 0, adv;
  while (i < s.u.s.n) {
    offs[k++] = i;
    ju_decode(s.u.s.p + i, s.u.s.n - i, &adv);
    i += adv;
  }
  offs[k] = s.u.s.n;
  size_t n = 0;
  for (int64_t c = 0, idx = a; c < count; c++, idx += st) {
    size_t from = offs[idx], to = offs[idx + 1];
    memcpy(o + n, s.u.s.p + from, to - from);
    n += to - from;
  }
  o[n] = '\0';
  *out = jv_str(o, n);
  return true;
}

bool jlist_slice(jinterp *I, jv l, const jv *start, const jv *stop,
                 const jv *step, jv *out) {
  int64_t a, st, count;
  if (!slice_indices(I, (int64_t)l.u.l->n, start, stop, step, &a, &st, &count))
    return false;
  jlist *r = jlist_new(I->a, (size_t)count);
  if (!r) return jfail_mem(I);
  r->tuple = l.u.l->tuple;
  for (int64_t c = 0, idx = a; c < count; c++, idx += st)
    r->v[c] = l.u.l->v[idx];
  out->t = JV_LIST;
  out->u.l = r;
  return true;
}
