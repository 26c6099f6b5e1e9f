/* nucleus serve: the listening socket and the gate every connection passes
 * before libmicrohttpd takes it.
 *
 * libmicrohttpd answers malformed request heads itself, with HTML (and for
 * some, such as "Content-Length: abc", with a malformed response). So the
 * gate accepts each connection, waits (peeking, without consuming) until
 * the first request head has arrived, checks it (http_head.h), and either
 * answers an OpenAI-shaped JSON error and closes, or hands the untouched
 * connection to libmicrohttpd (MHD_add_connection). The wait is bounded by
 * --read-timeout, and connections waiting at the gate count against
 * --max-connections and --max-connections-per-ip. Then the connection is
 * relayed (http_relay.h), so that later requests on a kept-alive
 * connection are checked too. */
#ifndef NUCLEUS_SERVER_HTTP_GATE_H
#define NUCLEUS_SERVER_HTTP_GATE_H

#include <microhttpd.h>
#include <sys/socket.h>

#include "server.h"

typedef struct http_gate http_gate;

/* Binds and listens on addr; NULL after writing why into msg. */
http_gate *http_gate_listen(server_ctx *srv, const struct sockaddr *addr,
                            socklen_t addr_len, char *msg, size_t cap);

/* The port it listens on. */
int http_gate_port(const http_gate *g);

/* Starts accepting, handing good connections to daemon. 0 or -1. */
int http_gate_start(http_gate *g, struct MHD_Daemon *daemon);

/* Stops accepting (closes the listening socket); connections already at
 * the gate are still checked and handed on. */
void http_gate_quiesce(http_gate *g);

/* Stops accepting and waits for the connections at the gate. Call before
 * stopping the daemon. */
void http_gate_close(http_gate *g);

/* Closes it (when not yet), waits for the relayed connections to end (the
 * daemon stopped: its ends are closed) and frees it. */
void http_gate_free(http_gate *g);

#endif
