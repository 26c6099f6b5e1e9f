/* json_schema: a oneOf of string branches that may overlap (patterns, a
 * format, lengths, string enums): each branch made without the strings of
 * the others (json_schema_meet.c, the others' parts negated), so every
 * string made validates under exactly one branch. Branches of other types
 * may stand beside them when no value can match two of those and none
 * matches a string: each names its types, none of them string, no type in
 * two of them (number holds integer), and then every string branch names
 * type string or lists strings alone (so a value that is no string fails
 * every string branch). */
#include "json_schema_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool has_lookahead(const char *p) {
  return strstr(p, "(?=") || strstr(p, "(?!");
}

/* The types a branch that makes no string names (js_type_bits' bits,
 * number holding integer), or 0 when s names no types or string among
 * them. */
static unsigned other_types(const json_t *s) {
  const json_t *t = json_is_object(s) ? json_object_get(s, "type") : NULL;
  unsigned m = t ? js_type_bits(t) : 0;
  if (!m || m == 0x7F || (m & 16)) return 0;
  return m & 64 ? m | 32 : m;
}

/* Whether a value that is no string fails string branch s: it names type
 * string alone, or its enum or const holds strings alone. */
static bool strings_only(const json_t *s) {
  const json_t *t = json_object_get(s, "type");
  if (t && js_type_bits(t) == 16) return true;
  const json_t *cst = json_object_get(s, "const");
  const json_t *en = json_object_get(s, "enum");
  if (cst) return json_is_string(cst);
  if (!json_is_array(en)) return false;
  size_t i;
  const json_t *x;
  json_array_foreach(en, i, x) {
    if (!json_is_string(x)) return false;
  }
  return true;
}

/* Branch s's strings as a GBNF body over the shared rules into b: 1 when
 * s is not a branch of strings alone taken here (nothing written), 0
 * written, -1 failed. */
static int branch_body(ctx *c, const json_t *s, sb *b) {
  if (!json_is_object(s)) return 1;
  static const char *const keys[] = {
      "type", "pattern", "format", "minLength", "maxLength", "enum", "const"};
  const char *k;
  const json_t *v;
  bool strings = false;
  json_object_foreach((json_t *)s, k, v) {
    bool known = false;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
      known |= !strcmp(k, keys[i]);
    if (!known && js_constrains(k)) return 1;
    strings |=
        known && strcmp(k, "type") && strcmp(k, "enum") && strcmp(k, "const");
  }
  const json_t *type = json_object_get(s, "type");
  if (type && js_type_bits(type) != 16) return 1;
  const json_t *pat = json_object_get(s, "pattern");
  if (pat && (!json_is_string(pat) || has_lookahead(json_string_value(pat))))
    return 1;
  if (pat && json_object_get(s, "format")) return 1; /* meets twice */
  const json_t *cst = json_object_get(s, "const");
  const json_t *en = json_object_get(s, "enum");
  if (cst || en) {
    if (strings || (en && !json_is_array(en))) return 1;
    size_t n = cst ? 1 : json_array_size(en);
    for (size_t i = 0; i < n; i++)
      if (!json_is_string(cst ? cst : json_array_get(en, i))) return 1;
    for (size_t i = 0; i < n; i++) {
      char *text = js_value_text(c, cst ? cst : json_array_get(en, i));
      if (!text) return -1;
      if (i) js_sb_add(b, " | ", 3);
      js_sb_lit(b, text, strlen(text));
      free(text);
    }
    return n ? 0 : 1;
  }
  if (!type && !strings) return 1;
  return js_gen_string(c, s, b);
}

/* Which of list's n branches make no string (others[k] true), when those
 * share no type and every other branch refuses what is no string: 0, or 1
 * when the branches are not such. */
static int sort_out(ctx *c, const json_t *list, int depth, size_t n,
                    bool *others, size_t *n_str) {
  unsigned seen = 0;
  *n_str = 0;
  for (size_t k = 0; k < n; k++) {
    nc_code code = c->code;
    const json_t *s = js_flatten(c, json_array_get(list, k), depth + 1);
    if (!s) {
      c->code = code; /* a question: branch_body meets it again */
      return 1;
    }
    unsigned t = other_types(s);
    others[k] = t != 0;
    if (t && (t & seen)) return 1;
    seen |= t;
    *n_str += !t;
  }
  if (*n_str == n) return 0;
  for (size_t k = 0; k < n; k++) {
    if (others[k]) continue;
    const json_t *s = js_flatten(c, json_array_get(list, k), depth + 1);
    if (!json_is_object(s) || !strings_only(s)) return 1;
  }
  return 0;
}

/* Whether regex p is one json_schema_regex.c makes exactly as a validator
 * reads it (see js_patterns_disjoint). */
static bool exact_pattern(const char *p) {
  for (bool in_class = false; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (ch < 0x20 || ch == 0x7F) return false;
    if (ch == '\\') {
      ch = (unsigned char)*++p;
      if (!ch || ch >= 0x80 || isalnum(ch)) return false; /* \d, \u, ... */
    } else if (in_class) {
      in_class = ch != ']';
    } else if (ch == '[') {
      if (p[1] == '^') return false;
      in_class = true;
    } else if (ch == '.' || (ch == '(' && p[1] == '?')) {
      return false;
    }
  }
  return true;
}

