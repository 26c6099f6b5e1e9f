/* json_schema: arrays (prefixItems, or items as a list in drafts before
 * 2020-12 with additionalItems; items; minItems, maxItems). uniqueItems:
 * the grammar cannot compare items, so it makes arrays of at most one item
 * (unique by themselves; a note says so), and refuses minItems above 1.
 * contains: refused unless trivially true. */
#include "json_schema_internal.h"

#include <stdio.h>

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
  if (json_is_true(uniq) && !(hi >= 0 && hi <= 1)) {
    /* The grammar cannot compare items: arrays of one item at most are
     * the unique ones it makes. */
    if (lo > 1)
      return js_fail(c,
                     "'uniqueItems' with minItems %lld is not supported "
                     "(the grammar cannot compare items)",
                     lo);
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
    int id = js_gen_at(c, items, depth + 1,
                       prefix_kw[0] == 'i' ? "additionalItems" : "items", NULL);
    if (id < 0 && js_recover(c, m))
      more = false;
    else if (id < 0) {
      if (pid != ids) free(pid);
      return -1;
    }
    snprintf(x, sizeof x, "r%d", id);
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
