/* json_schema: objects (properties in order, required, maps). */
#include "json_schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_required(const json_t *req, const char *name) {
  size_t i;
  const json_t *v;
  json_array_foreach(req, i, v) {
    if (json_is_string(v) && !strcmp(json_string_value(v), name)) return true;
  }
  return false;
}

/* Properties i.. as rules seq<i><first>: required ones always, optional
 * ones or not, a comma before each but the first written. */
int js_gen_object(ctx *c, const json_t *s, sb *b, int depth) {
  const json_t *props = json_object_get(s, "properties");
  const json_t *req = json_object_get(s, "required");
  const json_t *add = json_object_get(s, "additionalProperties");
  if (props && !json_is_object(props))
    return js_fail(c, "'properties' must be an object");
  if (req && !json_is_array(req)) return js_fail(c, "'required' must be a list");
  size_t n = props ? json_object_size(props) : 0;
  if (n > MAX_PROPERTIES || json_array_size(req) > MAX_PROPERTIES)
    return js_fail_limit(c, "an object with more than %d properties",
                      MAX_PROPERTIES);
  size_t i;
  const json_t *v;
  json_array_foreach(req, i, v) {
    if (!json_is_string(v) || !json_object_get(props, json_string_value(v)))
      return js_fail(c, "'required' names a property that 'properties' lacks");
  }
  if (n == 0) {
    if (add && !json_is_false(add) && !json_is_true(add)) { /* a map */
      int id = js_gen(c, add, depth + 1);
      if (id < 0) return -1;
      char kv[64];
      snprintf(kv, sizeof kv, "string \":\" r%d", id);
      js_sb_add(b, "\"{\" ", 4);
      js_repeat_sep(b, kv, "\",\"", 0, -1);
      js_sb_add(b, " \"}\"", 4);
    } else {
      js_sb_add(b, "\"{\" \"}\"", 7);
    }
    return 0;
  }
  if (add && !json_is_boolean(add) && !json_is_object(add))
    return js_fail(c, "'additionalProperties' must be a boolean or a schema");
  /* kv rules, then seq rules from the end. */
  int *kv = calloc(n, sizeof *kv);
  const char **names = calloc(n, sizeof *names);
  if (!kv || !names) {
    free(kv);
    free(names);
    return js_fail_oom(c);
  }
  const char *key;
  i = 0;
  json_object_foreach((json_t *)props, key, v) {
    int id = js_gen(c, v, depth + 1);
    if (id < 0) {
      free(kv);
      free(names);
      return -1;
    }
    names[i] = key;
    kv[i++] = id;
  }
  int next[2] = {-1, -1}; /* seq(i+1, first), seq(i+1, not first) */
  for (size_t j = n; j-- > 0;) {
    const char *name = names[j];
    bool required = req && is_required(req, name);
    int ids[2];
    for (int f = 0; f < 2; f++) { /* f = 1: first (no comma) */
      ids[f] = js_new_rule(c);
      if (ids[f] < 0) {
        free(kv);
        free(names);
        return -1;
      }
      sb body = {0};
      json_t *jname = json_string(name);
      char *js = jname ? json_dumps(jname, JSON_ENCODE_ANY) : NULL;
      json_decref(jname);
      sb key_lit = {0};
      if (js) js_sb_lit(&key_lit, js, strlen(js));
      free(js);
      char tail[32] = "";
      if (next[0] >= 0) snprintf(tail, sizeof tail, " r%d", next[0]);
      js_sb_printf(&body, "%s%s \":\" r%d%s", f ? "" : "\",\" ",
                key_lit.s ? key_lit.s : "\"\"", kv[j], tail);
      free(key_lit.s);
      if (!required) {
        if (next[f] >= 0)
          js_sb_printf(&body, " | r%d", next[f]);
        else
          js_sb_add(&body, " | \"\"", 5);
      }
      js_emit(c, ids[f], &body);
    }
    /* seq(j, not first) is ids[0], seq(j, first) is ids[1]. */
    next[0] = ids[0];
    next[1] = ids[1];
  }
  free(kv);
  free(names);
  js_sb_printf(b, "\"{\" r%d \"}\"", next[1]);
  return 0;
}