/* Appends s's patterns to pats (*n of them so far, at most MAX_PATTERNS)
 * when s is a string schema of exact patterns alone (one, or a list: the
 * patterns a merge gathered, all of which a string matches); false when
 * not such. */
static bool lone_patterns(const json_t *s, const char **pats, size_t *n) {
  if (!json_is_object(s)) return false;
  const json_t *pat = json_object_get(s, "pattern");
  size_t k = json_is_array(pat) ? json_array_size(pat) : 1;
  if (!pat || k == 0 || *n + k > MAX_PATTERNS) return false;
  for (size_t i = 0; i < k; i++) {
    const json_t *p = json_is_array(pat) ? json_array_get(pat, i) : pat;
    if (!json_is_string(p) || !exact_pattern(json_string_value(p)))
      return false;
    pats[(*n)++] = json_string_value(p);
  }
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)s, key, v) {
    if (!strcmp(key, "type") ? js_type_bits(v) != 16
                             : strcmp(key, "pattern") && js_constrains(key))
      return false;
  }
  return true;
}

/* Whether no string matches all n exact patterns (their automata's
 * product is empty); false when it cannot tell. */
static bool meet_empty(ctx *c, const char *const *pats, size_t n) {
  if (c->syntax != JS_SYNTAX_JSON || c->code != NC_OK) return false;
  js_mark m = js_mark_here(c);
  size_t since = c->out.n;
  sb body[MAX_PATTERNS] = {{0}}, one = {0};
  const char *parts[MAX_PATTERNS];
  bool negated[MAX_PATTERNS] = {false};
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rc = js_pattern(c, pats[i], -1, -1, &body[i]);
    if (rc == 0 && body[i].oom) rc = js_fail_oom(c);
    parts[i] = body[i].s ? body[i].s : "";
  }
  if (rc == 0) rc = js_string_meet(c, parts, negated, n, since, &one);
  bool apart = rc != 0 && c->unsat; /* no string matches them all */
  for (size_t i = 0; i < n; i++)
    free(body[i].s);
  free(one.s);
  js_undo(c, m);
  return apart;
}

bool js_patterns_disjoint(ctx *c, const json_t *a, const json_t *b) {
  const char *pats[MAX_PATTERNS];
  size_t n = 0;
  return lone_patterns(a, pats, &n) && lone_patterns(b, pats, &n) &&
         meet_empty(c, pats, n);
}

bool js_regexes_disjoint(ctx *c, const char *p, const char *q) {
  const char *pats[2] = {p, q};
  return exact_pattern(p) && exact_pattern(q) && meet_empty(c, pats, 2);
}

int js_oneof_strings(ctx *c, const json_t *list, int depth, sb *b) {
  size_t n = json_array_size(list);
  if (c->syntax != JS_SYNTAX_JSON || n < 2 || n > MAX_PATTERNS) return 1;
  bool others[MAX_PATTERNS];
  size_t n_str;
  if (sort_out(c, list, depth, n, others, &n_str) || n_str == 0) return 1;
  sb body[MAX_PATTERNS] = {{0}};
  const char *text[MAX_PATTERNS];
  int rc = 0;
  size_t k = 0, since = c->out.n;
  for (size_t at = 0; rc == 0 && at < n; at++) {
    if (others[at]) continue;
    const json_t *s = js_flatten(c, json_array_get(list, at), depth + 1);
    rc = s ? branch_body(c, s, &body[k]) : -1;
    if (rc == 0 && (body[k].oom || body[k].big))
      rc = body[k].oom ? js_fail_oom(c) : js_fail_big(c);
    text[k] = body[k].s ? body[k].s : "\"\"";
    k++;
  }
  size_t written = 0;
  for (size_t i = 0; rc == 0 && i < n_str; i++) {
    const char *parts[MAX_PATTERNS];
    bool negated[MAX_PATTERNS];
    parts[0] = text[i], negated[0] = false;
    for (size_t j = 0, m = 1; j < n_str; j++)
      if (j != i) parts[m] = text[j], negated[m++] = true;
    js_mark mark = js_mark_here(c);
    sb one = {0};
    rc = n_str > 1 ? js_string_meet(c, parts, negated, n_str, since, &one)
                   : (js_sb_add(&one, text[i], strlen(text[i])), 0);
    if (rc && js_recover(c, mark)) { /* no string of its own */
      rc = 0;
      free(one.s);
      continue;
    }
    if (rc == 0)
      js_sb_printf(b, "%s%s", written++ ? " | " : "", one.s ? one.s : "");
    free(one.s);
  }
  /* the other types' branches, after the meets (whose grammars hold the
   * rules written since the bodies began: these refer to earlier ones) */
  for (size_t at = 0; rc == 0 && at < n; at++) {
    if (!others[at]) continue;
    js_mark mark = js_mark_here(c);
    int id =
        js_gen_at_index(c, json_array_get(list, at), depth + 1, "oneOf", at);
    if (id < 0 && js_recover(c, mark)) continue; /* matches nothing */
    if (id < 0)
      rc = -1;
    else
      js_sb_printf(b, "%sr%d", written++ ? " | " : "", id);
  }
  for (size_t i = 0; i < k; i++)
    free(body[i].s);
  if (rc == 0 && !written)
    return js_fail_unsat(c, "no branch of 'oneOf' matches a value the "
                            "others do not");
  return rc;
}
