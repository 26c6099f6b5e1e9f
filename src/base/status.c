#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

nc_code nc_fail(nc_error *err, nc_code code, const char *fmt, ...) {
  if (err) {
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

void nc_error_prefix(nc_error *err, const char *fmt, ...) {
  if (!err) return;
  char prefix[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  char old[sizeof err->message];
  memcpy(old, err->message, sizeof old);
  snprintf(err->message, sizeof err->message, "%s: %s", prefix, old);
}

const char *nucleus_status_name(nucleus_status code) {
  switch (code) {
  case NUCLEUS_OK: return "ok";
  case NUCLEUS_ERR_IO: return "io error";
  case NUCLEUS_ERR_FORMAT: return "format error";
  case NUCLEUS_ERR_UNSUPPORTED: return "unsupported";
  case NUCLEUS_ERR_NOMEM: return "out of memory";
  case NUCLEUS_ERR_INVALID_ARGUMENT: return "invalid argument";
  case NUCLEUS_ERR_LIMIT: return "limit exceeded";
  case NUCLEUS_ERR_BUSY: return "busy";
  case NUCLEUS_ERR_CANCELLED: return "cancelled";
  case NUCLEUS_ERR_INTERNAL: return "internal error";
  case NUCLEUS_ERR_TIMEOUT: return "timed out";
  }
  return "unknown";
}
