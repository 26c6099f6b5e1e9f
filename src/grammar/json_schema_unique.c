/* json_schema: uniqueItems over strings and numbers, checked exactly by
 * the matcher (grammar_unique.h). Where the grammar is the whole output
 * (JS_DOC) and the array's instance path from the root goes through
 * properties, items, prefix items and $refs alone (json_schema.c's gen_ref
 * copies a target per path; no recursion, no anyOf/oneOf branch, no
 * additionalProperties or patternProperties: the path alone then says
 * which schema a value has), an array whose items are of type string,
 * integer or number gets a "#@unique-items PATH" directive and is made as
 * any array of at most maxItems items (the matcher refuses the ',' after
 * NC_GUNIQ_MAX_ITEMS: it records no more); with minItems of 2 or more the
 * items' language must hold that many distinct values (counted by the
 * matcher's search on the items' grammar alone; fewer: no array matches).
 * Elsewhere uniqueItems keeps json_schema_array.c's handling. */
#include <stdlib.h>
#include <string.h>

#include "grammar_unique.h"
#include "json_schema_internal.h"

int js_unique_exact(ctx *c, const json_t *s, const json_t *items, int depth,
                    long long lo, long long *hi) {
  (void)s;
  (void)lo;
  if (!c->doc || !c->ivalid || !json_is_array(c->ipath)) return 1;
  if (json_array_size(c->ipath) > NC_GUNIQ_MAX_STEPS) return 1;
  size_t i;
  const json_t *st;
  json_array_foreach(c->ipath, i, st) {
    if (json_is_string(st) && json_string_length(st) >= NC_GUNIQ_MAX_KEY)
      return 1;
  }
  int lines = 0;
  for (size_t k = 0; k < c->uniq.n; k++)
    lines += c->uniq.s[k] == '\n';
  if (lines >= (int)NC_GUNIQ_MAX_PATHS) return 1;
  nc_code code = c->code;
  const json_t *f = js_flatten(c, items, depth + 1);
  if (!f) {
    if (c->code != code) return -1;
    return 1;
  }
  if (!json_is_object(f)) return 1;
  const json_t *t = json_object_get(f, "type");
  if (!json_is_string(t)) return 1;
  const char *ts = json_string_value(t);
  if (strcmp(ts, "string") && strcmp(ts, "integer") && strcmp(ts, "number"))
    return 1;
  char *path = json_dumps(c->ipath, JSON_COMPACT | JSON_ENCODE_ANY);
  if (!path) return js_fail_oom(c);
  js_sb_printf(&c->uniq, "#@unique-items %s\n", path);
  free(path);
  /* past NC_GUNIQ_MAX_ITEMS the matcher refuses the ',' (a counted
   * repetition in the grammar would cost a rule per item) */
  (void)hi;
  return 0;
}

int js_unique_count(ctx *c, int id, long long lo) {
  if (lo < 2) return 0;
  sb g = {0};
  js_sb_add(&g, c->out.s ? c->out.s : "", c->out.n);
  js_sb_printf(&g, "root ::= r%d\n", id);
  if (g.oom || g.big) {
    free(g.s);
    return js_fail_oom(c);
  }
  nc_grammar *gr = NULL;
  nc_error e = {0};
  nc_code rc = nc_grammar_parse(g.s, g.n, NULL, &gr, &e);
  free(g.s);
  uint32_t count = 0;
  if (rc == NC_OK)
    rc = nc_guniq_count(gr, (uint32_t)lo, NC_GRAMMAR_MAX_MASK_WORK, &count, &e);
  nc_grammar_free(gr);
  if (rc == NC_ERR_NOMEM) return js_fail_oom(c);
  if (rc != NC_OK)
    return js_fail(c,
                   "'uniqueItems' with minItems %lld: whether the items "
                   "take %lld distinct values was not decided (%s)",
                   lo, lo, e.message);
  if ((long long)count < lo)
    return js_fail_unsat(c,
                         "minItems %lld is more than the %u distinct "
                         "values uniqueItems leaves",
                         lo, count);
  return 0;
}
