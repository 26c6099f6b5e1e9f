/* The table-driven flags shared by the generating commands and `nucleus
 * serve`: the model options (-t, -fa, -ctk, -ctv, --load-mode, the RoPE
 * overrides, --reference-kernels, --no-repack) and the engine options (-c,
 * --kv-tokens, --parallel, --batch-tokens, --no-prefix-cache, --swa-full,
 * ...). Parsed and described by the library's tables (include/nucleus.h,
 * nucleus_model_options_* and nucleus_engine_options_*), so every command
 * takes the same flags, answers with the same message and shows the
 * library's defaults. */
#ifndef NUCLEUS_CLI_MODEL_FLAGS_H
#define NUCLEUS_CLI_MODEL_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#include "nucleus.h"

/* Tries argv[*i] (and its value) as a model option into *mp. Returns 1
 * when consumed (*i past its value), 0 when argv[*i] is not one, -1 after
 * writing "FLAG: why" into msg. */
int model_flags_parse(nucleus_model_params *mp, int argc, char **argv, int *i,
                      char *msg, size_t cap);
/* The same for an engine option into *ep. */
int engine_flags_parse(nucleus_engine_params *ep, int argc, char **argv, int *i,
                       char *msg, size_t cap);

/* The value after the option at argv[i], or NULL when there is none or
 * the next word is itself an option ("-m --temp 0.5": -m has no value;
 * taking "--temp" for a file name would blame "0.5" for being unknown). A
 * word is an option when it starts with '-' and a letter ("-5", "-0.5"
 * and "-" are values). */
const char *flag_value(int argc, char **argv, int i);

/* One help line per option, with the library's default. */
void model_flags_help(FILE *out);
void engine_flags_help(FILE *out);

#endif
