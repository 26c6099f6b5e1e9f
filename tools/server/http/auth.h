/* nucleus serve: API key checks. */
#ifndef NUCLEUS_SERVER_AUTH_H
#define NUCLEUS_SERVER_AUTH_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* Equal in time that depends only on the key's length. */
bool auth_equal(const char *given, size_t given_len, const char *key);

/* True when the request carries key as 'Authorization: Bearer KEY' or
 * 'X-Api-Key: KEY'. */
bool auth_request_ok(struct MHD_Connection *conn, const char *key);

/* The key the request presents (Bearer or X-Api-Key), trimmed, or NULL. */
const char *auth_request_key(struct MHD_Connection *conn, size_t *len);

#endif
