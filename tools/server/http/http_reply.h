/* nucleus serve: queueing complete responses (JSON, text, errors) on a
 * connection, counting each one in the metrics. */
#ifndef NUCLEUS_SERVER_HTTP_REPLY_H
#define NUCLEUS_SERVER_HTTP_REPLY_H

#include <jansson.h>
#include <microhttpd.h>

#include "api_error.h"
#include "server.h"

/* Takes ownership of body. */
enum MHD_Result reply_json(server_ctx *srv, struct MHD_Connection *conn,
                           unsigned status, json_t *body);

enum MHD_Result reply_text(server_ctx *srv, struct MHD_Connection *conn,
                           unsigned status, const char *content_type,
                           const char *text, size_t len);

enum MHD_Result reply_error(server_ctx *srv, struct MHD_Connection *conn,
                            const api_error *e);

/* Queues resp (and drops this reference to it), counting the status and
 * adding the CORS header when --cors-origin is set. */
enum MHD_Result reply_queue(server_ctx *srv, struct MHD_Connection *conn,
                            unsigned status, struct MHD_Response *resp);

/* 204 for a CORS preflight (OPTIONS) request. */
enum MHD_Result reply_preflight(server_ctx *srv, struct MHD_Connection *conn);

/* Restarts the connection's idle timer (libmicrohttpd resets it only when
 * the timeout goes from 0 to a value). */
void reply_touch(struct MHD_Connection *conn, unsigned timeout_s);

/* Common headers on every response we build. */
void reply_add_common_headers(struct MHD_Response *resp,
                              const char *content_type);

#endif
