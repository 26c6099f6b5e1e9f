/* json_schema: allOf as one schema. Two schemas become the schema of what
 * both validate, keyword by keyword: types intersect, bounds take the
 * tighter, required lists join, properties present in both become an
 * allOf of the two (merged when they are compiled), enums intersect;
 * anyOf/oneOf distribute over the other side ((A1 | A2) & B = (A1 & B) |
 * (A2 & B), and the same for oneOf), a top-level $ref is replaced by its
 * target; two patterns become a list of both (json_schema_string.c
 * makes what all of them match). What cannot be intersected (two
 * different formats) is an error naming the keyword. */
#include "json_schema_internal.h"

#include <math.h>
#include <string.h>

/* Branches one distribution may make. */
#define MAX_BRANCHES 256

static bool has(const json_t *s, const char *k) {
  return json_object_get(s, k) != NULL;
}

static json_t *all_of(const json_t *a, const json_t *b) {
  if (json_is_false(a) || json_is_false(b)) return json_false();
  if (json_is_true(a) || (json_is_object(a) && !json_object_size(a)))
    return json_incref((json_t *)b);
  if (json_is_true(b) || (json_is_object(b) && !json_object_size(b)))
    return json_incref((json_t *)a);
  if (json_equal((json_t *)a, (json_t *)b)) return json_incref((json_t *)a);
  return json_pack("{s:[O,O]}", "allOf", a, b);
}

/* The types of a 'type' value as bits; 0x7F: any. */
enum {
  T_NULL = 1,
  T_BOOL = 2,
  T_OBJ = 4,
  T_ARR = 8,
  T_STR = 16,
  T_INT = 32,
  T_NUM = 64
};
static const char *const k_types[] = {"null",   "boolean", "object", "array",
                                      "string", "integer", "number"};

static unsigned type_bit(const json_t *t) {
  const char *s = json_is_string(t) ? json_string_value(t) : "";
  for (unsigned i = 0; i < 7; i++)
    if (!strcmp(s, k_types[i])) return 1u << i;
  return 0;
}

unsigned js_type_bits(const json_t *type) {
  if (!type) return 0x7F;
  if (!json_is_array(type)) return type_bit(type);
  unsigned m = 0;
  size_t i;
  const json_t *t;
  json_array_foreach(type, i, t) {
    m |= type_bit(t);
  }
  return m;
}

static unsigned meet_types(unsigned a, unsigned b) {
  /* number includes integer */
  if (a & T_NUM) a |= T_INT;
  if (b & T_NUM) b |= T_INT;
  unsigned m = a & b;
  if ((m & T_NUM) && !((a & T_NUM) && (b & T_NUM))) m &= ~(unsigned)T_NUM;
  return m;
}

static json_t *types_json(unsigned m) {
  json_t *arr = json_array();
  for (unsigned i = 0; i < 7; i++)
    if (m & (1u << i)) {
      if (i == 5 && (m & T_NUM)) continue; /* integer within number */
      json_array_append_new(arr, json_string(k_types[i]));
    }
  if (json_array_size(arr) == 1) {
    json_t *one = json_incref(json_array_get(arr, 0));
    json_decref(arr);
    return one;
  }
  return arr;
}

static bool is_min(const char *k) {
  return !strcmp(k, "minimum") || !strcmp(k, "minLength") ||
         !strcmp(k, "minItems") || !strcmp(k, "minProperties");
}
static bool is_max(const char *k) {
  return !strcmp(k, "maximum") || !strcmp(k, "maxLength") ||
         !strcmp(k, "maxItems") || !strcmp(k, "maxProperties");
}

/* Keeps in out the properties a names when a forbids others. */
static int forbid_others(ctx *c, json_t *out, const json_t *a) {
  if (!json_is_false(json_object_get(a, "additionalProperties")) ||
      has(a, "patternProperties"))
    return 0;
  const json_t *ap = json_object_get(a, "properties");
  json_t *props = json_object_get(out, "properties");
  const char *k;
  json_t *v;
  void *tmp;
  json_object_foreach_safe(props, tmp, k, v) {
    if (!json_object_get(ap, k)) json_object_del(props, k);
  }
  const json_t *req = json_object_get(out, "required");
  size_t i;
  const json_t *r;
  json_array_foreach(req, i, r) {
    if (json_is_string(r) && !json_object_get(ap, json_string_value(r)))
      return 1; /* required and forbidden: nothing validates */
  }
  json_object_set_new(out, "additionalProperties", json_false());
  return 0;
}

