/* JSON Schema to GBNF (see json_schema.h). Each schema becomes one rule
 * r<N>; $refs are converted once (a rule name is taken before its body is
 * built, so recursive schemas refer to themselves). */
#include "json_schema.h"

#include "base/status.h"
#include "grammar.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_RULES 20000
#define MAX_REFS 512
#define MAX_COUNT 1024
#define MAX_INT_RANGE 1000
#define MAX_ENUM 4096 /* values of one enum */
/* Properties (and required names) of one object. */
#define MAX_PROPERTIES 2048
/* The grammar the schema becomes: no longer than the engine takes. */
#define MAX_GBNF NC_GRAMMAR_MAX_TEXT

typedef struct sb {
  char *s;
  size_t n, cap;
  bool oom;
  bool big; /* would pass MAX_GBNF: nothing more is added */
} sb;

static void sb_add(sb *b, const char *s, size_t len) {
  if (b->oom || b->big) return;
  if (len > MAX_GBNF - b->n) {
    b->big = true;
    return;
  }
  if (b->n + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + len + 1)
      cap *= 2;
    char *ns = realloc(b->s, cap);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, len);
  b->n += len;
  b->s[b->n] = '\0';
}

static void sb_printf(sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(sb *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    sb_add(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_add(b, big, (size_t)n);
  free(big);
}

/* A GBNF literal for bytes s. */
static void sb_lit(sb *b, const char *s, size_t len) {
  sb_add(b, "\"", 1);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      sb_add(b, e, 2);
    } else if (c < 0x20 || c == 0x7F) {
      sb_printf(b, "\\x%02X", c);
    } else {
      sb_add(b, (const char *)&c, 1);
    }
  }
  sb_add(b, "\"", 1);
}

typedef struct ctx {
  const json_t *root;
  sb out; /* finished rules */
  int n_rules;
  const char *ref_names[MAX_REFS];
  int ref_ids[MAX_REFS];
  int n_refs;
  nc_error *err;
  nc_code code; /* of the first failure; NC_OK until then */
} ctx;

/* The first failure wins: its code and message are what the caller gets. */
static int vfail(ctx *c, nc_code code, const char *fmt, va_list ap) {
  if (c->code == NC_OK) {
    c->code = code;
    if (c->err) {
      c->err->code = code;
      vsnprintf(c->err->message, sizeof c->err->message, fmt, ap);
    }
  }
  return -1;
}

static int fail(ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, NC_ERR_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return -1;
}

/* A bound on what the schema makes (rules, $refs, the grammar's size). */
static int fail_limit(ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail_limit(ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, NC_ERR_LIMIT, fmt, ap);
  va_end(ap);
  return -1;
}

static int fail_oom(ctx *c) {
  if (c->code == NC_OK)
    c->code = nc_fail(c->err, NC_ERR_NOMEM, "out of memory");
  return -1;
}

static int fail_big(ctx *c) {
  return fail_limit(c, "the schema's grammar would be longer than %u bytes",
                    (unsigned)MAX_GBNF);
}

static int new_rule(ctx *c) {
  if (c->n_rules >= MAX_RULES) return fail_limit(c, "schema too large");
  if (c->out.big) return fail_big(c);
  return c->n_rules++;
}

static void emit(ctx *c, int id, sb *body) {
  sb_printf(&c->out, "r%d ::= %s\n", id, body->s ? body->s : "\"\"");
  if (body->oom) c->out.oom = true;
  if (body->big) c->out.big = true;
  free(body->s);
}

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

static int gen(ctx *c, const json_t *s, int depth);

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

static int get_count(ctx *c, const json_t *s, const char *key, long long dflt,
                     long long *out) {
  const json_t *v = json_object_get(s, key);
  *out = dflt;
  if (!v) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) > MAX_COUNT)
    return fail(c, "'%s' must be an integer in [0, %d]", key, MAX_COUNT);
  *out = json_integer_value(v);
  return 0;
}

