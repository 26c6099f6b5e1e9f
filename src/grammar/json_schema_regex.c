/* json_schema: a pattern (a regex subset) as GBNF over a JSON string's
 * characters. */
#include "json_schema_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rx {
  const char *s;
  size_t n, pos;
  ctx *c;
  int depth;
  long cap;    /* >= 0: no quantifier repeats more than this (or its min) */
  long bump;   /* > 0: the first variable top-level quantifier of a
                  one-character atom repeats this many more at least */
  bool bumped; /* it did */
} rx;

/* Lengths in characters: len[0] the least, len[1] the most (-1: any). */
#define LEN_BIG 1000000000L
static long len_add(long a, long b) {
  return a < 0 || b < 0 ? -1 : a + b > LEN_BIG ? LEN_BIG : a + b;
}
static long len_mul(long a, long k) {
  return a < 0 || k < 0         ? (a == 0 || k == 0 ? 0 : -1)
         : a && k > LEN_BIG / a ? LEN_BIG
                                : a * k;
}

static int rx_alt(rx *r, sb *b, long len[2]);

/* One char of a JSON string as GBNF (escaped as JSON needs). */
static int rx_char(rx *r, sb *b, unsigned char ch) {
  (void)r;
  char e[8];
  if (ch == '"' || ch == '\\') { /* as JSON writes them */
    e[0] = '\\', e[1] = (char)ch;
    js_sb_lit(b, e, 2);
  } else if (ch < 0x20) {
    snprintf(e, sizeof e, "\\u%04x", ch);
    js_sb_lit(b, e, 6);
  } else {
    js_sb_lit(b, (const char *)&ch, 1);
  }
  return 0;
}

/* One UTF-8 character of the pattern as a code point. */
static int rx_utf8(rx *r, uint32_t *cp) {
  const unsigned char *p = (const unsigned char *)r->s + r->pos;
  size_t left = r->n - r->pos;
  unsigned n = p[0] < 0x80 ? 1 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
  if (n > left || (p[0] >= 0x80 && p[0] < 0xC2) || p[0] > 0xF4)
    return js_fail(r->c, "pattern: invalid UTF-8");
  uint32_t c = n == 1 ? p[0] : p[0] & (0x7F >> n);
  for (unsigned i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80) return js_fail(r->c, "pattern: invalid UTF-8");
    c = (c << 6) | (p[i] & 0x3F);
  }
  r->pos += n;
  *cp = c;
  return 0;
}

/* A range of code points, without '"', '\\' and controls (they need JSON
 * escapes), as GBNF class items. */
static void class_range(sb *b, uint32_t lo, uint32_t hi) {
  static const uint32_t cut[][2] = {
      {0, 0x1F}, {0x22, 0x22}, {0x5C, 0x5C}, {0x7F, 0x7F}};
  for (size_t i = 0; i < 4 && lo <= hi; i++) {
    if (hi < cut[i][0] || lo > cut[i][1]) continue;
    if (lo < cut[i][0]) class_range(b, lo, cut[i][0] - 1);
    lo = cut[i][1] + 1;
  }
  if (lo <= hi) js_sb_printf(b, "\\U%08X-\\U%08X", lo, hi);
}

