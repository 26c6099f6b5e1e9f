/* sampler_contract: the one table of generation parameters. Each row is a
 * parameter's name (the OpenAI/vLLM request field), its CLI flag, kind,
 * allowed range, its default on each surface (library, server, CLI), the
 * GGUF key a model file may recommend it under, and where it lives in
 * nucleus_request_params. The server's parser, the CLI's options, the
 * library's validation and docs/SERVER.md's table all read it, so every
 * surface gives the same answer with the same message. */
#ifndef NC_SAMPLER_CONTRACT_H
#define NC_SAMPLER_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "nucleus.h"

/* The table (nucleus_param_info is public: include/nucleus.h). */
size_t nc_params_count(void);
const nucleus_param_info *nc_params_at(size_t i);
const nucleus_param_info *nc_params_find(const char *name);

/* The parameter's value in p, as a double. */
double nc_params_value(const nucleus_request_params *p,
                       const nucleus_param_info *info);

/* Checks v against the row's kind and range and stores it into p (top_k:
 * -1 is stored as 0, off). The message, on every surface: "'NAME' must be
 * in [LO, HI], got V". */
nc_code nc_params_set(nucleus_request_params *p, const nucleus_param_info *info,
                      double v, nc_error *err);

/* Checks the value p holds for the row. */
nc_code nc_params_check(const nucleus_request_params *p,
                        const nucleus_param_info *info, nc_error *err);

/* Checks every row of the sampling parameters / of the request's own
 * (non-sampling) parameters. */
nc_code nc_params_check_sampling(const nucleus_sampling_params *s,
                                 nc_error *err);
nc_code nc_params_check_request(const nucleus_request_params *p, nc_error *err);

/* The row's default on a surface. */
double nc_params_default(const nucleus_param_info *info, nucleus_surface s);

/* p set to a surface's defaults (everything else as
 * nucleus_request_default_params). */
void nc_params_apply_defaults(nucleus_request_params *p, nucleus_surface s);

#endif
