/* JSON Schema to GBNF (see json_schema.h). Each schema becomes one rule
 * r<N>; $refs are converted once per target (a rule name is taken before
 * its body is built, so recursive schemas refer to themselves). allOf, and
 * keywords beside $ref, anyOf and oneOf, are merged into one schema first
 * (json_schema_merge.c); each type's keywords are its own file's. */
#include "json_schema.h"
#include "json_schema_internal.h"

#include <stdlib.h>
#include <string.h>

/* The shared rules: numbers, true, false and null (the same text in each
 * syntax), and the formats. A date's day exists in its month (never
 * February 29: the year would decide). */
static const char k_prims[] =
    "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"
    "number ::= integer ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?\n"
    "boolean ::= \"true\" | \"false\"\n"
    "null ::= \"null\"\n"
    "digit2 ::= [0-9] [0-9]\n"
    "date ::= [0-9]{4} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" "
    "[1-9] | [12] [0-9] | \"3\" [01] ) | ( \"0\" [469] | \"11\" ) \"-\" ( "
    "\"0\" "
    "[1-9] | [12] [0-9] | \"30\" ) | \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | "
    "\"2\" "
    "[0-8] ) )\n"
    "time ::= ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] "
    "[0-9] ( \".\" [0-9]{1,6} )? ( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) "
    "\":\" [0-5] [0-9] )\n"
    "date-time ::= date \"T\" time\n"
    "hex ::= [0-9a-f]\n"
    "uuid ::= hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12}\n"
    "email ::= [a-zA-Z0-9._+-]{1,64} \"@\" [a-zA-Z0-9-]{1,63} ( \".\" "
    "[a-zA-Z0-9-]{1,63} )* \".\" [a-zA-Z]{2,12}\n"
    "octet ::= \"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9] "
    "[0-9] | [0-9]\n"
    "ipv4 ::= octet \".\" octet \".\" octet \".\" octet\n"
    "ipv6 ::= [0-9a-f]{1,4} ( \":\" [0-9a-f]{1,4} ){7}\n"
    "label ::= [a-z0-9] ( [a-z0-9-]{0,20} [a-z0-9] )?\n"
    "hostname ::= ( label \".\" ){0,3} [a-z] ( [a-z0-9-]{0,20} [a-z0-9] )?\n"
    "uri ::= \"http\" \"s\"? \"://\" hostname ( \"/\" [a-zA-Z0-9._~-]{0,32} "
    "){0,6} ( \"?\" [a-zA-Z0-9._~=&-]{0,64} )?\n"
    "duration ::= \"P\" ( [0-9]{1,4} ( \"D\" ( \"T\" [0-9]{1,4} \"H\" )? | "
    "\"W\" ) | \"T\" [0-9]{1,4} [HMS] )\n"
    "regex-text ::= [a-zA-Z0-9 _]{0,64}\n";

const char *js_shared_rules(void) {
  return k_prims;
}

/* Whether s has a keyword that constrains, other than those named. */
static const char *other_constraint(const json_t *s, const char *a,
                                    const char *b) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)s, key, v) {
    if (js_constrains(key) && strcmp(key, a) && (!b || strcmp(key, b)))
      return key;
  }
  return NULL;
}

static int gen_body(ctx *c, const json_t *s, sb *b, int depth);

/* Target's body as rule id (memo entry k), messages saying where it is. */
static int ref_body(ctx *c, const char *ref, const json_t *target,
                    const json_t *base, int id, int depth) {
  char saved[MAX_POINTER];
  size_t saved_len = c->ptr_len;
  memcpy(saved, c->ptr, saved_len + 1);
  const char *frag = strchr(ref, '#');
  snprintf(c->ptr, sizeof c->ptr, "%s", frag && frag[1] == '/' ? frag + 1 : "");
  c->ptr_len = strlen(c->ptr);
  const json_t *old_base = c->base;
  c->base = base;
  sb body = {0};
  int rc = gen_body(c, target, &body, depth + 1);
  c->base = old_base;
  memcpy(c->ptr, saved, saved_len + 1);
  c->ptr_len = saved_len;
  if (rc) {
    free(body.s);
    return -1;
  }
  js_emit(c, id, &body);
  return 0;
}

/* Rules a target may take again for another reference's uniqueItems paths
 * (each copy, and all copies together). */
#define REF_COPY_RULES 64
#define REF_COPIES_RULES 1024

