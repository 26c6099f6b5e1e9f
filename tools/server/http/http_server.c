/* nucleus serve: the libmicrohttpd daemon and the per-request plumbing. */
#include "http_server.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "conn_watch.h"
#include "http_gate.h"
#include "http_head.h"
#include "http_reply.h"
#include "origin_guard.h"
#include "routes.h"

/* libmicrohttpd's memory per connection (reserved as it is touched): the
 * head of a later request on a kept-alive connection reaches it unchecked,
 * and a head that exhausts it gets libmicrohttpd's own HTML error page. It
 * holds a head at the gate's limits, HTTP_HEAD_MAX_BYTES of thousands of
 * tiny fields (about 56 bytes of bookkeeping each) beside it, so that
 * fields_ok answers such a head with a JSON 431. */
#define HTTP_MHD_MEMORY (HTTP_HEAD_MAX_BYTES + (size_t)16384 * 56 + 65536)

struct http_server {
  server_ctx *srv;
  struct MHD_Daemon *daemon;
  http_gate *gate;
  conn_watch *watch;
  struct sockaddr_storage addr;
  socklen_t addr_len;
  int port;
};

/* Per-request state, owned by the connection until the request completes. */
typedef struct request_state {
  const route *route;
  char *body;
  size_t len, cap;
  bool too_large;
  size_t discarded;
} request_state;

static int append_body(request_state *st, const char *data, size_t n) {
  if (st->len + n + 1 > st->cap) {
    size_t cap = st->cap ? st->cap : 4096;
    while (cap < st->len + n + 1)
      cap *= 2;
    char *grown = realloc(st->body, cap);
    if (!grown) return -1;
    st->body = grown;
    st->cap = cap;
  }
  memcpy(st->body + st->len, data, n);
  st->len += n;
  st->body[st->len] = '\0';
  return 0;
}

static bool content_length_over(struct MHD_Connection *conn, size_t limit) {
  const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (!cl) return false;
  char *end = NULL;
  unsigned long long v = strtoull(cl, &end, 10);
  return end != cl && v > limit;
}

typedef struct field_walk {
  http_head_fields fields;
  http_head_verdict verdict;
  bool bad;
} field_walk;

static enum MHD_Result walk_field(void *cls, enum MHD_ValueKind kind,
                                  const char *key, const char *value) {
  (void)kind;
  field_walk *w = cls;
  if (http_head_field(&w->fields, key, strlen(key), value ? value : "",
                      value ? strlen(value) : 0, &w->verdict) == HTTP_HEAD_OK)
    return MHD_YES;
  w->bad = true;
  return MHD_NO;
}

/* The framing rules of http_head.h over the header fields as
 * libmicrohttpd split them: the gate checks a connection's first head
 * whole, but the later requests on a kept-alive connection reach
 * libmicrohttpd alone (two Content-Lengths there would smuggle a request
 * in the body). A bad one is answered and the connection closed, its body
 * unread. */
static bool fields_ok(struct MHD_Connection *conn, api_error *e) {
  field_walk w = {0};
  const union MHD_ConnectionInfo *size =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
  if (size && size->header_size > HTTP_HEAD_MAX_BYTES) {
    api_fail(e, 431, NULL, "the request head is larger than %d bytes",
             HTTP_HEAD_MAX_BYTES);
    e->close = true;
    return false;
  }
  MHD_get_connection_values(conn, MHD_HEADER_KIND, walk_field, &w);
  if (!w.bad && http_head_fields_end(&w.fields, &w.verdict) == HTTP_HEAD_OK)
    return true;
  api_fail(e, w.verdict.status, NULL, "%s", w.verdict.message);
  e->close = true;
  return false;
}

/* The first call for a request: route, authenticate, check limits. Returns
 * the route, or NULL after filling *e. */
static const route *admit(server_ctx *srv, struct MHD_Connection *conn,
                          const char *url, const char *method, api_error *e) {
  if (!host_allowed(srv->cfg,
                    MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_HOST))) {
    api_fail(e, 403, NULL,
             "the Host header names a host this server does not answer "
             "for; start it with --allowed-host NAME to allow one");
    return NULL;
  }
  const route *r = route_find(method, url, e);
  if (!r) return NULL;
  if (!r->is_public && srv->cfg->api_key &&
      !auth_request_ok(conn, srv->cfg->api_key)) {
    api_fail(e, 401, NULL, "invalid or missing API key");
    e->code = "invalid_api_key";
    return NULL;
  }
  if (!strcmp(method, "POST") &&
      !content_type_is_json(MHD_lookup_connection_value(
          conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))) {
    api_fail(e, 415, NULL,
             "POST bodies must be sent with Content-Type: application/json");
    return NULL;
  }
  if (content_length_over(conn, srv->cfg->max_body_bytes)) {
    api_fail(e, 413, NULL, "request body is larger than the %zu-byte limit",
             srv->cfg->max_body_bytes);
    return NULL;
  }
  if (r->is_work && atomic_load(&srv->draining)) {
    api_fail(e, 503, NULL, "the server is shutting down");
    return NULL;
  }
  return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)version;
  http_server *hs = cls;
  server_ctx *srv = hs->srv;
  request_state *st = *con_cls;
  if (!st) {
    api_error e;
    if (!fields_ok(conn, &e)) {
      conn_watch_request_read(hs->watch, conn);
      return reply_error(srv, conn, &e);
    }
    /* Browsers send preflights without credentials: answer them before
     * routing and authentication when CORS is on. */
    if (srv->cfg->cors_origin && !strcmp(method, "OPTIONS")) {
      conn_watch_request_read(hs->watch, conn);
      return reply_preflight(srv, conn);
    }
    const route *r = admit(srv, conn, url, method, &e);
    if (!r) {
      conn_watch_request_read(hs->watch, conn);
      e.shape = route_error_shape(url);
      return reply_error(srv, conn, &e);
    }
    st = calloc(1, sizeof *st);
    if (!st) return MHD_NO;
    st->route = r;
    *con_cls = st;
    return MHD_YES;
  }
  if (*upload_size) {
    size_t n = *upload_size;
    *upload_size = 0;
    if (st->too_large || st->len + n > srv->cfg->max_body_bytes) {
      /* Over the limit (a chunked body): drop what arrives, answer 413 at
       * the end, and give up on the connection when it goes on and on. */
      st->too_large = true;
      st->discarded += n;
      free(st->body);
      st->body = NULL;
      st->len = st->cap = 0;
      return st->discarded > 4 * srv->cfg->max_body_bytes ? MHD_NO : MHD_YES;
    }
    return append_body(st, upload, n) ? MHD_NO : MHD_YES;
  }
  conn_watch_request_read(hs->watch, conn);
  if (st->too_large) {
    api_error e;
    api_fail(&e, 413, NULL, "request body is larger than the %zu-byte limit",
             srv->cfg->max_body_bytes);
    e.shape = route_error_shape(url);
    return reply_error(srv, conn, &e);
  }
  /* a route of .../{id} reads the id from the URL */
  if (route_takes_url(st->route))
    return st->route->fn(srv, conn, url, strlen(url));
  return st->route->fn(srv, conn, st->body ? st->body : "", st->len);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
  (void)why;
  http_server *hs = cls;
  conn_watch_request_done(hs->watch, conn);
  request_state *st = *con_cls;
  if (!st) return;
  free(st->body);
  free(st);
  *con_cls = NULL;
}