static bool values_disjoint(const json_t *a, const json_t *b);
static bool requires(const json_t *s, const char *name);

/* Whether a property s requires can hold no value: declared false, or the
 * allOf of two schemas (a merge's) whose const/enum values or types are
 * disjoint. */
static bool required_unmet(const json_t *s) {
  const json_t *props = json_object_get(s, "properties");
  const char *name;
  const json_t *p;
  json_object_foreach((json_t *)props, name, p) {
    if (!requires(s, name)) continue;
    if (json_is_false(p)) return true;
    const json_t *all = json_object_get(p, "allOf");
    if (json_object_size(p) != 1 || json_array_size(all) != 2) continue;
    const json_t *x = json_array_get(all, 0), *y = json_array_get(all, 1);
    const json_t *tx = json_object_get(x, "type"),
                 *ty = json_object_get(y, "type");
    if (values_disjoint(x, y) ||
        (tx && ty && !meet_types(js_type_bits(tx), js_type_bits(ty))))
      return true;
  }
  return false;
}

/* Keyword-wise meet of two plain schemas (no $ref, allOf, anyOf, oneOf
 * at the top). NULL with c failed, or json false: nothing validates. */
static json_t *meet(ctx *c, const json_t *a, const json_t *b) {
  json_t *out = json_deep_copy(a);
  if (!out) return js_fail_oom(c), NULL;
  const char *k;
  const json_t *vb;
  json_object_foreach((json_t *)b, k, vb) {
    json_t *va = json_object_get(out, k);
    if (!va) {
      json_object_set(out, k, (json_t *)vb);
      continue;
    }
    if (json_equal(va, (json_t *)vb) || !js_constrains(k)) continue;
    json_t *nv = NULL;
    if (!strcmp(k, "type")) {
      unsigned m = meet_types(js_type_bits(va), js_type_bits(vb));
      if (!m) goto none;
      nv = types_json(m);
    } else if (!strcmp(k, "properties") || !strcmp(k, "patternProperties") ||
               !strcmp(k, "dependentRequired")) {
      if (!json_is_object(va) || !json_is_object(vb)) goto bad;
      nv = json_deep_copy(va);
      const char *name;
      const json_t *pb;
      json_object_foreach((json_t *)vb, name, pb) {
        const json_t *pa = json_object_get(va, name);
        if (!pa)
          json_object_set(nv, name, (json_t *)pb);
        else if (k[0] == 'd') {
          if (!json_equal((json_t *)pa, (json_t *)pb)) goto bad_nv;
        } else
          json_object_set_new(nv, name, all_of(pa, pb));
      }
    } else if (!strcmp(k, "required")) {
      if (!json_is_array(va) || !json_is_array(vb)) goto bad;
      nv = json_deep_copy(va);
      size_t i;
      const json_t *r;
      json_array_foreach(vb, i, r) {
        bool dup = false;
        size_t j;
        const json_t *q;
        json_array_foreach(nv, j, q) {
          dup |= json_equal((json_t *)q, (json_t *)r);
        }
        if (!dup) json_array_append(nv, (json_t *)r);
      }
    } else if (!strcmp(k, "additionalProperties") || !strcmp(k, "items") ||
               !strcmp(k, "additionalItems") || !strcmp(k, "propertyNames") ||
               !strcmp(k, "unevaluatedProperties")) {
      if (json_is_array(va) || json_is_array(vb)) goto bad; /* tuples */
      nv = all_of(va, vb);
    } else if (is_min(k) || is_max(k)) {
      if (!json_is_number(va) || !json_is_number(vb)) goto bad;
      double x = json_number_value(va), y = json_number_value(vb);
      nv = json_incref((is_min(k) ? x >= y : x <= y) ? va : (json_t *)vb);
    } else if (!strcmp(k, "exclusiveMinimum") ||
               !strcmp(k, "exclusiveMaximum")) {
      if (!json_is_number(va) || !json_is_number(vb)) goto bad; /* draft 4 */
      double x = json_number_value(va), y = json_number_value(vb);
      nv = json_incref((k[10] == 'i' ? x >= y : x <= y) ? va : (json_t *)vb);
    } else if (!strcmp(k, "enum")) {
      if (!json_is_array(va) || !json_is_array(vb)) goto bad;
      nv = json_array();
      size_t i;
      const json_t *x;
      json_array_foreach(va, i, x) {
        size_t j;
        const json_t *y;
        json_array_foreach(vb, j, y) {
          if (json_equal((json_t *)x, (json_t *)y)) {
            json_array_append(nv, (json_t *)x);
            break;
          }
        }
      }
      if (!json_array_size(nv)) {
        json_decref(nv);
        goto none;
      }
    } else if (!strcmp(k, "pattern")) {
      /* both: a list of the patterns, which js_gen_string intersects */
      nv = json_array();
      const json_t *sides[2] = {va, vb};
      for (int side = 0; nv && side < 2; side++) {
        const json_t *v = sides[side];
        if (json_is_string(v)) {
          json_array_append(nv, (json_t *)v);
          continue;
        }
        if (!json_is_array(v)) goto bad_nv;
        json_array_extend(nv, (json_t *)v); /* checked where made */
      }
    } else if (!strcmp(k, "const")) {
      goto none; /* two different constants */
    } else if (!strcmp(k, "uniqueItems")) {
      nv = json_boolean(json_is_true(va) || json_is_true(vb));
    } else if (!strcmp(k, "multipleOf") && json_is_integer(va) &&
               json_is_integer(vb) && json_integer_value(va) > 0 &&
               json_integer_value(vb) > 0) {
      long long x = json_integer_value(va), y = json_integer_value(vb), g = x,
                h = y;
      while (h) {
        long long t = g % h;
        g = h;
        h = t;
      }
      if (x / g > (1LL << 40) / (y > 0 ? y : 1)) goto bad;
      nv = json_integer(x / g * y);
    } else {
      goto bad;
    }
    if (!nv) {
      json_decref(out);
      return js_fail_oom(c), NULL;
    }
    json_object_set_new(out, k, nv);
    continue;
  bad_nv:
    json_decref(nv);
  bad:
    json_decref(out);
    js_fail(c,
            "'allOf' (or keywords beside a $ref or combinator) with two "
            "different '%.64s' is not supported",
            k);
    return NULL;
  none:
    json_decref(out);
    return json_false();
  }
  /* additionalProperties false on one side forbids the other's extra
   * properties; a required property whose two schemas cannot meet
   * (disjoint const/enum values or types) leaves nothing. */
  if (forbid_others(c, out, a) || forbid_others(c, out, b) ||
      required_unmet(out)) {
    json_decref(out);
    return json_false();
  }
  return out;
}

