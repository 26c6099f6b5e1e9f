/* json_schema: objects. Declared properties come in the order given,
 * required ones always, optional ones or not; then, where the schema
 * allows them, further keys: a map's (additionalProperties: a schema, or
 * an object with no properties), keys other than the declared names (of
 * letters, digits, '_' and '-'), or keys of a patternProperties pattern.
 * Required names that properties lacks are declared with the schema
 * additionalProperties (or a matching pattern) gives them. Declared names
 * that a patternProperties pattern matches take both schemas.
 * dependentRequired (and dependencies' lists): the names a present
 * property needs are required. minProperties: optional properties become
 * required, in order, then further keys are required; maxProperties: only
 * the first optional properties that fit are offered, no further keys. */
#include "json_schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 32 /* characters of a further key */

typedef struct {
  const char *name;
  const json_t *schema;
  bool required;
  int kv; /* rule of the value */
} entry;

static bool in_list(const json_t *list, const char *name) {
  size_t i;
  const json_t *v;
  json_array_foreach(list, i, v) {
    if (json_is_string(v) && !strcmp(json_string_value(v), name)) return true;
  }
  return false;
}

static const char k_key_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";

/* Keys (content only) of 1..KEY_MAX key chars that are none of names[]
 * (n of them), from position depth of those sharing the prefix. */
static void key_not_in(sb *b, const char **names, size_t n, size_t depth) {
  bool ends_here = false;
  char next[sizeof k_key_chars] = "";
  size_t nn = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(names[i]);
    if (l == depth)
      ends_here = true;
    else if (l > depth && !strchr(next, names[i][depth]) &&
             strchr(k_key_chars, names[i][depth]))
      next[nn++] = names[i][depth], next[nn] = '\0';
  }
  js_sb_add(b, "( ", 2);
  bool alt = false;
  if (depth > 0 && !ends_here) {
    js_sb_add(b, "\"\"", 2);
    alt = true;
  }
  if (depth < KEY_MAX) {
    /* a char no name continues with: then anything */
    char cls[sizeof k_key_chars * 2 + 4];
    size_t k = 0;
    for (const char *p = k_key_chars; *p; p++)
      if (!strchr(next, *p)) {
        if (*p == '-') cls[k++] = '\\';
        cls[k++] = *p;
      }
    cls[k] = '\0';
    if (k) {
      js_sb_printf(b, "%s[%s] [a-zA-Z0-9_\\-]{0,%zu}", alt ? " | " : "", cls,
                   (size_t)KEY_MAX - depth - 1);
      alt = true;
    }
    for (size_t j = 0; j < nn; j++) { /* a char some name continues with */
      bool full = false; /* a name ends there, and no key may go on */
      for (size_t i = 0; i < n; i++)
        full |= depth + 1 >= KEY_MAX && strlen(names[i]) == depth + 1 &&
                names[i][depth] == next[j];
      if (full) continue;
      const char *sub[64];
      size_t ns = 0;
      const char **more = NULL;
      size_t cnt = 0;
      for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) > depth && names[i][depth] == next[j]) cnt++;
      more = cnt > 64 ? malloc(cnt * sizeof *more) : sub;
      if (!more) {
        b->oom = true;
        return;
      }
      for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) > depth && names[i][depth] == next[j])
          more[ns++] = names[i];
      js_sb_printf(b, "%s\"%c\" ", alt ? " | " : "", next[j]);
      key_not_in(b, more, ns, depth + 1);
      alt = true;
      if (more != sub) free(more);
    }
  }
  js_sb_add(b, " )", 2);
}

/* Whether name matches pattern (as the converter makes it): 1, 0, or -1
 * after a failure. */
