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

/* Streams j as server-sent events; takes ownership of j. */
enum MHD_Result sse_stream_start(server_ctx *srv, struct MHD_Connection *conn,
                                 job *j);

#endif
