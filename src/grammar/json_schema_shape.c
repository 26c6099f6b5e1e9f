/* json_schema: each keyword's JSON type, checked over the user's document
 * before anything is compiled (and over a $ref's target that lies where
 * the walk does not go), as a validator checks a schema against its
 * metaschema. After it, a keyword the compile finds in a form the user
 * could not give is the compile's own (the allOf merge keeps several
 * patterns as a list under 'pattern'). Unknown keywords' values are not
 * schemas and are not walked. */
#include "json_schema_internal.h"

#include <math.h>
#include <string.h>

/* Levels of subschemas walked; the compile stops at MAX_DEPTH along what
 * it makes, an unused part may nest deeper up to this. */
#define MAX_SHAPE_DEPTH 256

static const char *json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "a list";
  case JSON_STRING: return "a string";
  case JSON_INTEGER:
  case JSON_REAL: return "a number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}

static int wrong(ctx *c, const char *k, const char *want, const json_t *v) {
  return js_fail(c, "'%s' must be %s, not %s", k, want, json_kind(v));
}

static bool is_count(const json_t *v) {
  if (!json_is_number(v)) return false;
  double d = json_number_value(v);
  return d >= 0 && d <= 9007199254740992.0 && d == floor(d);
}

static bool strings_only(const json_t *v) {
  size_t i;
  const json_t *x;
  if (!json_is_array(v)) return false;
  json_array_foreach(v, i, x) {
    if (!json_is_string(x)) return false;
  }
  return true;
}

static int shape(ctx *c, const json_t *s, int depth);

/* A schema under keyword k (and name/index seg2 when not NULL). */
static int sub(ctx *c, const json_t *s, int depth, const char *k,
               const char *seg2) {
  size_t at = js_ptr_push(c, k);
  if (seg2) js_ptr_push(c, seg2);
  int rc = shape(c, s, depth + 1);
  js_ptr_pop(c, at);
  return rc;
}

static int sub_list(ctx *c, const json_t *list, int depth, const char *k) {
  size_t i;
  const json_t *x;
  json_array_foreach(list, i, x) {
    size_t at = js_ptr_push(c, k);
    js_ptr_push_index(c, i);
    int rc = shape(c, x, depth + 1);
    js_ptr_pop(c, at);
    if (rc) return -1;
  }
  return 0;
}

static int sub_map(ctx *c, const json_t *map, int depth, const char *k) {
  const char *name;
  const json_t *x;
  json_object_foreach((json_t *)map, name, x) {
    if (sub(c, x, depth, k, name)) return -1;
  }
  return 0;
}

static bool in(const char *k, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(k, list[i])) return true;
  return false;
}
#define IN(k, list) in((k), (list), sizeof(list) / sizeof *(list))

static const char *const k_counts[] = {"minLength",     "maxLength",
                                       "minItems",      "maxItems",
                                       "minProperties", "maxProperties"};
static const char *const k_strings[] = {"pattern", "format", "$ref"};
static const char *const k_numbers[] = {"minimum", "maximum"};
static const char *const k_bounds[] = {"exclusiveMinimum", "exclusiveMaximum"};
static const char *const k_schemas[] = {"additionalProperties",
                                        "additionalItems",
                                        "contains",
                                        "not",
                                        "propertyNames",
                                        "if",
                                        "then",
                                        "else",
                                        "unevaluatedProperties",
                                        "unevaluatedItems"};
static const char *const k_maps[] = {"properties", "patternProperties", "$defs",
                                     "definitions", "dependentSchemas"};
static const char *const k_lists[] = {"allOf", "anyOf", "oneOf"};

