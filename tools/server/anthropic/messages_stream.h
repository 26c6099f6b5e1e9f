/* nucleus serve: streaming a Messages API job as Anthropic's server-sent
 * events (messages_stream.c says which, in order). */
#ifndef NUCLEUS_SERVER_MESSAGES_STREAM_H
#define NUCLEUS_SERVER_MESSAGES_STREAM_H

#include <microhttpd.h>

#include "openai/job.h"

/* Streams a submitted job; takes ownership of j. */
enum MHD_Result messages_stream_start(server_ctx *srv,
                                      struct MHD_Connection *conn, job *j);

#endif