/* A $ref: its target converted once and shared, except where the
 * conversion wrote uniqueItems directives (json_schema_unique.c): those
 * name this reference's instance path, so another reference converts the
 * target again for its own path while that stays small (REF_COPY_RULES,
 * REF_COPIES_RULES), else once more without directives (the copy then
 * shared); a target used again within its own conversion (a recursion: one
 * rule at many paths) is converted again without them. */
static int gen_ref(ctx *c, const char *ref, sb *b, int depth) {
  const json_t *target, *base;
  if (js_resolve_ref(c, ref, &target, &base)) return -1;
  bool pathed = false;
  int size = 0;
  for (int i = 0; i < c->n_refs; i++) {
    if (c->ref_targets[i] != target) continue;
    if (c->ref_busy[i]) c->ref_again[i] = true;
    /* a copy converted without a path may lack this path's directives */
    if (!c->ref_busy[i] && c->ref_lost[i] && c->ivalid && c->doc) continue;
    if (c->ref_busy[i] || !c->ref_pathed[i]) {
      js_sb_printf(b, "r%d", c->ref_ids[i]);
      return 0;
    }
    pathed = true;
    size = c->ref_size[i];
  }
  if (c->n_refs >= MAX_REFS) return js_fail_limit(c, "too many $refs");
  bool ivalid = c->ivalid;
  if (pathed &&
      (size > REF_COPY_RULES || c->ref_copied + size > REF_COPIES_RULES ||
       c->n_refs >= MAX_REFS / 2))
    c->ivalid = false; /* a shared copy without directives */
  for (int pass = 0; pass < 2; pass++) {
    js_mark m = js_mark_here(c);
    int id = js_new_rule(c);
    if (id < 0) {
      c->ivalid = ivalid;
      return -1;
    }
    int k = c->n_refs++;
    c->ref_targets[k] = target;
    c->ref_ids[k] = id;
    c->ref_busy[k] = true;
    c->ref_again[k] = false;
    c->ref_pathed[k] = false;
    /* lost: the reference's own path was (a copy made without directives
     * on purpose, a recursion's or past the copies' bound, is shared) */
    c->ref_lost[k] = !ivalid;
    int rc = ref_body(c, ref, target, base, id, depth);
    c->ref_busy[k] = false;
    bool wrote = c->uniq.n > m.uniq_n;
    if (!rc && wrote && c->ref_again[k] && pass == 0) {
      js_undo(c, m); /* again, with the path lost */
      c->ivalid = false;
      continue;
    }
    c->ivalid = ivalid;
    if (rc) return -1;
    c->ref_pathed[k] = wrote;
    c->ref_size[k] = c->n_rules - m.n_rules;
    if (pathed && wrote) c->ref_copied += c->ref_size[k];
    js_sb_printf(b, "r%d", id);
    return 0;
  }
  c->ivalid = ivalid;
  return js_fail(c, "'$ref' %.64s: converted twice", ref);
}

/* anyOf, or oneOf with branches no value can match twice. */
static int gen_union(ctx *c, const json_t *list, const char *kind, sb *b,
                     int depth) {
  if (!json_is_array(list) || json_array_size(list) == 0)
    return js_fail(c, "'%s' must be a non-empty list", kind);
  size_t n = json_array_size(list);
  size_t origin[MAX_ONEOF] = {0};
  if (!strcmp(kind, "oneOf")) {
    if (n > MAX_ONEOF)
      return js_fail_limit(c, "'oneOf' with more than %d branches", MAX_ONEOF);
    size_t bi = 0, bj = 0;
    nc_code before = c->code;
    const json_t *asked = list;
    list = js_oneof_branches(c, list, depth, origin, &bi, &bj);
    int strings =
        list || c->code != before ? 1 : js_oneof_strings(c, asked, depth, b);
    if (strings <= 0) return strings;
    if (!list && c->code == before)
      return js_fail(c,
                     "'oneOf' whose branches %zu and %zu may both "
                     "match a value is not supported (exactly one "
                     "must; with 'anyOf' any may)",
                     bi, bj);
    if (!list) return -1;
    n = json_array_size(list); /* nested branches taken apart */
  }
  size_t written = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *x = json_array_get(list, i);
    if (json_is_false(x)) continue;
    js_mark m = js_mark_here(c);
    /* where the branch was written (a oneOf's may come from within one) */
    size_t at = strcmp(kind, "oneOf") ? i : origin[i];
    int id = js_gen_at_index(c, x, depth + 1, kind, at);
    if (id < 0 && js_recover(c, m)) continue; /* matches nothing */
    if (id < 0) return -1;
    js_sb_printf(b, "%sr%d", written++ ? " | " : "", id);
  }
  if (!written)
    return js_fail_unsat(c, "no branch of '%s' matches anything", kind);
  return 0;
}

