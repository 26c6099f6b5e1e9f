/* json_schema: whether one JSON value validates under a schema, for the
 * keywords that decide enum and const values beside other keywords (type,
 * enum, const, numeric bounds, multipleOf, string lengths, array and object
 * shapes). A keyword it does not evaluate (pattern, format, ...) makes the
 * answer "cannot tell". */
#include "json_schema_internal.h"

#include <math.h>
#include <string.h>

bool js_of_type_name(const char *t, const json_t *x) {
  return (!strcmp(t, "string") && json_is_string(x)) ||
         (!strcmp(t, "number") && json_is_number(x)) ||
         (!strcmp(t, "integer") &&
          (json_is_integer(x) ||
           (json_is_real(x) &&
            json_real_value(x) == floor(json_real_value(x))))) ||
         (!strcmp(t, "boolean") && json_is_boolean(x)) ||
         (!strcmp(t, "null") && json_is_null(x)) ||
         (!strcmp(t, "object") && json_is_object(x)) ||
         (!strcmp(t, "array") && json_is_array(x));
}

static bool of_type(const json_t *type, const json_t *x) {
  if (json_is_string(type)) return js_of_type_name(json_string_value(type), x);
  size_t i;
  const json_t *t;
  json_array_foreach(type, i, t) {
    if (json_is_string(t) && js_of_type_name(json_string_value(t), x))
      return true;
  }
  return false;
}

static size_t utf8_chars(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
  return k;
}

/* Combines answers: any "no" is no; else any "cannot tell" is that. */
static int and3(int a, int b) {
  if (a == 0 || b == 0) return 0;
  return a < 0 || b < 0 ? -1 : 1;
}

static int number_ok(const json_t *s, double v) {
  const json_t *mn = json_object_get(s, "minimum"),
               *mx = json_object_get(s, "maximum"),
               *xmn = json_object_get(s, "exclusiveMinimum"),
               *xmx = json_object_get(s, "exclusiveMaximum"),
               *mo = json_object_get(s, "multipleOf");
  bool xlo = json_is_true(xmn), xhi = json_is_true(xmx); /* draft 4 */
  if (json_is_number(mn) &&
      (xlo ? v <= json_number_value(mn) : v < json_number_value(mn)))
    return 0;
  if (json_is_number(mx) &&
      (xhi ? v >= json_number_value(mx) : v > json_number_value(mx)))
    return 0;
  if (json_is_number(xmn) && v <= json_number_value(xmn)) return 0;
  if (json_is_number(xmx) && v >= json_number_value(xmx)) return 0;
  if (json_is_number(mo)) {
    double q = v / json_number_value(mo);
    if (!isfinite(q)) return -1;
    if (q != floor(q)) return json_is_integer(mo) ? 0 : -1;
  }
  return 1;
}

