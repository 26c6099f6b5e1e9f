/* nucleus serve: what keeps a web page the user visits from driving the
 * server. A cross-origin page can send "simple" requests (form posts,
 * text/plain bodies) without a CORS preflight, and a DNS-rebinding page
 * reaches loopback under its own host name. So every POST must say
 * Content-Type: application/json (which no simple request can, so the
 * browser must ask first, and --cors-origin decides), and the Host header
 * must be an IP literal, localhost, the bound host or an --allowed-host
 * name. */
#ifndef NUCLEUS_SERVER_ORIGIN_GUARD_H
#define NUCLEUS_SERVER_ORIGIN_GUARD_H

#include <stdbool.h>

#include "server_config.h"

/* True when a Content-Type header value is application/json (any case,
 * parameters such as charset allowed). */
bool content_type_is_json(const char *value);

/* True when the Host header value (with or without a port) names this
 * server as cfg allows. NULL (no header: HTTP/1.0 clients, never a
 * browser) is allowed. */
bool host_allowed(const server_config *cfg, const char *value);

#endif
