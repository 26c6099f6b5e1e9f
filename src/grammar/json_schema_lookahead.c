/* json_schema: lookaheads in a pattern, as intersections of patterns
 * (json_schema_meet.c). The forms taken:
 * - ^(?=X)(?!Y)...REST: REST anchored at the start, and each lookahead a
 *   pattern of its own anchored there (^(?:X), a '^' inside it dropped:
 *   at the start it always holds), made (?=) or not made (?!);
 * - ^((?!X)(?!Y)C)*$ with C one character (., a class, an escape): every
 *   position is where an iteration starts, so no X and no Y occurs at
 *   all: ^(?:C)*$ without the strings that contain X or Y;
 * - R(?=X) at the end of an unanchored pattern: any characters may follow
 *   R, so it is RX.
 * Lookaheads elsewhere and lookbehinds are an error naming them. */
#include "json_schema_internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LOOKS 6

/* The index past the group opened at p[at] == '(' (escapes and classes
 * skipped), or 0 when it is not closed. */
static size_t group_end(const char *p, size_t n, size_t at) {
  int depth = 0;
  bool cls = false;
  for (size_t i = at; i < n; i++) {
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
    else if (p[i] == ')' && --depth == 0)
      return i + 1;
  }
  return 0;
}

/* Where p[0..n) opens its first lookaround (or n); *behind: a lookbehind. */
static size_t first_look(const char *p, size_t n, bool *behind) {
  bool cls = false;
  *behind = false;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '\\') {
      i++;
      continue;
    }
    if (cls) {
      cls = p[i] != ']';
      continue;
    }
    if (p[i] == '[') cls = true;
    if (p[i] != '(' || i + 2 >= n || p[i + 1] != '?') continue;
    if (p[i + 2] == '=' || p[i + 2] == '!') return i;
    if (p[i + 2] == '<' && i + 3 < n && (p[i + 3] == '=' || p[i + 3] == '!')) {
      *behind = true;
      return i;
    }
  }
  return n;
}

/* "^(?:X)" with each '^' that begins X or one of its top-level
 * alternatives dropped (malloc'd; NULL: out of memory). */
static char *anchored(const char *x, size_t n) {
  char *t = malloc(n + 8);
  if (!t) return NULL;
  size_t m = 0, depth = 0;
  bool cls = false, start = true;
  memcpy(t, "^(?:", 4), m = 4;
  for (size_t i = 0; i < n; i++) {
    char ch = x[i];
    if (start && ch == '^' && !cls) {
      start = false;
      continue;
    }
    start = false;
    t[m++] = ch;
    if (ch == '\\' && i + 1 < n) {
      t[m++] = x[++i];
      continue;
    }
    if (cls) {
      cls = ch != ']';
    } else if (ch == '[') {
      cls = true;
    } else if (ch == '(') {
      depth++;
    } else if (ch == ')' && depth) {
      depth--;
    } else if (ch == '|' && !depth) {
      start = true;
    }
  }
  memcpy(t + m, ")", 2);
  return t;
}

/* One character's atom: ., a class, an escape. */
static bool one_char(const char *a, size_t n) {
  if (n == 1) return a[0] != '(' && a[0] != ')' && !strchr("*+?{|^$", a[0]);
  if (n == 2) return a[0] == '\\';
  return a[0] == '[' && group_end(a, n, 0) == 0 && a[n - 1] == ']' &&
         memchr(a + 1, ']', n - 2) == NULL;
}

typedef struct look {
  size_t a, z; /* the body: p[a..z) */
  bool negated;
} look;

/* Lookaheads back to back from p[at]: their count (at most MAX_LOOKS),
 * *end past the last; -1 when one is not closed. */
static int looks_at(const char *p, size_t n, size_t at, look *ls, size_t *end) {
  int k = 0;
  while (at + 3 < n && p[at] == '(' && p[at + 1] == '?' &&
         (p[at + 2] == '=' || p[at + 2] == '!') && k < MAX_LOOKS) {
    size_t z = group_end(p, n, at);
    if (!z) return -1;
    ls[k++] = (look){.a = at + 3, .z = z - 1, .negated = p[at + 2] == '!'};
    at = z;
  }
  *end = at;
  return k;
}

/* The parts' bodies into js_string_meet: the pattern main, each
 * lookahead's pattern (with anchor: ^(?:X)), the lengths (lo >= 0). */
