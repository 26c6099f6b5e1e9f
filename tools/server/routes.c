/* nucleus serve: the route table. */
#include "routes.h"

#include <string.h>

static const route ROUTES[] = {
    {"GET", "/health", true, false, handle_health},
    {"GET", "/", true, false, handle_page},
    {"GET", "/app.js", true, false, handle_page_js},
    {"GET", "/app.css", true, false, handle_page_css},
    {"GET", "/lib/marked.js", true, false, handle_page_marked},
    {"GET", "/lib/purify.js", true, false, handle_page_purify},
    {"GET", "/lib/highlight.js", true, false, handle_page_highlight},
    {"GET", "/lib/highlight.css", true, false, handle_page_highlight_css},
    {"GET", "/v1/models", false, false, handle_models},
    {"GET", "/v1/models/...", false, false, handle_model},
    {"GET", "/metrics", false, false, handle_metrics},
    {"GET", "/props", false, false, handle_props},
    {"GET", "/server_info", false, false, handle_server_info},
    {"GET", "/get_server_info", false, false, handle_server_info},
    {"GET", "/model_info", false, false, handle_model_info},
    {"GET", "/get_model_info", false, false, handle_model_info},
    {"GET", "/get_load", false, false, handle_get_load},
    {"POST", "/v1/chat/completions", false, true, handle_chat_completions},
    {"POST", "/v1/completions", false, true, handle_completions},
    {"POST", "/v1/messages", false, true, handle_messages},
    {"POST", "/v1/messages/count_tokens", false, true, handle_count_tokens},
    {"POST", "/v1/responses", false, true, handle_responses},
    {"GET", "/v1/responses/", false, false, handle_response_get},
    {"DELETE", "/v1/responses/", false, false, handle_response_delete},
    {"POST", "/tokenize", false, true, handle_tokenize},
    {"POST", "/detokenize", false, true, handle_detokenize},
    {"POST", "/apply-template", false, true, handle_apply_template},
    {"POST", "/sample", false, true, handle_sample},
    {"POST", "/v1/embeddings", false, true, handle_embeddings},
    {"POST", "/v1/rerank", false, true, handle_rerank},
    {"POST", "/rerank", false, true, handle_rerank},
};
#define N_ROUTES (sizeof ROUTES / sizeof ROUTES[0])

/* url is the request's path as libmicrohttpd hands it: the query string
 * cut off, then %-escapes decoded (a '?' or '/' in it may be an id's own,
 * sent as %3F or %2F). Compared exactly; a path longer than "/" ending in
 * '/' matches any one non-empty segment after it (/v1/responses/ID), one
 * ending in "/..." any non-empty rest (/v1/models/ID: ids like "org/name",
 * which OpenAI's SDK sends as org%2Fname). */
static const char ANY_REST[] = "/...";

/* The length of path's fixed prefix when it ends in "/...", else 0. */
static size_t rest_prefix(const char *path, size_t len) {
  const size_t nr = sizeof ANY_REST - 1;
  return len > nr && !memcmp(path + len - nr, ANY_REST, nr) ? len - nr + 1 : 0;
}

static bool path_is(const char *url, const char *path) {
  size_t n = strlen(url);
  size_t len = strlen(path);
  const size_t prefix = rest_prefix(path, len);
  if (prefix) return n > prefix && !memcmp(url, path, prefix);
  if (len > 1 && path[len - 1] == '/')
    return n > len && !memcmp(url, path, len) &&
           !memchr(url + len, '/', n - len);
  return len == n && !memcmp(url, path, n);
}

bool route_takes_url(const route *r) {
  const size_t len = strlen(r->path);
  return rest_prefix(r->path, len) || (len > 1 && r->path[len - 1] == '/');
}

const route *route_find(const char *method, const char *url, api_error *e) {
  const route *same_path = NULL;
  for (size_t i = 0; i < N_ROUTES; i++) {
    if (!path_is(url, ROUTES[i].path)) continue;
    bool head = !strcmp(method, "HEAD") && !strcmp(ROUTES[i].method, "GET");
    if (!strcmp(method, ROUTES[i].method) || head) return &ROUTES[i];
    same_path = &ROUTES[i];
  }
  if (same_path) {
    api_fail(e, 405, NULL, "method %s is not allowed on %s (use %s)", method,
             same_path->path, same_path->method);
    e->allow = same_path->method;
  } else {
    size_t n = strlen(url);
    if (n > 200) n = 200;
    api_fail(e, 404, NULL, "no route for %s %.*s", method, (int)n, url);
  }
  return NULL;
}

api_shape route_error_shape(const char *url) {
  static const char prefix[] = "/v1/messages";
  size_t n = sizeof prefix - 1;
  return !strncmp(url, prefix, n) && strchr("/?", url[n]) ? API_SHAPE_ANTHROPIC
                                                          : API_SHAPE_OPENAI;
}
