/* jinja_format: Python string formatting as templates use it: the
 * printf-style '%' operator (and jinja2's format filter) and str.format(). */
#include <stdio.h>
#include <string.h>

#include "jinja_interp.h"

/* One %-conversion of v into b; spec holds flags/width/precision. */
static bool convert(jinterp *I, jbuf *b, char conv, const char *spec, jv v) {
  char fmt[48], tmp[512];
  switch (conv) {
  case 's':
  case 'r': {
    jbuf sb;
    jbuf_init(&sb, I->lim.max_output);
    if (conv == 's')
      jv_write_str(&sb, v);
    else
      jv_write_repr(&sb, v);
    snprintf(fmt, sizeof fmt, "%%%ss", spec);
    /* width and precision apply to the text: format it through snprintf
     * only when short, else copy it as is */
    bool plain = spec[0] == '\0';
    if (!plain && sb.n < 256 && !memchr(sb.p ? sb.p : "", 0, sb.n)) {
      int n = snprintf(tmp, sizeof tmp, fmt, sb.p ? sb.p : "");
      jbuf_add(b, tmp,
               n < 0                    ? 0
               : (size_t)n < sizeof tmp ? (size_t)n
                                        : sizeof tmp - 1);
    } else {
      jbuf_add(b, sb.p ? sb.p : "", sb.n);
    }
    jbuf_free(&sb);
    return true;
  }
  case 'd':
  case 'i':
  case 'x':
  case 'X':
  case 'o':
  case 'c': {
    if (!jv_is_num(v))
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "%%%c format: a real number is required, not %s", conv,
                   jv_type_name(v));
    long long x = v.t == JV_FLOAT  ? (long long)v.u.f
                  : v.t == JV_BOOL ? v.u.b
                                   : v.u.i;
    if (conv == 'c') {
      snprintf(fmt, sizeof fmt, "%%%sc", spec);
      snprintf(tmp, sizeof tmp, fmt, (int)(x & 0x7f));
    } else {
      snprintf(fmt, sizeof fmt, "%%%sll%c", spec, conv == 'i' ? 'd' : conv);
      snprintf(tmp, sizeof tmp, fmt, x);
    }
    return jbuf_adds(b, tmp);
  }
  case 'f':
  case 'F':
  case 'e':
  case 'E':
  case 'g':
  case 'G':
    if (!jv_is_num(v))
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "%%%c format: a real number is required, not %s", conv,
                   jv_type_name(v));
    snprintf(fmt, sizeof fmt, "%%%s%c", spec, conv);
    snprintf(tmp, sizeof tmp, fmt, jv_num(v));
    return jbuf_adds(b, tmp);
  default:
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "unsupported format character '%c'", conv);
  }
}