static const json_t *without(ctx *c, const json_t *s, const char *k) {
  json_t *o = json_copy((json_t *)s);
  if (!o) return js_fail_oom(c), NULL;
  json_object_del(o, k);
  return js_own(c, o);
}

const json_t *js_flatten(ctx *c, const json_t *s, int depth) {
  if (depth > MAX_DEPTH)
    return js_fail_limit(c, "schema nested too deeply (allOf and $ref)"), NULL;
  if (!json_is_object(s)) return s;
  const json_t *ref = json_object_get(s, "$ref");
  if (ref) {
    if (!json_is_string(ref))
      return js_fail(c, "'$ref' must be a string"), NULL;
    const json_t *t, *base;
    if (js_resolve_ref(c, json_string_value(ref), &t, &base)) return NULL;
    const json_t *rest = without(c, s, "$ref");
    if (!rest) return NULL;
    return js_merge(c, t, rest, depth + 1);
  }
  const json_t *all = json_object_get(s, "allOf");
  if (all) {
    if (!json_is_array(all) || !json_array_size(all))
      return js_fail(c, "'allOf' must be a non-empty list"), NULL;
    const json_t *acc = without(c, s, "allOf");
    size_t i;
    const json_t *x;
    json_array_foreach(all, i, x) {
      if (!acc) return NULL;
      size_t at = js_ptr_push(c, "allOf");
      js_ptr_push_index(c, i);
      acc = js_merge(c, acc, x, depth + 1);
      js_ptr_pop(c, at);
    }
    return acc;
  }
  return s;
}

static const char *combinator(const json_t *s) {
  if (!json_is_object(s)) return NULL;
  if (has(s, "anyOf")) return "anyOf";
  if (has(s, "oneOf")) return "oneOf";
  return NULL;
}

