/* json_schema: 'not', for the shapes that narrow what is made (beside
 * enum or const, json_schema_value.c checks each value against it). A schema
 * with not N is made as the schema without it, narrowed so that nothing
 * it makes validates under N:
 *   N = {required: [A, ...]} (or an allOf of such): A is never written;
 *   N = {anyOf: [{required: [...]}, ...]}: one name of each, never written;
 *   N = {type: T}: the types of T are not made;
 *   N = {} or true: nothing validates.
 * Another N is an error naming 'not'. A name the schema requires cannot be
 * left out: nothing validates then. */
#include "json_schema_internal.h"

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
  js_fail(c, "'not' is supported for required names and types (and "
             "beside enum or const) only");
  return NULL;
}
