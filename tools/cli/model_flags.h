/* The model options' flags (-t, -fa, -ctk, -ctv, --load-mode, the RoPE
 * overrides, --reference-kernels, --no-repack), shared by the generating
 * commands and `nucleus serve`: parsed and described by the library's
 * model-option table (include/nucleus.h, nucleus_model_options_*), so every
 * command takes the same flags, answers with the same message and shows
 * the library's defaults. */
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

/* One help line per option, with the library's default. */
void model_flags_help(FILE *out);

#endif
