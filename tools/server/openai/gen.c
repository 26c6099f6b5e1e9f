/* nucleus serve: waiting for engine events on an HTTP thread. */
#include "gen.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define POLL_MS 20

struct gen {
  server_ctx *srv;
  nucleus_request *req;
  int slot; /* in srv->inflight */
  int fd;   /* the client's socket, -1 when unknown */
  bool done;
  double t_submit;
  double t_first;   /* first token of any completion, 0 before */
  double t_checked; /* when the socket was last checked */
  int32_t n;
  double *t_last; /* per completion: time of its last token, 0 before */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

nucleus_status gen_start(server_ctx *srv, struct MHD_Connection *conn,
                         const int32_t *prompt, size_t n_prompt,
                         const nucleus_request_params *params, gen **out,
                         nucleus_error *err) {
  *out = NULL;
  gen *g = calloc(1, sizeof *g);
  int32_t n = params->n > 0 ? params->n : 1;
  if (g) g->t_last = calloc((size_t)n, sizeof *g->t_last);
  if (!g || !g->t_last) {
    free(g);
    err->code = NUCLEUS_ERR_NOMEM;
    snprintf(err->message, sizeof err->message, "out of memory");
    return NUCLEUS_ERR_NOMEM;
  }
  g->srv = srv;
  g->n = n;
  g->slot = -1;
  g->fd = -1;
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (info) g->fd = info->connect_fd;
  g->t_submit = now_s();
  nucleus_status st = nucleus_engine_submit(srv->engine, prompt, n_prompt,
                                            params, &g->req, err);
  if (st != NUCLEUS_OK) {
    free(g->t_last);
    free(g);
    return st;
  }
  g->slot = inflight_add(srv->inflight, g->req);
  metrics_add_tokens(srv->metrics, (int64_t)n_prompt, 0);
  *out = g;
  return NUCLEUS_OK;
}

bool gen_client_gone(gen *g) {
  if (g->fd < 0) return false;
  struct pollfd p = {.fd = g->fd, .events = POLLRDHUP};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

static void observe(gen *g, const nucleus_event *ev) {
  double t = now_s();
  metrics_add_tokens(g->srv->metrics, 0, 1);
  if (ev->index < 0 || ev->index >= g->n) return;
  double *last = &g->t_last[ev->index];
  if (g->t_first == 0) g->t_first = t;
  if (*last == 0)
    metrics_observe_ttft(g->srv->metrics, t - g->t_submit);
  else
    metrics_observe_itl(g->srv->metrics, t - *last);
  *last = t;
}

gen_wait gen_next(gen *g, nucleus_event *ev) {
  if (g->done) return GEN_FAILED;
  for (;;) {
    nucleus_status st = nucleus_request_next_event(g->req, ev, POLL_MS);
    if (st == NUCLEUS_OK) {
      /* Events may flow without pause: look at the socket now and then. */
      double t = now_s();
      if (t - g->t_checked > POLL_MS * 1e-3 && ev->kind != NUCLEUS_EVENT_DONE) {
        g->t_checked = t;
        if (gen_client_gone(g)) {
          nucleus_request_cancel(g->req);
          return GEN_GONE;
        }
      }
      if (ev->kind == NUCLEUS_EVENT_TOKEN) observe(g, ev);
      if (ev->kind == NUCLEUS_EVENT_DONE) g->done = true;
      return GEN_EVENT;
    }
    if (st != NUCLEUS_ERR_TIMEOUT) return GEN_FAILED;
    if (gen_client_gone(g)) {
      nucleus_request_cancel(g->req);
      return GEN_GONE;
    }
  }
}

void gen_timing(const gen *g, double *ttft_s, double *elapsed_s) {
  *ttft_s = g->t_first > 0 ? g->t_first - g->t_submit : -1;
  *elapsed_s = now_s() - g->t_submit;
}

void gen_free(gen *g) {
  if (!g) return;
  inflight_remove(g->srv->inflight, g->slot);
  if (!g->done) nucleus_request_cancel(g->req);
  nucleus_request_free(g->req);
  free(g->t_last);
  free(g);
}
