/* nucleus serve: POST /v1/chat/completions and POST /v1/completions. */
#include <stdlib.h>

#include "http/http_reply.h"
#include "job.h"
#include "routes.h"

static enum MHD_Result run(server_ctx *srv, struct MHD_Connection *conn,
                           const char *body, size_t len, bool chat) {
  job *j = calloc(1, sizeof *j);
  if (!j) return MHD_NO;
  api_error e;
  if (job_prepare(srv, body, len, chat, j, &e) ||
      job_submit(srv, conn, j, &e)) {
    job_free(j);
    return reply_error(srv, conn, &e);
  }
  if (j->req.stream) return sse_stream_start(srv, conn, j);
  return job_wait_and_reply(srv, conn, j);
}

enum MHD_Result handle_chat_completions(server_ctx *srv,
                                        struct MHD_Connection *conn,
                                        const char *body, size_t len) {
  return run(srv, conn, body, len, true);
}

enum MHD_Result handle_completions(server_ctx *srv, struct MHD_Connection *conn,
                                   const char *body, size_t len) {
  return run(srv, conn, body, len, false);
}
