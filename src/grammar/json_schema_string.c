/* json_schema: strings (length, format, pattern, and their intersections:
 * a format with patterns, or several patterns, by json_schema_meet.c).
 * Formats: date, time, date-time, uuid, email (idn-email), ipv4, ipv6,
 * hostname, uri (uri-reference), duration, regex, each a shared rule of
 * json_schema.c's
 * (conservative: every string made is of the format). With min/maxLength:
 * the format's rule when all its lengths fit; email, hostname and uri are
 * remade within the lengths; other overlaps are refused. Formats that
 * validators check and are not made here are refused; unknown formats are
 * annotations (the spec's default) and ignored with a note. */
#include "json_schema_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name, *rule;
  long long min, max; /* lengths of what the rule makes; max -1: any */
} format_rule;

static const format_rule k_formats[] = {
    {"date", "date", 10, 10},
    {"time", "time", 9, 21},
    {"date-time", "date-time", 20, 32},
    {"uuid", "uuid", 36, 36},
    {"email", "email", 6, -1},
    {"idn-email", "email", 6, -1},
    {"ipv4", "ipv4", 7, 15},
    {"ipv6", "ipv6", 15, 39},
    {"hostname", "hostname", 1, 91},
    {"uri", "uri", 8, -1},
    {"uri-reference", "uri", 8, -1},
    /* RFC 3339's durations: days (with hours), weeks, or a time alone */
    {"duration", "duration", 3, 12},
    /* letters, digits, spaces and '_': a regular expression that matches
     * itself, valid in every dialect */
    {"regex", "regex-text", 0, 64},
};

/* Checked by common validators (python-jsonschema's format checker) and
 * not made here: refused rather than ignored. */
static const char *const k_refused_formats[] = {
    "iri",          "iri-reference",         "idn-hostname", "uri-template",
    "json-pointer", "relative-json-pointer", "color"};

static int length_bounded(ctx *c, const format_rule *f, long long lo,
                          long long hi, sb *b) {
  if (!strcmp(f->rule, "email")) {
    if (hi < 6)
      return js_fail(c,
                     "format 'email' with maxLength %lld: no email is "
                     "that short (6 at least)",
                     hi);
    long long room = hi - 4, a = room / 2 > 64 ? 64 : room / 2;
    long long la = lo - 5 > 1 ? lo - 5 : 1;
    if (la > a) a = la;
    long long d = room - a > 63 ? 63 : room - a;
    if (a > 64 || d < 1)
      return js_fail(c,
                     "format 'email' with minLength %lld and maxLength "
                     "%lld is not supported",
                     lo, hi);
    js_sb_printf(b,
                 "%s [a-zA-Z0-9._+-]{%lld,%lld} \"@\" [a-z0-9]{1,%lld} "
                 "\".\" [a-z]{2} %s",
                 js_quote(c), la, a, d, js_quote(c));
    return 0;
  }
  long long fixed = !strcmp(f->rule, "uri") ? 12 : 0; /* https:// .com */
  if (!strcmp(f->rule, "hostname") || !strcmp(f->rule, "uri")) {
    long long mn = lo - fixed > 1 ? lo - fixed : 1;
    long long mx = hi < 0 ? 63 : hi - fixed > 63 ? 63 : hi - fixed;
    if (mn > mx)
      return js_fail(c,
                     "format '%s' with minLength %lld and maxLength "
                     "%lld is not supported",
                     f->name, lo, hi);
    js_sb_printf(b, "%s %s[a-z] [a-z0-9]{%lld,%lld}%s %s", js_quote(c),
                 fixed ? "\"https://\" " : "", mn - 1, mx - 1,
                 fixed ? " \".com\"" : "", js_quote(c));
    return 0;
  }
  if ((hi >= 0 && hi < f->min) || (f->max >= 0 && f->max < lo))
    return js_fail(c,
                   "format '%s' with minLength %lld and maxLength %lld: no "
                   "such string has a length between",
                   f->name, lo, hi);
  return js_fail(c,
                 "format '%s' (lengths %lld to %lld) with minLength %lld "
                 "and maxLength %lld is not supported",
                 f->name, f->min, f->max, lo, hi);
}

/* Format f's string, with lengths when lo >= 0. */
static int format_body(ctx *c, const format_rule *f, long long lo, long long hi,
                       sb *b) {
  if (lo < 0 || ((f->min >= lo) && (hi < 0 || (f->max >= 0 && f->max <= hi)))) {
    js_sb_printf(b, "%s %s %s", js_quote(c), f->rule, js_quote(c));
    return 0;
  }
  return length_bounded(c, f, lo, hi, b);
}

/* Entry i of a pattern list (a string, or {"not": string}: not_pattern's
 * negated one; allOf merges lists), or pat itself; NULL when malformed. */
