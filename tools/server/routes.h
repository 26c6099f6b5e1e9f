/* nucleus serve: the route table (method + path -> handler). */
#ifndef NUCLEUS_SERVER_ROUTES_H
#define NUCLEUS_SERVER_ROUTES_H

#include <microhttpd.h>
#include <stdbool.h>

#include "http/api_error.h"
#include "server.h"

typedef enum MHD_Result (*route_fn)(server_ctx *srv,
                                    struct MHD_Connection *conn,
                                    const char *body, size_t len);

typedef struct route {
  const char *method;
  const char *path;
  bool is_public; /* served without the API key (/health, the page) */
  bool is_work;   /* refused with 503 while draining */
  route_fn fn;    /* a path ending in "/" or "/..." (.../{id}): body is
                     the URL */
} route;

/* True for a route of .../{id} (its path ends in "/" or "/..."): its
 * handler gets the URL, not the body. */
bool route_takes_url(const route *r);

/* Finds the route for a request, or fills *e with 404 or 405. */
const route *route_find(const char *method, const char *url, api_error *e);

/* The shape of the errors answered on url's path: Anthropic's under
 * /v1/messages, else OpenAI's. */
api_shape route_error_shape(const char *url);

/* Handlers, each in its own file. */
enum MHD_Result handle_health(server_ctx *, struct MHD_Connection *,
                              const char *, size_t);
enum MHD_Result handle_models(server_ctx *, struct MHD_Connection *,
                              const char *, size_t);
/* GET /v1/models/ID: url is the request's path. */
enum MHD_Result handle_model(server_ctx *, struct MHD_Connection *,
                             const char *, size_t);
enum MHD_Result handle_props(server_ctx *, struct MHD_Connection *,
                             const char *, size_t);
enum MHD_Result handle_metrics(server_ctx *, struct MHD_Connection *,
                               const char *, size_t);
enum MHD_Result handle_tokenize(server_ctx *, struct MHD_Connection *,
                                const char *, size_t);
enum MHD_Result handle_detokenize(server_ctx *, struct MHD_Connection *,
                                  const char *, size_t);
enum MHD_Result handle_apply_template(server_ctx *, struct MHD_Connection *,
                                      const char *, size_t);
/* POST /sample: the pipeline on a step's candidates (sample_handler.c). */
enum MHD_Result handle_sample(server_ctx *, struct MHD_Connection *,
                              const char *, size_t);
enum MHD_Result handle_chat_completions(server_ctx *, struct MHD_Connection *,
                                        const char *, size_t);
enum MHD_Result handle_completions(server_ctx *, struct MHD_Connection *,
                                   const char *, size_t);
/* Anthropic's Messages API (anthropic/messages.c): POST /v1/messages and
 * /v1/messages/count_tokens. */
enum MHD_Result handle_messages(server_ctx *, struct MHD_Connection *,
                                const char *, size_t);
enum MHD_Result handle_count_tokens(server_ctx *, struct MHD_Connection *,
                                    const char *, size_t);
/* POST /v1/embeddings (openai/embeddings.c), POST /v1/rerank and /rerank
 * (openai/rerank.c). */
enum MHD_Result handle_embeddings(server_ctx *, struct MHD_Connection *,
                                  const char *, size_t);
enum MHD_Result handle_rerank(server_ctx *, struct MHD_Connection *,
                              const char *, size_t);
/* The Responses API (responses.c): POST /v1/responses; GET and DELETE
 * /v1/responses/{id} (url: the request's path). */
enum MHD_Result handle_responses(server_ctx *, struct MHD_Connection *,
                                 const char *, size_t);
enum MHD_Result handle_response_get(server_ctx *, struct MHD_Connection *,
                                    const char *, size_t);
enum MHD_Result handle_response_delete(server_ctx *, struct MHD_Connection *,
                                       const char *, size_t);
/* The embedded web page (web_handler.c): GET /, /app.js, /app.css. */
enum MHD_Result handle_page(server_ctx *, struct MHD_Connection *, const char *,
                            size_t);
enum MHD_Result handle_page_js(server_ctx *, struct MHD_Connection *,
                               const char *, size_t);
enum MHD_Result handle_page_css(server_ctx *, struct MHD_Connection *,
                                const char *, size_t);
/* The libraries the page renders Markdown with (Debian's, embedded):
 * GET /lib/marked.js, /lib/purify.js, /lib/highlight.js,
 * /lib/highlight.css. */
enum MHD_Result handle_page_marked(server_ctx *, struct MHD_Connection *,
                                   const char *, size_t);
enum MHD_Result handle_page_purify(server_ctx *, struct MHD_Connection *,
                                   const char *, size_t);
enum MHD_Result handle_page_highlight(server_ctx *, struct MHD_Connection *,
                                      const char *, size_t);
enum MHD_Result handle_page_highlight_css(server_ctx *, struct MHD_Connection *,
                                          const char *, size_t);
/* What routers read (router_info.c). */
enum MHD_Result handle_server_info(server_ctx *, struct MHD_Connection *,
                                   const char *, size_t);
enum MHD_Result handle_model_info(server_ctx *, struct MHD_Connection *,
                                  const char *, size_t);
enum MHD_Result handle_get_load(server_ctx *, struct MHD_Connection *,
                                const char *, size_t);
/* The load gauges /metrics appends (allocated; NULL when out of memory). */
char *router_gauges_text(server_ctx *srv);

#endif