/* One keyword k = v of a schema. */
static int keyword(ctx *c, const char *k, const json_t *v, int depth) {
  if (IN(k, k_strings))
    return json_is_string(v) ? 0 : wrong(c, k, "a string", v);
  if (IN(k, k_counts)) {
    if (is_count(v)) return 0;
    if (!json_is_number(v)) return wrong(c, k, "an integer of at least 0", v);
    return js_fail(c, "'%s' must be an integer of at least 0, not %.17g", k,
                   json_number_value(v));
  }
  if (IN(k, k_numbers))
    return json_is_number(v) ? 0 : wrong(c, k, "a number", v);
  if (IN(k, k_bounds))
    return json_is_number(v) || json_is_boolean(v)
               ? 0
               : wrong(c, k, "a number (or a draft-4 boolean)", v);
  if (!strcmp(k, "multipleOf")) {
    if (!json_is_number(v)) return wrong(c, k, "a number above 0", v);
    if (json_number_value(v) > 0) return 0;
    return js_fail(c, "'multipleOf' must be a number above 0, not %.17g",
                   json_number_value(v));
  }
  if (!strcmp(k, "uniqueItems"))
    return json_is_boolean(v) ? 0 : wrong(c, k, "a boolean", v);
  if (!strcmp(k, "enum"))
    return json_is_array(v) ? 0 : wrong(c, k, "a list", v);
  if (!strcmp(k, "required"))
    return strings_only(v) ? 0 : wrong(c, k, "a list of strings", v);
  if (!strcmp(k, "type")) {
    if (json_is_string(v) || strings_only(v)) return 0;
    return wrong(c, k, "a string or a list of strings", v);
  }
  if (!strcmp(k, "dependentRequired") || !strcmp(k, "dependencies")) {
    if (!json_is_object(v)) return wrong(c, k, "an object", v);
    const char *name;
    const json_t *x;
    json_object_foreach((json_t *)v, name, x) {
      if (strings_only(x)) continue;
      if (!strcmp(k, "dependencies") && !json_is_array(x)) { /* a schema */
        if (sub(c, x, depth, k, name)) return -1;
        continue;
      }
      size_t at = js_ptr_push(c, k);
      js_ptr_push(c, name);
      wrong(c, k, "an object of lists of strings", x);
      js_ptr_pop(c, at);
      return -1;
    }
    return 0;
  }
  if (IN(k, k_schemas)) return sub(c, v, depth, k, NULL);
  if (IN(k, k_maps)) {
    if (!json_is_object(v)) return wrong(c, k, "an object of schemas", v);
    return sub_map(c, v, depth, k);
  }
  if (IN(k, k_lists)) {
    if (!json_is_array(v) || !json_array_size(v))
      return json_is_array(v) ? js_fail(c, "'%s' must not be empty", k)
                              : wrong(c, k, "a list of schemas", v);
    return sub_list(c, v, depth, k);
  }
  if (!strcmp(k, "prefixItems")) {
    if (!json_is_array(v)) return wrong(c, k, "a list of schemas", v);
    return sub_list(c, v, depth, k);
  }
  if (!strcmp(k, "items"))
    return json_is_array(v) ? sub_list(c, v, depth, k)
                            : sub(c, v, depth, k, NULL);
  return 0; /* const, annotations, unknown keywords: any value */
}

static int shape(ctx *c, const json_t *s, int depth) {
  if (depth > MAX_SHAPE_DEPTH)
    return js_fail_limit(c, "schema nested more than %d levels deep",
                         MAX_SHAPE_DEPTH);
  if (json_is_boolean(s)) return 0;
  if (!json_is_object(s))
    return js_fail(c, "a schema must be an object or a boolean, not %s",
                   json_kind(s));
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)s, k, v) {
    if (keyword(c, k, v, depth)) return -1;
  }
  return 0;
}

int js_check_shapes(ctx *c, const json_t *s) {
  for (int i = 0; i < c->n_shaped; i++)
    if (c->shaped[i] == s) return 0;
  if (shape(c, s, 0)) return -1;
  if (c->n_shaped < MAX_REFS) c->shaped[c->n_shaped++] = s;
  return 0;
}
