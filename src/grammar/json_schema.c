/* JSON Schema to GBNF (see json_schema.h). Each schema becomes one rule
 * r<N>; $refs are converted once (a rule name is taken before its body is
 * built, so recursive schemas refer to themselves). */
#include "json_schema.h"
#include "json_schema_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char k_prims[] =
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" "
    "[0-9a-fA-F]{4} )\n"
    "string ::= \"\\\"\" char* \"\\\"\"\n"
    "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"
    "number ::= integer ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?\n"
    "boolean ::= \"true\" | \"false\"\n"
    "null ::= \"null\"\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" ( string \":\" value ( \",\" string \":\" value )* )? "
    "\"}\"\n"
    "array ::= \"[\" ( value ( \",\" value )* )? \"]\"\n"
    "digit2 ::= [0-9] [0-9]\n"
    "date ::= [0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" "
    "[1-9] | [12] [0-9] | \"3\" [01] )\n"
    "time ::= ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] "
    "[0-9] ( \".\" [0-9]{1,6} )? ( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) "
    "\":\" [0-5] [0-9] )\n"
    "date-time ::= date \"T\" time\n"
    "hex ::= [0-9a-f]\n"
    "uuid ::= hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12}\n"
    "email ::= [a-zA-Z0-9._+-]{1,64} \"@\" [a-zA-Z0-9-]{1,63} ( \".\" "
    "[a-zA-Z0-9-]{1,63} )* \".\" [a-zA-Z]{2,12}\n";

int js_gen(ctx *c, const json_t *s, int depth);

static bool is_annotation(const char *k) {
  static const char *const ann[] = {
      "title", "description", "default",      "examples",  "$schema",
      "$id",   "$comment",    "readOnly",     "writeOnly", "deprecated",
      "$defs", "definitions", "discriminator"};
  for (size_t i = 0; i < sizeof ann / sizeof ann[0]; i++)
    if (!strcmp(k, ann[i])) return true;
  return false;
}

static bool known(const char *k) {
  static const char *const kw[] = {"type",
                                   "enum",
                                   "const",
                                   "anyOf",
                                   "oneOf",
                                   "allOf",
                                   "$ref",
                                   "properties",
                                   "required",
                                   "additionalProperties",
                                   "items",
                                   "prefixItems",
                                   "minItems",
                                   "maxItems",
                                   "minLength",
                                   "maxLength",
                                   "pattern",
                                   "format",
                                   "minimum",
                                   "maximum",
                                   "exclusiveMinimum",
                                   "exclusiveMaximum"};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
    if (!strcmp(k, kw[i])) return true;
  return is_annotation(k);
}

/* A schema whose meaning comes from lead ($ref, const, enum or a
 * combinator) holds only annotations beside it (with const and enum also
 * 'type'): what else it says is not ignored, it is an error naming it. */
static int alone(ctx *c, const json_t *s, const char *lead) {
  bool value = !strcmp(lead, "const") || !strcmp(lead, "enum");
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)s, key, v) {
    if (is_annotation(key) || !strcmp(key, lead) ||
        (value && !strcmp(key, "type")))
      continue;
    return js_fail(c, "'%.64s' beside '%s' is not supported", key, lead);
  }
  return 0;
}

/* Whether JSON value x is of the schema's type (absent: any). */
static bool of_type(const json_t *type, const json_t *x) {
  if (!type) return true;
  size_t n = json_is_array(type) ? json_array_size(type) : 1;
  for (size_t i = 0; i < n; i++) {
    const json_t *t = json_is_array(type) ? json_array_get(type, i) : type;
    const char *ts = json_is_string(t) ? json_string_value(t) : "";
    if ((!strcmp(ts, "string") && json_is_string(x)) ||
        (!strcmp(ts, "number") && json_is_number(x)) ||
        (!strcmp(ts, "integer") &&
         (json_is_integer(x) ||
          (json_is_real(x) &&
           json_real_value(x) == floor(json_real_value(x))))) ||
        (!strcmp(ts, "boolean") && json_is_boolean(x)) ||
        (!strcmp(ts, "null") && json_is_null(x)) ||
        (!strcmp(ts, "object") && json_is_object(x)) ||
        (!strcmp(ts, "array") && json_is_array(x)))
      return true;
  }
  return false;
}