int js_value_valid(ctx *c, const json_t *s, const json_t *x, int depth) {
  if (depth > MAX_DEPTH) return -1;
  if (json_is_true(s)) return 1;
  if (json_is_false(s)) return 0;
  if (!json_is_object(s)) return -1;
  int ok = 1;
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)s, key, v) {
    if (!js_constrains(key)) continue;
    int r = 1;
    if (!strcmp(key, "type")) {
      r = of_type(v, x);
    } else if (!strcmp(key, "const")) {
      r = json_equal(v, x);
    } else if (!strcmp(key, "enum")) {
      r = 0;
      size_t i;
      const json_t *e;
      json_array_foreach(v, i, e) {
        if (json_equal(e, x)) r = 1;
      }
    } else if (!strcmp(key, "minimum") || !strcmp(key, "maximum") ||
               !strcmp(key, "exclusiveMinimum") ||
               !strcmp(key, "exclusiveMaximum") || !strcmp(key, "multipleOf")) {
      r = json_is_number(x) ? number_ok(s, json_number_value(x)) : 1;
    } else if (!strcmp(key, "minLength") || !strcmp(key, "maxLength")) {
      if (json_is_string(x) && json_is_integer(v)) {
        size_t n = utf8_chars(json_string_value(x), json_string_length(x));
        long long lim = json_integer_value(v);
        r = key[1] == 'i' ? (long long)n >= lim : (long long)n <= lim;
      }
    } else if (!strcmp(key, "minItems") || !strcmp(key, "maxItems")) {
      if (json_is_array(x) && json_is_integer(v)) {
        long long n = (long long)json_array_size(x),
                  lim = json_integer_value(v);
        r = key[1] == 'i' ? n >= lim : n <= lim;
      }
    } else if (!strcmp(key, "items")) {
      if (json_is_array(x) && json_is_object(v)) {
        size_t i;
        const json_t *e;
        json_array_foreach(x, i, e) {
          r = and3(r, js_value_valid(c, v, e, depth + 1));
        }
      } else if (json_is_array(x)) {
        r = -1;
      }
    } else if (!strcmp(key, "properties")) {
      if (json_is_object(x)) {
        const char *k;
        const json_t *e;
        json_object_foreach((json_t *)x, k, e) {
          const json_t *ps = json_object_get(v, k);
          if (ps) r = and3(r, js_value_valid(c, ps, e, depth + 1));
        }
      }
    } else if (!strcmp(key, "required")) {
      if (json_is_object(x)) {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e) {
          if (json_is_string(e) && !json_object_get(x, json_string_value(e)))
            r = 0;
        }
      }
    } else if (!strcmp(key, "additionalProperties") && json_is_false(v)) {
      if (json_is_object(x)) {
        const json_t *props = json_object_get(s, "properties");
        if (json_object_get(s, "patternProperties")) {
          r = -1;
        } else {
          const char *k;
          const json_t *e;
          json_object_foreach((json_t *)x, k, e) {
            if (!json_object_get(props, k)) r = 0;
          }
        }
      }
    } else if (!strcmp(key, "anyOf") || !strcmp(key, "oneOf") ||
               !strcmp(key, "allOf")) {
      int yes = 0, unknown = 0, no = 0;
      size_t i;
      const json_t *e;
      json_array_foreach(v, i, e) {
        int q = js_value_valid(c, e, x, depth + 1);
        yes += q == 1, unknown += q < 0, no += q == 0;
      }
      if (!strcmp(key, "allOf"))
        r = no ? 0 : unknown ? -1 : 1;
      else if (!strcmp(key, "anyOf"))
        r = yes ? 1 : unknown ? -1 : 0;
      else
        r = yes > 1 ? 0 : unknown ? -1 : yes == 1;
    } else if (!strcmp(key, "not")) {
      int q = js_value_valid(c, v, x, depth + 1);
      r = q < 0 ? -1 : !q;
    } else if (!strcmp(key, "$ref")) {
      const json_t *t, *base;
      nc_code code = c->code;
      if (!json_is_string(v) ||
          js_resolve_ref(c, json_string_value(v), &t, &base)) {
        c->code = code; /* a question, not a failure */
        r = -1;
      } else {
        r = js_value_valid(c, t, x, depth + 1);
      }
    } else if (!strcmp(key, "format") || !strcmp(key, "pattern")) {
      r = json_is_string(x) ? -1 : 1;
    } else if (!strcmp(key, "uniqueItems") || !strcmp(key, "prefixItems") ||
               !strcmp(key, "contains") || !strcmp(key, "additionalItems")) {
      r = json_is_array(x) ? -1 : 1;
    } else if (!strcmp(key, "patternProperties") ||
               !strcmp(key, "additionalProperties") ||
               !strcmp(key, "minProperties") || !strcmp(key, "maxProperties") ||
               !strcmp(key, "dependentRequired") ||
               !strcmp(key, "dependencies") || !strcmp(key, "propertyNames") ||
               !strcmp(key, "dependentSchemas") ||
               !strcmp(key, "unevaluatedProperties")) {
      r = json_is_object(x) ? -1 : 1;
    } else {
      r = -1;
    }
    ok = and3(ok, r);
    if (ok == 0) return 0;
  }
  return ok;
}
