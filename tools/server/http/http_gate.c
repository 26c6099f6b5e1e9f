/* nucleus serve: accepting connections and checking their first request
 * head. */
#include "http_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http_head.h"
#include "http_refuse.h"
#include "http_relay.h"

#define MAX_HEAD HTTP_HEAD_MAX_BYTES

typedef struct peer_count {
  struct sockaddr_storage addr;
  int n;
} peer_count;

struct http_gate {
  server_ctx *srv;
  struct MHD_Daemon *daemon;
  int listen_fd;
  int wake[2]; /* a pipe: a byte stops the accept loop */
  int port;
  pthread_t thread;
  bool running;
  pthread_mutex_t mu;
  pthread_cond_t idle; /* signalled when `waiting` or `relays` drops to 0 */
  int waiting;         /* connections at the gate */
  int relays;          /* connections past it, relayed (http_relay.h) */
  atomic_bool closed;  /* the daemon is stopping: relays end at once */
  peer_count *peers;   /* per address, while at the gate */
  int n_peers;
};

typedef struct gate_conn {
  http_gate *g;
  int fd;
  struct sockaddr_storage addr;
  socklen_t addr_len;
} gate_conn;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Addresses compare by family and host (not port). */
static bool same_host(const struct sockaddr_storage *a,
                      const struct sockaddr_storage *b) {
  if (a->ss_family != b->ss_family) return false;
  if (a->ss_family == AF_INET)
    return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                   &((const struct sockaddr_in *)b)->sin_addr,
                   sizeof(struct in_addr));
  if (a->ss_family == AF_INET6)
    return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                   &((const struct sockaddr_in6 *)b)->sin6_addr,
                   sizeof(struct in6_addr));
  return false;
}

/* Admits one more connection from addr, or false when a limit is hit. */
static bool admit(http_gate *g, const struct sockaddr_storage *addr) {
  const server_config *cfg = g->srv->cfg;
  pthread_mutex_lock(&g->mu);
  bool ok = g->waiting < cfg->max_connections;
  int k = 0;
  while (k < g->n_peers && !same_host(&g->peers[k].addr, addr))
    k++;
  if (ok && k < g->n_peers && g->peers[k].n >= cfg->max_connections_per_ip)
    ok = false;
  if (ok) {
    if (k == g->n_peers) {
      g->peers[k].addr = *addr;
      g->peers[k].n = 0;
      g->n_peers++;
    }
    g->peers[k].n++;
    g->waiting++;
  }
  pthread_mutex_unlock(&g->mu);
  return ok;
}

static void relay_enter(http_gate *g) {
  pthread_mutex_lock(&g->mu);
  g->relays++;
  pthread_mutex_unlock(&g->mu);
}

static void relay_leave(http_gate *g) {
  pthread_mutex_lock(&g->mu);
  if (--g->relays == 0) pthread_cond_broadcast(&g->idle);
  pthread_mutex_unlock(&g->mu);
}

static void leave(http_gate *g, const struct sockaddr_storage *addr) {
  pthread_mutex_lock(&g->mu);
  for (int k = 0; k < g->n_peers; k++) {
    if (!same_host(&g->peers[k].addr, addr)) continue;
    if (--g->peers[k].n == 0) g->peers[k] = g->peers[--g->n_peers];
    break;
  }
  if (--g->waiting == 0) pthread_cond_broadcast(&g->idle);
  pthread_mutex_unlock(&g->mu);
}

/* Waits for the first request head; true when it may go on to the
 * daemon, false after answering or closing. */
static bool check(http_gate *g, int fd) {
  char *buf = malloc(MAX_HEAD + 64);
  if (!buf) {
    close(fd);
    return false;
  }
  double last = now_s();
  double deadline = last + g->srv->cfg->read_timeout_s;
  size_t have = 0;
  bool pass = false;
  for (;;) {
    /* Wake only when more than what was already seen has arrived. */
    int lowat = (int)have + 1;
    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
    /* Within --read-timeout in all, and --timeout since the last byte. */
    double t = now_s();
    double until = last + g->srv->cfg->timeout_s;
    double left = (until < deadline ? until : deadline) - t;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int pr = left > 0 ? poll(&p, 1, (int)(left * 1000) + 1) : 0;
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) { /* the head did not arrive in time */
      if (have)
        http_refuse(g->srv, fd, 408,
                    "the request head did not arrive in time "
                    "(--read-timeout, --timeout)");
      else
        close(fd);
      break;
    }
    ssize_t r = recv(fd, buf, MAX_HEAD + 64, MSG_PEEK);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || (size_t)r <= have) {
      /* Closed (or half-closed: readable with nothing new) before a whole
       * request head. */
      close(fd);
      break;
    }
    have = (size_t)r;
    last = now_s();
    http_head_verdict v;
    http_head_result res = http_head_check(buf, have, MAX_HEAD, &v);
    if (res == HTTP_HEAD_BAD) {
      http_refuse(g->srv, fd, v.status, v.message);
      break;
    }
    if (res == HTTP_HEAD_OK || have >= MAX_HEAD + 64) {
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
      pass = true;
      break;
    }
  }
  free(buf);
  return pass;
}

