/* nucleus serve: one generation request from parse to last byte: its
 * parameters, prompt tokens, engine request and response being built. */
#ifndef NUCLEUS_SERVER_JOB_H
#define NUCLEUS_SERVER_JOB_H

#include <microhttpd.h>

#include "completion_json.h"
#include "gen.h"
#include "request_parse.h"

typedef struct job {
  gen_request req;
  int32_t *prompt;
  size_t n_prompt;
  completion_out out;
  gen *g;
} job;

void job_free(job *j);

/* Parses the body (a chat or completions request) and builds the prompt:
 * 0, or -1 with *e. */
int job_prepare(server_ctx *srv, const char *body, size_t len, bool chat,
                job *j, api_error *e);

/* Submits j to the engine: 0, or -1 with *e (503 busy, 400 too long). */
int job_submit(server_ctx *srv, struct MHD_Connection *conn, job *j,
               api_error *e);

/* Non-streaming: waits for every event, then answers once; takes
 * ownership of j. */
enum MHD_Result job_wait_and_reply(server_ctx *srv, struct MHD_Connection *conn,
                                   job *j);

/* Streams j as server-sent events; takes ownership of j. */
enum MHD_Result sse_stream_start(server_ctx *srv, struct MHD_Connection *conn,
                                 job *j);

#endif
