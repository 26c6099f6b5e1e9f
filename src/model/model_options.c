/* model_options: the model-option table and its checks. */
#include "model_options.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/option_table.h"
#include "model.h"

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

static const nc_opt_row ROWS[] = {
    {{"n_threads", "--threads", "-t", NUCLEUS_OPTION_INT, "N", 0, 1024, NULL,
      "compute threads"},
     M(n_threads),
     NC_OPT_I32,
     "all cores",
     NULL},
    {{"flash_attn", "--flash-attn", "-fa", NUCLEUS_OPTION_CHOICE, "WHEN", 0, 0,
      FLASH_ATTN,
      "flash attention: on, off or auto (auto as llama.cpp's CPU "
      "default)"},
     M(flash_attn),
     NC_OPT_ENUM,
     NULL,
     NULL},
    {{"cache_type_k", "--cache-type-k", "-ctk", NUCLEUS_OPTION_CHOICE, "T", 0,
      0, CACHE_TYPES, "KV cache type of K: f16, bf16, q8_0 or q4_0"},
     M(cache_type_k),
     NC_OPT_ENUM,
     NULL,
     NULL},
    {{"cache_type_v", "--cache-type-v", "-ctv", NUCLEUS_OPTION_CHOICE, "T", 0,
      0, CACHE_TYPES,
      "KV cache type of V, the same; any but f16 needs flash attention "
      "(auto turns it on)"},
     M(cache_type_v),
     NC_OPT_ENUM,
     NULL,
     NULL},
    {{"load_mode", "--load-mode", NULL, NUCLEUS_OPTION_CHOICE, "HOW", 0, 0,
      LOAD_MODES,
      "read the file into memory in 2 MiB pages (read), map it (mmap), or "
      "auto (read when the file takes at most half the available memory)"},
     M(load_mode),
     NC_OPT_ENUM,
     NULL,
     NULL},
    {{"rope_scaling", "--rope-scaling", NULL, NUCLEUS_OPTION_CHOICE, "TYPE", 0,
      0, ROPE_SCALING, "RoPE scaling type: none, linear or yarn"},
     M(rope_scaling),
     NC_OPT_NAME,
     "the file's",
     NULL},
    {{"rope_scale", "--rope-scale", NULL, NUCLEUS_OPTION_FLOAT, "X", 0, 1e6,
      NULL, "RoPE scaling factor"},
     M(rope_scale),
     NC_OPT_FLOAT,
     "the file's",
     NULL},
    {{"rope_freq_base", "--rope-freq-base", NULL, NUCLEUS_OPTION_FLOAT, "X", 0,
      1e12, NULL, "RoPE base frequency"},
     M(rope_freq_base),
     NC_OPT_FLOAT,
     "the file's",
     NULL},
    {{"yarn_orig_ctx", "--yarn-orig-ctx", NULL, NUCLEUS_OPTION_INT, "N", 0,
      INT32_MAX, NULL, "YaRN's original context"},
     M(yarn_orig_ctx),
     NC_OPT_I32,
     "the file's",
     NULL},
    {{"reference_kernels", "--reference-kernels", NULL, NUCLEUS_OPTION_FLAG,
      NULL, 0, 1, NULL, "use the plain-C reference kernels (for checking)"},
     M(reference_kernels),
     NC_OPT_BOOL,
     NULL,
     NULL},
    {{"no_repack", "--no-repack", NULL, NUCLEUS_OPTION_FLAG, NULL, 0, 1, NULL,
      "add in the float order of llama.cpp --no-repack (no AMX tiles)"},
     M(no_repack),
     NC_OPT_BOOL,
     NULL,
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
  return nc_opt_find(ROWS, N_ROWS, name);
}

int nc_model_options_choice(const char *field, const char *name) {
  const nucleus_option_info *o = nc_model_options_find(field);
  return o && o->kind == NUCLEUS_OPTION_CHOICE ? nc_opt_choice(o, name) : -1;
}

const char *nc_model_options_choice_name(const char *field, int v) {
  const nucleus_option_info *o = nc_model_options_find(field);
  if (!o || o->kind != NUCLEUS_OPTION_CHOICE || v < 0 ||
      v >= nc_opt_n_choices(o))
    return NULL;
  return o->choices[v];
}

nc_code nc_model_options_check(const nucleus_model_params *p,
                               const nucleus_option_info *opt, nc_error *err) {
  return nc_opt_check(p, opt, err);
}

nc_code nc_model_options_check_all(const nucleus_model_params *p,
                                   nc_error *err) {
  return nc_opt_check_all(p, ROWS, N_ROWS, err);
}

nc_code nc_model_options_set(nucleus_model_params *p,
                             const nucleus_option_info *opt, const char *text,
                             nc_error *err) {
  return nc_opt_set(p, opt, text, err);
}

void nc_model_options_format(const nucleus_model_params *p,
                             const nucleus_option_info *opt, char *buf,
                             size_t cap) {
  /* auto resolves as the model load resolves it */
  if (!strcmp(opt->name, "flash_attn") &&
      p->flash_attn == NUCLEUS_FLASH_ATTN_AUTO)
    snprintf(buf, cap, "auto (%s)", NC_FLASH_ATTN_AUTO_ON ? "on" : "off");
  else
    nc_opt_format(p, opt, buf, cap);
}
