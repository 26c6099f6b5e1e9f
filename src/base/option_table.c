/* option_table: setting, checking and formatting an option table's rows. */
#include "option_table.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const nc_opt_row *row_of(const nucleus_option_info *opt) {
  return (const nc_opt_row *)opt; /* opt is a row's first member */
}

const nucleus_option_info *nc_opt_find(const nc_opt_row *rows, size_t n,
                                       const char *name) {
  for (size_t i = 0; name && i < n; i++) {
    const nucleus_option_info *o = &rows[i].info;
    if (!strcmp(o->name, name) || !strcmp(o->cli_flag, name) ||
        (o->cli_alias && !strcmp(o->cli_alias, name)) ||
        (rows[i].also && !strcmp(rows[i].also, name)))
      return o;
  }
  return NULL;
}

const char *nc_opt_also(const nucleus_option_info *opt) {
  return opt ? row_of(opt)->also : NULL;
}

int nc_opt_choice(const nucleus_option_info *opt, const char *name) {
  for (int i = 0; name && opt->choices && opt->choices[i]; i++)
    if (!strcmp(opt->choices[i], name)) return i;
  return -1;
}

int nc_opt_n_choices(const nucleus_option_info *opt) {
  int n = 0;
  while (opt->choices && opt->choices[n])
    n++;
  return n;
}

nc_code nc_opt_refuse(const nucleus_option_info *o, const char *got,
                      nc_error *err) {
  switch (o->kind) {
  case NUCLEUS_OPTION_FLAG:
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'%s' must be true or false, got %s", o->name, got);
  case NUCLEUS_OPTION_INT:
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'%s' must be an integer in [%.0f, %.0f], got %s", o->name,
                   o->min, o->max, got);
  case NUCLEUS_OPTION_FLOAT:
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'%s' must be a number in [%g, %g], got %s", o->name, o->min,
                   o->max, got);
  case NUCLEUS_OPTION_CHOICE: break;
  }
  char names[96] = "";
  for (int i = 0; o->choices[i]; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
             i ? (o->choices[i + 1] ? ", " : " or ") : "", o->choices[i]);
  return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "'%s' must be %s, got %s",
                 o->name, names, got);
}

static bool in_range(const nucleus_option_info *o, double v) {
  if (!isfinite(v) || v < o->min || v > o->max) return false;
  return o->kind != NUCLEUS_OPTION_INT || v == floor(v);
}

nc_code nc_opt_check(const void *params, const nucleus_option_info *opt,
                     nc_error *err) {
  const nc_opt_row *r = row_of(opt);
  const char *base = (const char *)params + r->offset;
  char got[48];
  double v = 0;
  switch (r->st) {
  case NC_OPT_I32: v = *(const int32_t *)(const void *)base; break;
  case NC_OPT_I64: v = (double)*(const int64_t *)(const void *)base; break;
  case NC_OPT_FLOAT: v = *(const float *)(const void *)base; break;
  case NC_OPT_BOOL: return NC_OK;
  case NC_OPT_ENUM: {
    int e = *(const int *)(const void *)base;
    if (e >= 0 && e < nc_opt_n_choices(opt)) return NC_OK;
    snprintf(got, sizeof got, "%d", e);
    return nc_opt_refuse(opt, got, err);
  }
  case NC_OPT_NAME: {
    const char *s = *(const char *const *)(const void *)base;
    if (!s || nc_opt_choice(opt, s) >= 0) return NC_OK;
    snprintf(got, sizeof got, "'%.32s'", s);
    return nc_opt_refuse(opt, got, err);
  }
  }
  if (in_range(opt, v)) return NC_OK;
  if (r->st == NC_OPT_I64)
    snprintf(got, sizeof got, "%lld",
             (long long)*(const int64_t *)(const void *)base);
  else
    snprintf(got, sizeof got, "%g", v);
  return nc_opt_refuse(opt, got, err);
}

nc_code nc_opt_check_all(const void *params, const nc_opt_row *rows, size_t n,
                         nc_error *err) {
  for (size_t i = 0; i < n; i++) {
    nc_code rc = nc_opt_check(params, &rows[i].info, err);
    if (rc != NC_OK) return rc;
  }
  return NC_OK;
}

nc_code nc_opt_set(void *params, const nucleus_option_info *opt,
                   const char *text, nc_error *err) {
  const nc_opt_row *r = row_of(opt);
  char *base = (char *)params + r->offset;
  char got[80];
  snprintf(got, sizeof got, "'%.64s'", text ? text : "");
  if (r->st == NC_OPT_BOOL) {
    bool on = !text || !strcmp(text, "true") || !strcmp(text, "1");
    if (text && !on && strcmp(text, "false") && strcmp(text, "0"))
      return nc_opt_refuse(opt, got, err);
    *(bool *)(void *)base = on;
    return NC_OK;
  }
  if (!text) return nc_opt_refuse(opt, "nothing", err);
  if (r->st == NC_OPT_ENUM || r->st == NC_OPT_NAME) {
    int c = nc_opt_choice(opt, text);
    if (c < 0) return nc_opt_refuse(opt, got, err);
    if (r->st == NC_OPT_ENUM)
      *(int *)(void *)base = c;
    else
      *(const char **)(void *)base = opt->choices[c]; /* static */
    return NC_OK;
  }
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !in_range(opt, v))
    return nc_opt_refuse(opt, got, err);
  if (r->st == NC_OPT_I32)
    *(int32_t *)(void *)base = (int32_t)v;
  else if (r->st == NC_OPT_I64)
    *(int64_t *)(void *)base = (int64_t)v;
  else
    *(float *)(void *)base = (float)v;
  return NC_OK;
}

void nc_opt_format(const void *params, const nucleus_option_info *opt,
                   char *buf, size_t cap) {
  const nc_opt_row *r = row_of(opt);
  const char *base = (const char *)params + r->offset;
  double v = 0;
  switch (r->st) {
  case NC_OPT_BOOL:
    snprintf(buf, cap, "%s", *(const bool *)(const void *)base ? "on" : "off");
    return;
  case NC_OPT_ENUM: {
    int e = *(const int *)(const void *)base;
    snprintf(buf, cap, "%s",
             e >= 0 && e < nc_opt_n_choices(opt) ? opt->choices[e] : "?");
    return;
  }
  case NC_OPT_NAME: {
    const char *s = *(const char *const *)(const void *)base;
    snprintf(buf, cap, "%s", s ? s : r->zero_note);
    return;
  }
  case NC_OPT_I32: v = *(const int32_t *)(const void *)base; break;
  case NC_OPT_I64: v = (double)*(const int64_t *)(const void *)base; break;
  case NC_OPT_FLOAT: v = *(const float *)(const void *)base; break;
  }
  if (v == 0 && r->zero_note)
    snprintf(buf, cap, "0 (%s)", r->zero_note);
  else
    snprintf(buf, cap, "%g", v);
}