static int name_matches(ctx *c, const char *pattern, const char *name) {
  sb g = {0};
  js_sb_add(&g, "root ::= ", 9);
  /* the rules the pattern writes (a lookahead's, an intersection's) go
   * to the test grammar, not the schema's */
  js_mark at = js_mark_here(c);
  if (js_pattern(c, pattern, -1, -1, &g)) {
    free(g.s);
    return -1;
  }
  js_sb_add(&g, "\n", 1);
  js_sb_add(&g, c->out.s ? c->out.s + at.out_n : "", c->out.n - at.out_n);
  c->out.n = at.out_n;
  if (c->out.s) c->out.s[at.out_n] = '\0';
  c->n_rules = at.n_rules;
  js_sb_add(&g, js_shared_rules(), strlen(js_shared_rules()));
  js_sb_add(
      &g,
      "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | "
      "\"u\" [0-9a-fA-F]{4} )\n",
      strlen("char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | "
             "\"u\" [0-9a-fA-F]{4} )\n"));
  if (g.oom || g.big) {
    free(g.s);
    return js_fail_oom(c);
  }
  nc_grammar *gr = NULL;
  nc_grammar_matcher *m = NULL;
  nc_error e = {0};
  int r = -1;
  json_t *j = json_string(name);
  char *js = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
  json_decref(j);
  bool ok = false;
  if (js && nc_grammar_parse(g.s, g.n, NULL, &gr, &e) == NC_OK &&
      nc_grammar_matcher_create(gr, &m, &e) == NC_OK &&
      nc_grammar_matcher_accept(m, js, strlen(js), &ok, &e) == NC_OK)
    r = ok && nc_grammar_matcher_accepting(m);
  else
    js_fail(c, "patternProperties: cannot test the name '%.64s': %s", name,
            e.message);
  nc_grammar_matcher_free(m);
  nc_grammar_free(gr);
  free(js);
  free(g.s);
  return r;
}

/* Whether no key matches two of patternProperties pat's patterns (at most
 * 16 of them, each exact: json_schema_oneof.c decides). */
static bool apart_patterns(ctx *c, const json_t *pat) {
  size_t n = json_object_size(pat);
  if (n > 16) return false;
  const char *keys[16];
  size_t k = 0;
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)pat, key, v) {
    keys[k++] = key;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (!js_regexes_disjoint(c, keys[i], keys[j])) return false;
  return true;
}

/* Further entries of patterns no key matches two of: each pattern's keys
 * with its own schema's values. */
static int pattern_kv(ctx *c, const json_t *pat, int depth, sb *kv) {
  js_sb_add(kv, "( ", 2);
  bool alt = false;
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)pat, key, v) {
    js_mark m = js_mark_here(c);
    int vid = js_gen_at(c, v, depth + 1, "patternProperties", key);
    if (vid < 0 && js_recover(c, m)) continue; /* no value: no such key */
    if (vid < 0) return -1;
    if (alt) js_sb_add(kv, " | ", 3);
    if (js_pattern(c, key, -1, -1, kv)) return -1;
    js_sb_printf(kv, " \":\" r%d", vid);
    alt = true;
  }
  if (!alt) return 1; /* no pattern takes a value */
  js_sb_add(kv, " )", 2);
  return 0;
}