/* const or enum: the values that the keywords beside them also accept. */
static int gen_values(ctx *c, const json_t *s, sb *b) {
  const json_t *cst = json_object_get(s, "const");
  const json_t *en = json_object_get(s, "enum");
  const char *kw = cst ? "const" : "enum";
  if (!cst && (!json_is_array(en) || json_array_size(en) == 0))
    return js_fail(c, "'enum' must be a non-empty list");
  if (!cst && json_array_size(en) > MAX_ENUM)
    return js_fail_limit(c, "'enum' with more than %d values", MAX_ENUM);
  size_t n = cst ? 1 : json_array_size(en), written = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *x = cst ? cst : json_array_get(en, i);
    int ok = js_value_valid(c, s, x, 0);
    if (ok < 0)
      return js_fail(c,
                     "'%s' beside '%.64s': whether its values also match "
                     "is not decided here",
                     kw, other_constraint(s, "enum", "const"));
    if (!ok) continue;
    char *js = js_value_text(c, x);
    if (!js) return -1;
    if (written++) js_sb_add(b, " | ", 3);
    js_sb_lit(b, js, strlen(js));
    free(js);
  }
  if (!written)
    return js_fail_unsat(c, "no value of '%s' matches the keywords beside it",
                         kw);
  return 0;
}

/* The types a schema without 'type' can take, from its keywords: those
 * of one family say the value is of that type (a subset of what
 * validates: the others' instances also would). 0: no such keyword. */
unsigned js_inferred_types(const json_t *s) {
  static const char *const obj[] = {
      "properties",        "required",      "additionalProperties",
      "patternProperties", "minProperties", "maxProperties",
      "dependentRequired", "dependencies",  "propertyNames"};
  static const char *const arr[] = {
      "items",    "prefixItems", "additionalItems", "minItems",
      "maxItems", "uniqueItems", "contains"};
  static const char *const str[] = {"minLength", "maxLength", "pattern",
                                    "format"};
  static const char *const num[] = {"minimum", "maximum", "exclusiveMinimum",
                                    "exclusiveMaximum", "multipleOf"};
  unsigned m = 0;
  for (size_t i = 0; i < sizeof obj / sizeof *obj; i++)
    if (json_object_get(s, obj[i])) m |= 4;
  for (size_t i = 0; i < sizeof arr / sizeof *arr; i++)
    if (json_object_get(s, arr[i])) m |= 8;
  for (size_t i = 0; i < sizeof str / sizeof *str; i++)
    if (json_object_get(s, str[i])) m |= 16;
  for (size_t i = 0; i < sizeof num / sizeof *num; i++)
    if (json_object_get(s, num[i])) m |= 64;
  return m;
}

static int gen_typed(ctx *c, const json_t *s, sb *b, int depth) {
  const json_t *type = json_object_get(s, "type");
  unsigned m;
  if (type) {
    if (json_is_array(type) && json_array_size(type) == 0)
      return js_fail(c, "'type' must not be an empty list");
    size_t nt = json_is_array(type) ? json_array_size(type) : 1;
    for (size_t i = 0; i < nt; i++) {
      const json_t *t = json_is_array(type) ? json_array_get(type, i) : type;
      if (!js_type_bits(t))
        return js_fail(c, "unsupported type '%.64s'",
                       json_is_string(t) ? json_string_value(t) : "?");
    }
    m = js_type_bits(type);
  } else {
    m = js_inferred_types(s);
    if (!m) {
      js_sb_add(b, "value", 5);
      return 0;
    }
  }
  if (m & 64) m &= ~32u; /* integers are numbers */
  int written = 0;
  for (unsigned i = 0; i < 7; i++) {
    if (!(m & (1u << i))) continue;
    js_mark mk = js_mark_here(c);
    size_t at = b->n;
    if (written) js_sb_add(b, " | ", 3);
    int rc = 0;
    switch (i) {
    case 0: js_sb_add(b, "null", 4); break;
    case 1: js_sb_add(b, "boolean", 7); break;
    case 2: rc = js_gen_object(c, s, b, depth); break;
    case 3: rc = js_gen_array(c, s, b, depth); break;
    case 4: rc = js_gen_string(c, s, b); break;
    case 5: rc = js_gen_integer(c, s, b, false); break;
    default: rc = js_gen_integer(c, s, b, true); break;
    }
    bool several = (m & (m - 1)) != 0;
    if (rc && several && js_recover(c, mk)) { /* none of this type */
      b->n = at;
      if (b->s) b->s[at] = '\0';
      continue;
    }
    if (rc) return -1;
    written++;
  }
  if (!written) return js_fail_unsat(c, "no value of any type matches");
  return 0;
}

