/* nucleus serve: the bytes of a connection between its client and
 * libmicrohttpd, with every request's framing checked (RFC 9112).
 *
 * libmicrohttpd parses the requests after the first on a kept-alive
 * connection alone: it joins folded header lines before any check can see
 * them, and reads chunked bodies itself. So the gate hands libmicrohttpd
 * one end of a socket pair and relays: each request head is checked whole
 * (http_head.h) before a byte of it is passed on, and its body is
 * followed (http_body.h: Content-Length, or every chunk's size line, data
 * and CRLF, and the trailers). At the first malformed byte nothing more
 * is passed on; libmicrohttpd sees the end of the input (a request whose
 * body it has not whole is dropped, never handled), the answers it owes
 * are delivered, then one JSON error (400; 431 for too many fields) and
 * the connection closes. A client that closes its side is seen by
 * libmicrohttpd as before (a generation it waits for is cancelled). */
#ifndef NUCLEUS_SERVER_HTTP_RELAY_H
#define NUCLEUS_SERVER_HTTP_RELAY_H

#include <stdatomic.h>

#include "server.h"

/* Relays between client (a socket) and mhd (our end of the pair) until
 * both sides are done; closes both. Once libmicrohttpd has ended, answers
 * a client does not read are given up after --timeout, or at once when
 * *closed is set (the server stops). */
void http_relay_run(server_ctx *srv, int client, int mhd,
                    const atomic_bool *closed);

#endif