static int meet_looks(ctx *c, const char *p, const char *main, const look *ls,
                      int k, bool anchor, long long lo, long long hi, sb *b) {
  sb body[MAX_LOOKS + 2] = {{0}};
  bool negated[MAX_LOOKS + 2] = {false};
  const char *text[MAX_LOOKS + 2];
  size_t since = c->out.n;
  int rc = js_pattern(c, main, -1, -1, &body[0]);
  int n = k + 1;
  if (lo >= 0) js_string_lengths(c, lo, hi, &body[n++]);
  for (int i = 0; rc == 0 && i < k; i++) {
    char *x = anchor ? anchored(p + ls[i].a, ls[i].z - ls[i].a)
                     : strndup(p + ls[i].a, ls[i].z - ls[i].a);
    if (!x) {
      rc = js_fail_oom(c);
      break;
    }
    if (first_look(x, strlen(x), &(bool){false}) < strlen(x))
      rc = js_fail(c, "pattern: a lookahead inside a lookahead is not "
                      "supported");
    else
      rc = js_pattern(c, x, -1, -1, &body[i + 1]);
    negated[i + 1] = ls[i].negated;
    free(x);
  }
  for (int i = 0; rc == 0 && i < n; i++) {
    if (body[i].oom || body[i].big)
      rc = body[i].oom ? js_fail_oom(c) : js_fail_big(c);
    text[i] = body[i].s ? body[i].s : "\"\"";
  }
  if (rc == 0) rc = js_string_meet(c, text, negated, (size_t)n, since, b);
  for (int i = 0; i < n; i++)
    free(body[i].s);
  return rc;
}

int js_pattern_looks(ctx *c, const char *p, long long lo, long long hi, sb *b) {
  size_t n = strlen(p);
  bool behind;
  size_t at = first_look(p, n, &behind);
  if (at == n) return 1;
  if (behind)
    return js_fail(c, "pattern: a lookbehind ('(?<=' or '(?<!') is not "
                      "supported");
  look ls[MAX_LOOKS];
  size_t end;
  int k;
  if (at == 1 && p[0] == '^') { /* ^(?=X)(?!Y)...REST */
    k = looks_at(p, n, 1, ls, &end);
    if (k < 0) return js_fail(c, "pattern: missing ')'");
    if (end < n && p[end] == '^') end++;
    bool more;
    if (first_look(p + end, n - end, &more) == n - end) {
      char *main = malloc(n - end + 2);
      if (!main) return js_fail_oom(c);
      main[0] = '^';
      memcpy(main + 1, p + end, n - end + 1);
      int rc = meet_looks(c, p, main, ls, k, true, lo, hi, b);
      free(main);
      return rc;
    }
  }
  /* ^((?!X)...C)*$ and ^(?:(?!X)...C)*$ (or +) */
  size_t g = p[0] == '^' && n > 4 && p[1] == '(' ? 1 : 0;
  if (g && (at == 2 || (at == 4 && p[2] == '?' && p[3] == ':')) &&
      group_end(p, n, 1) + 2 == n && strchr("*+", p[n - 2]) &&
      p[n - 1] == '$') {
    k = looks_at(p, n, at, ls, &end);
    size_t close = n - 3; /* the group's ')' */
    bool neg = k > 0;
    for (int i = 0; i < k; i++)
      neg &= ls[i].negated;
    if (k > 0 && neg && one_char(p + end, close - end)) {
      char *main = malloc(close - end + 10);
      if (!main) return js_fail_oom(c);
      memcpy(main, "^(?:", 4);
      memcpy(main + 4, p + end, close - end);
      memcpy(main + 4 + close - end, ")", 1);
      main[5 + close - end] = p[n - 2];
      memcpy(main + 6 + close - end, "$", 2);
      int rc = meet_looks(c, p, main, ls, k, false, lo, hi, b);
      free(main);
      return rc;
    }
  }
  /* R(?=X), unanchored at the end */
  k = looks_at(p, n, at, ls, &end);
  if (k == 1 && end == n && !ls[0].negated) {
    char *r = malloc(n + 1);
    if (!r) return js_fail_oom(c);
    memcpy(r, p, at);
    memcpy(r + at, "(?:", 3);
    memcpy(r + at + 3, p + ls[0].a, n - ls[0].a); /* X and its ')' */
    r[n] = '\0';
    bool again;
    int rc = first_look(r, n, &again) < n
                 ? js_fail(c, "pattern: a lookahead inside a lookahead is "
                              "not supported")
                 : js_pattern(c, r, lo, hi, b);
    free(r);
    return rc;
  }
  return js_fail(c,
                 "pattern: a lookahead ('(?=' or '(?!') is supported at the "
                 "start (after '^'), as ^((?!X).)*$, or at the end of an "
                 "unanchored pattern only (here at offset %zu)",
                 at);
}
