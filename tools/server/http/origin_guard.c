/* nucleus serve: Content-Type and Host checks. */
#include "origin_guard.h"

#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

bool content_type_is_json(const char *v) {
  if (!v) return false;
  while (*v == ' ' || *v == '\t')
    v++;
  static const char want[] = "application/json";
  size_t n = sizeof want - 1;
  if (strncasecmp(v, want, n)) return false;
  v += n;
  while (*v == ' ' || *v == '\t')
    v++;
  return *v == '\0' || *v == ';';
}

/* Names compare without case and without one trailing dot. */
static bool same_name(const char *a, size_t an, const char *b) {
  size_t bn = strlen(b);
  if (an && a[an - 1] == '.') an--;
  if (bn && b[bn - 1] == '.') bn--;
  return an == bn && !strncasecmp(a, b, an);
}

bool host_allowed(const server_config *cfg, const char *value) {
  if (!value) return true; /* no browser omits it (HTTP/1.0 clients do) */
  char host[256];
  size_t n = strlen(value);
  if (n == 0 || n >= sizeof host) return false;
  memcpy(host, value, n + 1);
  /* Strip the port: "[v6]:port", "name:port". */
  char *name = host;
  if (host[0] == '[') {
    char *close = strchr(host, ']');
    if (!close || (close[1] && close[1] != ':')) return false;
    *close = '\0';
    name = host + 1;
    unsigned char buf[16];
    return inet_pton(AF_INET6, name, buf) == 1;
  }
  char *colon = strchr(host, ':');
  if (colon) {
    if (strchr(colon + 1, ':')) return false;
    *colon = '\0';
  }
  n = strlen(name);
  unsigned char buf[16];
  if (inet_pton(AF_INET, name, buf) == 1) return true; /* an IP literal */
  if (same_name(name, n, "localhost")) return true;
  if (cfg->host && same_name(name, n, cfg->host)) return true;
  for (int i = 0; i < cfg->n_allowed_hosts; i++)
    if (!strcmp(cfg->allowed_hosts[i], "*") ||
        same_name(name, n, cfg->allowed_hosts[i]))
      return true;
  return false;
}
