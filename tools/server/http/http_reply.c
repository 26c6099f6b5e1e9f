/* nucleus serve: complete (non-streaming) responses. */
#include "http_reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void reply_add_common_headers(struct MHD_Response *resp,
                              const char *content_type) {
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  MHD_add_response_header(resp, "Server", "nucleus");
}

enum MHD_Result reply_queue(server_ctx *srv, struct MHD_Connection *conn,
                            unsigned status, struct MHD_Response *resp) {
  if (!resp) return MHD_NO;
  if (srv->cfg->cors_origin) {
    MHD_add_response_header(resp, "Access-Control-Allow-Origin",
                            srv->cfg->cors_origin);
    if (strcmp(srv->cfg->cors_origin, "*"))
      MHD_add_response_header(resp, "Vary", "Origin");
  }
  enum MHD_Result r = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  if (r == MHD_YES) metrics_count_response(srv->metrics, status);
  return r;
}

enum MHD_Result reply_text(server_ctx *srv, struct MHD_Connection *conn,
                           unsigned status, const char *content_type,
                           const char *text, size_t len) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
  if (!resp) return MHD_NO;
  reply_add_common_headers(resp, content_type);
  return reply_queue(srv, conn, status, resp);
}

enum MHD_Result reply_json(server_ctx *srv, struct MHD_Connection *conn,
                           unsigned status, json_t *body) {
  if (!body) return MHD_NO;
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!text) return MHD_NO;
  struct MHD_Response *resp =
      MHD_create_response_from_buffer_with_free_callback(strlen(text), text,
                                                         free);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  reply_add_common_headers(resp, "application/json");
  return reply_queue(srv, conn, status, resp);
}

enum MHD_Result reply_error(server_ctx *srv, struct MHD_Connection *conn,
                            const api_error *e) {
  json_t *body = api_error_json(e);
  if (!body) return MHD_NO;
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!text) return MHD_NO;
  struct MHD_Response *resp =
      MHD_create_response_from_buffer_with_free_callback(strlen(text), text,
                                                         free);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  reply_add_common_headers(resp, "application/json");
  if (e->status == 503) MHD_add_response_header(resp, "Retry-After", "1");
  if (e->status == 401)
    MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
  if (e->status == 405 && e->allow)
    MHD_add_response_header(resp, "Allow", e->allow);
  if (e->close) MHD_add_response_header(resp, "Connection", "close");
  return reply_queue(srv, conn, e->status, resp);
}

void reply_touch(struct MHD_Connection *conn, unsigned timeout_s) {
  MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
  MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, timeout_s);
}

enum MHD_Result reply_preflight(server_ctx *srv, struct MHD_Connection *conn) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Access-Control-Allow-Methods",
                          "GET, POST, DELETE, OPTIONS");
  /* Echo the headers the page asks for (the openai SDK sends its
   * X-Stainless-* headers), when they are plain header names. */
  const char *asked = MHD_lookup_connection_value(
      conn, MHD_HEADER_KIND, "Access-Control-Request-Headers");
  bool plain = asked && strlen(asked) <= 1024;
  for (const char *p = asked; plain && *p; p++)
    plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == ',' ||
            *p == ' ';
  char allow[1100];
  snprintf(allow, sizeof allow, "Authorization, Content-Type, X-Api-Key%s%s",
           plain && *asked ? ", " : "", plain && *asked ? asked : "");
  MHD_add_response_header(resp, "Access-Control-Allow-Headers", allow);
  MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
  return reply_queue(srv, conn, 204, resp);
}