/* x repeated {min, max} (max < 0: unbounded) with separator sep between. */
static void repeat_sep(sb *b, const char *x, const char *sep, long long min,
                       long long max) {
  if (max == 0) {
    sb_add(b, "\"\"", 2);
    return;
  }
  if (min == 0) sb_add(b, "( ", 2);
  sb_printf(b, "%s ", x);
  if (max < 0)
    sb_printf(b, "( %s %s )*", sep, x);
  else if (max > 1)
    sb_printf(b, "( %s %s ){%lld,%lld}", sep, x, min > 0 ? min - 1 : 0,
              max - 1);
  else if (min > 1)
    sb_printf(b, "( %s %s ){%lld}", sep, x, min - 1);
  if (min == 0) sb_add(b, " )?", 3);
}

/* ---------------------------------------------------------------- regex */

typedef struct rx {
  const char *s;
  size_t n, pos;
  ctx *c;
  int depth;
} rx;

static int rx_alt(rx *r, sb *b);

/* One char of a JSON string as GBNF (escaped as JSON needs). */
static int rx_char(rx *r, sb *b, unsigned char ch) {
  if (ch == '"' || ch == '\\' || ch < 0x20)
    return fail(r->c,
                "pattern: the character 0x%02X needs JSON escaping "
                "(not supported)",
                ch);
  sb_lit(b, (const char *)&ch, 1);
  return 0;
}

/* One UTF-8 character of the pattern as a code point. */
static int rx_utf8(rx *r, uint32_t *cp) {
  const unsigned char *p = (const unsigned char *)r->s + r->pos;
  size_t left = r->n - r->pos;
  unsigned n = p[0] < 0x80 ? 1 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
  if (n > left || (p[0] >= 0x80 && p[0] < 0xC2) || p[0] > 0xF4)
    return fail(r->c, "pattern: invalid UTF-8");
  uint32_t c = n == 1 ? p[0] : p[0] & (0x7F >> n);
  for (unsigned i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80) return fail(r->c, "pattern: invalid UTF-8");
    c = (c << 6) | (p[i] & 0x3F);
  }
  r->pos += n;
  *cp = c;
  return 0;
}

/* A range of code points, without '"', '\\' and controls (they need JSON
 * escapes), as GBNF class items. */
static void class_range(sb *b, uint32_t lo, uint32_t hi) {
  static const uint32_t cut[][2] = {
      {0, 0x1F}, {0x22, 0x22}, {0x5C, 0x5C}, {0x7F, 0x7F}};
  for (size_t i = 0; i < 4 && lo <= hi; i++) {
    if (hi < cut[i][0] || lo > cut[i][1]) continue;
    if (lo < cut[i][0]) class_range(b, lo, cut[i][0] - 1);
    lo = cut[i][1] + 1;
  }
  if (lo <= hi) sb_printf(b, "\\U%08X-\\U%08X", lo, hi);
}

static int rx_class_item(rx *r, sb *b, uint32_t *cp, bool *set) {
  *set = false;
  if (r->s[r->pos] == '\\' && r->pos + 1 < r->n) {
    char e = r->s[r->pos + 1];
    r->pos += 2;
    if (e == 'd')
      class_range(b, '0', '9');
    else if (e == 'w') {
      class_range(b, 'a', 'z');
      class_range(b, 'A', 'Z');
      class_range(b, '0', '9');
      class_range(b, '_', '_');
    } else if (e == 's')
      class_range(b, ' ', ' ');
    else if (strchr(".-[]^$*+?(){}|/", e)) {
      *cp = (unsigned char)e;
      return 0;
    } else
      return fail(r->c, "pattern: escape '\\%c' in a class is not supported",
                  e);
    *set = true;
    return 0;
  }
  return rx_utf8(r, cp);
}