static const char *pattern_at(const json_t *pat, size_t i, bool *negated) {
  const json_t *p = json_is_array(pat) ? json_array_get(pat, i) : pat;
  *negated = json_is_object(p);
  if (*negated) p = json_object_get(p, "not");
  return json_is_string(p) ? json_string_value(p) : NULL;
}

/* A format and patterns, or several patterns, some perhaps negated: the
 * strings all of them allow (js_string_meet); the lengths on the format,
 * else on a first part of any string. */
static int meet_parts(ctx *c, const format_rule *f, const json_t *pat,
                      long long lo, long long hi, sb *b) {
  bool lengths = lo > 0 || hi >= 0;
  size_t n_pats = json_is_array(pat) ? json_array_size(pat) : pat ? 1 : 0;
  size_t n = 0, since = c->out.n;
  sb body[MAX_PATTERNS + 2] = {{0}};
  bool negated[MAX_PATTERNS + 2] = {false};
  const char *text[MAX_PATTERNS + 2];
  int rc = 0;
  if (f)
    rc = format_body(c, f, lengths ? lo : -1, hi, &body[n++]);
  else
    js_string_lengths(c, lo, hi, &body[n++]);
  for (size_t i = 0; rc == 0 && i < n_pats; i++, n++)
    rc = js_pattern(c, pattern_at(pat, i, &negated[n]), -1, -1, &body[n]);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (body[i].oom || body[i].big)
      rc = body[i].oom ? js_fail_oom(c) : js_fail_big(c);
    text[i] = body[i].s ? body[i].s : "\"\"";
  }
  if (rc == 0) rc = js_string_meet(c, text, negated, n, since, b);
  for (size_t i = 0; i < n; i++)
    free(body[i].s);
  return rc;
}

int js_gen_string(ctx *c, const json_t *s, sb *b) {
  const json_t *fmt = json_object_get(s, "format");
  const json_t *pat = json_object_get(s, "pattern");
  long long lo, hi;
  if (js_get_count(c, s, "minLength", 0, &lo) ||
      js_get_count(c, s, "maxLength", -1, &hi))
    return -1;
  if (hi >= 0 && hi < lo) return js_fail_unsat(c, "maxLength < minLength");
  bool lengths = lo > 0 || hi >= 0;
  const format_rule *f = NULL;
  if (fmt) {
    const char *name = json_is_string(fmt) ? json_string_value(fmt) : "";
    for (size_t i = 0; i < sizeof k_formats / sizeof *k_formats; i++)
      if (!strcmp(name, k_formats[i].name)) f = &k_formats[i];
    for (size_t i = 0;
         !f && i < sizeof k_refused_formats / sizeof *k_refused_formats; i++)
      if (!strcmp(name, k_refused_formats[i]))
        return js_fail(c,
                       "format '%s' is not supported (date, time, "
                       "date-time, uuid, email, ipv4, ipv6, hostname, uri, "
                       "duration, regex)",
                       name);
    if (!f) js_note(c, "ignored unknown format '%.64s'", name);
  }
  size_t n_pats = json_is_array(pat) ? json_array_size(pat) : pat ? 1 : 0;
  if (n_pats > MAX_PATTERNS)
    return js_fail_limit(c, "more than %d patterns on one string",
                         MAX_PATTERNS);
  bool negated = false, neg;
  for (size_t i = 0; i < n_pats; negated |= neg, i++)
    if (!pattern_at(pat, i, &neg))
      return js_fail(c, "'pattern' must be a string");
  if ((f ? 1 : 0) + n_pats > 1 || negated)
    return meet_parts(c, f, pat, lo, hi, b);
  if (f) return format_body(c, f, lengths ? lo : -1, hi, b);
  if (pat) {
    js_mark m = js_mark_here(c);
    size_t at = b->n;
    int rc = js_pattern(c, pattern_at(pat, 0, &neg), lengths ? lo : -1,
                        lengths ? hi : -1, b);
    if (rc == 0 || !lengths || !js_retry(c, m)) return rc;
    b->n = at; /* lengths the pattern's own rewriting cannot take: the */
    if (b->s) b->s[at] = '\0'; /* pattern's strings of those lengths */
    return meet_parts(c, NULL, pat, lo, hi, b);
  }
  js_string_lengths(c, lo, hi, b);
  return 0;
}

void js_string_lengths(ctx *c, long long lo, long long hi, sb *b) {
  if (hi < 0)
    js_sb_printf(b, "%s char{%lld,} %s", js_quote(c), lo, js_quote(c));
  else
    js_sb_printf(b, "%s char{%lld,%lld} %s", js_quote(c), lo, hi, js_quote(c));
}
