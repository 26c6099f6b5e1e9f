/* json_schema: 'not', for the shapes that narrow what is made (beside
 * enum or const, json_schema_value.c checks each value against it). A schema
 * with not N is made as the schema without it, narrowed so that nothing
 * it makes validates under N:
 *   N = {required: [A, ...]} (or an allOf of such): A is never written;
 *   N = {anyOf: [{required: [...]}, ...]}: one name of each, never written;
 *   N = {type: T}: the types of T are not made;
 *   N = {enum: [...]} or {const: x} (of strings, beside type string at
 *     most), on a schema that makes strings and has no pattern: a pattern
 *     of every string but those (their trie's complement, strings of
 *     printable ASCII at most NOT_STRINGS_MAX bytes in all); the schema
 *     makes strings only;
 *   N = {pattern: "^C+$"} or "^C*$" (C one class, or \d \w \s), beside
 *     type string at most, on such a schema: the pattern [^C] (a character
 *     outside C; "+" also takes "" unless minLength says otherwise);
 *   N = {} or true: nothing validates.
 * Another N is an error naming 'not'. A name the schema requires cannot be
 * left out: nothing validates then. */
#include "json_schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool only_keys(const json_t *n, const char *a, const char *b) {
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)n, k, v) {
    if (js_constrains(k) && strcmp(k, a) && (!b || strcmp(k, b))) return false;
  }
  return true;
}

static bool is_required(const json_t *s, const char *name) {
  size_t i;
  const json_t *r;
  json_array_foreach(json_object_get(s, "required"), i, r) {
    if (json_is_string(r) && !strcmp(json_string_value(r), name)) return true;
  }
  return false;
}

/* Never writes one of list's names (a list of required names): 0, or -1
 * (failed: all of them are required here). */
static int leave_one_out(ctx *c, json_t *out, const json_t *list) {
  size_t i;
  const json_t *r;
  json_array_foreach(list, i, r) {
    if (!json_is_string(r) || is_required(out, json_string_value(r))) continue;
    json_t *props = json_object_get(out, "properties");
    if (!json_is_object(props)) {
      props = json_object();
      json_object_set_new(out, "properties", props);
    }
    json_object_set_new(props, json_string_value(r), json_false());
    return 0;
  }
  return js_fail_unsat(c, "'not' refuses the properties the schema "
                          "requires");
}

/* The required names an allOf of {required} schemas (or one) lists. */
static const json_t *required_of(ctx *c, const json_t *n) {
  if (!json_is_object(n)) return NULL;
  if (only_keys(n, "required", NULL) &&
      json_is_array(json_object_get(n, "required")))
    return json_object_get(n, "required");
  const json_t *all = json_object_get(n, "allOf");
  if (!all || !only_keys(n, "allOf", NULL)) return NULL;
  json_t *names = js_own(c, json_array());
  size_t i;
  const json_t *x;
  json_array_foreach(all, i, x) {
    if (!json_is_object(x) || !only_keys(x, "required", NULL)) return NULL;
    json_array_extend(names, json_object_get(x, "required"));
  }
  return names;
}

/* The strings of a not's enum or const: total bytes past this are refused. */
#define NOT_STRINGS_MAX 2048

/* Whether s makes strings only (its type, or its keywords' family). */
static bool makes_strings(const json_t *s) {
  const json_t *t = json_object_get(s, "type");
  unsigned have = t ? js_type_bits(t) : js_inferred_types(s);
  return have == 16;
}

/* Appends c to a pattern, escaped unless a letter or digit. */
static void put_char(sb *b, char ch) {
  if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
        (ch >= '0' && ch <= '9') || ch == ' '))
    js_sb_add(b, "\\", 1);
  js_sb_add(b, &ch, 1);
}

