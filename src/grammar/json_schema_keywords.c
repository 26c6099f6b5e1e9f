/* json_schema: what each keyword is to the converter. The JSON Schema spec
 * says a validator ignores keywords it does not know (annotations, vendor
 * extensions, misspellings), so the converter does too, with a note in the
 * grammar's leading comments; what it knows falls in three kinds:
 * annotations (ignored quietly: they do not change what validates), the
 * assertions and applicators it enforces, and those it cannot enforce
 * (refused with an error naming them, where they constrain anything). */
#include "json_schema_internal.h"

#include <string.h>

static const char *const k_annotations[] = {"title",
                                            "description",
                                            "default",
                                            "examples",
                                            "$schema",
                                            "$id",
                                            "$comment",
                                            "readOnly",
                                            "writeOnly",
                                            "deprecated",
                                            "$defs",
                                            "definitions",
                                            "discriminator",
                                            "$anchor",
                                            "$dynamicAnchor",
                                            "$recursiveAnchor",
                                            "contentMediaType",
                                            "contentEncoding",
                                            "contentSchema",
                                            "$vocabulary",
                                            "then",
                                            "else",
                                            "minContains",
                                            "maxContains"};

static const char *const k_enforced[] = {"type",
                                         "enum",
                                         "const",
                                         "anyOf",
                                         "oneOf",
                                         "allOf",
                                         "$ref",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "patternProperties",
                                         "minProperties",
                                         "maxProperties",
                                         "dependentRequired",
                                         "dependencies",
                                         "propertyNames",
                                         "items",
                                         "prefixItems",
                                         "additionalItems",
                                         "minItems",
                                         "maxItems",
                                         "uniqueItems",
                                         "minLength",
                                         "maxLength",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum",
                                         "multipleOf",
                                         "dependentSchemas",
                                         "unevaluatedProperties",
                                         "contains",
                                         "not"};

/* Known, constraining, and not enforceable by a grammar here. */
static const char *const k_refused[] = {"if", "unevaluatedItems", "$dynamicRef",
                                        "$recursiveRef"};

static bool in(const char *k, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(k, list[i])) return true;
  return false;
}

js_keyword js_keyword_kind(const char *k) {
  if (in(k, k_annotations, sizeof k_annotations / sizeof *k_annotations))
    return JS_KW_ANNOTATION;
  if (in(k, k_enforced, sizeof k_enforced / sizeof *k_enforced))
    return JS_KW_ENFORCED;
  if (in(k, k_refused, sizeof k_refused / sizeof *k_refused))
    return JS_KW_REFUSED;
  return JS_KW_UNKNOWN;
}

bool js_constrains(const char *k) {
  return js_keyword_kind(k) == JS_KW_ENFORCED ||
         js_keyword_kind(k) == JS_KW_REFUSED;
}

int js_check_keywords(ctx *c, const json_t *s) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)s, key, v) {
    switch (js_keyword_kind(key)) {
    case JS_KW_UNKNOWN:
      js_note(c, "ignored unknown keyword '%.64s'", key);
      break;
    case JS_KW_REFUSED:
      /* "if" with then/else: the grammar cannot choose by it */
      return js_fail(c,
                     "JSON Schema keyword '%.64s' is not supported (it "
                     "changes what validates and the grammar cannot "
                     "enforce it)",
                     key);
    default: break;
    }
  }
  return 0;
}
