/* model_options: the one table of the model options a command line sets
 * (nucleus_model_params' fields: threads, kernels, flash attention, the
 * KV cache types, the RoPE overrides, the load mode). Each row is the
 * field's name, its flags, its values and its help; where the field lives
 * in nucleus_model_params. nucleus_model_load's checks, `nucleus run`'s and
 * `nucleus serve`'s flags and both --help texts read it, so every surface
 * gives the same answer with the same message and shows the library's
 * defaults. */
#ifndef NC_MODEL_OPTIONS_H
#define NC_MODEL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "nucleus.h"

/* The table (nucleus_option_info is public: include/nucleus.h). */
size_t nc_model_options_count(void);
const nucleus_option_info *nc_model_options_at(size_t i);
/* By field name, flag or alias; NULL when none. */
const nucleus_option_info *nc_model_options_find(const char *name);

/* Sets the option in p from its text (NULL for a flag). The message, on
 * every surface: "'NAME' must be ..., got 'TEXT'". */
nc_code nc_model_options_set(nucleus_model_params *p,
                             const nucleus_option_info *opt, const char *text,
                             nc_error *err);

/* Checks the value p holds for the option / for every option. */
nc_code nc_model_options_check(const nucleus_model_params *p,
                               const nucleus_option_info *opt, nc_error *err);
nc_code nc_model_options_check_all(const nucleus_model_params *p,
                                   nc_error *err);

/* The option's value in p as text: "auto (on)", "f16", "0 (the file's)". */
void nc_model_options_format(const nucleus_model_params *p,
                             const nucleus_option_info *opt, char *buf,
                             size_t cap);

/* The index of name among a CHOICE option's choices (the enum's value);
 * -1 when it is not one. */
int nc_model_options_choice(const char *field, const char *name);
/* The name of a CHOICE option's value v; NULL when out of range. */
const char *nc_model_options_choice_name(const char *field, int v);

#endif
