/* nucleus serve: the bridge between an HTTP thread and the engine. A gen
 * is one submitted engine request together with the connection that waits
 * for it: it waits for events while watching the socket (a client that
 * goes away cancels its request), records latency metrics, and keeps the
 * request in the in-flight set until it is freed. */
#ifndef NUCLEUS_SERVER_GEN_H
#define NUCLEUS_SERVER_GEN_H

#include <microhttpd.h>

#include "server.h"

typedef struct gen gen;

/* Submits prompt to the engine. NUCLEUS_ERR_BUSY: the queue is full. */
nucleus_status gen_start(server_ctx *srv, struct MHD_Connection *conn,
                         const int32_t *prompt, size_t n_prompt,
                         const nucleus_request_params *params, gen **out,
                         nucleus_error *err);

typedef enum gen_wait {
  GEN_EVENT,  /* *ev holds the next event */
  GEN_GONE,   /* the client went away: the request is cancelled */
  GEN_FAILED, /* the engine failed to deliver events */
} gen_wait;

/* Blocks for the next event. */
gen_wait gen_next(gen *g, nucleus_event *ev);

/* True when the peer of this connection has closed its side. */
bool gen_client_gone(gen *g);

/* Seconds from submit to the first token (-1 before it) and to now. */
void gen_timing(const gen *g, double *ttft_s, double *elapsed_s);

/* Cancels the request unless it has finished, and releases it. */
void gen_free(gen *g);

#endif
