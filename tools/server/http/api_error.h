/* nucleus serve: error bodies, OpenAI-shaped
 * {"error": {"message", "type", "param", "code"}}, or for the Messages
 * API Anthropic-shaped {"type": "error", "error": {"type", "message"}}. */
#ifndef NUCLEUS_SERVER_API_ERROR_H
#define NUCLEUS_SERVER_API_ERROR_H

#include <jansson.h>

#include "nucleus.h"

typedef enum api_shape {
  API_SHAPE_OPENAI, /* the default */
  API_SHAPE_ANTHROPIC,
} api_shape;

typedef struct api_error {
  unsigned status;   /* HTTP status */
  api_shape shape;   /* set after api_fail, which resets it to OpenAI's */
  const char *code;  /* NULL, or e.g. "context_length_exceeded" */
  const char *allow; /* for 405: the allowed method */
  bool close;        /* answer with Connection: close (a bad request head) */
  char param[64];    /* the offending request field, "" for none */
  char message[512];
} api_error;

/* A 400 naming the first key of root that is not one of fields[0..n):
 * "unknown field 'K' (WHAT takes F1, F2, ...)"; 0 when every key is. */
int api_check_fields(const json_t *root, const char *const *fields, size_t n,
                     const char *what, api_error *e);

/* Fills *e and returns -1 so that parsers can `return api_fail(...)`. */
int api_fail(api_error *e, unsigned status, const char *param, const char *fmt,
             ...) __attribute__((format(printf, 4, 5)));

/* The error "type" for a status: invalid_request_error (4xx),
 * authentication_error (401), server_error (5xx). */
const char *api_error_type(unsigned status);

/* Anthropic's error type for a status: invalid_request_error (400 and
 * the other 4xx), authentication_error (401), permission_error (403),
 * not_found_error (404), request_too_large (413), rate_limit_error (429),
 * overloaded_error (503), api_error (other 5xx). */
const char *api_error_type_anthropic(unsigned status);

/* The error body in e->shape; NULL when out of memory. */
json_t *api_error_json(const api_error *e);

/* The HTTP status for an engine error: 400 for the request's own fault
 * (invalid, over a limit, unsupported), 503 for a passing shortage (busy,
 * memory), 500 otherwise. */
unsigned api_status_for(nucleus_status code);

#endif
