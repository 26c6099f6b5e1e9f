/* status: error codes with human-readable messages, shared by every module. */
#ifndef NC_STATUS_H
#define NC_STATUS_H

#include "nucleus.h"

/* Internally we use the public status codes and error struct directly. */
typedef nucleus_status nc_code;
typedef nucleus_error nc_error;

#define NC_OK NUCLEUS_OK
#define NC_ERR_IO NUCLEUS_ERR_IO
#define NC_ERR_FORMAT NUCLEUS_ERR_FORMAT
#define NC_ERR_UNSUPPORTED NUCLEUS_ERR_UNSUPPORTED
#define NC_ERR_NOMEM NUCLEUS_ERR_NOMEM
#define NC_ERR_INVALID_ARGUMENT NUCLEUS_ERR_INVALID_ARGUMENT
#define NC_ERR_LIMIT NUCLEUS_ERR_LIMIT
#define NC_ERR_BUSY NUCLEUS_ERR_BUSY
#define NC_ERR_CANCELLED NUCLEUS_ERR_CANCELLED
#define NC_ERR_INTERNAL NUCLEUS_ERR_INTERNAL
#define NC_ERR_TIMEOUT NUCLEUS_ERR_TIMEOUT

/* Records code and a printf-style message in *err (err may be NULL) and
 * returns code, so callers can write `return nc_fail(err, NC_ERR_IO, ...)`. */
nc_code nc_fail(nc_error *err, nc_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (for adding context). */
void nc_error_prefix(nc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