static int rx_class(rx *r, sb *b) {
  r->pos++;
  sb_add(b, "[", 1);
  size_t at = b->n;
  bool negated = r->pos < r->n && r->s[r->pos] == '^';
  if (negated) {
    sb_add(b, "^\"\\\\\\x00-\\x1F\\x7F", strlen("^\"\\\\\\x00-\\x1F\\x7F"));
    r->pos++;
  }
  bool any = false;
  while (r->pos < r->n && (r->s[r->pos] != ']' || !any)) {
    any = true;
    uint32_t lo, hi;
    bool set;
    if (rx_class_item(r, b, &lo, &set)) return -1;
    if (set) continue;
    hi = lo;
    if (r->pos + 1 < r->n && r->s[r->pos] == '-' && r->s[r->pos + 1] != ']') {
      r->pos++;
      if (rx_class_item(r, b, &hi, &set)) return -1;
      if (set || hi < lo) return fail(r->c, "pattern: bad class range");
    }
    class_range(b, lo, hi);
  }
  if (r->pos >= r->n) return fail(r->c, "pattern: unterminated class");
  r->pos++;
  if (b->n == at && !negated)
    return fail(r->c, "pattern: a class of only characters that JSON escapes "
                      "(not supported)");
  sb_add(b, "]", 1);
  return 0;
}

static int rx_atom(rx *r, sb *b) {
  unsigned char ch = (unsigned char)r->s[r->pos];
  if (ch == '(') {
    if (++r->depth > 28) /* each group is two GBNF groups deep */
      return fail_limit(r->c, "pattern: groups nested too deeply");
    r->pos++;
    if (r->pos + 1 < r->n && r->s[r->pos] == '?' && r->s[r->pos + 1] == ':')
      r->pos += 2;
    sb_add(b, "( ", 2);
    if (rx_alt(r, b)) return -1;
    if (r->pos >= r->n || r->s[r->pos] != ')')
      return fail(r->c, "pattern: missing ')'");
    r->pos++;
    r->depth--;
    sb_add(b, " )", 2);
    return 0;
  }
  if (ch == '[') return rx_class(r, b);
  if (ch == '.') {
    r->pos++;
    sb_add(b, "char", 4);
    return 0;
  }
  if (ch == '\\') {
    if (r->pos + 1 >= r->n) return fail(r->c, "pattern: trailing '\\'");
    char e = r->s[r->pos + 1];
    r->pos += 2;
    if (e == 'd')
      sb_add(b, "[0-9]", 5);
    else if (e == 'w')
      sb_add(b, "[a-zA-Z0-9_]", 12);
    else if (e == 's')
      sb_add(b, "[ ]", 3);
    else if (strchr(".-[]^$*+?(){}|/", e))
      return rx_char(r, b, (unsigned char)e);
    else
      return fail(r->c, "pattern: escape '\\%c' is not supported", e);
    return 0;
  }
  if (strchr("*+?{", ch))
    return fail(r->c, "pattern: a quantifier without an atom");
  if (ch >= 0x80) {
    size_t at = r->pos;
    uint32_t cp;
    if (rx_utf8(r, &cp)) return -1;
    sb_lit(b, r->s + at, r->pos - at);
    return 0;
  }
  r->pos++;
  return rx_char(r, b, ch);
}

/* A number of at most 4 digits at r->pos, or -1 (none). */
static long rx_number(rx *r) {
  long v = -1;
  for (int d = 0; r->pos < r->n && r->s[r->pos] >= '0' && r->s[r->pos] <= '9';
       d++, r->pos++) {
    if (d == 4) return -2;
    v = (v < 0 ? 0 : v * 10) + (r->s[r->pos] - '0');
  }
  return v;
}

/* {m}, {m,} or {m,n} at r->pos (m <= n <= MAX_COUNT), checked and
 * written as GBNF. */
