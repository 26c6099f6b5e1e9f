/* json_schema: a oneOf of string branches that may overlap (patterns, a
 * format, lengths, string enums): each branch made without the strings of
 * the others (json_schema_meet.c, the others' parts negated), so every
 * string made validates under exactly one branch. */
#include "json_schema_internal.h"

#include <stdlib.h>
#include <string.h>

static bool has_lookahead(const char *p) {
  return strstr(p, "(?=") || strstr(p, "(?!");
}

/* Branch s's strings as a GBNF body over the shared rules into b: 1 when
 * s is not a branch of strings alone taken here (nothing written), 0
 * written, -1 failed. */
static int branch_body(ctx *c, const json_t *s, sb *b) {
  if (!json_is_object(s)) return 1;
  static const char *const keys[] = {
      "type", "pattern", "format", "minLength", "maxLength", "enum", "const"};
  const char *k;
  const json_t *v;
  bool strings = false;
  json_object_foreach((json_t *)s, k, v) {
    bool known = false;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
      known |= !strcmp(k, keys[i]);
    if (!known && js_constrains(k)) return 1;
    strings |=
        known && strcmp(k, "type") && strcmp(k, "enum") && strcmp(k, "const");
  }
  const json_t *type = json_object_get(s, "type");
  if (type && js_type_bits(type) != 16) return 1;
  const json_t *pat = json_object_get(s, "pattern");
  if (pat && (!json_is_string(pat) || has_lookahead(json_string_value(pat))))
    return 1;
  if (pat && json_object_get(s, "format")) return 1; /* meets twice */
  const json_t *cst = json_object_get(s, "const");
  const json_t *en = json_object_get(s, "enum");
  if (cst || en) {
    if (strings || (en && !json_is_array(en))) return 1;
    size_t n = cst ? 1 : json_array_size(en);
    for (size_t i = 0; i < n; i++)
      if (!json_is_string(cst ? cst : json_array_get(en, i))) return 1;
    for (size_t i = 0; i < n; i++) {
      char *text = js_value_text(c, cst ? cst : json_array_get(en, i));
      if (!text) return -1;
      if (i) js_sb_add(b, " | ", 3);
      js_sb_lit(b, text, strlen(text));
      free(text);
    }
    return n ? 0 : 1;
  }
  if (!type && !strings) return 1;
  return js_gen_string(c, s, b);
}

int js_oneof_strings(ctx *c, const json_t *list, int depth, sb *b) {
  size_t n = json_array_size(list);
  if (c->syntax != JS_SYNTAX_JSON || n < 2 || n > MAX_PATTERNS) return 1;
  sb body[MAX_PATTERNS] = {{0}};
  const char *text[MAX_PATTERNS];
  int rc = 0;
  size_t k = 0, since = c->out.n;
  for (; rc == 0 && k < n; k++) {
    const json_t *s = js_flatten(c, json_array_get(list, k), depth + 1);
    rc = s ? branch_body(c, s, &body[k]) : -1;
    if (rc == 0 && (body[k].oom || body[k].big))
      rc = body[k].oom ? js_fail_oom(c) : js_fail_big(c);
    text[k] = body[k].s ? body[k].s : "\"\"";
  }
  size_t written = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const char *parts[MAX_PATTERNS];
    bool negated[MAX_PATTERNS];
    parts[0] = text[i], negated[0] = false;
    for (size_t j = 0, m = 1; j < n; j++)
      if (j != i) parts[m] = text[j], negated[m++] = true;
    js_mark mark = js_mark_here(c);
    sb one = {0};
    rc = js_string_meet(c, parts, negated, n, since, &one);
    if (rc && js_recover(c, mark)) { /* no string of its own */
      rc = 0;
      free(one.s);
      continue;
    }
    if (rc == 0)
      js_sb_printf(b, "%s%s", written++ ? " | " : "", one.s ? one.s : "");
    free(one.s);
  }
  for (size_t i = 0; i < k; i++)
    free(body[i].s);
  if (rc == 0 && !written)
    return js_fail_unsat(c, "no branch of 'oneOf' matches a string the "
                            "others do not");
  return rc;
}
