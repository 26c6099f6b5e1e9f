/* json_schema: integers and numbers within their bounds, as exact
 * grammars over the digits.
 *
 * Integers: [a, b] is, for each length of digit strings, the strings
 * between a's and b's digit by digit (the common prefix, then a's digit
 * with a suffix >= a's rest, the digits between with any suffix, b's digit
 * with a suffix <= b's rest); negative ranges are "-" and the range of the
 * absolute values. At most 16 digits (unbounded sides stop there).
 *
 * Numbers (decimals, no exponent: a subset of JSON's numbers that covers
 * the range): x in [A, B] with A, B the shortest decimals that read back
 * as the bounds (an exclusive bound moves to the next double inward, so
 * that no decimal in the grammar reads as the bound itself): the integer
 * parts strictly between with any fraction, and at A's (B's) integer part
 * the fractions >= A's (<= B's), digit by digit, at most 16 fraction
 * digits. A bound at 1e15 or beyond in magnitude is no bound (16 digits).
 *
 * multipleOf (integers): enumerated in a range of at most 1000 values, or
 * with no bound above, the digit strings whose remainder mod k is 0 (a
 * finite automaton, one rule per remainder, k <= 1000). A fractional
 * multipleOf of 1/2^j, or 0.1 to 0.0001 (below 1e6 in magnitude, where a
 * validator's double division is exact), is met by whole numbers. */
#include "json_schema_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FMAX 16           /* fraction digits */
#define IMAX 16           /* integer digits */
#define BIG 1e15          /* bounds at or beyond: none */
#define MAX_MULTIPLE 1000 /* multipleOf's automaton */

/* ---------------------------------------------------------- integers */

/* Digit strings of length n >= s (s of length n). */
static void ge_suffix(sb *b, const char *s, int n) {
  if (n == 0) {
    js_sb_add(b, "\"\"", 2);
    return;
  }
  if (strspn(s, "0") >= (size_t)n) {
    js_sb_printf(b, "[0-9]{%d}", n);
    return;
  }
  js_sb_printf(b, "( \"%c\" ", s[0]);
  ge_suffix(b, s + 1, n - 1);
  if (s[0] < '9') {
    js_sb_printf(b, " | [%c-9]", s[0] + 1);
    if (n > 1) js_sb_printf(b, " [0-9]{%d}", n - 1);
  }
  js_sb_add(b, " )", 2);
}

/* Digit strings of length n <= s. */
static void le_suffix(sb *b, const char *s, int n) {
  if (n == 0) {
    js_sb_add(b, "\"\"", 2);
    return;
  }
  if (strspn(s, "9") >= (size_t)n) {
    js_sb_printf(b, "[0-9]{%d}", n);
    return;
  }
  js_sb_printf(b, "( \"%c\" ", s[0]);
  le_suffix(b, s + 1, n - 1);
  if (s[0] > '0') {
    js_sb_printf(b, " | [0-%c]", s[0] - 1);
    if (n > 1) js_sb_printf(b, " [0-9]{%d}", n - 1);
  }
  js_sb_add(b, " )", 2);
}

/* Digit strings of length n in [a, b] (a <= b, both of length n). */
static void same_len(sb *b, const char *a, const char *z, int n) {
  if (n == 0) {
    js_sb_add(b, "\"\"", 2);
    return;
  }
  if (a[0] == z[0]) {
    js_sb_printf(b, "\"%c\" ", a[0]);
    same_len(b, a + 1, z + 1, n - 1);
    return;
  }
  js_sb_printf(b, "( \"%c\" ", a[0]);
  ge_suffix(b, a + 1, n - 1);
  if (a[0] + 1 <= z[0] - 1) {
    if (a[0] + 1 == z[0] - 1)
      js_sb_printf(b, " | \"%c\"", a[0] + 1);
    else
      js_sb_printf(b, " | [%c-%c]", a[0] + 1, z[0] - 1);
    if (n > 1) js_sb_printf(b, " [0-9]{%d}", n - 1);
  }
  js_sb_printf(b, " | \"%c\" ", z[0]);
  le_suffix(b, z + 1, n - 1);
  js_sb_add(b, " )", 2);
}