static int rx_count(rx *r, sb *b) {
  r->pos++;
  long m = rx_number(r), n = m;
  bool comma = r->pos < r->n && r->s[r->pos] == ',';
  if (comma) {
    r->pos++;
    n = rx_number(r);
  }
  if (m == -2 || n == -2 || m > MAX_COUNT || n > MAX_COUNT)
    return fail_limit(r->c, "pattern: a count in {m,n} above %d", MAX_COUNT);
  if (m < 0 || (n < 0 && !comma) || r->pos >= r->n || r->s[r->pos] != '}')
    return fail(r->c, "pattern: bad {m,n}");
  r->pos++;
  if (n >= 0 && n < m) return fail(r->c, "pattern: {m,n} with n < m");
  if (!comma)
    sb_printf(b, "{%ld}", m);
  else if (n < 0)
    sb_printf(b, "{%ld,}", m);
  else
    sb_printf(b, "{%ld,%ld}", m, n);
  return 0;
}

static int rx_seq(rx *r, sb *b) {
  bool empty = true;
  while (r->pos < r->n && r->s[r->pos] != '|' && r->s[r->pos] != ')') {
    if (r->s[r->pos] == '^' || r->s[r->pos] == '$') {
      bool start = r->s[r->pos] == '^';
      if ((start && r->pos != 0) || (!start && r->pos != r->n - 1))
        return fail(r->c, "pattern: anchors only at the ends are supported");
      r->pos++;
      continue;
    }
    if (!empty) sb_add(b, " ", 1);
    sb_add(b, "( ", 2);
    if (rx_atom(r, b)) return -1;
    sb_add(b, " )", 2);
    empty = false;
    if (r->pos < r->n && strchr("*+?{", r->s[r->pos])) {
      char q = r->s[r->pos];
      if (q == '{') {
        if (rx_count(r, b)) return -1;
      } else {
        sb_add(b, &q, 1);
        r->pos++;
      }
      if (r->pos < r->n && r->s[r->pos] == '?') r->pos++; /* lazy = greedy */
    }
  }
  if (empty) sb_add(b, "\"\"", 2);
  return 0;
}

static int rx_alt(rx *r, sb *b) {
  if (rx_seq(r, b)) return -1;
  while (r->pos < r->n && r->s[r->pos] == '|') {
    r->pos++;
    sb_add(b, " | ", 3);
    if (rx_seq(r, b)) return -1;
  }
  return 0;
}

/* A JSON Schema pattern is unanchored unless it says ^...$: an unanchored
 * side may hold any characters. */
static int pattern(ctx *c, const char *p, sb *b) {
  size_t n = strlen(p);
  if (n > 4096) return fail(c, "pattern longer than 4096 bytes");
  rx r = {.s = p, .n = n, .c = c};
  bool start = n && p[0] == '^',
       end = n && p[n - 1] == '$' && (n < 2 || p[n - 2] != '\\');
  sb_add(b, "\"\\\"\" ", 5);
  if (!start) sb_add(b, "char* ", 6);
  sb_add(b, "( ", 2);
  if (rx_alt(&r, b)) return -1;
  if (r.pos != n) return fail(c, "pattern: unexpected ')'");
  sb_add(b, " ) ", 3);
  if (!end) sb_add(b, "char* ", 6);
  sb_add(b, "\"\\\"\"", 4);
  return 0;
}

/* -------------------------------------------------------------- schemas */

static int gen_string(ctx *c, const json_t *s, sb *b) {
  const json_t *fmt = json_object_get(s, "format");
  const json_t *pat = json_object_get(s, "pattern");
  long long lo, hi;
  if (get_count(c, s, "minLength", 0, &lo) ||
      get_count(c, s, "maxLength", -1, &hi))
    return -1;
  int given =
      !!fmt + !!pat +
      (json_object_get(s, "minLength") || json_object_get(s, "maxLength"));
  if (given > 1)
    return fail(c, "a string with more than one of format, pattern and "
                   "min/maxLength is not supported");
  if (fmt) {
    const char *f = json_is_string(fmt) ? json_string_value(fmt) : "";
    if (strcmp(f, "date") && strcmp(f, "time") && strcmp(f, "date-time") &&
        strcmp(f, "uuid") && strcmp(f, "email"))
      return fail(c,
                  "format '%.64s' is not supported (date, time, "
                  "date-time, uuid, email)",
                  f);
    sb_printf(b, "\"\\\"\" %s \"\\\"\"", f);
    return 0;
  }
  if (pat) {
    if (!json_is_string(pat)) return fail(c, "'pattern' must be a string");
    return pattern(c, json_string_value(pat), b);
  }
  if (hi >= 0 && hi < lo) return fail(c, "maxLength < minLength");
  if (hi < 0)
    sb_printf(b, "\"\\\"\" char{%lld,} \"\\\"\"", lo);
  else
    sb_printf(b, "\"\\\"\" char{%lld,%lld} \"\\\"\"", lo, hi);
  return 0;
}

