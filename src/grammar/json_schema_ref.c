/* json_schema: $ref resolution. A local reference is a JSON pointer
 * ("#/$defs/A", "#/properties/x/items", "#" itself) or an anchor ("#name":
 * a schema's "$anchor", or a draft-4 style "$id"/"id" of "#name"),
 * resolved in the current resource (the nearest enclosing schema with a
 * "$id", else the document), then in the document. A reference that names
 * a resource ("other.json#/a") resolves when a schema of the document has
 * that "$id"; anything else (a remote document) is an error naming it. */
#include "json_schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEARCH 100000 /* schemas visited looking for an $id/$anchor */

static int hexval(char h) {
  if (h >= '0' && h <= '9') return h - '0';
  if (h >= 'a' && h <= 'f') return h - 'a' + 10;
  if (h >= 'A' && h <= 'F') return h - 'A' + 10;
  return -1;
}

/* Follows pointer p (after '#', percent-decoded as URI fragments are) from
 * doc; NULL when it points to nothing. */
static const json_t *follow(const json_t *doc, const char *p) {
  char seg[512];
  while (doc && *p) {
    if (*p != '/') return NULL;
    p++;
    size_t n = 0;
    while (*p && *p != '/') {
      char ch = *p++;
      if (ch == '%' && hexval(p[0]) >= 0 && hexval(p[1]) >= 0) {
        ch = (char)(hexval(p[0]) * 16 + hexval(p[1]));
        p += 2;
      } else if (ch == '~' && (*p == '0' || *p == '1')) {
        ch = *p++ == '0' ? '~' : '/';
      }
      if (n + 1 >= sizeof seg) return NULL;
      seg[n++] = ch;
    }
    seg[n] = '\0';
    if (json_is_object(doc)) {
      doc = json_object_get(doc, seg);
    } else if (json_is_array(doc)) {
      char *end;
      unsigned long i = strtoul(seg, &end, 10);
      if (!n || *end || (n > 1 && seg[0] == '0')) return NULL;
      doc = json_array_get(doc, i);
    } else {
      return NULL;
    }
  }
  return doc;
}

/* The schema under doc whose key ("$id", "id" or "$anchor") equals want
 * (or, for "$id"s, ends in "/" want: a relative name); *budget bounds the
 * walk. */
static const json_t *find_named(const json_t *doc, const char *key,
                                const char *want, long *budget) {
  if (--*budget < 0 || !doc) return NULL;
  if (json_is_object(doc)) {
    const json_t *id = json_object_get(doc, key);
    if (json_is_string(id)) {
      const char *s = json_string_value(id);
      size_t ls = strlen(s), lw = strlen(want);
      bool is_id = strcmp(key, "$anchor") != 0;
      if (!strcmp(s, want) || (is_id && ls > lw && s[ls - lw - 1] == '/' &&
                               !strcmp(s + ls - lw, want)))
        return doc;
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)doc, k, v) {
      if (!strcmp(k, "enum") || !strcmp(k, "const") || !strcmp(k, "examples") ||
          !strcmp(k, "default"))
        continue; /* values, not schemas */
      const json_t *r = find_named(v, key, want, budget);
      if (r) return r;
    }
  } else if (json_is_array(doc)) {
    size_t i;
    const json_t *v;
    json_array_foreach(doc, i, v) {
      const json_t *r = find_named(v, key, want, budget);
      if (r) return r;
    }
  }
  return NULL;
}

static const json_t *in_resource(const json_t *res, const char *frag) {
  if (!*frag) return res;
  if (frag[0] == '/') return follow(res, frag);
  /* An anchor. */
  long budget = MAX_SEARCH;
  const json_t *t = find_named(res, "$anchor", frag, &budget);
  char hashed[300];
  snprintf(hashed, sizeof hashed, "#%.256s", frag);
  budget = MAX_SEARCH;
  if (!t) t = find_named(res, "$id", hashed, &budget);
  budget = MAX_SEARCH;
  if (!t) t = find_named(res, "id", hashed, &budget);
  return t;
}

static int resolve(ctx *c, const char *ref, const json_t **target,
                   const json_t **base) {
  const char *hash = strchr(ref, '#');
  const char *frag = hash ? hash + 1 : "";
  *target = NULL;
  *base = c->base;
  if (hash == ref) { /* local */
    *target = in_resource(c->base, frag);
    if (!*target && c->base != c->root) {
      *target = in_resource(c->root, frag);
      *base = c->root;
    }
    if (!*target) return js_fail(c, "'$ref' %.128s points to nothing", ref);
    return 0;
  }
  /* A named resource: a schema of this document with that $id (or the
   * document's own). */
  size_t n = hash ? (size_t)(hash - ref) : strlen(ref);
  char name[512];
  if (n >= sizeof name)
    return js_fail(c, "'$ref' %.128s: a name of more than 511 bytes", ref);
  memcpy(name, ref, n);
  name[n] = '\0';
  long budget = MAX_SEARCH;
  const json_t *res = find_named(c->root, "$id", name, &budget);
  budget = MAX_SEARCH;
  if (!res) res = find_named(c->root, "id", name, &budget);
  if (!res)
    return js_fail(c,
                   "'$ref' %.128s: remote references are not supported "
                   "(only this document's schemas: '#...', or a '$id' in "
                   "it)",
                   ref);
  *base = res;
  *target = in_resource(res, frag);
  if (!*target) return js_fail(c, "'$ref' %.128s points to nothing", ref);
  return 0;
}

int js_resolve_ref(ctx *c, const char *ref, const json_t **target,
                   const json_t **base) {
  if (resolve(c, ref, target, base)) return -1;
  /* A target may lie where the check of the document did not go (inside
   * an unknown keyword): its keywords' types are checked as the
   * document's, with messages pointing at it. */
  char saved[MAX_POINTER];
  size_t saved_len = c->ptr_len;
  memcpy(saved, c->ptr, saved_len + 1);
  const char *frag = strchr(ref, '#');
  if (frag && frag[1] == '/') {
    snprintf(c->ptr, sizeof c->ptr, "%s", frag + 1);
    c->ptr_len = strlen(c->ptr);
  }
  int rc = js_check_shapes(c, *target);
  memcpy(c->ptr, saved, saved_len + 1);
  c->ptr_len = saved_len;
  return rc;
}