static int by_text(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The complement of words[lo, hi) (sorted, sharing their first depth
 * bytes) among strings that start with those bytes: a regex (to be
 * anchored at both ends) without the shared prefix; the bytes alone
 * (nothing more) only when empty_ok. */
static void complement(sb *b, const char **words, size_t lo, size_t hi,
                       size_t depth, bool empty_ok) {
  bool ends_here = false;
  js_sb_add(b, "(?:", 3);
  /* (a word ends here, or none: words[lo..hi) all share depth bytes) */
  size_t alts = 0;
  /* the words ending here take nothing more; the others, one more byte */
  if (strlen(words[lo]) == depth) ends_here = true, lo++;
  if (!ends_here && empty_ok) alts++; /* ending here is no word: "" */
  if (alts++) js_sb_add(b, "|", 1);
  if (lo == hi) { /* no longer word: any more characters */
    js_sb_add(b, ".+)", 3);
    return;
  }
  /* a next character no word has: anything after it */
  js_sb_add(b, "[^", 2);
  for (size_t i = lo; i < hi; i++)
    if (i == lo || words[i][depth] != words[i - 1][depth])
      put_char(b, words[i][depth]);
  js_sb_add(b, "].*", 3);
  /* a character some word has: that subtree */
  for (size_t i = lo; i < hi;) {
    size_t j = i;
    while (j < hi && words[j][depth] == words[i][depth])
      j++;
    js_sb_add(b, "|", 1);
    put_char(b, words[i][depth]);
    complement(b, words, i, j, depth + 1, true);
    i = j;
  }
  js_sb_add(b, ")", 1);
}

/* N's enum or const, as the pattern of every other string: 1 when N is
 * not such a list, 0 with *out (owned), -1 failed. */
static int not_strings(ctx *c, const json_t *s, const json_t *n, json_t **out) {
  const json_t *cst = json_object_get(n, "const");
  const json_t *en = json_object_get(n, "enum");
  if (!json_is_object(n) || (!cst && !json_is_array(en)) ||
      !only_keys(n, cst ? "const" : "enum", "type") ||
      (json_object_get(n, "type") &&
       js_type_bits(json_object_get(n, "type")) != 16) ||
      json_object_get(s, "pattern") || json_object_get(s, "format"))
    return 1;
  if (!makes_strings(s) && json_object_get(s, "type")) return 1;
  size_t k = cst ? 1 : json_array_size(en), total = 0, m = 0;
  const char **words = malloc((k ? k : 1) * sizeof *words);
  if (!words) return js_fail_oom(c);
  for (size_t i = 0; i < k; i++) {
    const json_t *x = cst ? cst : json_array_get(en, i);
    if (!json_is_string(x)) continue; /* a string never equals it */
    const char *w = json_string_value(x);
    size_t len = json_string_length(x);
    bool printable = len == strlen(w);
    for (size_t j = 0; j < len && printable; j++)
      printable = w[j] >= 0x20 && w[j] < 0x7f;
    total += len + 1;
    if (!printable || total > NOT_STRINGS_MAX) {
      free(words);
      return 1;
    }
    words[m++] = w;
  }
  sb p = {0};
  js_sb_add(&p, "^", 1);
  if (m) {
    qsort(words, m, sizeof *words, by_text);
    size_t u = 1; /* each word once */
    for (size_t i = 1; i < m; i++)
      if (strcmp(words[i], words[u - 1])) words[u++] = words[i];
    long long lo_len = 0; /* minLength 1 or more: not the empty string */
    if (js_get_count(c, s, "minLength", 0, &lo_len)) {
      free(words);
      free(p.s);
      return -1;
    }
    complement(&p, words, 0, u, 0, lo_len < 1);
  } else {
    js_sb_add(&p, ".*", 2);
  }
  js_sb_add(&p, "$", 1);
  free(words);
  if (p.oom) {
    free(p.s);
    return js_fail_oom(c);
  }
  json_t *o = js_own(c, json_copy((json_t *)s));
  if (!o) {
    free(p.s);
    return -1;
  }
  json_object_del(o, "not");
  json_object_set_new(o, "type", json_string("string"));
  json_object_set_new(o, "pattern", json_stringn(p.s, p.n));
  free(p.s);
  *out = o;
  return 0;
}

/* N = {pattern: "^C+$" or "^C*$"}: the pattern of a character outside C.
 * 1 when N is not such, 0 with *out, -1 failed. */
static int not_class_run(ctx *c, const json_t *s, const json_t *n,
                         json_t **out) {
  const json_t *pt = json_object_get(n, "pattern");
  if (!json_is_object(n) || !json_is_string(pt) ||
      !only_keys(n, "pattern", "type") ||
      (json_object_get(n, "type") &&
       js_type_bits(json_object_get(n, "type")) != 16) ||
      json_object_get(s, "pattern") || json_object_get(s, "format"))
    return 1;
  if (!makes_strings(s) && json_object_get(s, "type")) return 1;
  const char *p = json_string_value(pt);
  size_t len = strlen(p);
  if (len < 5 || p[0] != '^' || p[len - 1] != '$' ||
      (p[len - 2] != '+' && p[len - 2] != '*'))
    return 1;
  const char *cls = p + 1;
  size_t cl = len - 3; /* the class alone */
  char neg[600];
  if (cl == 2 && cls[0] == '\\' && strchr("dws", cls[1])) {
    snprintf(neg, sizeof neg, "\\%c", cls[1] - 'a' + 'A'); /* \D \W \S */
  } else if (cl >= 3 && cl < sizeof neg - 4 && cls[0] == '[' && cls[1] != '^' &&
             cls[cl - 1] == ']') {
    for (size_t i = 1; i + 1 < cl; i++) { /* one class, nothing after */
      if (cls[i] == '\\') {
        i++;
        continue;
      }
      if (cls[i] == '[' || (cls[i] == ']' && i > 1)) return 1;
    }
    if (cls[cl - 2] == '\\' && (cl < 4 || cls[cl - 3] != '\\')) return 1;
    snprintf(neg, sizeof neg, "[^%.*s]", (int)(cl - 2), cls + 1);
  } else {
    return 1;
  }
  long long lo = 0;
  if (js_get_count(c, s, "minLength", 0, &lo)) return -1;
  char pat[620];
  snprintf(pat, sizeof pat, "%s%s", p[len - 2] == '+' && lo < 1 ? "^$|" : "",
           neg);
  json_t *o = js_own(c, json_copy((json_t *)s));
  if (!o) return -1;
  json_object_del(o, "not");
  json_object_set_new(o, "type", json_string("string"));
  json_object_set_new(o, "pattern", json_string(pat));
  *out = o;
  return 0;
}

/* N = {pattern: P}: the strings that do not match P, as a negated entry
 * {"not": P} of the schema's pattern list (json_schema_string.c makes
 * what every entry allows); a schema without a type makes strings only.
 * 1 when N is not such, 0 with *out, -1 failed. */
static int not_pattern(ctx *c, const json_t *s, const json_t *n, json_t **out) {
  const json_t *pt = json_object_get(n, "pattern");
  if (!json_is_object(n) || !json_is_string(pt) ||
      !only_keys(n, "pattern", "type") ||
      (json_object_get(n, "type") &&
       js_type_bits(json_object_get(n, "type")) != 16))
    return 1;
  if (!makes_strings(s) && json_object_get(s, "type")) return 1;
  json_t *o = js_own(c, json_copy((json_t *)s));
  json_t *list = json_array();
  if (!o || !list) {
    json_decref(list);
    return o ? js_fail_oom(c) : -1;
  }
  json_object_del(o, "not");
  const json_t *had = json_object_get(s, "pattern");
  if (json_is_array(had))
    json_array_extend(list, (json_t *)had);
  else if (had)
    json_array_append(list, (json_t *)had);
  json_array_append_new(list, json_pack("{s:O}", "not", pt));
  json_object_set_new(o, "pattern", list);
  if (!json_object_get(s, "type"))
    json_object_set_new(o, "type", json_string("string"));
  *out = o;
  return 0;
}

const json_t *js_apply_not(ctx *c, const json_t *s) {
  const json_t *n = json_object_get(s, "not");
  json_t *out = js_own(c, json_copy((json_t *)s));
  if (!out) return NULL;
  json_object_del(out, "not");
  if (json_is_true(n) || (json_is_object(n) && !json_object_size(n))) {
    js_fail_unsat(c, "'not' of a schema everything matches: nothing "
                     "validates");
    return NULL;
  }
  if (json_is_false(n)) return out;
  json_t *strings = NULL;
  int rc = not_strings(c, s, n, &strings);
  if (rc == 1) rc = not_class_run(c, s, n, &strings);
  if (rc == 1) rc = not_pattern(c, s, n, &strings);
  if (rc <= 0) return rc ? NULL : strings;
  const json_t *req = required_of(c, n);
  if (req) {
    json_t *props = json_object_get(out, "properties");
    if (props) json_object_set_new(out, "properties", json_copy(props));
    return leave_one_out(c, out, req) ? NULL : out;
  }
  const json_t *any = json_object_get(n, "anyOf");
  if (json_is_object(n) && any && only_keys(n, "anyOf", NULL)) {
    json_t *props = json_object_get(out, "properties");
    if (props) json_object_set_new(out, "properties", json_copy(props));
    size_t i;
    const json_t *x;
    json_array_foreach(any, i, x) {
      const json_t *r = required_of(c, x);
      if (!r) goto unsupported;
      if (leave_one_out(c, out, r)) return NULL;
    }
    return out;
  }
  if (json_is_object(n) && json_object_get(n, "type") &&
      only_keys(n, "type", NULL)) {
    unsigned have = js_type_bits(json_object_get(s, "type"));
    if (!json_object_get(s, "type")) {
      unsigned inferred = js_inferred_types(s);
      if (inferred) have = inferred;
    }
    unsigned drop = js_type_bits(json_object_get(n, "type"));
    if (drop & 64) drop |= 32; /* not a number: not an integer either */
    unsigned keep = have & ~drop;
    if (have & 64 && !(drop & 64) && (drop & 32)) /* numbers, no integer */
      goto unsupported;
    if (!keep) {
      js_fail_unsat(c, "'not' refuses every type the schema allows");
      return NULL;
    }
    static const char *const names[] = {"null",   "boolean", "object", "array",
                                        "string", "integer", "number"};
    json_t *t = json_array();
    for (unsigned i = 0; i < 7; i++)
      if (keep & (1u << i)) json_array_append_new(t, json_string(names[i]));
    json_object_set_new(out, "type", t);
    return out;
  }
unsupported:
  js_fail(c, "'not' is supported for required names, types, string enums "
             "and patterns (and beside enum or const) only");
  return NULL;
}