#define LIM_INT 1000000000000000000LL /* 1e18 */

static long long clamp_int(double v) {
  if (!(v > -1e18)) return -LIM_INT; /* NaN too */
  if (v > 1e18) return LIM_INT;
  return (long long)v;
}

static int gen_integer(ctx *c, const json_t *s, sb *b, bool number) {
  const json_t *mn = json_object_get(s, "minimum"),
               *mx = json_object_get(s, "maximum"),
               *xmn = json_object_get(s, "exclusiveMinimum"),
               *xmx = json_object_get(s, "exclusiveMaximum");
  if (!mn && !mx && !xmn && !xmx) {
    sb_add(b, number ? "number" : "integer", number ? 6 : 7);
    return 0;
  }
  if ((mn && !json_is_number(mn)) || (mx && !json_is_number(mx)) ||
      (xmn && !json_is_number(xmn)) || (xmx && !json_is_number(xmx)))
    return fail(c, "minimum/maximum must be numbers");
  double lo = mn ? json_number_value(mn) : -1e300;
  if (number) {
    if (!mx && !xmx && !xmn && mn && lo == 0) {
      sb_add(b, "( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )?", 48);
      return 0;
    }
    return fail(c, "'minimum'/'maximum' on a number: only minimum 0 is "
                   "supported");
  }
  /* The integers in the bounds, clamped to +-1e18 (in doubles: a cast of
   * a value out of range is undefined); both of minimum and
   * exclusiveMinimum (or of the maxima) hold when both are given. */
  long long ilo = -LIM_INT, ihi = LIM_INT;
  if (mn) ilo = clamp_int(ceil(json_number_value(mn)));
  if (xmn) {
    long long x = clamp_int(floor(json_number_value(xmn)) + 1);
    if (x > ilo) ilo = x;
  }
  if (mx) ihi = clamp_int(floor(json_number_value(mx)));
  if (xmx) {
    long long x = clamp_int(ceil(json_number_value(xmx)) - 1);
    if (x < ihi) ihi = x;
  }
  if (!mx && !xmx && (ilo == 0 || ilo == 1)) {
    sb_add(b, ilo == 0 ? "( \"0\" | [1-9] [0-9]{0,15} )" : "[1-9] [0-9]{0,15}",
           ilo == 0 ? 28 : 17);
    return 0;
  }
  if (!(mn || xmn) || !(mx || xmx) || ihi - ilo > MAX_INT_RANGE)
    return fail(c,
                "'minimum'/'maximum' on an integer: a range of at most %d "
                "values, or a lower bound of 0 or 1",
                MAX_INT_RANGE);
  if (ihi < ilo) return fail(c, "an integer range with no value");
  for (long long v = ilo; v <= ihi; v++)
    sb_printf(b, "%s\"%lld\"", v == ilo ? "" : " | ", v);
  return 0;
}