/* \uXXXX at r->pos (after the 'u'): the code point, or -1. */
static long rx_hex4(rx *r) {
  if (r->pos + 4 > r->n) return -1;
  long v = 0;
  for (int i = 0; i < 4; i++) {
    char h = r->s[r->pos + i];
    int d = h >= '0' && h <= '9'   ? h - '0'
            : h >= 'a' && h <= 'f' ? h - 'a' + 10
            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  r->pos += 4;
  return v;
}

/* The complements of \s \d \w, within printable ASCII (a validator's
 * \S, \D, \W also refuse Unicode spaces, digits and letters: these
 * never are). */
static void ascii_complement(sb *b, char e) {
  if (e == 'S') {
    class_range(b, '!', '~');
  } else if (e == 'D') {
    class_range(b, ' ', '/');
    class_range(b, ':', '~');
  } else {
    class_range(b, ' ', '/');
    class_range(b, ':', '@');
    class_range(b, '[', '^');
    class_range(b, '`', '`');
    class_range(b, '{', '~');
  }
}

static int rx_class_item(rx *r, sb *b, uint32_t *cp, bool *set) {
  *set = false;
  if (r->s[r->pos] == '\\' && r->pos + 1 < r->n) {
    char e = r->s[r->pos + 1];
    r->pos += 2;
    if (e == 'd')
      class_range(b, '0', '9');
    else if (e == 'w') {
      class_range(b, 'a', 'z');
      class_range(b, 'A', 'Z');
      class_range(b, '0', '9');
      class_range(b, '_', '_');
    } else if (e == 's')
      class_range(b, ' ', ' ');
    else if (e == 'S' || e == 'D' || e == 'W')
      ascii_complement(b, e);
    else if (e == 't' || e == 'n' || e == 'r' || e == 'f' || e == 'v') {
      *cp = e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : ' ';
      return 0; /* controls: cut from the class (JSON escapes them) */
    } else if (e == 'u') {
      long v = rx_hex4(r);
      if (v < 0) return js_fail(r->c, "pattern: bad \\u escape");
      *cp = (uint32_t)v;
      return 0;
    } else if (!((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') ||
                 (e >= '0' && e <= '9'))) {
      *cp = (unsigned char)e; /* an escaped punctuation character */
      return 0;
    } else
      return js_fail(r->c, "pattern: escape '\\%c' in a class is not supported",
                     e);
    *set = true;
    return 0;
  }
  return rx_utf8(r, cp);
}

static int rx_class(rx *r, sb *b) {
  r->pos++;
  js_sb_add(b, "[", 1);
  size_t at = b->n;
  bool negated = r->pos < r->n && r->s[r->pos] == '^';
  if (negated) {
    js_sb_add(b, "^\"\\\\\\x00-\\x1F\\x7F", strlen("^\"\\\\\\x00-\\x1F\\x7F"));
    r->pos++;
  }
  bool any = false;
  while (r->pos < r->n && (r->s[r->pos] != ']' || !any)) {
    any = true;
    uint32_t lo, hi;
    bool set;
    if (rx_class_item(r, b, &lo, &set)) return -1;
    if (set) continue;
    hi = lo;
    if (r->pos + 1 < r->n && r->s[r->pos] == '-' && r->s[r->pos + 1] != ']') {
      r->pos++;
      if (rx_class_item(r, b, &hi, &set)) return -1;
      if (set || hi < lo) return js_fail(r->c, "pattern: bad class range");
    }
    class_range(b, lo, hi);
  }
  if (r->pos >= r->n) return js_fail(r->c, "pattern: unterminated class");
  r->pos++;
  if (b->n == at && !negated)
    return js_fail(r->c,
                   "pattern: a class of only characters that JSON escapes "
                   "(not supported)");
  js_sb_add(b, "]", 1);
  return 0;
}

static int rx_atom(rx *r, sb *b, long len[2]) {
  unsigned char ch = (unsigned char)r->s[r->pos];
  len[0] = len[1] = 1;
  if (ch == '(') {
    if (++r->depth > 28) /* each group is two GBNF groups deep */
      return js_fail_limit(r->c, "pattern: groups nested too deeply");
    r->pos++;
    if (r->pos + 1 < r->n && r->s[r->pos] == '?' && r->s[r->pos + 1] == ':')
      r->pos += 2;
    else if (r->pos + 2 < r->n && r->s[r->pos] == '?' &&
             (r->s[r->pos + 1] == '<' ||
              (r->s[r->pos + 1] == 'P' && r->s[r->pos + 2] == '<'))) {
      /* a named group, (?<name>...) or (?P<name>...): a group */
      const char *gt = memchr(r->s + r->pos, '>', r->n - r->pos);
      if (!gt) return js_fail(r->c, "pattern: unterminated group name");
      r->pos = (size_t)(gt - r->s) + 1;
    }
    js_sb_add(b, "( ", 2);
    if (rx_alt(r, b, len)) return -1;
    if (r->pos >= r->n || r->s[r->pos] != ')')
      return js_fail(r->c, "pattern: missing ')'");
    r->pos++;
    r->depth--;
    js_sb_add(b, " )", 2);
    return 0;
  }
  if (ch == '[') return rx_class(r, b);
  if (ch == '.') { /* any character but a newline: those JSON need not
                     escape */
    r->pos++;
    static const char dot[] = "[^\"\\\\\\x7F\\x00-\\x1F]";
    js_sb_add(b, dot, sizeof dot - 1);
    return 0;
  }
  if (ch == '\\') {
    if (r->pos + 1 >= r->n) return js_fail(r->c, "pattern: trailing '\\'");
    char e = r->s[r->pos + 1];
    r->pos += 2;
    if (e == 'd')
      js_sb_add(b, "[0-9]", 5);
    else if (e == 'w')
      js_sb_add(b, "[a-zA-Z0-9_]", 12);
    else if (e == 's')
      js_sb_add(b, "[ ]", 3);
    else if (e == 'S' || e == 'D' || e == 'W') {
      js_sb_add(b, "[", 1);
      ascii_complement(b, e);
      js_sb_add(b, "]", 1);
    } else if (e == 't' || e == 'n' || e == 'r' || e == 'f')
      return rx_char(r, b,
                     e == 't'   ? '\t'
                     : e == 'n' ? '\n'
                     : e == 'r' ? '\r'
                                : '\f');
    else if (e == 'u') {
      long v = rx_hex4(r);
      if (v < 0) return js_fail(r->c, "pattern: bad \\u escape");
      if (v < 0x80) return rx_char(r, b, (unsigned char)v);
      if (v >= 0xD800 && v <= 0xDFFF)
        return js_fail(r->c, "pattern: a \\u surrogate is not supported");
      js_sb_printf(b, "[\\U%08lX]", (unsigned long)v);
    } else if (!((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') ||
                 (e >= '0' && e <= '9')))
      return rx_char(r, b, (unsigned char)e); /* escaped punctuation */
    else
      return js_fail(r->c, "pattern: escape '\\%c' is not supported", e);
    return 0;
  }
  if (strchr("*+?{", ch))
    return js_fail(r->c, "pattern: a quantifier without an atom");
  if (ch >= 0x80) {
    size_t at = r->pos;
    uint32_t cp;
    if (rx_utf8(r, &cp)) return -1;
    js_sb_lit(b, r->s + at, r->pos - at);
    return 0;
  }
  r->pos++;
  return rx_char(r, b, ch);
}

/* A number of at most 4 digits at r->pos, or -1 (none). */
static long rx_number(rx *r) {
  long v = -1;
  for (int d = 0; r->pos < r->n && r->s[r->pos] >= '0' && r->s[r->pos] <= '9';
       d++, r->pos++) {
    if (d == 4) return -2;
    v = (v < 0 ? 0 : v * 10) + (r->s[r->pos] - '0');
  }
  return v;
}

/* {m}, {m,} or {m,n} at r->pos (m <= n <= MAX_COUNT), checked: *n -1
 * when unbounded. */
static int rx_count(rx *r, long *m_out, long *n_out) {
  r->pos++;
  long m = rx_number(r), n = m;
  bool comma = r->pos < r->n && r->s[r->pos] == ',';
  if (comma) {
    r->pos++;
    n = rx_number(r);
  }
  if (m == -2 || n == -2 || m > MAX_COUNT || n > MAX_COUNT)
    return js_fail_limit(r->c, "pattern: a count in {m,n} above %d", MAX_COUNT);
  if (m < 0 || (n < 0 && !comma) || r->pos >= r->n || r->s[r->pos] != '}')
    return js_fail(r->c, "pattern: bad {m,n}");
  r->pos++;
  if (n >= 0 && n < m) return js_fail(r->c, "pattern: {m,n} with n < m");
  *m_out = m;
  *n_out = n;
  return 0;
}

/* The quantifier {m,n} (n -1: unbounded) as GBNF, within r->cap. */
static void quantify(rx *r, sb *b, long m, long *n) {
  if (r->cap >= 0) {
    long top = m > r->cap ? m : r->cap;
    if (*n < 0 || *n > top) *n = top;
  }
  if (*n < 0)
    js_sb_printf(b, m == 0 ? "*" : m == 1 ? "+" : "{%ld,}", m);
  else if (m == 0 && *n == 1)
    js_sb_add(b, "?", 1);
  else if (m == *n && m != 1)
    js_sb_printf(b, "{%ld}", m);
  else if (m != *n)
    js_sb_printf(b, "{%ld,%ld}", m, *n);
}

static int rx_seq(rx *r, sb *b, long len[2]) {
  bool empty = true;
  len[0] = len[1] = 0;
  while (r->pos < r->n && r->s[r->pos] != '|' && r->s[r->pos] != ')') {
    if (r->s[r->pos] == '^' || r->s[r->pos] == '$') {
      bool start = r->s[r->pos] == '^';
      if ((start && r->pos != 0) || (!start && r->pos != r->n - 1))
        return js_fail(r->c, "pattern: anchors only at the ends are supported");
      r->pos++;
      continue;
    }
    if (!empty) js_sb_add(b, " ", 1);
    js_sb_add(b, "( ", 2);
    long al[2];
    if (rx_atom(r, b, al)) return -1;
    js_sb_add(b, " )", 2);
    empty = false;
    long m = 1, n = 1;
    if (r->pos < r->n && strchr("*+?{", r->s[r->pos])) {
      char q = r->s[r->pos];
      if (q == '{') {
        if (rx_count(r, &m, &n)) return -1;
      } else {
        m = q == '+';
        n = q == '?' ? 1 : -1;
        r->pos++;
      }
      if (r->pos < r->n && r->s[r->pos] == '?') r->pos++; /* lazy = greedy */
    }
    if (r->bump > 0 && !r->bumped && r->depth == 0 && al[0] == 1 &&
        al[1] == 1 && (n < 0 || m + r->bump <= n)) {
      m += r->bump; /* toward minLength */
      r->bumped = true;
    }
    quantify(r, b, m, &n);
    len[0] = len_add(len[0], len_mul(al[0], m));
    len[1] = len_add(len[1], len_mul(al[1], n));
  }
  if (empty) js_sb_add(b, "\"\"", 2);
  return 0;
}

static int rx_alt(rx *r, sb *b, long len[2]) {
  if (rx_seq(r, b, len)) return -1;
  while (r->pos < r->n && r->s[r->pos] == '|') {
    r->pos++;
    js_sb_add(b, " | ", 3);
    long l2[2];
    if (rx_seq(r, b, l2)) return -1;
    if (l2[0] < len[0]) len[0] = l2[0];
    if (len[1] >= 0 && (l2[1] < 0 || l2[1] > len[1])) len[1] = l2[1];
  }
  return 0;
}

/* The pattern's core (no anchors, no sides) within cap into b; its
 * lengths into len. */
static int core(ctx *c, const char *p, size_t n, long cap, long bump, sb *b,
                long len[2]) {
  rx r = {.s = p, .n = n, .c = c, .cap = cap, .bump = bump};
  if (rx_alt(&r, b, len)) return -1;
  if (r.pos != n) return js_fail(c, "pattern: unexpected ')'");
  return 0;
}

/* A JSON Schema pattern is unanchored unless it says ^...$: an unanchored
 * side may hold any characters. With lengths (lo >= 0): the matches of
 * the pattern's core alone (sides only to reach minLength), each
 * quantifier capped so that none is longer than maxLength; what cannot
 * be made to fit is an error. */
/* The starts of p's top-level alternatives (at most 64) into starts[]:
 * their count, or 0 when there are more. */
static size_t split_alternatives(const char *p, size_t n, size_t starts[65]) {
  size_t k = 0, depth = 0;
  bool cls = false;
  starts[k++] = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '\\') {
      i++;
      continue;
    }
    if (cls) {
      cls = p[i] != ']';
      continue;
    }
    if (p[i] == '[')
      cls = true;
    else if (p[i] == '(')
      depth++;
    else if (p[i] == ')' && depth)
      depth--;
    else if (p[i] == '|' && !depth) {
      if (k == 64) return 0;
      starts[k++] = i + 1;
    }
  }
  return k;
}

/* Alternative j of k: [*a, *z) of p, and whether it is anchored at its
 * start and at its end. */
static void alternative(const char *p, size_t n, const size_t *starts, size_t k,
                        size_t j, size_t *a, size_t *z, bool *start,
                        bool *end) {
  *a = starts[j];
  *z = j + 1 < k ? starts[j + 1] - 1 : n;
  *start = *z > *a && p[*a] == '^';
  *end = *z > *a + (*start ? 1 : 0) && p[*z - 1] == '$' &&
         (*z - *a < 2 || p[*z - 2] != '\\');
}

/* Whether p is ^a$|^b$|...: each top-level alternative anchored at both
 * ends; then *out (malloc'd) is the same as ^(?:a|b|...)$. */
static bool anchored_alternatives(const char *p, size_t n, char **out) {
  size_t starts[65];
  size_t k = split_alternatives(p, n, starts);
  if (k < 2) return false;
  for (size_t j = 0; j < k; j++) {
    size_t a, z;
    bool start, end;
    alternative(p, n, starts, k, j, &a, &z, &start, &end);
    if (z < a + 2 || !start || !end) return false;
  }
  char *t = malloc(n + 8);
  if (!t) return false;
  size_t m = 0;
  memcpy(t, "^(?:", 4), m = 4;
  for (size_t j = 0; j < k; j++) {
    size_t a = starts[j], z = j + 1 < k ? starts[j + 1] - 1 : n;
    if (j) t[m++] = '|';
    memcpy(t + m, p + a + 1, z - a - 2);
    m += z - a - 2;
  }
  memcpy(t + m, ")$", 3);
  *out = t;
  return true;
}

/* p is a|b|... whose alternatives are anchored each on its own (^a|b$|c:
 * a match of one of them, at the start, at the end, or anywhere): without
 * lengths (lo < 0), each alternative is its core with any characters on
 * its unanchored sides. 1: p is not such a pattern (nothing written);
 * 0: written; -1: an error. */
static int mixed_alternatives(ctx *c, const char *p, size_t n, long long lo,
                              sb *b) {
  size_t starts[65];
  size_t k = split_alternatives(p, n, starts);
  if (k < 2) return 1;
  bool mixed = false;
  for (size_t j = 0; j < k; j++) {
    size_t a, z;
    bool start, end;
    alternative(p, n, starts, k, j, &a, &z, &start, &end);
    mixed |= start || end; /* ^a|b is (^a)|b, not ^(a|b) */
  }
  if (!mixed) return 1;
  if (lo >= 0)
    return js_fail(c, "pattern: anchors inside alternatives together with "
                      "minLength or maxLength are not supported");
  js_sb_add(b, "\"\\\"\" ( ", 7);
  for (size_t j = 0; j < k; j++) {
    size_t a, z;
    bool start, end;
    alternative(p, n, starts, k, j, &a, &z, &start, &end);
    sb body = {0};
    long len[2];
    if (core(c, p + a, z - a, -1, 0, &body, len)) {
      free(body.s);
      return -1;
    }
    if (j) js_sb_add(b, " | ", 3);
    js_sb_add(b, start ? "( " : "( char* ", start ? 2 : 8);
    js_sb_add(b, "( ", 2);
    js_sb_add(b, body.s ? body.s : "\"\"", body.s ? body.n : 2);
    if (body.oom) b->oom = true;
    if (body.big) b->big = true;
    free(body.s);
    js_sb_add(b, end ? " ) )" : " ) char* )", end ? 4 : 10);
  }
  js_sb_add(b, " ) \"\\\"\"", 7);
  return 0;
}

int js_pattern(ctx *c, const char *p, long long lo, long long hi, sb *b) {
  if (c->syntax != JS_SYNTAX_JSON) /* its characters are JSON's escapes */
    return js_fail(c,
                   "'pattern' (here '%.64s') is supported in JSON only, "
                   "not in Gemma 4's call syntax",
                   p);
  size_t n = strlen(p);
  if (n > 4096) return js_fail(c, "pattern longer than 4096 bytes");
  int looks = js_pattern_looks(c, p, lo, hi, b);
  if (looks <= 0) return looks;
  char *whole = js_anchors_out(p, n);
  if (whole) { /* (^a$)|(^b) -> ^a$|^b */
    int rc = js_pattern(c, whole, lo, hi, b);
    free(whole);
    return rc;
  }
  if (anchored_alternatives(p, n, &whole)) {
    int rc = js_pattern(c, whole, lo, hi, b);
    free(whole);
    return rc;
  }
  int mixed = mixed_alternatives(c, p, n, lo, b);
  if (mixed <= 0) return mixed;
  bool start = n && p[0] == '^',
       end = n && p[n - 1] == '$' && (n < 2 || p[n - 2] != '\\');
  sb body = {0};
  long len[2];
  int rc = core(c, p, n, -1, 0, &body, len);
  long used_cap = -1;
  if (rc == 0 && lo >= 0 && hi >= 0 && (len[1] < 0 || len[1] > hi)) {
    /* the largest cap that fits */
    long good = -1, a = 0, z = (long)hi;
    while (a <= z) {
      long mid = a + (z - a) / 2;
      sb t = {0};
      long l2[2];
      core(c, p, n, mid, 0, &t, l2);
      free(t.s);
      if (l2[1] >= 0 && l2[1] <= hi)
        good = mid, a = mid + 1;
      else
        z = mid - 1;
    }
    free(body.s);
    body = (sb){0};
    if (good < 0)
      rc = js_fail(c,
                   "pattern with maxLength %lld: its matches cannot be "
                   "made that short",
                   hi);
    else
      rc = core(c, p, n, good, 0, &body, len);
    used_cap = good;
  }
  if (rc == 0 && lo >= 0 && len[0] < lo && start && end) {
    /* anchored and too short: one quantifier repeats more */
    sb t = {0};
    long l2[2];
    core(c, p, n, used_cap, (long)lo - len[0], &t, l2);
    if (l2[0] >= lo && (hi < 0 || (l2[1] >= 0 && l2[1] <= hi))) {
      free(body.s);
      body = t;
      len[0] = l2[0], len[1] = l2[1];
    } else {
      free(t.s);
    }
  }
  long pad_lo = 0, pad_hi = 0;
  if (rc == 0 && lo >= 0 && len[0] < lo) {
    pad_lo = (long)lo - len[0];
    pad_hi = hi < 0 ? -1 : (long)hi - len[1];
    if ((start && end) || (pad_hi >= 0 && pad_hi < pad_lo))
      rc = js_fail(c,
                   "pattern (%ld characters at least) with minLength "
                   "%lld is not supported",
                   len[0], lo);
  }
  if (rc) {
    free(body.s);
    return -1;
  }
  js_sb_add(b, "\"\\\"\" ", 5);
  if (lo < 0 && !start) js_sb_add(b, "char* ", 6);
  if (pad_lo && !start) {
    if (pad_hi < 0)
      js_sb_printf(b, "char{%ld,} ", pad_lo);
    else
      js_sb_printf(b, "char{%ld,%ld} ", pad_lo, pad_hi);
  }
  js_sb_add(b, "( ", 2);
  js_sb_add(b, body.s ? body.s : "\"\"", body.s ? body.n : 2);
  if (body.oom) b->oom = true;
  if (body.big) b->big = true;
  free(body.s);
  js_sb_add(b, " ) ", 3);
  if (pad_lo && start) {
    if (pad_hi < 0)
      js_sb_printf(b, "char{%ld,} ", pad_lo);
    else
      js_sb_printf(b, "char{%ld,%ld} ", pad_lo, pad_hi);
  }
  if (lo < 0 && !end) js_sb_add(b, "char* ", 6);
  js_sb_add(b, "\"\\\"\"", 4);
  return 0;
}
