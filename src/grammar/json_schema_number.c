/* json_schema: integers and numbers (their ranges). */
#include "json_schema_internal.h"

#include <math.h>

#define LIM_INT 1000000000000000000LL /* 1e18 */

static long long clamp_int(double v) {
  if (!(v > -1e18)) return -LIM_INT; /* NaN too */
  if (v > 1e18) return LIM_INT;
  return (long long)v;
}

int js_gen_integer(ctx *c, const json_t *s, sb *b, bool number) {
  const json_t *mn = json_object_get(s, "minimum"),
               *mx = json_object_get(s, "maximum"),
               *xmn = json_object_get(s, "exclusiveMinimum"),
               *xmx = json_object_get(s, "exclusiveMaximum");
  if (!mn && !mx && !xmn && !xmx) {
    js_sb_add(b, number ? "number" : "integer", number ? 6 : 7);
    return 0;
  }
  if ((mn && !json_is_number(mn)) || (mx && !json_is_number(mx)) ||
      (xmn && !json_is_number(xmn)) || (xmx && !json_is_number(xmx)))
    return js_fail(c, "minimum/maximum must be numbers");
  double lo = mn ? json_number_value(mn) : -1e300;
  if (number) {
    if (!mx && !xmx && !xmn && mn && lo == 0) {
      js_sb_add(b, "( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )?", 48);
      return 0;
    }
    return js_fail(c, "'minimum'/'maximum' on a number: only minimum 0 is "
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
    js_sb_add(b, ilo == 0 ? "( \"0\" | [1-9] [0-9]{0,15} )" : "[1-9] [0-9]{0,15}",
           ilo == 0 ? 28 : 17);
    return 0;
  }
  if (!(mn || xmn) || !(mx || xmx) || ihi - ilo > MAX_INT_RANGE)
    return js_fail(c,
                "'minimum'/'maximum' on an integer: a range of at most %d "
                "values, or a lower bound of 0 or 1",
                MAX_INT_RANGE);
  if (ihi < ilo) return js_fail(c, "an integer range with no value");
  for (long long v = ilo; v <= ihi; v++)
    js_sb_printf(b, "%s\"%lld\"", v == ilo ? "" : " | ", v);
  return 0;
}
