/* nucleus serve: the Responses API's handlers (responses.h). */
#include "responses.h"

#include <stdlib.h>
#include <string.h>

#include "http/http_reply.h"
#include "responses_output.h"
#include "routes.h"

static void req_free(void *p) {
  if (!p) return;
  responses_req_free(p);
  free(p);
}

json_t *responses_finish(server_ctx *srv, responses_req *r, const json_t *chat,
                         json_t *items) {
  json_t *final = responses_final(r->skeleton, items, chat);
  if (!final || !r->store || !srv->responses) return final;
  /* the conversation a follow-up continues: the reply included */
  json_t *msgs = json_copy(r->conversation);
  const json_t *msg = json_object_get(
      json_array_get(json_object_get(chat, "choices"), 0), "message");
  if (msgs && msg) {
    json_t *reply = json_copy((json_t *)msg);
    if (reply) {
      /* an empty content with calls is chat's null */
      json_array_append_new(msgs, reply);
      if (!responses_store_put(srv->responses, r->id, final, msgs))
        fprintf(stderr,
                "nucleus: response %s not stored (larger than "
                "--responses-max-bytes, or out of memory)\n",
                r->id);
    }
  }
  json_decref(msgs);
  return final;
}

/* The chat job's errors name chat fields: name the Responses ones. */
static enum MHD_Result fail(server_ctx *srv, struct MHD_Connection *conn,
                            job *j, api_error *e) {
  responses_error_param(e);
  job_free(j);
  return reply_error(srv, conn, e);
}

static enum MHD_Result wait_and_reply(server_ctx *srv,
                                      struct MHD_Connection *conn, job *j) {
  responses_req *r = j->ext;
  api_error e;
  switch (job_wait(srv, conn, j, &e)) {
  case JOB_GONE: job_free(j); return MHD_NO;
  case JOB_FAILED: return fail(srv, conn, j, &e);
  case JOB_DONE: break;
  }
  json_t *chat = completion_out_response(&j->out);
  const json_t *msg = json_object_get(
      json_array_get(json_object_get(chat, "choices"), 0), "message");
  json_t *final =
      chat ? responses_finish(srv, r, chat, responses_output_items(msg, r->hex))
           : NULL;
  json_decref(chat);
  job_free(j);
  if (!final) {
    api_fail(&e, 500, NULL, "out of memory");
    return reply_error(srv, conn, &e);
  }
  return reply_json(srv, conn, 200, final);
}

enum MHD_Result handle_responses(server_ctx *srv, struct MHD_Connection *conn,
                                 const char *body, size_t len) {
  api_error e;
  json_error_t jerr;
  json_t *root = json_loadb(body, len, 0, &jerr);
  if (!root) {
    api_fail(&e, 400, NULL, "invalid JSON at line %d, column %d: %s", jerr.line,
             jerr.column, jerr.text);
    return reply_error(srv, conn, &e);
  }
  job *j = calloc(1, sizeof *j);
  responses_req *r = calloc(1, sizeof *r);
  if (!j || !r) {
    free(j);
    free(r);
    json_decref(root);
    return MHD_NO;
  }
  j->ext = r;
  j->ext_free = req_free;
  int rc = responses_request_parse(srv, root, r, &e);
  json_decref(root);
  /* the images the input's parts decoded: the chat path takes them */
  j->images = r->images;
  r->images = (image_list){0};
  if (rc || job_prepare_json(srv, r->chat, true, j, &e))
    return fail(srv, conn, j, &e);
  /* the request's log line names the response */
  snprintf(j->out.id, sizeof j->out.id, "%s", r->id);
  if (job_submit(srv, conn, j, &e)) return fail(srv, conn, j, &e);
  if (r->stream) {
    j->stream_ops = &responses_stream_ops;
    j->req.stream = true; /* for the request's log line */
    return sse_stream_start(srv, conn, j);
  }
  return wait_and_reply(srv, conn, j);
}

/* The id of GET/DELETE /v1/responses/{id} (url: the request's path); a
 * query string is refused rather than ignored. */
static int response_id(struct MHD_Connection *conn, const char *url, char *id,
                       api_error *e) {
  const char *prefix = "/v1/responses/";
  if (strchr(url, '?') ||
      MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, NULL, NULL) > 0)
    return api_fail(e, 400, NULL,
                    "/v1/responses/{id} takes no query parameters");
  size_t n = strlen(url) - strlen(prefix);
  if (strncmp(url, prefix, strlen(prefix)) || n == 0 || n > RESPONSES_MAX_ID)
    return api_fail(e, 404, NULL, "Response with id '%.80s' not found.",
                    url + strlen(prefix));
  memcpy(id, url + strlen(prefix), n + 1);
  return 0;
}

enum MHD_Result handle_response_get(server_ctx *srv,
                                    struct MHD_Connection *conn,
                                    const char *url, size_t len) {
  (void)len;
  api_error e;
  char id[RESPONSES_MAX_ID + 1];
  json_t *resp = NULL;
  if (response_id(conn, url, id, &e)) return reply_error(srv, conn, &e);
  if (!srv->responses ||
      !responses_store_get(srv->responses, id, &resp, NULL) || !resp) {
    api_fail(&e, 404, NULL, "Response with id '%s' not found.", id);
    return reply_error(srv, conn, &e);
  }
  return reply_json(srv, conn, 200, resp);
}

enum MHD_Result handle_response_delete(server_ctx *srv,
                                       struct MHD_Connection *conn,
                                       const char *url, size_t len) {
  (void)len;
  api_error e;
  char id[RESPONSES_MAX_ID + 1];
  if (response_id(conn, url, id, &e)) return reply_error(srv, conn, &e);
  if (!srv->responses || !responses_store_delete(srv->responses, id)) {
    api_fail(&e, 404, NULL, "Response with id '%s' not found.", id);
    return reply_error(srv, conn, &e);
  }
  return reply_json(
      srv, conn, 200,
      json_pack("{s:s,s:s,s:b}", "id", id, "object", "response", "deleted", 1));
}
