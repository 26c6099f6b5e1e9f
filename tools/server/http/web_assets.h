/* nucleus serve: the web page (web/), embedded at build time by
 * scripts/embed_web.py into build/BUILD/gen/web_assets.c. */
#ifndef NUCLEUS_SERVER_WEB_ASSETS_H
#define NUCLEUS_SERVER_WEB_ASSETS_H

#include <stddef.h>

typedef struct web_asset {
  const char *path;         /* the URL path it is served at */
  const char *content_type; /* its Content-Type */
  const unsigned char *data;
  size_t len;
} web_asset;

extern const web_asset web_assets[];
extern const size_t web_assets_count;

/* The asset served at path (the query string ignored), or NULL. */
const web_asset *web_asset_find(const char *path);

#endif
