/* nucleus serve: a deadline for reading each request, however slowly its
 * bytes trickle in. libmicrohttpd's connection timeout counts idle time
 * only, so a client sending one header byte every few seconds (slowloris)
 * holds its connection forever, and a handful of them exhaust
 * --max-connections. A watchdog thread shuts down the socket of any
 * connection whose request (headers and body) has not fully arrived within
 * --read-timeout seconds of the connection opening, or of the previous
 * response ending plus the idle timeout on a kept-alive connection. */
#ifndef NUCLEUS_SERVER_CONN_WATCH_H
#define NUCLEUS_SERVER_CONN_WATCH_H

#include <microhttpd.h>

typedef struct conn_watch conn_watch;

/* NULL when out of memory or the thread cannot start. */
conn_watch *conn_watch_start(int read_timeout_s, int idle_timeout_s);
void conn_watch_stop(conn_watch *w);

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the watch). */
void conn_watch_notify(void *cls, struct MHD_Connection *conn,
                       void **socket_context,
                       enum MHD_ConnectionNotificationCode code);

/* The request on conn has arrived whole: no deadline while it is served. */
void conn_watch_request_read(conn_watch *w, struct MHD_Connection *conn);

/* Its response has ended: the next request on the connection has the idle
 * timeout plus the read timeout to arrive. */
void conn_watch_request_done(conn_watch *w, struct MHD_Connection *conn);

#endif