static void *conn_main(void *arg) {
  gate_conn *c = arg;
  http_gate *g = c->g;
  int pair[2] = {-1, -1};
  bool pass = check(g, c->fd);
  if (pass && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair)) {
    close(c->fd);
    pass = false;
  }
  /* libmicrohttpd serves one end of the pair (on failure it closes it) */
  if (pass)
    (void)MHD_add_connection(g->daemon, pair[1], (struct sockaddr *)&c->addr,
                             c->addr_len);
  leave(g, &c->addr);
  if (pass) {
    relay_enter(g);
    http_relay_run(g->srv, c->fd, pair[0], &g->closed); /* to its end */
    relay_leave(g);
  }
  free(c);
  return NULL;
}

static void spawn(http_gate *g, int fd, const struct sockaddr_storage *addr,
                  socklen_t addr_len) {
  if (!admit(g, addr)) {
    close(fd);
    return;
  }
  gate_conn *c = malloc(sizeof *c);
  pthread_attr_t attr;
  pthread_t t;
  bool ok = c && !pthread_attr_init(&attr);
  if (ok) {
    c->g = g;
    c->fd = fd;
    c->addr = *addr;
    c->addr_len = addr_len;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    ok = !pthread_create(&t, &attr, conn_main, c);
    pthread_attr_destroy(&attr);
  }
  if (!ok) {
    free(c);
    close(fd);
    leave(g, addr);
  }
}

static void *accept_main(void *arg) {
  http_gate *g = arg;
  for (;;) {
    struct pollfd p[2] = {{.fd = g->listen_fd, .events = POLLIN},
                          {.fd = g->wake[0], .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents) break;
    if (!(p[0].revents & POLLIN)) continue;
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    int fd =
        accept4(g->listen_fd, (struct sockaddr *)&addr, &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) usleep(10000);
      continue;
    }
    spawn(g, fd, &addr, len);
  }
  return NULL;
}

http_gate *http_gate_listen(server_ctx *srv, const struct sockaddr *addr,
                            socklen_t addr_len, char *msg, size_t cap) {
  http_gate *g = calloc(1, sizeof *g);
  if (g) g->peers = calloc((size_t)srv->cfg->max_connections, sizeof *g->peers);
  if (!g || !g->peers) {
    free(g);
    snprintf(msg, cap, "out of memory");
    return NULL;
  }
  g->srv = srv;
  g->wake[0] = g->wake[1] = -1;
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->idle, NULL);
  g->listen_fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (g->listen_fd >= 0)
    setsockopt(g->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (g->listen_fd < 0 || bind(g->listen_fd, addr, addr_len) ||
      listen(g->listen_fd, SOMAXCONN) || pipe2(g->wake, O_CLOEXEC)) {
    snprintf(msg, cap, "cannot listen on %s:%d: %s", srv->cfg->host,
             srv->cfg->port, strerror(errno));
    http_gate_free(g);
    return NULL;
  }
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  getsockname(g->listen_fd, (struct sockaddr *)&bound, &blen);
  g->port = bound.ss_family == AF_INET6
                ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                : ntohs(((struct sockaddr_in *)&bound)->sin_port);
  return g;
}

int http_gate_port(const http_gate *g) {
  return g->port;
}

int http_gate_start(http_gate *g, struct MHD_Daemon *daemon) {
  g->daemon = daemon;
  if (pthread_create(&g->thread, NULL, accept_main, g)) return -1;
  g->running = true;
  return 0;
}

void http_gate_quiesce(http_gate *g) {
  if (!g) return;
  if (g->running) {
    char b = 1;
    (void)!write(g->wake[1], &b, 1);
    pthread_join(g->thread, NULL);
    g->running = false;
  }
  if (g->listen_fd >= 0) close(g->listen_fd);
  g->listen_fd = -1;
}

void http_gate_close(http_gate *g) {
  if (!g) return;
  http_gate_quiesce(g);
  pthread_mutex_lock(&g->mu);
  while (g->waiting > 0)
    pthread_cond_wait(&g->idle, &g->mu);
  pthread_mutex_unlock(&g->mu);
  atomic_store(&g->closed, true);
}

void http_gate_free(http_gate *g) {
  if (!g) return;
  http_gate_close(g);
  pthread_mutex_lock(&g->mu);
  while (g->relays > 0)
    pthread_cond_wait(&g->idle, &g->mu);
  pthread_mutex_unlock(&g->mu);
  for (int i = 0; i < 2; i++)
    if (g->wake[i] >= 0) close(g->wake[i]);
  pthread_cond_destroy(&g->idle);
  pthread_mutex_destroy(&g->mu);
  free(g->peers);
  free(g);
}
