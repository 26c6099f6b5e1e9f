/* nucleus serve: refusing a connection with a JSON error (http_refuse.h). */
#include "http_refuse.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api_error.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *reason(unsigned status) {
  switch (status) {
  case 400: return "Bad Request";
  case 408: return "Request Timeout";
  case 414: return "URI Too Long";
  case 431: return "Request Header Fields Too Large";
  case 501: return "Not Implemented";
  case 505: return "HTTP Version Not Supported";
  default: return "Error";
  }
}

void http_refuse(server_ctx *srv, int fd, unsigned status, const char *msg) {
  api_error e;
  api_fail(&e, status, NULL, "%s", msg);
  json_t *body = api_error_json(&e);
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (text) {
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n"
                     "Server: nucleus\r\n\r\n",
                     status, reason(status), strlen(text));
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) == n)
      (void)send(fd, text, strlen(text), MSG_NOSIGNAL);
    free(text);
    metrics_count_response(srv->metrics, status);
  }
  shutdown(fd, SHUT_WR);
  char sink[4096];
  double until = now_s() + 1.0;
  for (size_t total = 0; total < (1u << 20) && now_s() < until;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t r = recv(fd, sink, sizeof sink, 0);
    if (r <= 0) break;
    total += (size_t)r;
  }
  close(fd);
}
