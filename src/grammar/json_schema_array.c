/* json_schema: arrays (prefixItems, or items as a list in drafts before
 * 2020-12 with additionalItems; items; minItems, maxItems). uniqueItems:
 * items of a few values (an enum or const of at most UNIQUE_MAX_VALUES,
 * booleans, null) make exactly the arrays without a repeated value, of
 * any length minItems and maxItems allow (a rule per set of values used);
 * items of type string, integer or number in a whole-output grammar are
 * checked by the matcher (json_schema_unique.c); for other items the
 * grammar cannot compare them, so it makes arrays of
 * at most one item (unique by themselves; a note says so), and refuses
 * minItems above 1 naming uniqueItems. contains: refused unless trivially
 * true. */
#include "json_schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The values of items that uniqueItems sets apart exactly: 2^this rules. */
#define UNIQUE_MAX_VALUES 10

/* Equal as JSON Schema compares values: numbers by value (1 is 1.0). */
static bool same_value(const json_t *a, const json_t *b) {
  if (json_is_number(a) && json_is_number(b))
    return json_number_value(a) == json_number_value(b);
  if (json_is_array(a) && json_is_array(b)) {
    if (json_array_size(a) != json_array_size(b)) return false;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!same_value(json_array_get(a, i), json_array_get(b, i))) return false;
    return true;
  }
  if (json_is_object(a) && json_is_object(b)) {
    if (json_object_size(a) != json_object_size(b)) return false;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)a, k, v) {
      const json_t *w = json_object_get(b, k);
      if (!w || !same_value(v, w)) return false;
    }
    return true;
  }
  return json_equal(a, b);
}

/* The values an items schema takes when they are few: its const or enum
 * (or, typed boolean or null, those), each valid under the whole schema,
 * without repeats, into vals (texts in c's syntax, malloc'd). Returns their
 * count, -1 when the items are not such (or a value's validity is not decided
 * here), -2 on a failure (c failed). */
static int few_values(ctx *c, const json_t *items, int depth,
                      char *vals[UNIQUE_MAX_VALUES]) {
  const json_t *f = js_flatten(c, items, depth);
  if (!f) return -2;
  if (!json_is_object(f) || json_object_get(f, "anyOf") ||
      json_object_get(f, "oneOf") || json_object_get(f, "allOf") ||
      json_object_get(f, "not") || json_object_get(f, "$ref"))
    return -1;
  const json_t *cst = json_object_get(f, "const");
  const json_t *en = json_object_get(f, "enum");
  json_t *list = NULL;
  if (cst)
    list = json_pack("[O]", cst);
  else if (json_is_array(en))
    list = json_incref((json_t *)en);
  else if (json_is_string(json_object_get(f, "type"))) {
    const char *t = json_string_value(json_object_get(f, "type"));
    if (!strcmp(t, "boolean"))
      list = json_pack("[bb]", 0, 1);
    else if (!strcmp(t, "null"))
      list = json_pack("[n]");
  }
  if (!list) return -1;
  int n = 0;
  size_t i;
  const json_t *x;
  json_array_foreach(list, i, x) {
    int ok = js_value_valid(c, f, x, 0);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = same_value(json_array_get(list, j), x);
    if (ok < 0 || (ok && !seen && n == UNIQUE_MAX_VALUES)) {
      n = -1; /* undecided, or too many */
      break;
    }
    if (!ok || seen) continue;
    vals[n] = js_value_text(c, x);
    if (!vals[n]) {
      n = -2; /* c failed */
      break;
    }
    n++;
  }
  json_decref(list);
  if (n < 0)
    for (int k = 0; k < UNIQUE_MAX_VALUES && vals[k]; k++) {
      free(vals[k]);
      vals[k] = NULL;
    }
  return n;
}

/* Arrays of distinct values of vals[0..n) with lo..hi items (hi < 0: any):
 * rule set[S] (S: the values used) ends the array where |S| >= lo or goes
 * on with a value not in S. */
