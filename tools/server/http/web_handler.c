/* nucleus serve: GET /, /app.js, /app.css and /lib/...: the embedded web
 * page and the libraries it uses, with a
 * Content-Security-Policy that lets it load only its own files and talk
 * only to this server. */
#include <string.h>

#include "http_reply.h"
#include "routes.h"
#include "web_assets.h"

/* No inline script or style, no other origin, no framing. */
static const char CSP[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const web_asset *web_asset_find(const char *path) {
  size_t n = strcspn(path, "?");
  for (size_t i = 0; i < web_assets_count; i++) {
    const web_asset *a = &web_assets[i];
    if (strlen(a->path) == n && !memcmp(a->path, path, n)) return a;
  }
  return NULL;
}

static enum MHD_Result serve(server_ctx *srv, struct MHD_Connection *conn,
                             const char *path) {
  const web_asset *a = web_asset_find(path);
  if (!a) {
    api_error e;
    api_fail(&e, 404, NULL, "no route for GET %s", path);
    return reply_error(srv, conn, &e);
  }
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
  if (!resp) return MHD_NO;
  reply_add_common_headers(resp, a->content_type);
  MHD_add_response_header(resp, "Content-Security-Policy", CSP);
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  return reply_queue(srv, conn, 200, resp);
}

enum MHD_Result handle_page(server_ctx *srv, struct MHD_Connection *conn,
                            const char *body, size_t len) {
  (void)body;
  (void)len;
  return serve(srv, conn, "/");
}

enum MHD_Result handle_page_js(server_ctx *srv, struct MHD_Connection *conn,
                               const char *body, size_t len) {
  (void)body;
  (void)len;
  return serve(srv, conn, "/app.js");
}

enum MHD_Result handle_page_css(server_ctx *srv, struct MHD_Connection *conn,
                                const char *body, size_t len) {
  (void)body;
  (void)len;
  return serve(srv, conn, "/app.css");
}

enum MHD_Result handle_page_marked(server_ctx *srv, struct MHD_Connection *conn,
                                   const char *body, size_t len) {
  (void)body;
  (void)len;
  return serve(srv, conn, "/lib/marked.js");
}

enum MHD_Result handle_page_purify(server_ctx *srv, struct MHD_Connection *conn,
                                   const char *body, size_t len) {
  (void)body;
  (void)len;
  return serve(srv, conn, "/lib/purify.js");
}

enum MHD_Result handle_page_highlight(server_ctx *srv,
                                      struct MHD_Connection *conn,
                                      const char *body, size_t len) {
  (void)body;
  (void)len;
  return serve(srv, conn, "/lib/highlight.js");
}

enum MHD_Result handle_page_highlight_css(server_ctx *srv,
                                          struct MHD_Connection *conn,
                                          const char *body, size_t len) {
  (void)body;
  (void)len;
  return serve(srv, conn, "/lib/highlight.css");
}