const json_t *js_merge(ctx *c, const json_t *a, const json_t *b, int depth) {
  if (depth > MAX_DEPTH)
    return js_fail_limit(c, "schema nested too deeply (allOf and $ref)"), NULL;
  a = js_flatten(c, a, depth + 1);
  if (!a) return NULL;
  b = js_flatten(c, b, depth + 1);
  if (!b) return NULL;
  if (json_is_false(a) || json_is_false(b)) return json_false();
  if (json_is_true(a) || (json_is_object(a) && !json_object_size(a))) return b;
  if (json_is_true(b) || (json_is_object(b) && !json_object_size(b))) return a;
  if (!json_is_object(a) || !json_is_object(b))
    return js_fail(c, "a schema must be an object or a boolean"), NULL;
  const char *ca = combinator(a), *cb = combinator(b);
  if (cb && !ca) {
    const json_t *t = a;
    a = b, b = t;
    ca = cb;
  }
  if (ca) { /* (A1 | A2) & B = (A1 & B) | (A2 & B) */
    const json_t *list = json_object_get(a, ca);
    if (!json_is_array(list) || !json_array_size(list))
      return js_fail(c, "'%s' must be a non-empty list", ca), NULL;
    if (json_array_size(list) > MAX_BRANCHES)
      return js_fail_limit(c, "'%s' with more than %d branches", ca,
                           MAX_BRANCHES),
             NULL;
    const json_t *rest = without(c, a, ca);
    if (!rest) return NULL;
    json_t *branches = js_own(c, json_array());
    if (!branches) return NULL;
    size_t i;
    const json_t *x;
    json_array_foreach(list, i, x) {
      const json_t *m = js_merge(c, rest, x, depth + 1);
      if (m) m = js_merge(c, m, b, depth + 1);
      if (!m) return NULL;
      if (json_is_false(m)) continue;
      json_array_append(branches, (json_t *)m);
    }
    if (!json_array_size(branches)) return json_false();
    /* one branch left (the others cannot meet B): it alone, so a oneOf
     * of such merges is a oneOf of plain schemas */
    if (json_array_size(branches) == 1) return json_array_get(branches, 0);
    return js_own(c, json_pack("{s:O}", ca, branches));
  }
  json_t *m = meet(c, a, b);
  return m ? js_own(c, m) : NULL;
}

/* ------------------------------------------------------------ disjoint */

static bool values_disjoint(const json_t *a, const json_t *b) {
  const json_t *ca = json_object_get(a, "const"),
               *cb = json_object_get(b, "const");
  const json_t *ea = json_object_get(a, "enum"),
               *eb = json_object_get(b, "enum");
  if (!(ca || json_is_array(ea)) || !(cb || json_is_array(eb))) return false;
  size_t na = ca ? 1 : json_array_size(ea), nb = cb ? 1 : json_array_size(eb);
  for (size_t i = 0; i < na; i++)
    for (size_t j = 0; j < nb; j++)
      if (json_equal(ca ? (json_t *)ca : json_array_get(ea, i),
                     cb ? (json_t *)cb : json_array_get(eb, j)))
        return false;
  return true;
}

static bool requires(const json_t *s, const char *name) {
  size_t i;
  const json_t *r;
  json_array_foreach(json_object_get(s, "required"), i, r) {
    if (json_is_string(r) && !strcmp(json_string_value(r), name)) return true;
  }
  return false;
}

static bool forbids(const json_t *s, const char *name) {
  return json_is_false(json_object_get(s, "additionalProperties")) &&
         !has(s, "patternProperties") &&
         !json_object_get(json_object_get(s, "properties"), name);
}

/* ---------------------------------------------------- what outputs hold */

/* The types a's outputs can have: its 'type', or (none given) the one
 * family its keywords name (json_schema.c makes only those). */
static unsigned out_types(const json_t *a) {
  const json_t *t = json_object_get(a, "type");
  if (t) return js_type_bits(t);
  if (has(a, "const") || has(a, "enum")) return 0x7F;
  unsigned m = js_inferred_types(a);
  return m ? m : 0x7F;
}

/* Whether a's outputs never hold property name: declared as false, or not
 * declared and a makes no further keys. */
static bool never_writes(const json_t *a, const char *name) {
  const json_t *props = json_object_get(a, "properties");
  const json_t *p = json_object_get(props, name);
  if (p) return json_is_false(p);
  const json_t *add = json_object_get(a, "additionalProperties");
  bool extras = has(a, "patternProperties") ? !json_object_size(props)
                : json_is_object(add)
                    ? true
                    : !json_object_size(props) && !json_is_false(add);
  return !extras && !requires(a, name);
}

/* An array schema's count keyword (dflt when absent or not a count). */
static long long count_of(const json_t *s, const char *k, long long dflt) {
  const json_t *v = json_object_get(s, k);
  return json_is_integer(v) && json_integer_value(v) >= 0
             ? (long long)json_integer_value(v)
             : dflt;
}

/* The schema an array's first item is made from and checked against, as
 * json_schema_array.c reads it (prefixItems, or a draft-4 items list,
 * first); NULL when none constrains it. */
