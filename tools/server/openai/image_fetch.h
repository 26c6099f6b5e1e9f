/* nucleus serve: fetching an image a request names by an http(s) URL, for
 * a server started with --allow-image-urls (off by default: the server
 * fetches nothing a request names). libcurl, bounded: http and https only,
 * redirects (at most 3) to http and https only, IMAGE_FETCH_MAX_BYTES of
 * body, IMAGE_FETCH_TIMEOUT_MS in all, a 200 answer. The server's own
 * network can be reached with it (an address on the loopback or in a
 * private range is fetched like any other): enable it only where that is
 * wanted. */
#ifndef NUCLEUS_SERVER_IMAGE_FETCH_H
#define NUCLEUS_SERVER_IMAGE_FETCH_H

#include <stddef.h>
#include <stdint.h>

#define IMAGE_FETCH_MAX_BYTES (16u << 20)
#define IMAGE_FETCH_TIMEOUT_MS 5000
#define IMAGE_FETCH_MAX_URL 4096

/* Once, before threads start (libcurl's global setup). 0, or -1. */
int image_fetch_init(void);

/* The body of url (NUL-terminated) in a malloc'd *out of *n bytes: 0, or
 * -1 with why (what failed, for the 400), -2 when out of memory. */
int image_fetch(const char *url, uint8_t **out, size_t *n, char *why,
                size_t cap);

#endif