/* The body of one schema into b. */
static int gen_body(ctx *c, const json_t *s, sb *b, int depth) {
  if (depth > MAX_DEPTH) return js_fail_limit(c, "schema nested too deeply");
  if (json_is_true(s)) {
    js_sb_add(b, "value", 5);
    return 0;
  }
  if (json_is_false(s))
    return js_fail_unsat(c, "the schema false matches nothing");
  if (!json_is_object(s)) return js_fail(c, "a schema must be an object");
  if (js_check_keywords(c, s)) return -1;
  /* not: the schema without it, narrowed (beside enum/const: the values
   * are checked against it instead) */
  if (json_object_get(s, "not") && !json_object_get(s, "enum") &&
      !json_object_get(s, "const")) {
    const json_t *narrowed = js_apply_not(c, s);
    if (!narrowed) return -1;
    return gen_body(c, narrowed, b, depth + 1);
  }
  const json_t *ref = json_object_get(s, "$ref");
  if (ref && !other_constraint(s, "$ref", NULL)) {
    if (!json_is_string(ref)) return js_fail(c, "'$ref' must be a string");
    return gen_ref(c, json_string_value(ref), b, depth);
  }
  const char *comb = json_object_get(s, "anyOf")   ? "anyOf"
                     : json_object_get(s, "oneOf") ? "oneOf"
                                                   : NULL;
  if (ref || json_object_get(s, "allOf") ||
      (comb && other_constraint(s, comb, NULL))) {
    /* One schema of all that is said here. */
    const json_t *flat;
    if (ref || json_object_get(s, "allOf")) {
      flat = js_flatten(c, s, depth);
    } else {
      json_t *rest = js_own(c, json_copy((json_t *)s));
      json_t *only =
          rest ? js_own(c, json_pack("{s:O}", comb, json_object_get(s, comb)))
               : NULL;
      if (!only) return -1;
      json_object_del(rest, comb);
      flat = js_merge(c, only, rest, depth);
    }
    if (!flat) return -1;
    if (json_is_false(flat))
      return js_fail_unsat(c, "no value matches all of this schema's parts");
    return gen_body(c, flat, b, depth + 1);
  }
  if (comb) return gen_union(c, json_object_get(s, comb), comb, b, depth);
  if (json_object_get(s, "const") || json_object_get(s, "enum"))
    return gen_values(c, s, b);
  return gen_typed(c, s, b, depth);
}

int js_gen(ctx *c, const json_t *s, int depth) {
  /* The instance path: one step further, or lost (a branch, a $ref, ...) */
  json_t *step = c->istep;
  c->istep = NULL;
  int id = depth > MAX_DEPTH ? js_fail_limit(c, "schema nested too deeply")
                             : js_new_rule(c);
  if (id < 0) {
    json_decref(step);
    return -1;
  }
  bool ivalid = c->ivalid;
  if (depth > 0 && !step) c->ivalid = false;
  if (step && c->ivalid && json_array_append(c->ipath, step)) c->ivalid = false;
  /* A schema with an '$id' is a resource: '#' refs inside resolve in it. */
  const json_t *old_base = c->base;
  const json_t *sid = json_object_get(s, "$id");
  if (json_is_string(sid) && json_string_value(sid)[0] != '#') c->base = s;
  sb body = {0};
  int rc = gen_body(c, s, &body, depth);
  c->base = old_base;
  if (step && c->ivalid)
    json_array_remove(c->ipath, json_array_size(c->ipath) - 1);
  c->ivalid = ivalid;
  json_decref(step);
  if (rc) {
    free(body.s);
    return -1;
  }
  js_emit(c, id, &body);
  return id;
}