static const json_t *first_item(const json_t *s) {
  const json_t *prefix = json_object_get(s, "prefixItems");
  const json_t *items = json_object_get(s, "items");
  if (!prefix && json_is_array(items)) {
    prefix = items;
    items = json_object_get(s, "additionalItems");
  }
  if (json_is_array(prefix) && json_array_size(prefix))
    return json_array_get(prefix, 0);
  return json_is_array(prefix) || json_is_array(items) ? NULL : items;
}

static bool excludes(ctx *c, const json_t *a, const json_t *b, int depth);

/* A union on either side: a an anyOf or oneOf alone (no keyword beside it
 * that its branches' outputs could break, such as another property) whose
 * every branch's outputs b refuses, or b one whose every branch refuses
 * a's outputs (keywords beside it only narrow b). */
static bool union_excludes(ctx *c, const json_t *a, const json_t *b,
                           int depth) {
  const char *ka = combinator(a), *kb = ka ? NULL : combinator(b);
  if (!ka && !kb) return false;
  if (ka) {
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)a, k, v) {
      if (strcmp(k, ka) && js_constrains(k)) return false;
    }
  }
  const json_t *list = json_object_get(ka ? a : b, ka ? ka : kb);
  if (!json_is_array(list) || !json_array_size(list)) return false;
  size_t i;
  const json_t *x;
  json_array_foreach(list, i, x) {
    if (!(ka ? excludes(c, x, b, depth + 1) : excludes(c, a, x, depth + 1)))
      return false;
  }
  return true;
}

/* Whether no array a makes validates under b: counts that cannot meet,
 * or a first item (every output has one) that b's first item refuses. */
static bool array_excludes(ctx *c, const json_t *a, const json_t *b,
                           int depth) {
  long long amin = count_of(a, "minItems", 0),
            amax = count_of(a, "maxItems", -1);
  long long bmin = count_of(b, "minItems", 0),
            bmax = count_of(b, "maxItems", -1);
  if ((amax >= 0 && amax < bmin) || (bmax >= 0 && amin > bmax)) return true;
  const json_t *fa = first_item(a), *fb = first_item(b);
  return amin >= 1 && fa && fb && excludes(c, fa, fb, depth + 1);
}

/* Key k as an exact regex of itself (^k$, metacharacters escaped) into
 * buf; false when it does not fit or holds a control character. */
static bool literal_regex(const char *k, char *buf, size_t cap) {
  size_t n = 0;
  buf[n++] = '^';
  for (; *k; k++) {
    if ((unsigned char)*k < 0x20 || n + 4 > cap) return false;
    if (strchr("\\^$.|?*+()[]{}-/", *k)) buf[n++] = '\\';
    buf[n++] = *k;
  }
  buf[n++] = '$';
  buf[n] = '\0';
  return true;
}

/* Whether key k (a name, or with pat a pattern's keys) is none that closed
 * object schema b takes (a name it declares, a key one of its patterns
 * matches; those declared false are none), each question costing a unit
 * of *budget (out: false). */
static bool key_apart(ctx *c, const char *k, bool pat, const json_t *b,
                      int *budget) {
  char lit[160], lit2[160];
  if (!pat && !literal_regex(k, lit, sizeof lit)) return false;
  const char *name;
  const json_t *v;
  json_object_foreach(json_object_get(b, "properties"), name, v) {
    if (json_is_false(v)) continue;
    if (--*budget < 0) return false;
    if (!pat && !strcmp(k, name)) return false;
    if (pat && (!literal_regex(name, lit2, sizeof lit2) ||
                !js_regexes_disjoint(c, k, lit2)))
      return false;
  }
  json_object_foreach(json_object_get(b, "patternProperties"), name, v) {
    if (json_is_false(v)) continue;
    if (--*budget < 0 || !js_regexes_disjoint(c, pat ? k : lit, name))
      return false;
  }
  return true;
}

/* Whether every key a's outputs write is one b refuses: both closed
 * (additionalProperties false: a's keys are its names and its patterns'),
 * and none of a's names or patterns meets b's. */
static bool keys_apart(ctx *c, const json_t *a, const json_t *b) {
  if (!json_is_false(json_object_get(a, "additionalProperties")) ||
      !json_is_false(json_object_get(b, "additionalProperties")))
    return false;
  const json_t *pp = json_object_get(a, "patternProperties");
  const json_t *bp = json_object_get(b, "patternProperties");
  if ((pp && !json_is_object(pp)) || (bp && !json_is_object(bp))) return false;
  int budget = 256; /* pattern intersections at most */
  const char *k;
  const json_t *v;
  json_object_foreach(json_object_get(a, "properties"), k, v) {
    if (!json_is_false(v) && !key_apart(c, k, false, b, &budget)) return false;
  }
  json_object_foreach((json_t *)pp, k, v) {
    if (!json_is_false(v) && !key_apart(c, k, true, b, &budget)) return false;
  }
  return true;
}