static int gen_array(ctx *c, const json_t *s, sb *b, int depth) {
  const json_t *items = json_object_get(s, "items");
  const json_t *prefix = json_object_get(s, "prefixItems");
  long long lo, hi;
  if (get_count(c, s, "minItems", 0, &lo) ||
      get_count(c, s, "maxItems", -1, &hi))
    return -1;
  if (hi >= 0 && hi < lo) return fail(c, "maxItems < minItems");
  if (prefix && !json_is_array(prefix))
    return fail(c, "'prefixItems' must be a list");
  size_t k = prefix ? json_array_size(prefix) : 0;
  if (hi >= 0 && (long long)k > hi)
    return fail(c, "more prefixItems than maxItems");
  sb_add(b, "\"[\" ", 4);
  for (size_t i = 0; i < k; i++) {
    int id = gen(c, json_array_get(prefix, i), depth + 1);
    if (id < 0) return -1;
    sb_printf(b, "%sr%d ", i ? "\",\" " : "", id);
  }
  bool more =
      !(items && json_is_false(items)) && !(hi >= 0 && (long long)k == hi);
  if (more) {
    char x[32] = "value";
    if (items) {
      int id = gen(c, items, depth + 1);
      if (id < 0) return -1;
      snprintf(x, sizeof x, "r%d", id);
    }
    long long rlo = lo > (long long)k ? lo - (long long)k : 0;
    long long rhi = hi < 0 ? -1 : hi - (long long)k;
    if (k == 0) {
      repeat_sep(b, x, "\",\"", rlo, rhi);
    } else { /* every further item after a comma */
      char cx[48];
      snprintf(cx, sizeof cx, "\",\" %s", x);
      if (rhi < 0)
        sb_printf(b, "( %s ){%lld,}", cx, rlo);
      else
        sb_printf(b, "( %s ){%lld,%lld}", cx, rlo, rhi);
    }
  } else if (lo > (long long)k) {
    return fail(c, "minItems needs more items than prefixItems allows");
  }
  sb_add(b, " \"]\"", 4);
  return 0;
}

static bool is_required(const json_t *req, const char *name) {
  size_t i;
  const json_t *v;
  json_array_foreach(req, i, v) {
    if (json_is_string(v) && !strcmp(json_string_value(v), name)) return true;
  }
  return false;
}

/* Properties i.. as rules seq<i><first>: required ones always, optional
 * ones or not, a comma before each but the first written. */
