/* json_schema: strings (length, format, pattern). */
#include "json_schema_internal.h"

#include <string.h>

int js_gen_string(ctx *c, const json_t *s, sb *b) {
  const json_t *fmt = json_object_get(s, "format");
  const json_t *pat = json_object_get(s, "pattern");
  long long lo, hi;
  if (js_get_count(c, s, "minLength", 0, &lo) ||
      js_get_count(c, s, "maxLength", -1, &hi))
    return -1;
  int given =
      !!fmt + !!pat +
      (json_object_get(s, "minLength") || json_object_get(s, "maxLength"));
  if (given > 1)
    return js_fail(c, "a string with more than one of format, pattern and "
                   "min/maxLength is not supported");
  if (fmt) {
    const char *f = json_is_string(fmt) ? json_string_value(fmt) : "";
    if (strcmp(f, "date") && strcmp(f, "time") && strcmp(f, "date-time") &&
        strcmp(f, "uuid") && strcmp(f, "email"))
      return js_fail(c,
                  "format '%.64s' is not supported (date, time, "
                  "date-time, uuid, email)",
                  f);
    js_sb_printf(b, "\"\\\"\" %s \"\\\"\"", f);
    return 0;
  }
  if (pat) {
    if (!json_is_string(pat)) return js_fail(c, "'pattern' must be a string");
    return js_pattern(c, json_string_value(pat), b);
  }
  if (hi >= 0 && hi < lo) return js_fail(c, "maxLength < minLength");
  if (hi < 0)
    js_sb_printf(b, "\"\\\"\" char{%lld,} \"\\\"\"", lo);
  else
    js_sb_printf(b, "\"\\\"\" char{%lld,%lld} \"\\\"\"", lo, hi);
  return 0;
}