/* Whether a's outputs always write a key (minProperties, required). */
static bool writes_a_key(const json_t *a) {
  return count_of(a, "minProperties", 0) >= 1 ||
         json_array_size(json_object_get(a, "required")) > 0;
}

/* Whether no output of a validates under b (a's outputs: what
 * json_schema.c makes of it, a subset of what validates under a). */
static bool excludes(ctx *c, const json_t *a, const json_t *b, int depth) {
  if (depth > 8) return false;
  nc_code code = c->code;
  a = js_flatten(c, a, depth);
  b = a ? js_flatten(c, b, depth) : NULL;
  if (!a || !b) {
    c->code = code; /* a question, not a failure */
    return false;
  }
  if (json_is_false(a) || json_is_false(b)) return true;
  if (!json_is_object(a) || !json_is_object(b)) return false;
  if (!meet_types(out_types(a), js_type_bits(json_object_get(b, "type"))))
    return true;
  if (values_disjoint(a, b)) return true;
  if (union_excludes(c, a, b, depth)) return true;
  if (!combinator(a) && (has(a, "const") || has(a, "enum"))) {
    /* a makes its values: each one b refuses */
    const json_t *cst = json_object_get(a, "const");
    const json_t *en = json_object_get(a, "enum");
    size_t n = cst ? 1 : json_array_size(en), i;
    for (i = 0; i < n; i++) {
      const json_t *x = cst ? cst : json_array_get(en, i);
      if (js_value_valid(c, a, x, 0) != 0 && js_value_valid(c, b, x, 0) != 0)
        break;
    }
    if (n && i == n) return true;
  }
  if (!combinator(b) && (has(b, "const") || has(b, "enum"))) {
    /* b takes its values only: none of them validates under a (a's
     * outputs validate under a) */
    const json_t *cst = json_object_get(b, "const");
    const json_t *en = json_object_get(b, "enum");
    size_t n = cst ? 1 : json_array_size(en), i;
    for (i = 0; i < n; i++)
      if (js_value_valid(c, a, cst ? cst : json_array_get(en, i), 0) != 0)
        break;
    if (n && i == n) return true;
  }
  if (!combinator(a) && !combinator(b) && out_types(a) == T_ARR)
    return array_excludes(c, a, b, depth);
  if (!combinator(a) && !combinator(b) && out_types(a) == T_STR)
    return js_patterns_disjoint(c, a, b);
  if (combinator(a) || combinator(b) || out_types(a) != T_OBJ) return false;
  if (writes_a_key(a) && keys_apart(c, a, b)) return true;
  /* objects: a property b requires that a never writes; one a always
   * writes that b forbids or whose values there b refuses */
  size_t i;
  const json_t *r;
  json_array_foreach(json_object_get(b, "required"), i, r) {
    if (json_is_string(r) && never_writes(a, json_string_value(r))) return true;
  }
  const json_t *pa = json_object_get(a, "properties"),
               *pb = json_object_get(b, "properties");
  const char *k;
  const json_t *x;
  json_object_foreach((json_t *)pa, k, x) {
    if (!requires(a, k)) continue;
    if (forbids(b, k)) return true;
    const json_t *y = json_object_get(pb, k);
    if (y && excludes(c, x, y, depth + 1)) return true;
  }
  return false;
}

/* Branch x of a oneOf (from: its index there), flattened, appended to
 * orig; a branch that is an anyOf or oneOf (keywords beside it merged in)
 * gives its branches instead: when all the branches so gathered are
 * pairwise disjoint, an output of one validates under its own combinator
 * (exactly one of its branches) and under no other branch. */
