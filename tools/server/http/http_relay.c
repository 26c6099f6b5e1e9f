/* nucleus serve: relaying a connection with its framing checked
 * (http_relay.h). */
#include "http_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_body.h"
#include "http_head.h"
#include "http_refuse.h"

/* Client bytes held: a whole head at most, and then some. */
#define IN_CAP (HTTP_HEAD_MAX_BYTES + 64)
/* Answer bytes read from libmicrohttpd, not yet sent to the client. */
#define OUT_CAP 65536

typedef struct relay {
  int client, mhd;
  const atomic_bool *closed;
  int timeout_ms; /* --timeout */
  int waited_ms;  /* since libmicrohttpd ended, without progress */
  char *in;       /* client bytes: [0, ok) checked, to pass on; [ok, n) held */
  size_t in_n, in_ok;
  char *out; /* answer bytes [out_off, out_n) to send */
  size_t out_n, out_off;
  bool in_head;   /* the next client bytes start a request head */
  http_body body; /* else: the body being read */
  bool bad;       /* a malformed request: nothing more is passed on */
  http_head_verdict verdict;
  bool client_eof, mhd_shut, mhd_eof, client_gone;
} relay;

/* Checks held client bytes as far as they go. */
static void check_held(relay *r) {
  while (!r->bad && r->in_ok < r->in_n) {
    const char *p = r->in + r->in_ok;
    size_t n = r->in_n - r->in_ok;
    if (r->in_head) {
      http_head_info info;
      http_head_result res =
          http_head_frame(p, n, HTTP_HEAD_MAX_BYTES, &r->verdict, &info);
      if (res == HTTP_HEAD_INCOMPLETE) return;
      if (res == HTTP_HEAD_BAD) {
        r->bad = true;
        return;
      }
      r->in_ok += info.head_len;
      http_body_start(&r->body, &info);
      r->in_head = http_body_done(&r->body);
    } else {
      size_t used = 0;
      if (http_body_feed(&r->body, p, n, &used, &r->verdict) == HTTP_HEAD_BAD) {
        r->bad = true;
        return;
      }
      r->in_ok += used;
      r->in_head = http_body_done(&r->body);
    }
  }
}

/* After a malformed request or the client's end: once what was checked is
 * passed on, libmicrohttpd's input ends. */
static void end_input(relay *r) {
  if (r->bad) r->in_n = r->in_ok; /* the malformed request's bytes go */
  if ((r->bad || r->client_eof) && r->in_ok == 0 && !r->mhd_shut) {
    shutdown(r->mhd, SHUT_WR);
    r->mhd_shut = true;
  }
}

