/* nucleus serve: one step's sampler record (nucleus_inspect) as the JSON of
 * choices[i].inspect[k] (docs/SERVER.md). */
#ifndef NUCLEUS_SERVER_INSPECT_JSON_H
#define NUCLEUS_SERVER_INSPECT_JSON_H

#include <jansson.h>

#include "server.h"

json_t *inspect_json(server_ctx *srv, const nucleus_inspect *in);

#endif