bool jformat_percent(jinterp *I, jv fmtv, jv arg, jv *out) {
  const char *f = fmtv.u.s.p, *end = f + fmtv.u.s.n;
  size_t argi = 0, nargs = 1;
  const jv *args = &arg;
  if (arg.t == JV_LIST && arg.u.l->tuple) {
    args = arg.u.l->v;
    nargs = arg.u.l->n;
  }
  jbuf b;
  jbuf_init(&b, I->lim.max_output);
  while (f < end) {
    const char *pct = memchr(f, '%', (size_t)(end - f));
    if (!pct) {
      jbuf_add(&b, f, (size_t)(end - f));
      break;
    }
    jbuf_add(&b, f, (size_t)(pct - f));
    f = pct + 1;
    jv v;
    bool named = false;
    if (f < end && *f == '(') { /* %(name)s */
      const char *close = memchr(f, ')', (size_t)(end - f));
      if (!close || (arg.t != JV_DICT)) {
        jbuf_free(&b);
        return jfail(I, NC_ERR_INVALID_ARGUMENT, "format requires a mapping");
      }
      if (!jdict_get_str(arg.u.d, f + 1, (size_t)(close - f - 1), &v)) {
        jbuf_free(&b);
        return jfail(I, NC_ERR_INVALID_ARGUMENT, "format key not found");
      }
      named = true;
      f = close + 1;
    }
    char spec[24];
    size_t sn = 0;
    while (f < end && strchr("-+ #0123456789.", *f) && sn < sizeof spec - 1)
      spec[sn++] = *f++;
    spec[sn] = '\0';
    if (f >= end) {
      jbuf_free(&b);
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "incomplete format");
    }
    char conv = *f++;
    if (conv == '%') {
      jbuf_addc(&b, '%');
      continue;
    }
    if (!named) {
      if (argi >= nargs) {
        jbuf_free(&b);
        return jfail(I, NC_ERR_INVALID_ARGUMENT,
                     "not enough arguments for format string");
      }
      v = args[argi++];
    }
    if (!convert(I, &b, conv, spec, v)) {
      jbuf_free(&b);
      return false;
    }
  }
  bool is_tuple = arg.t == JV_LIST && arg.u.l->tuple;
  /* like Python: an unused argument is an error unless it is a mapping or
   * another non-tuple, non-str object with __getitem__ (a list) */
  bool mapping_like =
      arg.t == JV_DICT || arg.t == JV_NS || (arg.t == JV_LIST && !is_tuple);
  if (argi < nargs && !mapping_like) {
    jbuf_free(&b);
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "not all arguments converted during string formatting");
  }
  return jv_from_buf(I, &b, out);
}

/* str.format with {} {0} {name} fields and !r / !s conversions. */
bool jformat_method(jinterp *I, jv fmtv, const jv *args, size_t nargs,
                    const jkw *kw, size_t nkw, jv *out) {
  const char *f = fmtv.u.s.p, *end = f + fmtv.u.s.n;
  size_t auto_i = 0;
  jbuf b;
  jbuf_init(&b, I->lim.max_output);
  while (f < end) {
    char c = *f++;
    if (c == '}' && f < end && *f == '}') {
      jbuf_addc(&b, '}');
      f++;
      continue;
    }
    if (c != '{') {
      jbuf_addc(&b, c);
      continue;
    }
    if (f < end && *f == '{') {
      jbuf_addc(&b, '{');
      f++;
      continue;
    }
    const char *close = memchr(f, '}', (size_t)(end - f));
    if (!close) {
      jbuf_free(&b);
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "single '{' encountered in format string");
    }
    const char *name = f, *name_end = close;
    char conv = 's';
    const char *bang = memchr(name, '!', (size_t)(close - name));
    const char *colon = memchr(name, ':', (size_t)(close - name));
    if (colon) {
      jbuf_free(&b);
      return jfail(I, NC_ERR_UNSUPPORTED,
                   "format specs in str.format() are not supported");
    }
    if (bang) {
      name_end = bang;
      conv = bang + 1 < close ? bang[1] : 's';
    }
    size_t nl = (size_t)(name_end - name);
    jv v;
    bool found = false;
    if (nl == 0) {
      found = auto_i < nargs;
      if (found) v = args[auto_i++];
    } else if (name[0] >= '0' && name[0] <= '9') {
      size_t idx = 0;
      for (size_t k = 0; k < nl && name[k] >= '0' && name[k] <= '9'; k++)
        idx = idx * 10 + (size_t)(name[k] - '0');
      found = idx < nargs;
      if (found) v = args[idx];
    } else {
      for (size_t k = 0; k < nkw && !found; k++)
        if (kw[k].len == nl && memcmp(kw[k].name, name, nl) == 0) {
          v = kw[k].val;
          found = true;
        }
    }
    if (!found) {
      jbuf_free(&b);
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "format field '%.*s' has no argument", (int)nl, name);
    }
    if (conv == 'r')
      jv_write_repr(&b, v);
    else
      jv_write_str(&b, v);
    f = close + 1;
  }
  return jv_from_buf(I, &b, out);
}