/* The body of one schema into b. */
static int gen_body(ctx *c, const json_t *s, sb *b, int depth) {
  if (json_is_true(s)) {
    js_sb_add(b, "value", 5);
    return 0;
  }
  if (json_is_false(s)) return js_fail(c, "the schema false matches nothing");
  if (!json_is_object(s)) return js_fail(c, "a schema must be an object");
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)s, key, v) {
    if (!known(key))
      return js_fail(c, "unsupported JSON Schema keyword '%.64s'", key);
  }
  const json_t *ref = json_object_get(s, "$ref");
  if (ref) {
    if (alone(c, s, "$ref")) return -1;
    if (!json_is_string(ref)) return js_fail(c, "'$ref' must be a string");
    const char *r = json_string_value(ref);
    for (int i = 0; i < c->n_refs; i++)
      if (!strcmp(c->ref_names[i], r)) {
        js_sb_printf(b, "r%d", c->ref_ids[i]);
        return 0;
      }
    const char *name = NULL;
    const json_t *defs = NULL;
    if (!strncmp(r, "#/$defs/", 8)) {
      defs = json_object_get(c->root, "$defs");
      name = r + 8;
    } else if (!strncmp(r, "#/definitions/", 14)) {
      defs = json_object_get(c->root, "definitions");
      name = r + 14;
    } else if (!strcmp(r, "#")) {
      defs = NULL;
    } else {
      return js_fail(c,
                     "'$ref' %.128s: only #, #/$defs/NAME and "
                     "#/definitions/NAME are supported",
                     r);
    }
    const json_t *target = name ? json_object_get(defs, name) : c->root;
    if (!target) return js_fail(c, "'$ref' %.128s points to nothing", r);
    if (c->n_refs >= MAX_REFS) return js_fail_limit(c, "too many $refs");
    int id = js_new_rule(c);
    if (id < 0) return -1;
    c->ref_names[c->n_refs] = r;
    c->ref_ids[c->n_refs++] = id;
    sb body = {0};
    if (gen_body(c, target, &body, depth + 1)) {
      free(body.s);
      return -1;
    }
    js_emit(c, id, &body);
    js_sb_printf(b, "r%d", id);
    return 0;
  }
  const json_t *cst = json_object_get(s, "const");
  const json_t *en = json_object_get(s, "enum");
  if (cst || en) {
    if (en && (!json_is_array(en) || json_array_size(en) == 0))
      return js_fail(c, "'enum' must be a non-empty list");
    if (en && json_array_size(en) > MAX_ENUM)
      return js_fail_limit(c, "'enum' with more than %d values", MAX_ENUM);
    if (alone(c, s, cst ? "const" : "enum")) return -1;
    /* A value must also be of the 'type' given: the others cannot
     * validate. */
    const json_t *type = json_object_get(s, "type");
    size_t n = cst ? 1 : json_array_size(en), written = 0;
    for (size_t i = 0; i < n; i++) {
      const json_t *x = cst ? cst : json_array_get(en, i);
      if (!of_type(type, x)) continue;
      char *js = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
      if (!js) return js_fail_oom(c);
      if (written++) js_sb_add(b, " | ", 3);
      js_sb_lit(b, js, strlen(js));
      free(js);
    }
    if (!written)
      return js_fail(c, "no value of '%s' is of the 'type' given",
                     cst ? "const" : "enum");
    return 0;
  }
  const char *comb[] = {"anyOf", "oneOf", "allOf"};
  for (int k = 0; k < 3; k++) {
    const json_t *list = json_object_get(s, comb[k]);
    if (!list) continue;
    if (!json_is_array(list) || json_array_size(list) == 0)
      return js_fail(c, "'%s' must be a non-empty list", comb[k]);
    if (alone(c, s, comb[k])) return -1;
    if (k == 2 && json_array_size(list) != 1)
      return js_fail(c, "'allOf' with more than one schema is not supported");
    size_t i;
    json_array_foreach(list, i, v) {
      int id = js_gen(c, v, depth + 1);
      if (id < 0) return -1;
      js_sb_printf(b, "%sr%d", i ? " | " : "", id);
    }
    return 0;
  }
  const json_t *type = json_object_get(s, "type");
  if (!type) {
    if (json_object_get(s, "properties")) return js_gen_object(c, s, b, depth);
    if (json_object_get(s, "items") || json_object_get(s, "prefixItems"))
      return js_gen_array(c, s, b, depth);
    js_sb_add(b, "value", 5);
    return 0;
  }
  size_t nt = json_is_array(type) ? json_array_size(type) : 1;
  if (nt == 0) return js_fail(c, "'type' must not be an empty list");
  for (size_t i = 0; i < nt; i++) {
    const json_t *t = json_is_array(type) ? json_array_get(type, i) : type;
    const char *ts = json_is_string(t) ? json_string_value(t) : "";
    if (i) js_sb_add(b, " | ", 3);
    int rc = 0;
    if (!strcmp(ts, "object"))
      rc = js_gen_object(c, s, b, depth);
    else if (!strcmp(ts, "array"))
      rc = js_gen_array(c, s, b, depth);
    else if (!strcmp(ts, "string"))
      rc = js_gen_string(c, s, b);
    else if (!strcmp(ts, "integer"))
      rc = js_gen_integer(c, s, b, false);
    else if (!strcmp(ts, "number"))
      rc = js_gen_integer(c, s, b, true);
    else if (!strcmp(ts, "boolean"))
      js_sb_add(b, "boolean", 7);
    else if (!strcmp(ts, "null"))
      js_sb_add(b, "null", 4);
    else
      return js_fail(c, "unsupported type '%.64s'", ts);
    if (rc) return -1;
  }
  return 0;
}

int js_gen(ctx *c, const json_t *s, int depth) {
  if (depth > MAX_DEPTH) return js_fail_limit(c, "schema nested too deeply");
  int id = js_new_rule(c);
  if (id < 0) return -1;
  sb body = {0};
  if (gen_body(c, s, &body, depth)) {
    free(body.s);
    return -1;
  }
  js_emit(c, id, &body);
  return id;
}

nc_code json_schema_to_gbnf(const json_t *schema, char **gbnf, nc_error *err) {
  *gbnf = NULL;
  ctx c = {.root = schema, .err = err, .code = NC_OK};
  js_sb_add(&c.out, k_prims, strlen(k_prims));
  int id = js_gen(&c, schema, 0);
  if (id >= 0) js_sb_printf(&c.out, "root ::= r%d\n", id);
  if (id >= 0 && c.out.big) js_fail_big(&c);
  if (c.code != NC_OK || id < 0 || c.out.oom) {
    if (c.code == NC_OK) nc_fail(err, NC_ERR_NOMEM, "out of memory");
    free(c.out.s);
    return c.code == NC_OK ? NC_ERR_NOMEM : c.code;
  }
  *gbnf = c.out.s;
  return NC_OK;
}
