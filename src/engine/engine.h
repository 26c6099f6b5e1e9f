/* engine: the request lifecycle and the step loop (see engine.c). The public
 * functions are declared in nucleus.h; this header holds the internals that
 * other modules and tests use. */
#ifndef NC_ENGINE_H
#define NC_ENGINE_H

#include <stdbool.h>

#include "base/status.h"
#include "model/model.h"

/* Fills out with params, defaults resolved against the model (n_ctx capped
 * to the model's training context, the KV pool at least one context, ...),
 * and checks their ranges. */
nc_code nc_engine_resolve_params(const nc_hparams *hp,
                                 const nucleus_engine_params *params,
                                 nucleus_engine_params *out, nc_error *err);

/* An engine without its thread, for deterministic tests: the caller runs
 * each step with nc_engine_step (which returns whether requests remain).
 * Submission, events and destroy work as with a threaded engine. */
nc_code nc_engine_create_stepped(nucleus_model *model,
                                 const nucleus_engine_params *params,
                                 nucleus_engine **out, nc_error *err);
bool nc_engine_step(nucleus_engine *e);

#endif