/* Nonnegative integers in [a, z] (z < 0: up to IMAX digits). */
static void int_range(sb *b, long long a, long long z) {
  char sa[24], sz[24], t[24];
  int la = snprintf(sa, sizeof sa, "%lld", a);
  int lz = z < 0 ? IMAX + 1 : snprintf(sz, sizeof sz, "%lld", z);
  js_sb_add(b, "( ", 2);
  if (la == lz) {
    same_len(b, sa, sz, la);
  } else {
    memset(t, '9', (size_t)la);
    t[la] = '\0';
    same_len(b, sa, t, la);
    if (la + 1 <= lz - 1 && la + 1 <= IMAX) {
      int top = lz - 1 < IMAX ? lz - 1 : IMAX;
      if (la + 1 == top)
        js_sb_printf(b, " | [1-9] [0-9]{%d}", la);
      else
        js_sb_printf(b, " | [1-9] [0-9]{%d,%d}", la, top - 1);
    }
    if (z >= 0) {
      t[0] = '1';
      memset(t + 1, '0', (size_t)lz - 1);
      t[lz] = '\0';
      js_sb_add(b, " | ", 3);
      same_len(b, t, sz, lz);
    }
  }
  js_sb_add(b, " )", 2);
}

/* Integers in [lo, hi]; lo/hi at +-LLONG_MAX: unbounded. */
static void int_interval(sb *b, long long lo, long long hi, bool unb_lo,
                         bool unb_hi) {
  bool pos = unb_hi || hi >= 0, neg = unb_lo || lo < 0;
  if (pos) int_range(b, unb_lo || lo < 0 ? 0 : lo, unb_hi ? -1 : hi);
  if (pos && neg) js_sb_add(b, " | ", 3);
  if (neg) {
    js_sb_add(b, "\"-\" ", 4);
    int_range(b, !unb_hi && hi < 0 ? -hi : 1, unb_lo ? -1 : -lo);
  }
}

/* --------------------------------------------------------- fractions */

/* Fraction digits (at least one in all, FMAX at most) from position i of
 * f (used digits already written), the value >= 0.f. */
static void frac_ge(sb *b, const char *f, int used) {
  int left = FMAX - used;
  if (!*f) { /* f matched: anything more */
    if (left > 0)
      js_sb_printf(b, "[0-9]{0,%d}", left);
    else
      js_sb_add(b, "\"\"", 2);
    return;
  }
  js_sb_printf(b, "( \"%c\" ", f[0]);
  frac_ge(b, f + 1, used + 1);
  if (f[0] < '9') {
    js_sb_printf(b, " | [%c-9]", f[0] + 1);
    if (left > 1) js_sb_printf(b, " [0-9]{0,%d}", left - 1);
  }
  js_sb_add(b, " )", 2);
}

/* The same, value <= 0.f (f exhausted: zeros only). */
static void frac_le(sb *b, const char *f, int used) {
  int left = FMAX - used;
  if (!*f) {
    if (used == 0)
      js_sb_printf(b, "\"0\"{1,%d}", FMAX);
    else if (left > 0)
      js_sb_printf(b, "\"0\"{0,%d}", left);
    else
      js_sb_add(b, "\"\"", 2);
    return;
  }
  /* a prefix of f is below it too (once a digit is written) */
  js_sb_printf(b, "( %s\"%c\" ", used ? "\"\" | " : "", f[0]);
  frac_le(b, f + 1, used + 1);
  if (f[0] > '0') {
    js_sb_printf(b, " | [0-%c]", f[0] - 1);
    if (left > 1) js_sb_printf(b, " [0-9]{0,%d}", left - 1);
  }
  js_sb_add(b, " )", 2);
}

/* Fractions between 0.l and 0.u (0.l <= 0.u). */
static void frac_range(sb *b, const char *l, const char *u, int used) {
  int left = FMAX - used;
  if (!*l) {
    if (used == 0) { /* a fraction must have a digit */
      js_sb_add(b, "( ", 2);
      frac_le(b, u, 0);
      js_sb_add(b, " )", 2);
    } else {
      js_sb_add(b, "( \"\" | ", 7);
      frac_le(b, u, used);
      js_sb_add(b, " )", 2);
    }
    return;
  }
  if (l[0] == u[0]) {
    js_sb_printf(b, "\"%c\" ", l[0]);
    frac_range(b, l + 1, u + 1, used + 1);
    return;
  }
  js_sb_printf(b, "( \"%c\" ", l[0]);
  frac_ge(b, l + 1, used + 1);
  if (l[0] + 1 <= u[0] - 1) {
    js_sb_printf(b, " | [%c-%c]", l[0] + 1, u[0] - 1);
    if (left > 1) js_sb_printf(b, " [0-9]{0,%d}", left - 1);
  }
  js_sb_printf(b, " | \"%c\" ", u[0]);
  if (*u && u[1]) {
    frac_le(b, u + 1, used + 1);
  } else if (left > 1) {
    js_sb_printf(b, "\"0\"{0,%d}", left - 1);
  }
  js_sb_add(b, " )", 2);
}