static int unique_arrays(ctx *c, char **vals, int n, long long lo, long long hi,
                         sb *b) {
  if (hi < 0 || hi > n) hi = n;
  if (lo > hi)
    return js_fail_unsat(c,
                         "minItems %lld is more than the %d distinct "
                         "values uniqueItems leaves",
                         lo, n);
  int *rule = malloc(((size_t)1 << n) * sizeof *rule);
  if (!rule) return js_fail_oom(c);
  for (unsigned set = 0; set < (1u << n); set++) {
    int used = __builtin_popcount(set);
    rule[set] = set && used <= hi ? js_new_rule(c) : 0;
    if (rule[set] < 0) {
      free(rule);
      return -1;
    }
  }
  for (unsigned set = 1; set < (1u << n); set++) {
    if (!rule[set]) continue;
    int used = __builtin_popcount(set);
    sb body = {0};
    int alts = 0;
    if (used >= lo) {
      js_sb_add(&body, "\"\"", 2);
      alts++;
    }
    for (int v = 0; v < n && used < hi; v++) {
      if (set & (1u << v)) continue;
      if (alts++) js_sb_add(&body, " | ", 3);
      js_sb_add(&body, "\",\" ", 4);
      js_sb_lit(&body, vals[v], strlen(vals[v]));
      js_sb_printf(&body, " r%d", rule[set | (1u << v)]);
    }
    js_emit(c, rule[set], &body);
  }
  js_sb_add(b, "\"[\" ( ", 6);
  int alts = 0;
  if (lo == 0) {
    js_sb_add(b, "\"\"", 2);
    alts++;
  }
  for (int v = 0; v < n && hi > 0; v++) {
    if (alts++) js_sb_add(b, " | ", 3);
    js_sb_lit(b, vals[v], strlen(vals[v]));
    js_sb_printf(b, " r%d", rule[1u << v]);
  }
  js_sb_add(b, " ) \"]\"", 6);
  free(rule);
  return 0;
}

/* The 400 for uniqueItems with minItems above 1 over items that are not a
 * few values: it names the items' type, what is compared exactly and why
 * the rest is not (a grammar is context-free: it cannot remember which
 * strings or numbers an array already holds). */
static int refuse_unique(ctx *c, const json_t *items, int depth, long long lo) {
  nc_code code = c->code;
  const json_t *f = items ? js_flatten(c, items, depth + 1) : NULL;
  c->code = code; /* the items' shape only names them */
  c->unsat = false;
  const json_t *t = json_is_object(f) ? json_object_get(f, "type") : NULL;
  char what[64] = "any value";
  if (json_is_string(t))
    snprintf(what, sizeof what, "type '%.40s'", json_string_value(t));
  else if (f)
    snprintf(what, sizeof what, "%s", "more than a few values");
  return js_fail(c,
                 "'uniqueItems' with minItems %lld is not supported over "
                 "items of %s: the grammar keeps items apart only when "
                 "they take at most %d values (an enum, a const, "
                 "booleans, null), as a rule per set of values used; it "
                 "cannot remember which strings, numbers, arrays or "
                 "objects an array already holds (with minItems 0 or 1 it "
                 "makes arrays of one item at most)",
                 lo, what, UNIQUE_MAX_VALUES);
}