static int gen_object(ctx *c, const json_t *s, sb *b, int depth) {
  const json_t *props = json_object_get(s, "properties");
  const json_t *req = json_object_get(s, "required");
  const json_t *add = json_object_get(s, "additionalProperties");
  if (props && !json_is_object(props))
    return fail(c, "'properties' must be an object");
  if (req && !json_is_array(req)) return fail(c, "'required' must be a list");
  size_t n = props ? json_object_size(props) : 0;
  if (n > MAX_PROPERTIES || json_array_size(req) > MAX_PROPERTIES)
    return fail_limit(c, "an object with more than %d properties",
                      MAX_PROPERTIES);
  size_t i;
  const json_t *v;
  json_array_foreach(req, i, v) {
    if (!json_is_string(v) || !json_object_get(props, json_string_value(v)))
      return fail(c, "'required' names a property that 'properties' lacks");
  }
  if (n == 0) {
    if (add && !json_is_false(add) && !json_is_true(add)) { /* a map */
      int id = gen(c, add, depth + 1);
      if (id < 0) return -1;
      char kv[64];
      snprintf(kv, sizeof kv, "string \":\" r%d", id);
      sb_add(b, "\"{\" ", 4);
      repeat_sep(b, kv, "\",\"", 0, -1);
      sb_add(b, " \"}\"", 4);
    } else {
      sb_add(b, "\"{\" \"}\"", 7);
    }
    return 0;
  }
  if (add && !json_is_boolean(add) && !json_is_object(add))
    return fail(c, "'additionalProperties' must be a boolean or a schema");
  /* kv rules, then seq rules from the end. */
  int *kv = calloc(n, sizeof *kv);
  const char **names = calloc(n, sizeof *names);
  if (!kv || !names) {
    free(kv);
    free(names);
    return fail_oom(c);
  }
  const char *key;
  i = 0;
  json_object_foreach((json_t *)props, key, v) {
    int id = gen(c, v, depth + 1);
    if (id < 0) {
      free(kv);
      free(names);
      return -1;
    }
    names[i] = key;
    kv[i++] = id;
  }
  int next[2] = {-1, -1}; /* seq(i+1, first), seq(i+1, not first) */
  for (size_t j = n; j-- > 0;) {
    const char *name = names[j];
    bool required = req && is_required(req, name);
    int ids[2];
    for (int f = 0; f < 2; f++) { /* f = 1: first (no comma) */
      ids[f] = new_rule(c);
      if (ids[f] < 0) {
        free(kv);
        free(names);
        return -1;
      }
      sb body = {0};
      json_t *jname = json_string(name);
      char *js = jname ? json_dumps(jname, JSON_ENCODE_ANY) : NULL;
      json_decref(jname);
      sb key_lit = {0};
      if (js) sb_lit(&key_lit, js, strlen(js));
      free(js);
      char tail[32] = "";
      if (next[0] >= 0) snprintf(tail, sizeof tail, " r%d", next[0]);
      sb_printf(&body, "%s%s \":\" r%d%s", f ? "" : "\",\" ",
                key_lit.s ? key_lit.s : "\"\"", kv[j], tail);
      free(key_lit.s);
      if (!required) {
        if (next[f] >= 0)
          sb_printf(&body, " | r%d", next[f]);
        else
          sb_add(&body, " | \"\"", 5);
      }
      emit(c, ids[f], &body);
    }
    /* seq(j, not first) is ids[0], seq(j, first) is ids[1]. */
    next[0] = ids[0];
    next[1] = ids[1];
  }
  free(kv);
  free(names);
  sb_printf(b, "\"{\" r%d \"}\"", next[1]);
  return 0;
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
    return fail(c, "'%.64s' beside '%s' is not supported", key, lead);
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
    sb_add(b, "value", 5);
    return 0;
  }
  if (json_is_false(s)) return fail(c, "the schema false matches nothing");
  if (!json_is_object(s)) return fail(c, "a schema must be an object");
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)s, key, v) {
    if (!known(key))
      return fail(c, "unsupported JSON Schema keyword '%.64s'", key);
  }
  const json_t *ref = json_object_get(s, "$ref");
  if (ref) {
    if (alone(c, s, "$ref")) return -1;
    if (!json_is_string(ref)) return fail(c, "'$ref' must be a string");
    const char *r = json_string_value(ref);
    for (int i = 0; i < c->n_refs; i++)
      if (!strcmp(c->ref_names[i], r)) {
        sb_printf(b, "r%d", c->ref_ids[i]);
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
      return fail(c,
                  "'$ref' %.128s: only #, #/$defs/NAME and "
                  "#/definitions/NAME are supported",
                  r);
    }
    const json_t *target = name ? json_object_get(defs, name) : c->root;
    if (!target) return fail(c, "'$ref' %.128s points to nothing", r);
    if (c->n_refs >= MAX_REFS) return fail_limit(c, "too many $refs");
    int id = new_rule(c);
    if (id < 0) return -1;
    c->ref_names[c->n_refs] = r;
    c->ref_ids[c->n_refs++] = id;
    sb body = {0};
    if (gen_body(c, target, &body, depth + 1)) {
      free(body.s);
      return -1;
    }
    emit(c, id, &body);
    sb_printf(b, "r%d", id);
    return 0;
  }
  const json_t *cst = json_object_get(s, "const");
  const json_t *en = json_object_get(s, "enum");
  if (cst || en) {
    if (en && (!json_is_array(en) || json_array_size(en) == 0))
      return fail(c, "'enum' must be a non-empty list");
    if (en && json_array_size(en) > MAX_ENUM)
      return fail_limit(c, "'enum' with more than %d values", MAX_ENUM);
    if (alone(c, s, cst ? "const" : "enum")) return -1;
    /* A value must also be of the 'type' given: the others cannot
     * validate. */
    const json_t *type = json_object_get(s, "type");
    size_t n = cst ? 1 : json_array_size(en), written = 0;
    for (size_t i = 0; i < n; i++) {
      const json_t *x = cst ? cst : json_array_get(en, i);
      if (!of_type(type, x)) continue;
      char *js = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
      if (!js) return fail_oom(c);
      if (written++) sb_add(b, " | ", 3);
      sb_lit(b, js, strlen(js));
      free(js);
    }
    if (!written)
      return fail(c, "no value of '%s' is of the 'type' given",
                  cst ? "const" : "enum");
    return 0;
  }
  const char *comb[] = {"anyOf", "oneOf", "allOf"};
  for (int k = 0; k < 3; k++) {
    const json_t *list = json_object_get(s, comb[k]);
    if (!list) continue;
    if (!json_is_array(list) || json_array_size(list) == 0)
      return fail(c, "'%s' must be a non-empty list", comb[k]);
    if (alone(c, s, comb[k])) return -1;
    if (k == 2 && json_array_size(list) != 1)
      return fail(c, "'allOf' with more than one schema is not supported");
    size_t i;
    json_array_foreach(list, i, v) {
      int id = gen(c, v, depth + 1);
      if (id < 0) return -1;
      sb_printf(b, "%sr%d", i ? " | " : "", id);
    }
    return 0;
  }
  const json_t *type = json_object_get(s, "type");
  if (!type) {
    if (json_object_get(s, "properties")) return gen_object(c, s, b, depth);
    if (json_object_get(s, "items") || json_object_get(s, "prefixItems"))
      return gen_array(c, s, b, depth);
    sb_add(b, "value", 5);
    return 0;
  }
  size_t nt = json_is_array(type) ? json_array_size(type) : 1;
  if (nt == 0) return fail(c, "'type' must not be an empty list");
  for (size_t i = 0; i < nt; i++) {
    const json_t *t = json_is_array(type) ? json_array_get(type, i) : type;
    const char *ts = json_is_string(t) ? json_string_value(t) : "";
    if (i) sb_add(b, " | ", 3);
    int rc = 0;
    if (!strcmp(ts, "object"))
      rc = gen_object(c, s, b, depth);
    else if (!strcmp(ts, "array"))
      rc = gen_array(c, s, b, depth);
    else if (!strcmp(ts, "string"))
      rc = gen_string(c, s, b);
    else if (!strcmp(ts, "integer"))
      rc = gen_integer(c, s, b, false);
    else if (!strcmp(ts, "number"))
      rc = gen_integer(c, s, b, true);
    else if (!strcmp(ts, "boolean"))
      sb_add(b, "boolean", 7);
    else if (!strcmp(ts, "null"))
      sb_add(b, "null", 4);
    else
      return fail(c, "unsupported type '%.64s'", ts);
    if (rc) return -1;
  }
  return 0;
}

static int gen(ctx *c, const json_t *s, int depth) {
  if (depth > MAX_DEPTH) return fail_limit(c, "schema nested too deeply");
  int id = new_rule(c);
  if (id < 0) return -1;
  sb body = {0};
  if (gen_body(c, s, &body, depth)) {
    free(body.s);
    return -1;
  }
  emit(c, id, &body);
  return id;
}

nc_code json_schema_to_gbnf(const json_t *schema, char **gbnf, nc_error *err) {
  *gbnf = NULL;
  ctx c = {.root = schema, .err = err, .code = NC_OK};
  sb_add(&c.out, k_prims, strlen(k_prims));
  int id = gen(&c, schema, 0);
  if (id >= 0) sb_printf(&c.out, "root ::= r%d\n", id);
  if (id >= 0 && c.out.big) fail_big(&c);
  if (c.code != NC_OK || id < 0 || c.out.oom) {
    if (c.code == NC_OK) nc_fail(err, NC_ERR_NOMEM, "out of memory");
    free(c.out.s);
    return c.code == NC_OK ? NC_ERR_NOMEM : c.code;
  }
  *gbnf = c.out.s;
  return NC_OK;
}