/* The further entries: key and value rules as "k ':' v" text. */
static int extra_kv(ctx *c, const json_t *s, entry *ents, size_t n,
                    const char **gone, size_t ngone, int depth, sb *kv) {
  const json_t *pat = json_object_get(s, "patternProperties");
  const json_t *add = json_object_get(s, "additionalProperties");
  if (pat && json_object_size(pat)) {
    if (n + ngone > 0)
      return 1; /* a pattern's key could repeat a declared name */
    const char *key;
    const json_t *v, *first = NULL;
    bool alike = true;
    json_object_foreach((json_t *)pat, key, v) {
      alike &= !first || json_equal((json_t *)first, (json_t *)v);
      first = v;
    }
    if (!alike) /* keys matching two patterns would need both schemas */
      return apart_patterns(c, pat) ? pattern_kv(c, pat, depth, kv) : 1;
    int vid = js_gen_at(c, first, depth + 1, "patternProperties",
                        json_object_iter_key(json_object_iter((json_t *)pat)));
    if (vid < 0) return -1;
    js_sb_add(kv, "( ", 2);
    bool alt = false;
    json_object_foreach((json_t *)pat, key, v) {
      if (alt) js_sb_add(kv, " | ", 3);
      if (js_pattern(c, key, -1, -1, kv)) return -1;
      alt = true;
    }
    js_sb_printf(kv, " ) \":\" r%d", vid);
    return 0;
  }
  if (n + ngone == 0 && (!add || json_is_true(add))) {
    js_sb_printf(kv, "%s \":\" value", js_key_rule(c));
    return 0;
  }
  if (!add || json_is_boolean(add)) return 1;
  int vid = js_gen_at(c, add, depth + 1, "additionalProperties", NULL);
  if (vid < 0) return -1;
  if (n + ngone == 0) {
    js_sb_printf(kv, "%s \":\" r%d", js_key_rule(c), vid);
    return 0;
  }
  const char **names = calloc(n + ngone, sizeof *names);
  if (!names) return js_fail_oom(c);
  for (size_t i = 0; i < n; i++)
    names[i] = ents[i].name;
  for (size_t i = 0; i < ngone; i++)
    names[n + i] = gone[i];
  js_sb_printf(kv, "%s ", js_key_quote(c));
  key_not_in(kv, names, n + ngone, 0);
  free(names);
  js_sb_printf(kv, " %s \":\" r%d", js_key_quote(c), vid);
  return 0;
}