/* ----------------------------------------------------------- decimals */

typedef struct {
  long long ip;      /* integer part */
  char fp[FMAX + 1]; /* fraction digits, no trailing zero */
} dec;

/* v (0 <= v < BIG) as the shortest decimal reading back as v, its fraction
 * cut to FMAX digits, rounded up (up) or down. */
static void to_dec(double v, bool up, dec *d) {
  char buf[64];
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    if (strtod(buf, NULL) == v) break;
  }
  char digits[32];
  int nd = 0;
  const char *q = buf;
  for (; *q && *q != 'e'; q++)
    if (*q >= '0' && *q <= '9') digits[nd++] = *q;
  int e = *q == 'e' ? atoi(q + 1) : 0;
  int point = e + 1; /* digits before the point */
  d->ip = 0;
  for (int i = 0; i < point; i++)
    d->ip = d->ip * 10 + (i < nd ? digits[i] - '0' : 0);
  char frac[400];
  int nf = 0;
  for (int i = point; i < nd; i++) { /* the digits after the point */
    if (i < 0) {
      frac[nf++] = '0';
      continue;
    }
    frac[nf++] = digits[i];
  }
  /* leading zeros for a negative point */
  if (point < 0) {
    nf = 0;
    for (int i = 0; i < -point && nf < 399; i++)
      frac[nf++] = '0';
    for (int i = 0; i < nd && nf < 399; i++)
      frac[nf++] = digits[i];
  }
  bool cut = false;
  if (nf > FMAX) {
    for (int i = FMAX; i < nf; i++)
      cut |= frac[i] != '0';
    nf = FMAX;
  }
  if (cut && up) { /* add one unit of the last place */
    int i = nf - 1;
    while (i >= 0 && frac[i] == '9')
      frac[i--] = '0';
    if (i >= 0)
      frac[i]++;
    else
      d->ip++;
  }
  while (nf > 0 && frac[nf - 1] == '0')
    nf--;
  memcpy(d->fp, frac, (size_t)nf);
  d->fp[nf] = '\0';
}

static bool dec_less(const dec *x, const dec *y) {
  return x->ip != y->ip ? x->ip < y->ip : strcmp(x->fp, y->fp) < 0;
}

/* Nonnegative decimals in [a, z] (z NULL: unbounded). */
static void dec_range(sb *b, const dec *a, const dec *z) {
  js_sb_add(b, "( ", 2);
  if (z && a->ip == z->ip) {
    js_sb_printf(b, "\"%lld\" ", a->ip);
    if (!a->fp[0]) {
      js_sb_add(b, "( \"\" | \".\" ", 11);
      frac_range(b, "", z->fp, 0);
      js_sb_add(b, " )", 2);
    } else {
      js_sb_add(b, "\".\" ", 4);
      frac_range(b, a->fp, z->fp, 0);
    }
    js_sb_add(b, " )", 2);
    return;
  }
  /* a's integer part */
  js_sb_printf(b, "\"%lld\" ", a->ip);
  if (a->fp[0]) {
    js_sb_add(b, "\".\" ", 4);
    frac_ge(b, a->fp, 0);
  } else {
    js_sb_printf(b, "( \".\" [0-9]{1,%d} )?", FMAX);
  }
  /* those between */
  if (!z || a->ip + 1 <= z->ip - 1) {
    js_sb_add(b, " | ", 3);
    int_range(b, a->ip + 1, z ? z->ip - 1 : -1);
    js_sb_printf(b, " ( \".\" [0-9]{1,%d} )?", FMAX);
  }
  if (z) { /* z's integer part */
    js_sb_printf(b, " | \"%lld\" ( \".\" ", z->ip);
    frac_le(b, z->fp, 0);
    js_sb_add(b, " )?", 3);
  }
  js_sb_add(b, " )", 2);
}