int js_gen_at(ctx *c, const json_t *s, int depth, const char *seg,
              const char *seg2) {
  if (c->doc && !c->istep && seg2 && !strcmp(seg, "properties"))
    c->istep = json_string(seg2); /* NULL (not UTF-8): the path is lost */
  size_t at = js_ptr_push(c, seg);
  if (seg2) js_ptr_push(c, seg2);
  int id = js_gen(c, s, depth);
  js_ptr_pop(c, at);
  return id;
}

int js_gen_at_index(ctx *c, const json_t *s, int depth, const char *seg,
                    size_t i) {
  if (c->doc && !c->istep &&
      (!strcmp(seg, "prefixItems") || !strcmp(seg, "items")))
    c->istep = json_integer((json_int_t)i);
  size_t at = js_ptr_push(c, seg);
  js_ptr_push_index(c, i);
  int id = js_gen(c, s, depth);
  js_ptr_pop(c, at);
  return id;
}

nc_code json_schema_to_gbnf(const json_t *schema, js_syntax syntax, char **gbnf,
                            nc_error *err) {
  return json_schema_to_gbnf_opts(schema, syntax, 0, gbnf, err);
}

static nc_code to_gbnf(const json_t *schema, js_syntax syntax, unsigned flags,
                       char **gbnf, nc_error *err);

nc_code json_schema_to_gbnf_opts(const json_t *schema, js_syntax syntax,
                                 unsigned flags, char **gbnf, nc_error *err) {
  nc_code rc = to_gbnf(schema, syntax, flags, gbnf, err);
  /* The checked uniqueItems' copies of $ref targets past a bound: the
   * schema as a part of a larger grammar (no directives) instead. */
  if (rc == NC_ERR_LIMIT && (flags & JS_DOC))
    rc = to_gbnf(schema, syntax, flags & ~JS_DOC, gbnf, err);
  return rc;
}

static nc_code to_gbnf(const json_t *schema, js_syntax syntax, unsigned flags,
                       char **gbnf, nc_error *err) {
  *gbnf = NULL;
  ctx c = {.syntax = syntax,
           .root = schema,
           .base = schema,
           .err = err,
           .code = NC_OK,
           .doc = (flags & JS_DOC) && syntax == JS_SYNTAX_JSON,
           .ivalid = true};
  c.owned = json_array();
  c.ipath = json_array();
  if (!c.owned || !c.ipath) {
    json_decref(c.owned);
    json_decref(c.ipath);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  const char *values = js_syntax_values(syntax);
  js_sb_add(&c.out, values, strlen(values));
  js_sb_add(&c.out, k_prims, strlen(k_prims));
  int id = js_check_shapes(&c, schema) ? -1 : js_gen(&c, schema, 0);
  if (id >= 0) js_sb_printf(&c.out, "root ::= r%d\n", id);
  if (id >= 0 && c.out.big) js_fail_big(&c);
  if (c.n_notes > MAX_NOTES)
    js_sb_printf(&c.notes, "# json-schema: and %d more ignored\n",
                 c.n_notes - MAX_NOTES);
  json_decref(c.owned);
  json_decref(c.ipath);
  json_decref(c.istep);
  if (c.code == NC_OK && c.uniq.n) { /* the directives before the rules */
    js_sb_add(&c.uniq, c.out.s ? c.out.s : "", c.out.n);
    if (c.uniq.oom || c.uniq.big) c.out.oom = true;
    free(c.out.s);
    c.out = c.uniq;
    c.uniq = (sb){0};
  }
  free(c.uniq.s);
  if (c.code == NC_OK && c.notes.n) { /* the notes first */
    js_sb_add(&c.notes, c.out.s ? c.out.s : "", c.out.n);
    if (c.notes.oom || c.notes.big) c.out.oom = true;
    free(c.out.s);
    c.out = c.notes;
    c.notes = (sb){0};
  }
  free(c.notes.s);
  if (c.code != NC_OK || id < 0 || c.out.oom) {
    if (c.code == NC_OK) nc_fail(err, NC_ERR_NOMEM, "out of memory");
    free(c.out.s);
    return c.code == NC_OK ? NC_ERR_NOMEM : c.code;
  }
  *gbnf = c.out.s;
  return NC_OK;
}
