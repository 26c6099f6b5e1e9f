/* json_schema: arrays (items, prefixItems, counts). */
#include "json_schema_internal.h"

#include <stdio.h>

int js_gen_array(ctx *c, const json_t *s, sb *b, int depth) {
  const json_t *items = json_object_get(s, "items");
  const json_t *prefix = json_object_get(s, "prefixItems");
  long long lo, hi;
  if (js_get_count(c, s, "minItems", 0, &lo) ||
      js_get_count(c, s, "maxItems", -1, &hi))
    return -1;
  if (hi >= 0 && hi < lo) return js_fail(c, "maxItems < minItems");
  if (prefix && !json_is_array(prefix))
    return js_fail(c, "'prefixItems' must be a list");
  size_t k = prefix ? json_array_size(prefix) : 0;
  if (hi >= 0 && (long long)k > hi)
    return js_fail(c, "more prefixItems than maxItems");
  js_sb_add(b, "\"[\" ", 4);
  for (size_t i = 0; i < k; i++) {
    int id = js_gen(c, json_array_get(prefix, i), depth + 1);
    if (id < 0) return -1;
    js_sb_printf(b, "%sr%d ", i ? "\",\" " : "", id);
  }
  bool more =
      !(items && json_is_false(items)) && !(hi >= 0 && (long long)k == hi);
  if (more) {
    char x[32] = "value";
    if (items) {
      int id = js_gen(c, items, depth + 1);
      if (id < 0) return -1;
      snprintf(x, sizeof x, "r%d", id);
    }
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
  } else if (lo > (long long)k) {
    return js_fail(c, "minItems needs more items than prefixItems allows");
  }
  js_sb_add(b, " \"]\"", 4);
  return 0;
}