static int gather(ctx *c, const json_t *x, int depth, int level, size_t from,
                  json_t *orig, size_t *origin) {
  /* level < 0: as written */
  const json_t *f = js_flatten(c, x, depth);
  if (!f) return -1;
  const char *cb =
      level >= 0 && level < MAX_ONEOF_NESTING ? combinator(f) : NULL;
  if (cb && json_object_size(f) > 1) { /* (B1 | B2) & R = B1 & R | B2 & R */
    js_mark m = js_mark_here(c);
    json_t *only = js_own(c, json_pack("{s:O}", cb, json_object_get(f, cb)));
    const json_t *rest = only ? without(c, f, cb) : NULL;
    const json_t *merged = rest ? js_merge(c, only, rest, depth + 1) : NULL;
    if (!merged && !js_retry(c, m)) return -1;
    if (merged) f = merged; /* else (a merge not taken): as written */
    cb = merged ? combinator(f) : NULL;
  }
  if (cb && json_object_size(f) == 1 && json_is_array(json_object_get(f, cb))) {
    size_t i;
    const json_t *y;
    json_array_foreach(json_object_get(f, cb), i, y) {
      int rc = gather(c, y, depth + 1, level + 1, from, orig, origin);
      if (rc) return rc;
    }
    return 0;
  }
  size_t n = json_array_size(orig);
  if (n >= MAX_ONEOF) return 1; /* too many taken apart: as written */
  origin[n] = from;
  return json_array_append(orig, (json_t *)f) ? js_fail_oom(c) : 0;
}

/* Two array branches (a, b as made; va, vb as written) whose first items
 * cannot meet: only the empty array can match both, so each makes one
 * item at least (the empty array, valid under both, is no valid value of
 * the oneOf). 0, or -1 on a failure. */
static int one_item_each(ctx *c, json_t *a, json_t *b, const json_t *va,
                         const json_t *vb) {
  const json_t *fa = first_item(a), *fb = first_item(b);
  const json_t *ga = first_item(va), *gb = first_item(vb);
  if (!fa || !fb || !ga || !gb || !excludes(c, fa, gb, 1) ||
      !excludes(c, fb, ga, 1))
    return 0;
  json_t *sides[2] = {a, b};
  for (int s = 0; s < 2; s++) {
    long long max = count_of(sides[s], "maxItems", -1);
    if (count_of(sides[s], "minItems", 0) >= 1 || max == 0) continue;
    if (json_object_set_new(sides[s], "minItems", json_integer(1)))
      return js_fail_oom(c);
  }
  return 0;
}

/* oneOf's branches made disjoint where they may not be: a property both
 * declare with values that cannot meet becomes required in both (a
 * discriminator); a property one declares and the other (allowing only
 * its own keys) refuses becomes required in the one; a property one
 * requires and the other does not becomes never written (false) in the
 * other. Each only narrows what a branch
 * makes. NULL when a pair still may overlap (*bi, *bj; c not failed) or
 * on a failure (c failed). */
