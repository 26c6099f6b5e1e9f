/* nucleus serve: POST /v1/messages and POST /v1/messages/count_tokens,
 * Anthropic's Messages API over the chat completions path: the body is
 * translated (messages_request.h), then prepared, submitted and waited
 * for as a chat job (openai/job.h), and answered in Anthropic's shapes
 * (messages_reply.h, messages_stream.h). */
#include <stdlib.h>

#include "http/http_reply.h"
#include "messages_reply.h"
#include "messages_request.h"
#include "messages_stream.h"
#include "routes.h"

static enum MHD_Result reply_anthropic_error(server_ctx *srv,
                                             struct MHD_Connection *conn,
                                             api_error *e) {
  e->shape = API_SHAPE_ANTHROPIC;
  return reply_error(srv, conn, e);
}

/* The body as a chat request for j (its images decoded into j's memo),
 * or NULL with *e. */
static json_t *load(server_ctx *srv, const char *body, size_t len,
                    messages_route which, job *j, api_error *e) {
  json_error_t jerr;
  json_t *root = json_loadb(body, len, 0, &jerr);
  if (!root) {
    api_fail(e, 400, NULL, "invalid JSON at line %d, column %d: %s", jerr.line,
             jerr.column, jerr.text);
    return NULL;
  }
  j->images.allow_urls = srv->cfg->allow_image_urls;
  json_t *chat = messages_translate(root, which, &j->images, e);
  json_decref(root);
  return chat;
}

enum MHD_Result handle_messages(server_ctx *srv, struct MHD_Connection *conn,
                                const char *body, size_t len) {
  api_error e = {0};
  job *j = calloc(1, sizeof *j);
  if (!j) return MHD_NO;
  json_t *chat = load(srv, body, len, MESSAGES_CREATE, j, &e);
  if (!chat) {
    job_free(j);
    return reply_anthropic_error(srv, conn, &e);
  }
  int rc = job_prepare_json(srv, chat, true, j, &e);
  json_decref(chat);
  if (rc || job_submit(srv, conn, j, &e)) {
    job_free(j);
    return reply_anthropic_error(srv, conn, &e);
  }
  if (j->req.stream) return messages_stream_start(srv, conn, j);
  job_waited end = job_wait(srv, conn, j, &e);
  enum MHD_Result r = MHD_NO; /* JOB_GONE: close without an answer */
  if (end == JOB_FAILED)
    r = reply_anthropic_error(srv, conn, &e);
  else if (end == JOB_DONE)
    r = reply_json(srv, conn, 200, messages_response(j));
  job_free(j);
  return r;
}

/* The prompt /v1/messages would run for the same body, prepared as it
 * would be (the template, tools, a thinking block opened for a grammar),
 * counted. */
enum MHD_Result handle_count_tokens(server_ctx *srv,
                                    struct MHD_Connection *conn,
                                    const char *body, size_t len) {
  api_error e = {0};
  job *j = calloc(1, sizeof *j);
  if (!j) return MHD_NO;
  json_t *chat = load(srv, body, len, MESSAGES_COUNT_TOKENS, j, &e);
  if (!chat) {
    job_free(j);
    return reply_anthropic_error(srv, conn, &e);
  }
  int rc = job_prepare_json(srv, chat, true, j, &e);
  size_t n = j->n_prompt;
  json_decref(chat);
  job_free(j);
  if (rc) return reply_anthropic_error(srv, conn, &e);
  return reply_json(srv, conn, 200,
                    json_pack("{s:I}", "input_tokens", (json_int_t)n));
}
