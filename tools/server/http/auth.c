/* nucleus serve: constant-time API key comparison. */
#include "auth.h"

#include <string.h>
#include <strings.h>

bool auth_equal(const char *given, size_t given_len, const char *key) {
  size_t key_len = strlen(key);
  volatile unsigned char diff = given_len != key_len;
  for (size_t i = 0; i < key_len; i++) {
    unsigned char g = i < given_len ? (unsigned char)given[i] : 0;
    diff |= (unsigned char)(g ^ (unsigned char)key[i]);
  }
  return diff == 0;
}

const char *auth_request_key(struct MHD_Connection *conn, size_t *len) {
  const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_AUTHORIZATION);
  if (h) {
    while (*h == ' ')
      h++;
    if (strncasecmp(h, "Bearer ", 7)) return NULL;
    h += 7;
    while (*h == ' ')
      h++;
    size_t n = strlen(h);
    while (n && h[n - 1] == ' ')
      n--;
    *len = n;
    return h;
  }
  h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Api-Key");
  if (h) *len = strlen(h);
  return h;
}

bool auth_request_ok(struct MHD_Connection *conn, const char *key) {
  size_t n = 0;
  const char *given = auth_request_key(conn, &n);
  return given && auth_equal(given, n, key);
}