static int bound(ctx *c, const json_t *s, const char *key, double *v,
                 bool *exclusive_flag) {
  const json_t *x = json_object_get(s, key);
  if (!x) return 0;
  if (json_is_boolean(x) && exclusive_flag) { /* draft 4 */
    *exclusive_flag = json_is_true(x);
    return 0;
  }
  if (!json_is_number(x) || !isfinite(json_number_value(x)))
    return js_fail(c, "'%s' must be a number", key);
  *v = json_number_value(x);
  return 1;
}

/* ----------------------------------------------------------- multiples */

/* Nonnegative multiples of k (0 when zero), as rules: m<r> the digits
 * that leave remainder r. */
static int multiples(ctx *c, sb *b, long long k, bool zero, bool negative) {
  int base = -1;
  for (long long r = 0; r < k; r++) {
    int id = js_new_rule(c);
    if (id < 0) return -1;
    if (base < 0) base = id;
  }
  for (long long r = 0; r < k; r++) {
    sb body = {0};
    bool any = false;
    if (r == 0) {
      js_sb_add(&body, "\"\"", 2);
      any = true;
    }
    for (int d = 0; d <= 9; d++) {
      long long t = (r * 10 + d) % k;
      js_sb_printf(&body, "%s\"%d\" r%lld", any ? " | " : "", d,
                   (long long)base + t);
      any = true;
    }
    js_emit(c, base + (int)r, &body);
  }
  js_sb_add(b, "( ", 2);
  if (zero) js_sb_add(b, "\"0\" | ", 6);
  for (int d = 1; d <= 9; d++)
    js_sb_printf(b, "%s\"%s%d\" r%lld", d > 1 ? " | " : "", negative ? "-" : "",
                 d, (long long)base + d % k);
  js_sb_add(b, " )", 2);
  return 0;
}

