/* nucleus serve: answering a connection with an OpenAI-shaped JSON error
 * outside libmicrohttpd (a malformed request head or body framing). */
#ifndef NUCLEUS_SERVER_HTTP_REFUSE_H
#define NUCLEUS_SERVER_HTTP_REFUSE_H

#include "server.h"

/* Answers a JSON error and closes fd without a reset: the client's unread
 * bytes are drained briefly after our FIN so that it sees the answer. */
void http_refuse(server_ctx *srv, int fd, unsigned status, const char *msg);

#endif