static const json_t *branches(ctx *c, const json_t *list, int depth, bool apart,
                              size_t *origin, size_t *bi, size_t *bj) {
  /* orig: what validates (never changed); out: what is made */
  json_t *orig = js_own(c, json_array());
  json_t *out = orig ? js_own(c, json_array()) : NULL;
  if (!out) return NULL;
  for (size_t i = 0; i < json_array_size(list); i++)
    if (gather(c, json_array_get(list, i), depth, apart ? 0 : -1, i, orig,
               origin))
      return NULL; /* failed, or (1) too many: *bi, *bj unset */
  size_t n = json_array_size(orig);
  for (size_t i = 0; i < n; i++) {
    json_t *cp = json_deep_copy(json_array_get(orig, i));
    if (!cp || json_array_append_new(out, cp)) return js_fail_oom(c), NULL;
  }
  /* Two branches alike, of different branches of list: a value matching
   * one matches both, so neither makes anything (the others must still
   * exclude them, as below). */
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      if (origin[i] == origin[j] ||
          !json_equal(json_array_get(orig, i), json_array_get(orig, j)))
        continue;
      size_t ptr = js_ptr_push(c, "oneOf");
      js_ptr_push_index(c, origin[j]);
      js_note(c,
              "oneOf: branch left out (the same as branch %zu: no value "
              "matches only one of them)",
              origin[i]);
      js_ptr_pop(c, ptr);
      json_array_set_new(out, i, json_false());
      json_array_set_new(out, j, json_false());
    }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      json_t *a = json_array_get(out, i), *b = json_array_get(out, j);
      const json_t *va = json_array_get(orig, i), *vb = json_array_get(orig, j);
      if (excludes(c, a, vb, 0) && excludes(c, b, va, 0)) continue;
      if (json_is_false(a) || json_is_false(b)) { /* left out: the kept one
                                                     must exclude it */
        *bi = origin[i], *bj = origin[j];
        return NULL;
      }
      bool plain = json_is_object(a) && json_is_object(b) && !combinator(a) &&
                   !combinator(b);
      if (plain && out_types(a) == T_ARR && out_types(b) == T_ARR) {
        if (one_item_each(c, a, b, va, vb) != 0) return NULL;
        goto settle;
      }
      if (!plain || out_types(a) != T_OBJ || out_types(b) != T_OBJ) {
        *bi = origin[i], *bj = origin[j];
        return NULL;
      }
      if (keys_apart(c, a, vb) && keys_apart(c, b, va)) {
        /* closed objects with no key in common: only {} matches both, so
         * each writes one key at least */
        json_t *sides[2] = {a, b};
        for (int s = 0; s < 2; s++)
          if (!writes_a_key(sides[s]) &&
              count_of(sides[s], "maxProperties", -1) != 0 &&
              json_object_set_new(sides[s], "minProperties", json_integer(1)))
            return js_fail_oom(c), NULL;
        goto settle;
      }
      /* a discriminator: a property both declare, values that cannot
       * meet; both always write it */
      json_t *pa = json_object_get(a, "properties"),
             *pb = json_object_get(b, "properties");
      const char *k;
      json_t *x;
      json_object_foreach(pa, k, x) {
        json_t *y = json_object_get(pb, k);
        if (!y || json_is_false(x) || json_is_false(y) ||
            !excludes(c, x,
                      json_object_get(json_object_get(vb, "properties"), k),
                      1) ||
            !excludes(c, y,
                      json_object_get(json_object_get(va, "properties"), k), 1))
          continue;
        json_t *sides[2] = {a, b};
        for (int s = 0; s < 2; s++) {
          json_t *req = json_object_get(sides[s], "required");
          if (!json_is_array(req)) {
            req = json_array();
            json_object_set_new(sides[s], "required", req);
          }
          if (!requires(sides[s], k))
            json_array_append_new(req, json_string(k));
        }
        break;
      }
      json_t *mine[2] = {a, b};
      const json_t *theirs[2] = {vb, va};
      /* always write a property the other refuses to hold (it allows no
       * keys but its own) */
      for (int s = 0; s < 2; s++) {
        if (excludes(c, mine[s], theirs[s], 0)) continue;
        const char *name;
        json_t *ps;
        json_object_foreach(json_object_get(mine[s], "properties"), name, ps) {
          if (json_is_false(ps) || requires(mine[s], name) ||
              !forbids(theirs[s], name))
            continue;
          json_t *req = json_object_get(mine[s], "required");
          if (!json_is_array(req)) {
            req = json_array();
            json_object_set_new(mine[s], "required", req);
          }
          json_array_append_new(req, json_string(name));
          break;
        }
      }
      /* never write what the other requires */
      for (int s = 0; s < 2; s++) {
        if (excludes(c, mine[s], theirs[s], 0)) continue;
        size_t q;
        json_t *r;
        json_array_foreach(json_object_get(theirs[s], "required"), q, r) {
          if (!json_is_string(r) || requires(mine[s], json_string_value(r)))
            continue;
          json_t *props = json_object_get(mine[s], "properties");
          if (!json_is_object(props)) {
            props = json_object();
            json_object_set_new(mine[s], "properties", props);
          }
          json_object_set_new(props, json_string_value(r), json_false());
          break;
        }
      }
    settle:
      if (excludes(c, a, vb, 0) && excludes(c, b, va, 0)) continue;
      /* One side made disjoint from the other's values: the other is left
       * out (false: nothing made there; each branch kept excludes what it
       * validates, checked as the pairs go on). */
      size_t gone = excludes(c, a, vb, 0) ? j : excludes(c, b, va, 0) ? i : n;
      if (gone == n) {
        *bi = origin[i], *bj = origin[j];
        return NULL;
      }
      json_array_set_new(out, gone, json_false());
      size_t ptr = js_ptr_push(c, "oneOf");
      js_ptr_push_index(c, origin[gone]);
      js_note(c, "oneOf: branch left out (its values may match branch %zu's)",
              origin[gone == j ? i : j]);
      js_ptr_pop(c, ptr);
    }
  return out;
}

const json_t *js_oneof_branches(ctx *c, const json_t *list, int depth,
                                size_t *origin, size_t *bi, size_t *bj) {
  js_mark m = js_mark_here(c);
  nc_code before = c->code;
  const json_t *out = branches(c, list, depth, true, origin, bi, bj);
  if (out || c->code != before) return out;
  /* an anyOf's branches may overlap where the anyOf and the others do
   * not: as written (the notes of the first try undone) */
  c->notes.n = m.notes_n;
  if (c->notes.s) c->notes.s[m.notes_n] = '\0';
  c->n_notes = m.n_notes;
  return branches(c, list, depth, false, origin, bi, bj);
}
