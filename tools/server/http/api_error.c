/* nucleus serve: building error bodies. */
#include "api_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_text.h"

int api_fail(api_error *e, unsigned status, const char *param, const char *fmt,
             ...) {
  memset(e, 0, sizeof *e);
  e->status = status;
  if (param) snprintf(e->param, sizeof e->param, "%s", param);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return -1;
}

const char *api_error_type(unsigned status) {
  if (status == 401) return "authentication_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

const char *api_error_type_anthropic(unsigned status) {
  switch (status) {
  case 401: return "authentication_error";
  case 403: return "permission_error";
  case 404: return "not_found_error";
  case 413: return "request_too_large";
  case 429: return "rate_limit_error";
  case 503: return "overloaded_error";
  default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

static json_t *anthropic_json(const api_error *e) {
  return json_pack("{s:s,s:{s:s,s:o}}", "type", "error", "error", "type",
                   api_error_type_anthropic(e->status), "message",
                   json_text(e->message, strlen(e->message)));
}

json_t *api_error_json(const api_error *e) {
  if (e->shape == API_SHAPE_ANTHROPIC) return anthropic_json(e);
  json_t *inner = json_object();
  json_t *root = json_object();
  if (!inner || !root) {
    json_decref(inner);
    json_decref(root);
    return NULL;
  }
  json_object_set_new(inner, "message",
                      json_text(e->message, strlen(e->message)));
  json_object_set_new(inner, "type", json_string(api_error_type(e->status)));
  json_object_set_new(inner, "param",
                      e->param[0] ? json_text(e->param, strlen(e->param))
                                  : json_null());
  json_object_set_new(inner, "code",
                      e->code ? json_string(e->code) : json_null());
  json_object_set_new(root, "error", inner);
  return root;
}

unsigned api_status_for(nucleus_status code) {
  switch (code) {
  case NUCLEUS_ERR_INVALID_ARGUMENT:
  case NUCLEUS_ERR_LIMIT:
  case NUCLEUS_ERR_UNSUPPORTED: return 400;
  case NUCLEUS_ERR_BUSY:
  case NUCLEUS_ERR_NOMEM: return 503;
  default: return 500;
  }
}

int api_check_fields(const json_t *root, const char *const *fields, size_t n,
                     const char *what, api_error *e) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)root, key, v) {
    bool known = false;
    for (size_t i = 0; i < n && !known; i++)
      known = !strcmp(key, fields[i]);
    if (known) continue;
    char list[512] = "";
    for (size_t i = 0; i < n; i++) {
      const size_t used = strlen(list);
      snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
               fields[i]);
    }
    return api_fail(e, 400, key, "unknown field '%.64s' (%s takes %s)", key,
                    what, list);
  }
  return 0;
}
