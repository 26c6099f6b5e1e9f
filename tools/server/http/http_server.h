/* nucleus serve: the HTTP listener (libmicrohttpd, one thread per
 * connection): reads bodies under the size limit, checks the API key and
 * hands each request to its route. */
#ifndef NUCLEUS_SERVER_HTTP_SERVER_H
#define NUCLEUS_SERVER_HTTP_SERVER_H

#include "server.h"

typedef struct http_server http_server;

/* Binds cfg->host:cfg->port and starts serving srv. On failure returns
 * NULL after writing the reason into msg. */
http_server *http_server_start(server_ctx *srv, char *msg, size_t cap);

/* The port actually bound (useful with --port 0). */
int http_server_port(http_server *hs);

/* Stops accepting new connections; open ones keep being served. */
void http_server_quiesce(http_server *hs);

/* Closes every connection and joins the server's threads. */
void http_server_stop(http_server *hs);

#endif
