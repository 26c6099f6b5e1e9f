/* json_schema: anchors inside groups brought out to the pattern's
 * top-level alternatives, where json_schema_regex.c reads them. A group
 * that holds an anchor and has no quantifier is replaced by each of its
 * alternatives in turn, as alternatives of the whole pattern:
 *   (^a$)          -> ^a$
 *   ^$|(^\S+$)     -> ^$|^\S+$
 *   ^([^,]|$)      -> ^[^,]|^$
 *   (^a)|(^b)|_c   -> ^a|^b|_c
 *   x(^a|b)y       -> x^ay|xby (the first never matches: refused later)
 * The same strings match (a group without a quantifier matches one of its
 * alternatives, once). A group under a quantifier, a lookaround, or more
 * than MAX_BRANCHES alternatives in all are left as they are. */
#include "json_schema_internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_BRANCHES 64

/* The end of the class that starts at i (its ']'), or n. */
static size_t class_end(const char *p, size_t n, size_t i) {
  i++;
  if (i < n && p[i] == '^') i++;
  if (i < n && p[i] == ']') i++; /* a leading ']' is literal */
  for (; i < n && p[i] != ']'; i++)
    if (p[i] == '\\') i++;
  return i;
}

/* The ')' matching the '(' at i, or n. */
static size_t group_end(const char *p, size_t n, size_t i) {
  size_t depth = 0;
  for (; i < n; i++) {
    if (p[i] == '\\')
      i++;
    else if (p[i] == '[')
      i = class_end(p, n, i);
    else if (p[i] == '(')
      depth++;
    else if (p[i] == ')' && --depth == 0)
      return i;
  }
  return n;
}

/* Whether p[a, z) holds an anchor outside classes. */
static bool has_anchor(const char *p, size_t a, size_t z) {
  for (size_t i = a; i < z; i++) {
    if (p[i] == '\\')
      i++;
    else if (p[i] == '[')
      i = class_end(p, z, i);
    else if (p[i] == '^' || p[i] == '$')
      return true;
  }
  return false;
}

/* The top-level '|' of p[a, z) into bars; their count (at most cap), or
 * cap + 1 when there are more. */
static size_t bars_of(const char *p, size_t a, size_t z, size_t *bars,
                      size_t cap) {
  size_t k = 0, depth = 0;
  for (size_t i = a; i < z; i++) {
    if (p[i] == '\\')
      i++;
    else if (p[i] == '[')
      i = class_end(p, z, i);
    else if (p[i] == '(')
      depth++;
    else if (p[i] == ')' && depth)
      depth--;
    else if (p[i] == '|' && !depth) {
      if (k == cap) return cap + 1;
      bars[k++] = i;
    }
  }
  return k;
}

/* The first group of branch s (top level, without a quantifier, not a
 * lookaround) that holds an anchor: its '(' and ')'; false when none. */
static bool anchored_group(const char *s, size_t n, size_t *open,
                           size_t *close) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\\') {
      i++;
    } else if (s[i] == '[') {
      i = class_end(s, n, i);
    } else if (s[i] == '(') {
      size_t e = group_end(s, n, i);
      if (e >= n) return false;
      bool quantified = e + 1 < n && strchr("*+?{", s[e + 1]);
      bool plain =
          !(i + 1 < n && s[i + 1] == '?') || (i + 2 < n && s[i + 2] == ':');
      if (!quantified && plain && has_anchor(s, i + 1, e)) {
        *open = i;
        *close = e;
        return true;
      }
      i = e;
    }
  }
  return false;
}

typedef struct branches {
  char *s[MAX_BRANCHES];
  size_t n;
} branches;

static bool push(branches *w, const char *a, size_t na, const char *b,
                 size_t nb, const char *c, size_t nc) {
  if (w->n == MAX_BRANCHES) return false;
  char *t = malloc(na + nb + nc + 1);
  if (!t) return false;
  memcpy(t, a, na);
  memcpy(t + na, b, nb);
  memcpy(t + na + nb, c, nc);
  t[na + nb + nc] = '\0';
  w->s[w->n++] = t;
  return true;
}

static void drop(branches *w) {
  for (size_t i = 0; i < w->n; i++)
    free(w->s[i]);
  w->n = 0;
}

char *js_anchors_out(const char *p, size_t n) {
  if (!has_anchor(p, 1, n ? n - 1 : 0)) return NULL; /* at the ends only */
  branches todo = {0}, done = {0};
  size_t bars[MAX_BRANCHES];
  size_t k = bars_of(p, 0, n, bars, MAX_BRANCHES - 1);
  bool ok = k < MAX_BRANCHES, changed = false;
  for (size_t j = 0; ok && j <= k; j++) {
    size_t a = j ? bars[j - 1] + 1 : 0, z = j < k ? bars[j] : n;
    ok = push(&todo, p + a, z - a, "", 0, "", 0);
  }
  while (ok && todo.n) {
    char *s = todo.s[--todo.n];
    size_t sn = strlen(s), open, close;
    if (!anchored_group(s, sn, &open, &close)) {
      ok = done.n + todo.n < MAX_BRANCHES && push(&done, s, sn, "", 0, "", 0);
      free(s);
      continue;
    }
    changed = true;
    size_t in = open + 1 + (s[open + 1] == '?' ? 2 : 0); /* after "(?:" */
    size_t inner[MAX_BRANCHES];
    size_t m = bars_of(s, in, close, inner, MAX_BRANCHES - 1);
    ok = m < MAX_BRANCHES;
    for (size_t j = 0; ok && j <= m; j++) {
      size_t a = j ? inner[j - 1] + 1 : in, z = j < m ? inner[j] : close;
      ok = done.n + todo.n < MAX_BRANCHES &&
           push(&todo, s, open, s + a, z - a, s + close + 1, sn - close - 1);
    }
    free(s);
  }
  char *out = NULL;
  if (ok && changed) {
    size_t len = 0;
    for (size_t i = 0; i < done.n; i++)
      len += strlen(done.s[i]) + 1;
    out = malloc(len + 1);
    if (out) {
      size_t o = 0;
      for (size_t i = done.n; i-- > 0;) { /* in the pattern's order */
        size_t l = strlen(done.s[i]);
        memcpy(out + o, done.s[i], l);
        o += l;
        if (i) out[o++] = '|';
      }
      out[o] = '\0';
    }
  }
  drop(&todo);
  drop(&done);
  return out;
}