int js_gen_object(ctx *c, const json_t *s, sb *b, int depth) {
  const json_t *props = json_object_get(s, "properties");
  const json_t *req = json_object_get(s, "required");
  const json_t *add = json_object_get(s, "additionalProperties");
  const json_t *pat = json_object_get(s, "patternProperties");
  const json_t *pnames = json_object_get(s, "propertyNames");
  const json_t *uneval = json_object_get(s, "unevaluatedProperties");
  if (props && !json_is_object(props))
    return js_fail(c, "'properties' must be an object");
  if (pat && !json_is_object(pat))
    return js_fail(c, "'patternProperties' must be an object");
  if (req && !json_is_array(req))
    return js_fail(c, "'required' must be a list");
  if (add && !json_is_boolean(add) && !json_is_object(add))
    return js_fail(c, "'additionalProperties' must be a boolean or a schema");
  if (!add && uneval) add = uneval; /* what nothing else evaluated */
  size_t np = props ? json_object_size(props) : 0;
  size_t nr = json_array_size(req);
  if (np > MAX_PROPERTIES || nr > MAX_PROPERTIES)
    return js_fail_limit(c, "an object with more than %d properties",
                         MAX_PROPERTIES);
  /* The entries: declared, then required names not declared. */
  entry *ents = calloc(np + nr + 1, sizeof *ents);
  if (!ents) return js_fail_oom(c);
  const char **gone = NULL; /* names never written (dependent schemas) */
  size_t ngone = 0;
  size_t n = 0;
  int rc = -1;
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)props, key, v) {
    ents[n].name = key;
    ents[n++].schema = v;
  }
  size_t i;
  json_array_foreach(req, i, v) {
    if (!json_is_string(v)) {
      js_fail(c, "'required' must be a list of names");
      goto out;
    }
    const char *name = json_string_value(v);
    bool have = false;
    for (size_t j = 0; j < n; j++)
      have |= !strcmp(ents[j].name, name);
    if (have) continue;
    ents[n].name = name;
    ents[n++].schema = add && !json_is_boolean(add) ? add : json_true();
    if (json_is_false(add) && !pat) {
      js_fail_unsat(c,
                    "required property '%.64s' is not allowed "
                    "(additionalProperties is false)",
                    name);
      goto out;
    }
  }
  /* Required: listed, or needed by a present property (an optional
   * property's needs become required: then they hold whether or not it
   * is written). */
  for (size_t j = 0; j < n; j++)
    ents[j].required = in_list(req, ents[j].name);
  const json_t *deps[2] = {json_object_get(s, "dependentRequired"),
                           json_object_get(s, "dependencies")};
  for (int d = 0; d < 2; d++) {
    const char *name;
    json_object_foreach((json_t *)deps[d], name, v) {
      if (!json_is_array(v)) continue;
      bool declared = false;
      for (size_t j = 0; j < n; j++)
        declared |= !strcmp(ents[j].name, name);
      if (!declared) continue; /* never written */
      for (size_t j = 0; j < n; j++)
        if (in_list(v, ents[j].name)) ents[j].required = true;
      size_t k;
      const json_t *x;
      json_array_foreach(v, k, x) {
        bool have = false;
        for (size_t j = 0; j < n; j++)
          have |=
              json_is_string(x) && !strcmp(ents[j].name, json_string_value(x));
        if (!have && json_is_string(x)) {
          if (n >= np + nr) {
            js_fail_limit(c, "'dependentRequired' names too many properties");
            goto out;
          }
          ents[n].name = json_string_value(x);
          ents[n].schema = add && !json_is_boolean(add) ? add : json_true();
          ents[n++].required = true;
        }
      }
    }
  }
  /* A property with a dependent schema is never written (then the schema
   * need not hold); a required one is refused. */
  gone = calloc(n + 1, sizeof *gone);
  if (!gone) {
    js_fail_oom(c);
    goto out;
  }
  const char *dk[] = {"dependentSchemas", "dependencies"};
  for (int d = 0; d < 2; d++) {
    const char *name;
    json_object_foreach(json_object_get(s, dk[d]), name, v) {
      if (json_is_array(v) || json_is_true(v) ||
          (json_is_object(v) && !json_object_size(v)))
        continue;
      for (size_t j = 0; j < n; j++) {
        if (strcmp(ents[j].name, name)) continue;
        if (ents[j].required) {
          js_fail(c,
                  "'%s' for the required property '%.64s' is not "
                  "supported",
                  dk[d], name);
          goto out;
        }
        gone[ngone++] = ents[j].name;
        memmove(&ents[j], &ents[j + 1], (n - j - 1) * sizeof *ents);
        n--, j--;
      }
    }
  }
  /* Names propertyNames refuses are not written. */
  if (pnames && !json_is_true(pnames)) {
    for (size_t j = 0; j < n; j++) {
      json_t *nm = json_string(ents[j].name);
      int ok = js_value_valid(c, pnames, nm, 0);
      json_decref(nm);
      if (ok < 0) {
        js_fail(c, "'propertyNames' is not supported beyond type, enum, "
                   "const and lengths");
        goto out;
      }
      if (!ok) {
        if (ents[j].required) {
          js_fail(c,
                  "required property '%.64s' is refused by "
                  "propertyNames",
                  ents[j].name);
          goto out;
        }
        memmove(&ents[j], &ents[j + 1], (n - j - 1) * sizeof *ents);
        n--, j--;
      }
    }
  }
  /* Declared names a pattern matches take both schemas. */
  json_object_foreach((json_t *)pat, key, v) {
    for (size_t j = 0; j < n; j++) {
      int m = name_matches(c, key, ents[j].name);
      if (m < 0) goto out;
      if (m) {
        ents[j].schema =
            js_own(c, json_pack("{s:[O,O]}", "allOf", ents[j].schema, v));
        if (!ents[j].schema) goto out;
      }
    }
  }
  long long minp, maxp;
  if (js_get_count(c, s, "minProperties", 0, &minp) ||
      js_get_count(c, s, "maxProperties", -1, &maxp))
    goto out;
  size_t nreq = 0;
  for (size_t j = 0; j < n; j++)
    nreq += ents[j].required;
  for (size_t j = 0; j < n && (long long)nreq < minp; j++)
    if (!ents[j].required) ents[j].required = true, nreq++;
  if (maxp >= 0) {
    if ((long long)nreq > maxp) {
      js_fail_unsat(c, "maxProperties %lld is below the %zu required", maxp,
                    nreq);
      goto out;
    }
    long long room = maxp - (long long)nreq;
    for (size_t j = 0; j < n; j++) {
      if (ents[j].required) continue;
      if (room > 0) {
        room--;
        continue;
      }
      memmove(&ents[j], &ents[j + 1], (n - j - 1) * sizeof *ents);
      n--, j--;
    }
  }
  /* Values. */
  for (size_t j = 0; j < n; j++) {
    js_mark m = js_mark_here(c);
    ents[j].kv =
        js_gen_at(c, ents[j].schema, depth + 1, "properties", ents[j].name);
    if (ents[j].kv < 0 && !ents[j].required && js_recover(c, m)) {
      /* no value matches: an optional property never written */
      gone[ngone++] = ents[j].name;
      memmove(&ents[j], &ents[j + 1], (n - j - 1) * sizeof *ents);
      n--, j--;
      continue;
    }
    if (ents[j].kv < 0) goto out;
  }
  /* Further keys. */
  long long xmin = (long long)nreq < minp ? minp - (long long)nreq : 0;
  long long xmax = -1;
  if (maxp >= 0) xmax = n == 0 ? maxp : 0;
  sb kv = {0};
  int ex = pnames      ? 1
           : xmax == 0 ? 1
                       : extra_kv(c, s, ents, n, gone, ngone, depth, &kv);
  if (ex < 0) {
    free(kv.s);
    goto out;
  }
  if (ex == 1 && xmin > 0) {
    free(kv.s);
    js_fail(c,
            "minProperties %lld needs more properties than the schema "
            "offers here",
            minp);
    goto out;
  }
  int tail[2] = {-1, -1}; /* the further keys: [0] after a comma, [1] first */
  if (ex == 0) {
    for (int f = 0; f < 2; f++) {
      tail[f] = js_new_rule(c);
      if (tail[f] < 0) {
        free(kv.s);
        goto out;
      }
      sb body = {0};
      if (f == 0) { /* after others: each with a comma */
        js_sb_printf(&body, "( \",\" %s )", kv.s);
        if (xmax < 0)
          js_sb_printf(&body, "{%lld,}", xmin);
        else
          js_sb_printf(&body, "{%lld,%lld}", xmin, xmax);
      } else {
        js_repeat_sep(&body, kv.s, "\",\"", xmin, xmax);
      }
      js_emit(c, tail[f], &body);
    }
  }
  free(kv.s);
  /* seq rules from the end: [0] after a comma, [1] first. */
  int next[2] = {tail[0], tail[1]};
  for (size_t j = n; j-- > 0;) {
    int ids[2];
    for (int f = 0; f < 2; f++) {
      ids[f] = js_new_rule(c);
      if (ids[f] < 0) goto out;
      sb body = {0};
      js_sb_add(&body, f ? "" : "\",\" ", f ? 0 : 4);
      if (js_key_lit(c, &body, ents[j].name)) {
        free(body.s);
        goto out;
      }
      js_sb_printf(&body, " \":\" r%d", ents[j].kv);
      if (next[0] >= 0) js_sb_printf(&body, " r%d", next[0]);
      if (!ents[j].required) {
        if (next[f] >= 0)
          js_sb_printf(&body, " | r%d", next[f]);
        else
          js_sb_add(&body, " | \"\"", 5);
      }
      js_emit(c, ids[f], &body);
    }
    next[0] = ids[0];
    next[1] = ids[1];
  }
  if (next[1] >= 0)
    js_sb_printf(b, "\"{\" r%d \"}\"", next[1]);
  else
    js_sb_add(b, "\"{\" \"}\"", 7);
  rc = 0;
out:
  free(gone);
  free(ents);
  return rc;
}