int js_gen_integer(ctx *c, const json_t *s, sb *b, bool number) {
  double lo = 0, hi = 0, xlo = 0, xhi = 0;
  bool dlo = false, dhi = false; /* draft-4 exclusive flags */
  int has_lo = bound(c, s, "minimum", &lo, NULL);
  int has_hi = bound(c, s, "maximum", &hi, NULL);
  int has_xlo = bound(c, s, "exclusiveMinimum", &xlo, &dlo);
  int has_xhi = bound(c, s, "exclusiveMaximum", &xhi, &dhi);
  if (has_lo < 0 || has_hi < 0 || has_xlo < 0 || has_xhi < 0) return -1;
  const json_t *mo = json_object_get(s, "multipleOf");
  if (mo && (!json_is_number(mo) || !(json_number_value(mo) > 0)))
    return js_fail(c, "'multipleOf' must be a number above 0");
  long long k = 0;
  double cap = BIG; /* |value| below this (decimal multipleOf) */
  if (mo) {
    double m = json_number_value(mo);
    double inv = 1 / m;
    bool pow2 = inv == floor(inv) && inv <= 1048576 &&
                ((long long)inv & ((long long)inv - 1)) == 0;
    bool tenth = m == 0.1 || m == 0.01 || m == 0.001 || m == 0.0001;
    if (m < 1 && (pow2 || tenth)) {
      /* Whole numbers are multiples of 2^-j, and of 10^-k as a validator
       * divides in doubles (n / 0.01 is exactly 100 n below 1e6). */
      k = 1;
      if (tenth) cap = 1e6;
    } else if (m != floor(m) || m > 1e15) {
      return js_fail(c,
                     "'multipleOf' %g is not supported (whole numbers, "
                     "0.1, 0.01, 0.001, 0.0001 and 1/2^j)",
                     m);
    } else {
      k = (long long)m;
    }
    number = false; /* the multiples written are integers */
  }
  /* Both of minimum and exclusiveMinimum hold when both are given: the
   * tighter wins. Unbounded beyond BIG. */
  bool lo_x = dlo, hi_x = dhi;
  if (has_xlo && (!has_lo || xlo >= lo)) lo = xlo, lo_x = true, has_lo = 1;
  if (has_xhi && (!has_hi || xhi <= hi)) hi = xhi, hi_x = true, has_hi = 1;
  if (cap < BIG) { /* within +-cap, exclusive */
    if (!has_lo || lo <= -cap) lo = -cap, lo_x = true, has_lo = 1;
    if (!has_hi || hi >= cap) hi = cap, hi_x = true, has_hi = 1;
  }
  bool unb_lo = !has_lo || lo <= -BIG, unb_hi = !has_hi || hi >= BIG;
  if (!unb_lo && !unb_hi && (lo > hi || (lo == hi && (lo_x || hi_x))))
    return js_fail_unsat(c, "a numeric range with no value");
  if (!number) {
    long long ilo = 0, ihi = 0;
    if (!unb_lo) {
      double v = lo_x ? floor(lo) + 1 : ceil(lo);
      if (v >= BIG) return js_fail(c, "minimum above 1e15 is not supported");
      ilo = (long long)v;
    }
    if (!unb_hi) {
      double v = hi_x ? ceil(hi) - 1 : floor(hi);
      if (v <= -BIG) return js_fail(c, "maximum below -1e15 is not supported");
      ihi = (long long)v;
    }
    if (!unb_lo && !unb_hi && ihi < ilo)
      return js_fail_unsat(c, "an integer range with no value");
    if (k > 1) {
      if (!unb_lo && !unb_hi && (ihi - ilo) / k <= MAX_INT_RANGE) {
        long long first = ilo >= 0 ? (ilo + k - 1) / k * k : -((-ilo) / k * k);
        int n = 0;
        js_sb_add(b, "( ", 2);
        for (long long v = first; v <= ihi; v += k)
          js_sb_printf(b, "%s\"%lld\"", n++ ? " | " : "", v);
        if (!n) return js_fail_unsat(c, "no multiple of %lld in the range", k);
        js_sb_add(b, " )", 2);
        return 0;
      }
      if (!unb_hi || k > MAX_MULTIPLE || (!unb_lo && ilo > k))
        return js_fail(c,
                       "'multipleOf' %lld with these bounds is not supported "
                       "(a range of at most %d multiples, or no maximum, a "
                       "minimum of at most the multiple and a multiple of "
                       "at most %d)",
                       k, MAX_INT_RANGE, MAX_MULTIPLE);
      if (multiples(c, b, k, unb_lo || ilo <= 0, false)) return -1;
      if (unb_lo) {
        js_sb_add(b, " | ", 3);
        return multiples(c, b, k, false, true);
      }
      return 0;
    }
    int_interval(b, ilo, ihi, unb_lo, unb_hi);
    return 0;
  }
  if (!unb_lo && lo >= BIG) /* as for integers: to_dec takes below BIG */
    return js_fail(c, "minimum above 1e15 is not supported");
  if (!unb_hi && hi <= -BIG)
    return js_fail(c, "maximum below -1e15 is not supported");
  /* Numbers: exclusive bounds move to the next double inward. */
  if (!unb_lo && lo_x) lo = nextafter(lo, INFINITY);
  if (!unb_hi && hi_x) hi = nextafter(hi, -INFINITY);
  if (!unb_lo && !unb_hi && lo > hi)
    return js_fail_unsat(c, "a numeric range with no value");
  bool pos = unb_hi || hi >= 0, neg = unb_lo || lo < 0;
  if (pos) {
    dec a = {0}, z = {0};
    if (!unb_lo && lo > 0) to_dec(lo, true, &a);
    if (!unb_hi) to_dec(hi, false, &z);
    if (!unb_hi && dec_less(&z, &a))
      return js_fail(c, "a numeric range too narrow for 16 decimals");
    dec_range(b, &a, unb_hi ? NULL : &z);
  }
  if (pos && neg) js_sb_add(b, " | ", 3);
  if (neg) { /* "-" and the absolute value in [max(-hi, 0), -lo] */
    dec a = {0}, z = {0};
    if (!unb_hi && hi < 0) to_dec(-hi, true, &a);
    if (!unb_lo) to_dec(-lo, false, &z);
    if (!unb_lo && dec_less(&z, &a))
      return js_fail(c, "a numeric range too narrow for 16 decimals");
    js_sb_add(b, "\"-\" ", 4);
    dec_range(b, &a, unb_lo ? NULL : &z);
  }
  return 0;
}
