/* nucleus serve: the request-read watchdog. */
#include "conn_watch.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#define SCAN_MS 200

typedef struct watched {
  struct watched *prev, *next;
  int fd;
  double deadline; /* CLOCK_MONOTONIC seconds; 0: none */
  bool shut;
} watched;

struct conn_watch {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  bool stop;
  double read_s, idle_s;
  watched head; /* a ring: head.next is the first */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *run(void *arg) {
  conn_watch *w = arg;
  pthread_mutex_lock(&w->mu);
  while (!w->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += SCAN_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    int rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    if (rc != 0 && rc != ETIMEDOUT) break;
    double t = now_s();
    for (watched *c = w->head.next; c != &w->head; c = c->next)
      if (!c->shut && c->deadline > 0 && t > c->deadline && c->fd >= 0) {
        /* The connection's thread wakes from its read and closes it. */
        shutdown(c->fd, SHUT_RDWR);
        c->shut = true;
      }
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

conn_watch *conn_watch_start(int read_timeout_s, int idle_timeout_s) {
  conn_watch *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->read_s = read_timeout_s;
  w->idle_s = idle_timeout_s;
  w->head.next = w->head.prev = &w->head;
  if (pthread_create(&w->thread, NULL, run, w)) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return NULL;
  }
  return w;
}

void conn_watch_stop(conn_watch *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stop = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  /* libmicrohttpd has closed every connection (and so unlinked it) before
   * the daemon stops; anything left is freed here. */
  while (w->head.next != &w->head) {
    watched *c = w->head.next;
    w->head.next = c->next;
    free(c);
  }
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

void conn_watch_notify(void *cls, struct MHD_Connection *conn,
                       void **socket_context,
                       enum MHD_ConnectionNotificationCode code) {
  conn_watch *w = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    watched *c = calloc(1, sizeof *c);
    if (!c) return; /* unwatched: the idle timeout still applies */
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    c->fd = info ? info->connect_fd : -1;
    pthread_mutex_lock(&w->mu);
    c->deadline = now_s() + w->read_s;
    c->next = w->head.next;
    c->prev = &w->head;
    w->head.next->prev = c;
    w->head.next = c;
    pthread_mutex_unlock(&w->mu);
    *socket_context = c;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    watched *c = *socket_context;
    if (!c) return;
    pthread_mutex_lock(&w->mu);
    c->prev->next = c->next;
    c->next->prev = c->prev;
    pthread_mutex_unlock(&w->mu);
    free(c);
    *socket_context = NULL;
  }
}

static watched *of(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? info->socket_context : NULL;
}

void conn_watch_request_read(conn_watch *w, struct MHD_Connection *conn) {
  watched *c = w ? of(conn) : NULL;
  if (!c) return;
  pthread_mutex_lock(&w->mu);
  c->deadline = 0;
  pthread_mutex_unlock(&w->mu);
}

void conn_watch_request_done(conn_watch *w, struct MHD_Connection *conn) {
  watched *c = w ? of(conn) : NULL;
  if (!c) return;
  pthread_mutex_lock(&w->mu);
  c->deadline = now_s() + w->idle_s + w->read_s;
  pthread_mutex_unlock(&w->mu);
}
