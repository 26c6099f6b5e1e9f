/* model_options: the model-option table and its checks. */
#include "model_options.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* How a row's field is stored in nucleus_model_params. */
typedef enum store { ST_INT, ST_FLOAT, ST_BOOL, ST_ENUM, ST_NAME } store;

typedef struct row {
  nucleus_option_info info; /* first: a row is found from its info */
  size_t offset;            /* into nucleus_model_params */
  store st;
  const char *zero_note; /* what 0 (or NULL) means, shown with the value */
} row;

#define M(field) offsetof(nucleus_model_params, field)

/* Enum fields are stored and read as int. */
_Static_assert(sizeof(nucleus_flash_attn) == sizeof(int) &&
                   sizeof(nucleus_cache_type) == sizeof(int) &&
                   sizeof(nucleus_load_mode) == sizeof(int),
               "enum fields are ints");

/* Indexed by each enum's values (include/nucleus.h). */
static const char *const FLASH_ATTN[] = {"auto", "on", "off", NULL};
static const char *const CACHE_TYPES[] = {"f16", "bf16", "q8_0", "q4_0", NULL};
static const char *const LOAD_MODES[] = {"auto", "read", "mmap", NULL};
static const char *const ROPE_SCALING[] = {"none", "linear", "yarn", NULL};

static const row ROWS[] = {
    {{"n_threads", "--threads", "-t", NUCLEUS_OPTION_INT, "N", 0, 1024, NULL,
      "compute threads"},
     M(n_threads),
     ST_INT,
     "all cores"},
    {{"flash_attn", "--flash-attn", "-fa", NUCLEUS_OPTION_CHOICE, "WHEN", 0, 0,
      FLASH_ATTN,
      "flash attention: on, off or auto (auto as llama.cpp's CPU "
      "default)"},
     M(flash_attn),
     ST_ENUM,
     NULL},
    {{"cache_type_k", "--cache-type-k", "-ctk", NUCLEUS_OPTION_CHOICE, "T", 0,
      0, CACHE_TYPES, "KV cache type of K: f16, bf16, q8_0 or q4_0"},
     M(cache_type_k),
     ST_ENUM,
     NULL},
    {{"cache_type_v", "--cache-type-v", "-ctv", NUCLEUS_OPTION_CHOICE, "T", 0,
      0, CACHE_TYPES,
      "KV cache type of V, the same; any but f16 needs flash attention "
      "(auto turns it on)"},
     M(cache_type_v),
     ST_ENUM,
     NULL},
    {{"load_mode", "--load-mode", NULL, NUCLEUS_OPTION_CHOICE, "HOW", 0, 0,
      LOAD_MODES,
      "read the file into memory in 2 MiB pages (read), map it (mmap), or "
      "auto (read when the file takes at most half the available memory)"},
     M(load_mode),
     ST_ENUM,
     NULL},
    {{"rope_scaling", "--rope-scaling", NULL, NUCLEUS_OPTION_CHOICE, "TYPE", 0,
      0, ROPE_SCALING, "RoPE scaling type: none, linear or yarn"},
     M(rope_scaling),
     ST_NAME,
     "the file's"},
    {{"rope_scale", "--rope-scale", NULL, NUCLEUS_OPTION_FLOAT, "X", 0, 1e6,
      NULL, "RoPE scaling factor"},
     M(rope_scale),
     ST_FLOAT,
     "the file's"},
    {{"rope_freq_base", "--rope-freq-base", NULL, NUCLEUS_OPTION_FLOAT, "X", 0,
      1e12, NULL, "RoPE base frequency"},
     M(rope_freq_base),
     ST_FLOAT,
     "the file's"},
    {{"yarn_orig_ctx", "--yarn-orig-ctx", NULL, NUCLEUS_OPTION_INT, "N", 0,
      INT32_MAX, NULL, "YaRN's original context"},
     M(yarn_orig_ctx),
     ST_INT,
     "the file's"},
    {{"reference_kernels", "--reference-kernels", NULL, NUCLEUS_OPTION_FLAG,
      NULL, 0, 1, NULL, "use the plain-C reference kernels (for checking)"},
     M(reference_kernels),
     ST_BOOL,
     NULL},
    {{"no_repack", "--no-repack", NULL, NUCLEUS_OPTION_FLAG, NULL, 0, 1, NULL,
      "add in the float order of llama.cpp --no-repack (no AMX tiles)"},
     M(no_repack),
     ST_BOOL,
     NULL},
};
#define N_ROWS (sizeof ROWS / sizeof ROWS[0])

size_t nc_model_options_count(void) {
  return N_ROWS;
}

const nucleus_option_info *nc_model_options_at(size_t i) {
  return i < N_ROWS ? &ROWS[i].info : NULL;
}

const nucleus_option_info *nc_model_options_find(const char *name) {
  for (size_t i = 0; name && i < N_ROWS; i++) {
    const nucleus_option_info *o = &ROWS[i].info;
    if (!strcmp(o->name, name) || !strcmp(o->cli_flag, name) ||
        (o->cli_alias && !strcmp(o->cli_alias, name)))
      return o;
  }
  return NULL;
}

