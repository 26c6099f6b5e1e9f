/* tool_call_gemma4: Gemma 4's argument syntax (its chat template's
 * format_argument with escape_keys false) into JSON: an object
 * {key:value,...} with bare keys, strings between <|"|> marks, arrays
 * [v,...], true, false, null and numbers as they are. Nesting is bounded;
 * anything else (an unclosed string, a bare word, text after the object)
 * is not a call. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_compact.h"
#include "tool_call.h"

#define GEMMA4_QUOTE "<|\"|>"
#define GEMMA4_MAX_DEPTH 32

typedef struct {
  const char *s;
  size_t n, i;
} cursor;

static bool at_lit(const cursor *c, const char *lit) {
  const size_t l = strlen(lit);
  return c->n - c->i >= l && !memcmp(c->s + c->i, lit, l);
}

static json_t *value(cursor *c, int depth);

/* <|"|>text<|"|> (the text taken as it is: the template escapes nothing) */
static json_t *string_value(cursor *c) {
  c->i += strlen(GEMMA4_QUOTE);
  const char *end =
      memmem(c->s + c->i, c->n - c->i, GEMMA4_QUOTE, strlen(GEMMA4_QUOTE));
  if (!end) return NULL;
  const size_t len = (size_t)(end - (c->s + c->i));
  json_t *v = json_stringn(c->s + c->i, len); /* NULL: not UTF-8 */
  c->i += len + strlen(GEMMA4_QUOTE);
  return v;
}

/* true, false, null or a JSON number, up to the next , } ] */
static json_t *scalar(cursor *c) {
  size_t e = c->i;
  while (e < c->n && !strchr(",}]", c->s[e]))
    e++;
  if (e == c->i) return NULL;
  json_error_t err;
  json_t *v = json_loadb(c->s + c->i, e - c->i, JSON_DECODE_ANY, &err);
  if (v && (json_is_object(v) || json_is_array(v) || json_is_string(v))) {
    json_decref(v);
    return NULL;
  }
  c->i = e;
  return v;
}

/* {key:value,...}: keys bare (or between <|"|> marks) */
static json_t *object(cursor *c, int depth) {
  json_t *o = json_object();
  c->i++;
  if (c->i < c->n && c->s[c->i] == '}') {
    c->i++;
    return o;
  }
  while (o) {
    char *key = NULL;
    if (at_lit(c, GEMMA4_QUOTE)) {
      json_t *k = string_value(c);
      key = k ? strdup(json_string_value(k)) : NULL;
      json_decref(k);
    } else {
      size_t e = c->i;
      while (e < c->n && c->s[e] != ':' && !strchr(",{}[]", c->s[e]))
        e++;
      if (e > c->i) key = strndup(c->s + c->i, e - c->i);
      c->i = e;
    }
    json_t *v = NULL;
    if (key && c->i < c->n && c->s[c->i] == ':') {
      c->i++;
      v = value(c, depth + 1);
    }
    if (!v || json_object_set_new(o, key, v)) {
      free(key);
      json_decref(o);
      return NULL;
    }
    free(key);
    if (c->i < c->n && c->s[c->i] == ',') {
      c->i++;
    } else if (c->i < c->n && c->s[c->i] == '}') {
      c->i++;
      return o;
    } else {
      json_decref(o);
      return NULL;
    }
  }
  return NULL;
}

static json_t *array(cursor *c, int depth) {
  json_t *a = json_array();
  c->i++;
  if (c->i < c->n && c->s[c->i] == ']') {
    c->i++;
    return a;
  }
  while (a) {
    json_t *v = value(c, depth + 1);
    if (!v || json_array_append_new(a, v)) {
      json_decref(a);
      return NULL;
    }
    if (c->i < c->n && c->s[c->i] == ',') {
      c->i++;
    } else if (c->i < c->n && c->s[c->i] == ']') {
      c->i++;
      return a;
    } else {
      json_decref(a);
      return NULL;
    }
  }
  return NULL;
}

static json_t *value(cursor *c, int depth) {
  if (depth > GEMMA4_MAX_DEPTH || c->i >= c->n) return NULL;
  if (at_lit(c, GEMMA4_QUOTE)) return string_value(c);
  if (c->s[c->i] == '{') return object(c, depth);
  if (c->s[c->i] == '[') return array(c, depth);
  return scalar(c);
}

char *nc_gemma4_args_json(const char *s, size_t n) {
  cursor c = {s, n, 0};
  if (!n || s[0] != '{') return NULL;
  json_t *o = object(&c, 0);
  char *out = o && c.i == n ? nc_json_compact(o) : NULL;
  json_decref(o);
  return out;
}