/* libmicrohttpd's own messages, marked as such, each written whole. */
/* libmicrohttpd's complaints that TCP options fail on its end of the
 * relay's socket pair (http_relay.h), where they mean nothing: a Unix
 * socket sends at once, without Nagle or corking. */
static bool relay_socket_noise(const char *line) {
  static const char *const noise[] = {
      "Setting TCP_NODELAY option", "Setting TCP_CORK option",
      "Failed to push the data from buffers to the network"};
  for (size_t i = 0; i < sizeof noise / sizeof noise[0]; i++)
    if (!strncmp(line, noise[i], strlen(noise[i]))) return true;
  return false;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[1024];
  int n = vsnprintf(line, sizeof line, fmt, ap);
  if (n < 0 || relay_socket_noise(line)) return;
  size_t len = strlen(line);
  while (len && line[len - 1] == '\n')
    line[--len] = '\0';
  fprintf(stderr, "nucleus: http: %s\n", line);
}

static int resolve(const char *host, int port, struct sockaddr_storage *out,
                   socklen_t *out_len, char *msg, size_t cap) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
  char port_s[16];
  snprintf(port_s, sizeof port_s, "%d", port);
  struct addrinfo *res = NULL;
  int rc = getaddrinfo(host, port_s, &hints, &res);
  if (rc != 0 || !res) {
    snprintf(msg, cap, "cannot resolve --host '%s': %s", host,
             gai_strerror(rc));
    return -1;
  }
  memset(out, 0, sizeof *out);
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *out_len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

http_server *http_server_start(server_ctx *srv, char *msg, size_t cap) {
  const server_config *cfg = srv->cfg;
  http_server *hs = calloc(1, sizeof *hs);
  if (!hs) {
    snprintf(msg, cap, "out of memory");
    return NULL;
  }
  hs->srv = srv;
  if (resolve(cfg->host, cfg->port, &hs->addr, &hs->addr_len, msg, cap)) {
    free(hs);
    return NULL;
  }
  hs->watch = conn_watch_start(cfg->read_timeout_s, cfg->timeout_s);
  if (!hs->watch) {
    snprintf(msg, cap, "cannot start the connection watchdog");
    free(hs);
    return NULL;
  }
  hs->gate = http_gate_listen(srv, (struct sockaddr *)&hs->addr, hs->addr_len,
                              msg, cap);
  if (!hs->gate) {
    conn_watch_stop(hs->watch);
    free(hs);
    return NULL;
  }
  /* The gate owns the listening socket and hands checked connections in. */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
                   MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
                   MHD_USE_ERROR_LOG | MHD_USE_POLL | MHD_USE_NO_LISTEN_SOCKET;
  if (hs->addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  hs->daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, hs, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
      NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MHD_MEMORY,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, hs,
      MHD_OPTION_NOTIFY_CONNECTION, conn_watch_notify, hs->watch,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_ip,
      MHD_OPTION_END);
  if (!hs->daemon || http_gate_start(hs->gate, hs->daemon)) {
    snprintf(msg, cap, "cannot start the HTTP daemon on %s:%d", cfg->host,
             cfg->port);
    http_gate_close(hs->gate);
    if (hs->daemon) MHD_stop_daemon(hs->daemon);
    http_gate_free(hs->gate);
    conn_watch_stop(hs->watch);
    free(hs);
    return NULL;
  }
  hs->port = http_gate_port(hs->gate);
  return hs;
}

int http_server_port(http_server *hs) {
  return hs->port;
}

void http_server_quiesce(http_server *hs) {
  if (hs) http_gate_quiesce(hs->gate);
}

void http_server_stop(http_server *hs) {
  if (!hs) return;
  http_gate_close(hs->gate);
  if (hs->daemon) MHD_stop_daemon(hs->daemon);
  http_gate_free(hs->gate); /* the relays end with the daemon's connections */
  conn_watch_stop(hs->watch);
  free(hs);
}