static const row *row_of(const nucleus_option_info *opt) {
  return (const row *)opt; /* opt is a row's first member */
}

static int choice_of(const nucleus_option_info *opt, const char *name) {
  for (int i = 0; name && opt->choices[i]; i++)
    if (!strcmp(opt->choices[i], name)) return i;
  return -1;
}

static int n_choices(const nucleus_option_info *opt) {
  int n = 0;
  while (opt->choices[n])
    n++;
  return n;
}

int nc_model_options_choice(const char *field, const char *name) {
  const nucleus_option_info *o = nc_model_options_find(field);
  return o && o->kind == NUCLEUS_OPTION_CHOICE ? choice_of(o, name) : -1;
}

const char *nc_model_options_choice_name(const char *field, int v) {
  const nucleus_option_info *o = nc_model_options_find(field);
  if (!o || o->kind != NUCLEUS_OPTION_CHOICE || v < 0 || v >= n_choices(o))
    return NULL;
  return o->choices[v];
}

/* The one message of each kind; got is the value as given. */
static nc_code refuse(const nucleus_option_info *o, const char *got,
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

nc_code nc_model_options_check(const nucleus_model_params *p,
                               const nucleus_option_info *opt, nc_error *err) {
  const row *r = row_of(opt);
  const char *base = (const char *)p + r->offset;
  char got[48];
  double v = 0;
  switch (r->st) {
  case ST_INT: v = *(const int32_t *)(const void *)base; break;
  case ST_FLOAT: v = *(const float *)(const void *)base; break;
  case ST_BOOL: return NC_OK;
  case ST_ENUM: {
    int e = *(const int *)(const void *)base;
    if (e >= 0 && e < n_choices(opt)) return NC_OK;
    snprintf(got, sizeof got, "%d", e);
    return refuse(opt, got, err);
  }
  case ST_NAME: {
    const char *s = *(const char *const *)(const void *)base;
    if (!s || choice_of(opt, s) >= 0) return NC_OK;
    snprintf(got, sizeof got, "'%.32s'", s);
    return refuse(opt, got, err);
  }
  }
  if (in_range(opt, v)) return NC_OK;
  snprintf(got, sizeof got, "%g", v);
  return refuse(opt, got, err);
}

nc_code nc_model_options_check_all(const nucleus_model_params *p,
                                   nc_error *err) {
  for (size_t i = 0; i < N_ROWS; i++) {
    nc_code rc = nc_model_options_check(p, &ROWS[i].info, err);
    if (rc != NC_OK) return rc;
  }
  return NC_OK;
}

nc_code nc_model_options_set(nucleus_model_params *p,
                             const nucleus_option_info *opt, const char *text,
                             nc_error *err) {
  const row *r = row_of(opt);
  char *base = (char *)p + r->offset;
  char got[80];
  snprintf(got, sizeof got, "'%.64s'", text ? text : "");
  if (r->st == ST_BOOL) {
    bool on = !text || !strcmp(text, "true") || !strcmp(text, "1");
    if (text && !on && strcmp(text, "false") && strcmp(text, "0"))
      return refuse(opt, got, err);
    *(bool *)(void *)base = on;
    return NC_OK;
  }
  if (!text) return refuse(opt, "nothing", err);
  if (r->st == ST_ENUM || r->st == ST_NAME) {
    int c = choice_of(opt, text);
    if (c < 0) return refuse(opt, got, err);
    if (r->st == ST_ENUM)
      *(int *)(void *)base = c;
    else
      *(const char **)(void *)base = opt->choices[c]; /* static */
    return NC_OK;
  }
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !in_range(opt, v))
    return refuse(opt, got, err);
  if (r->st == ST_INT)
    *(int32_t *)(void *)base = (int32_t)v;
  else
    *(float *)(void *)base = (float)v;
  return NC_OK;
}

void nc_model_options_format(const nucleus_model_params *p,
                             const nucleus_option_info *opt, char *buf,
                             size_t cap) {
  const row *r = row_of(opt);
  const char *base = (const char *)p + r->offset;
  double v = 0;
  switch (r->st) {
  case ST_BOOL:
    snprintf(buf, cap, "%s", *(const bool *)(const void *)base ? "on" : "off");
    return;
  case ST_ENUM: {
    int e = *(const int *)(const void *)base;
    const char *name = e >= 0 && e < n_choices(opt) ? opt->choices[e] : "?";
    /* auto resolves as the model load resolves it */
    if (!strcmp(opt->name, "flash_attn") && e == NUCLEUS_FLASH_ATTN_AUTO)
      snprintf(buf, cap, "%s (%s)", name, NC_FLASH_ATTN_AUTO_ON ? "on" : "off");
    else
      snprintf(buf, cap, "%s", name);
    return;
  }
  case ST_NAME: {
    const char *s = *(const char *const *)(const void *)base;
    snprintf(buf, cap, "%s", s ? s : r->zero_note);
    return;
  }
  case ST_INT: v = *(const int32_t *)(const void *)base; break;
  case ST_FLOAT: v = *(const float *)(const void *)base; break;
  }
  if (v == 0 && r->zero_note)
    snprintf(buf, cap, "0 (%s)", r->zero_note);
  else
    snprintf(buf, cap, "%g", v);
}