int js_gen_array(ctx *c, const json_t *s, sb *b, int depth) {
  const json_t *items = json_object_get(s, "items");
  const json_t *prefix = json_object_get(s, "prefixItems");
  const char *prefix_kw = "prefixItems";
  if (json_is_array(items) && !prefix) { /* draft 4 to 2019-09 tuples */
    prefix = items;
    prefix_kw = "items";
    items = json_object_get(s, "additionalItems");
  }
  long long lo, hi;
  if (js_get_count(c, s, "minItems", 0, &lo) ||
      js_get_count(c, s, "maxItems", -1, &hi))
    return -1;
  if (hi >= 0 && hi < lo) return js_fail_unsat(c, "maxItems < minItems");
  const json_t *uniq = json_object_get(s, "uniqueItems");
  const json_t *prefix_given =
      prefix ? prefix : json_object_get(s, "prefixItems");
  if (json_is_true(uniq) && !(hi >= 0 && hi <= 1) && !prefix_given && items &&
      !json_object_get(s, "contains")) {
    char *vals[UNIQUE_MAX_VALUES] = {0};
    int n = few_values(c, items, depth + 1, vals);
    if (n == -2) return -1;
    if (n >= 0) {
      int rc = unique_arrays(c, vals, n, lo, hi, b);
      for (int i = 0; i < n; i++)
        free(vals[i]);
      return rc;
    }
  }
  bool exact = false;
  if (json_is_true(uniq) && !(hi >= 0 && hi <= 1) && !prefix_given && items &&
      !json_object_get(s, "contains")) {
    int rc = js_unique_exact(c, s, items, depth, lo, &hi);
    if (rc < 0) return -1;
    exact = rc == 0;
  }
  if (json_is_true(uniq) && !(hi >= 0 && hi <= 1) && !exact) {
    /* The grammar cannot compare items: arrays of one item at most are
     * the unique ones it makes. */
    if (lo > 1) return refuse_unique(c, items, depth, lo);
    js_note(c, "uniqueItems: arrays of at most one item");
    hi = 1;
  }
  const json_t *contains = json_object_get(s, "contains");
  if (contains && !json_is_true(contains) &&
      !(json_is_object(contains) && !json_object_size(contains)))
    return js_fail(c, "'contains' is not supported");
  if (contains && lo < 1) lo = 1; /* contains: at least one item */
  if (hi >= 0 && hi < lo) return js_fail_unsat(c, "maxItems < minItems");
  if (prefix && !json_is_array(prefix))
    return js_fail(c, "'prefixItems' must be a list");
  if (items && !json_is_object(items) && !json_is_boolean(items))
    return js_fail(c, "'items' must be a schema");
  size_t k = prefix ? json_array_size(prefix) : 0;
  if (hi >= 0 && (long long)k > hi) k = (size_t)hi; /* the first hi only */
  bool more = !json_is_false(items) && !(hi >= 0 && (long long)k == hi);
  /* The rules first: a prefix item no value matches ends the array
   * before it, an items schema no value matches allows no more. */
  int ids[64];
  int *pid = k <= 64 ? ids : malloc(k * sizeof *pid);
  if (!pid) return js_fail_oom(c);
  for (size_t i = 0; i < k; i++) {
    js_mark m = js_mark_here(c);
    pid[i] =
        js_gen_at_index(c, json_array_get(prefix, i), depth + 1, prefix_kw, i);
    if (pid[i] < 0 && (long long)i >= lo && i > 0 && js_recover(c, m)) {
      k = i, more = false;
      break;
    }
    if (pid[i] < 0) {
      if (pid != ids) free(pid);
      return -1;
    }
  }
  char x[32] = "value";
  if (more && items && !json_is_true(items)) {
    js_mark m = js_mark_here(c);
    if (c->doc && !c->istep) c->istep = json_pack("[I]", (json_int_t)k);
    int id = js_gen_at(c, items, depth + 1,
                       prefix_kw[0] == 'i' ? "additionalItems" : "items", NULL);
    if (id < 0 && js_recover(c, m))
      more = false;
    else if (id < 0) {
      if (pid != ids) free(pid);
      return -1;
    }
    snprintf(x, sizeof x, "r%d", id);
    if (id >= 0 && exact && js_unique_count(c, id, lo)) {
      if (pid != ids) free(pid);
      return -1;
    }
  }
  /* Fewer than k items are valid too (prefixItems does not require
   * them): write all k, or stop early only where minItems allows. */
  if (!more && lo > (long long)k) {
    if (pid != ids) free(pid);
    return js_fail_unsat(c, "minItems needs more items than the schema "
                            "allows");
  }
  js_sb_add(b, "\"[\" ", 4);
  size_t opened = 0;
  for (size_t i = 0; i < k; i++) { /* the ones past minItems optional */
    bool optional = (long long)i >= lo && i > 0;
    if (optional) js_sb_add(b, "( ", 2), opened++;
    js_sb_printf(b, "%sr%d ", i ? "\",\" " : "", pid[i]);
  }
  if (pid != ids) free(pid);
  if (more) {
    long long rlo = lo > (long long)k ? lo - (long long)k : 0;
    long long rhi = hi < 0 ? -1 : hi - (long long)k;
    if (k == 0) {
      js_repeat_sep(b, x, "\",\"", rlo, rhi);
    } else { /* every further item after a comma */
      char cx[48];
      snprintf(cx, sizeof cx, "\",\" %s", x);
      if (rhi < 0)
        js_sb_printf(b, "( %s ){%lld,}", cx, rlo);
      else
        js_sb_printf(b, "( %s ){%lld,%lld}", cx, rlo, rhi);
    }
  }
  for (size_t i = 0; i < opened; i++)
    js_sb_add(b, " )?", 3);
  js_sb_add(b, " \"]\"", 4);
  return 0;
}