static bool would_block(void) {
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* One round of poll and transfers; false when the relay is over. */
static bool pump(relay *r) {
  struct pollfd p[2] = {{.fd = r->client, .events = 0},
                        {.fd = r->mhd, .events = 0}};
  bool read_client = !r->bad && !r->client_eof && r->in_n < IN_CAP;
  if (read_client) p[0].events |= POLLIN;
  if (r->out_off < r->out_n) p[0].events |= POLLOUT;
  if (r->in_ok && !r->mhd_shut) p[1].events |= POLLOUT;
  if (!r->mhd_eof && r->out_n < OUT_CAP) p[1].events |= POLLIN;
  if (!p[0].events && !p[1].events) return false;
  /* a side with nothing to wait for is left out (its hang-up would wake
   * the poll at once, again and again) */
  for (int k = 0; k < 2; k++)
    if (!p[k].events) p[k].fd = -1;
  /* Until libmicrohttpd ends, its idle timeout bounds the connection;
   * after, a client that does not read is given up. */
  int pr = poll(p, 2, r->mhd_eof ? 200 : -1);
  if (pr < 0) return errno == EINTR;
  if (pr == 0) {
    r->waited_ms += 200;
    if (atomic_load(r->closed) || r->waited_ms >= r->timeout_ms) {
      r->client_gone = true;
      return false;
    }
    return true;
  }
  if (p[0].revents & (POLLERR | POLLNVAL) ||
      ((p[0].revents & POLLHUP) && !read_client)) {
    r->client_gone = true; /* both directions are gone */
    return false;
  }
  if (read_client && (p[0].revents & (POLLIN | POLLHUP))) {
    ssize_t k = recv(r->client, r->in + r->in_n, IN_CAP - r->in_n, 0);
    if (k > 0) {
      r->in_n += (size_t)k;
      check_held(r);
    } else if (k == 0 || !would_block()) {
      r->client_eof = true;
      if (!r->bad) r->in_n = r->in_ok; /* half a request: never handled */
    }
  }
  if (r->in_ok && !r->mhd_shut && (p[1].revents & (POLLOUT | POLLERR))) {
    ssize_t k = send(r->mhd, r->in, r->in_ok, MSG_NOSIGNAL);
    if (k > 0) {
      memmove(r->in, r->in + k, r->in_n - (size_t)k);
      r->in_n -= (size_t)k;
      r->in_ok -= (size_t)k;
    } else if (k < 0 && !would_block()) {
      r->in_n = r->in_ok = 0; /* libmicrohttpd closed: nothing to pass */
      r->mhd_shut = true;
    }
  }
  end_input(r);
  if (!r->mhd_eof && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
    ssize_t k = recv(r->mhd, r->out + r->out_n, OUT_CAP - r->out_n, 0);
    if (k > 0)
      r->out_n += (size_t)k;
    else if (k == 0 || !would_block())
      r->mhd_eof = true;
  }
  if (r->out_off < r->out_n) {
    ssize_t k = send(r->client, r->out + r->out_off, r->out_n - r->out_off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      r->out_off += (size_t)k;
      r->waited_ms = 0;
      if (r->out_off == r->out_n) { /* all sent: the buffer is free again */
        r->out_off = r->out_n = 0;
      } else if (r->out_n == OUT_CAP) { /* room for libmicrohttpd's next */
        memmove(r->out, r->out + r->out_off, r->out_n - r->out_off);
        r->out_n -= r->out_off;
        r->out_off = 0;
      }
    } else if (k < 0 && !would_block()) {
      r->client_gone = true;
      return false;
    }
  }
  /* libmicrohttpd is done and every answer is out */
  return !(r->mhd_eof && r->out_off == r->out_n);
}

/* libmicrohttpd ended the connection while the client may still be
 * sending: our FIN first, then its bytes are read away for a moment, so
 * that closing does not reset the connection before it reads the answer. */
static void close_gently(int fd) {
  shutdown(fd, SHUT_WR);
  char sink[4096];
  for (int rounds = 0; rounds < 10; rounds++) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) < 0 && errno != EINTR) break;
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t k = recv(fd, sink, sizeof sink, 0);
    if (k <= 0) break;
  }
  close(fd);
}

void http_relay_run(server_ctx *srv, int client, int mhd,
                    const atomic_bool *closed) {
  relay r = {.client = client,
             .mhd = mhd,
             .closed = closed,
             .timeout_ms = srv->cfg->timeout_s * 1000,
             .in_head = true};
  r.in = malloc(IN_CAP);
  r.out = malloc(OUT_CAP);
  fcntl(mhd, F_SETFL, fcntl(mhd, F_GETFL) | O_NONBLOCK);
  fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK);
  if (r.in && r.out)
    while (pump(&r))
      ;
  free(r.in);
  free(r.out);
  close(mhd);
  if (!r.client_gone)
    fcntl(client, F_SETFL, fcntl(client, F_GETFL) & ~O_NONBLOCK);
  if (r.bad && !r.client_gone)
    http_refuse(srv, client, r.verdict.status, r.verdict.message);
  else if (!r.client_gone && !r.client_eof)
    close_gently(client);
  else
    close(client);
}
