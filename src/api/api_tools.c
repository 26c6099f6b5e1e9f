/* Public API: tool calls parsed out of replies in the model's family
 * syntax (src/tool_call_*.c). */
#include <stdlib.h>
#include <string.h>

#include "chat/reasoning.h"
#include "chat/tool_call.h"
#include "nucleus.h"

static nc_tool_format format_of(const nucleus_model *model) {
  const char *name = nucleus_model_tool_format(model);
  for (int f = 0; f < NC_TOOL_FORMAT_COUNT; f++)
    if (!strcmp(nc_tool_format_name((nc_tool_format)f), name))
      return (nc_tool_format)f;
  return NC_TOOL_FORMAT_GENERIC;
}

static nc_reasoning_format reasoning_of(const nucleus_model *model) {
  const char *name = nucleus_model_reasoning_format(model);
  for (int f = 0; f < NC_REASONING_FORMAT_COUNT; f++)
    if (!strcmp(nc_reasoning_format_name((nc_reasoning_format)f), name))
      return (nc_reasoning_format)f;
  return NC_REASONING_NONE;
}

nucleus_reply_format nucleus_reply_default_format(void) {
  return (nucleus_reply_format){.calls = true, .reasoning = true};
}

nucleus_status nucleus_tool_reply_scan(const nucleus_model *model,
                                       const char *reply, size_t len,
                                       bool final, nucleus_tool_reply *out,
                                       nucleus_error *err) {
  const nucleus_reply_format f = nucleus_reply_default_format();
  return nucleus_reply_scan(model, &f, reply, len, final, out, err);
}

nucleus_status nucleus_reply_scan(const nucleus_model *model,
                                  const nucleus_reply_format *format,
                                  const char *reply, size_t len, bool final,
                                  nucleus_tool_reply *out, nucleus_error *err) {
  if (!out) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "no output");
  memset(out, 0, sizeof *out);
  if (!model || !format || (!reply && len))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "nucleus_reply_scan needs a model, a format and a reply");
  const nc_reply_format f = {
      .tools = format_of(model),
      .calls = format->calls,
      .reasoning = format->reasoning ? reasoning_of(model) : NC_REASONING_NONE,
      .inside = format->in_reasoning,
  };
  nc_tool_scan_result r = {0};
  nc_code rc = nc_reply_scan(&f, reply ? reply : "", len, final, &r, err);
  if (rc != NC_OK) return rc;
  nucleus_tool_call *calls =
      r.n_calls ? calloc(r.n_calls, sizeof *calls) : NULL;
  if (r.n_calls && !calls) {
    nc_tool_scan_result_clear(&r);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < r.n_calls; i++) {
    calls[i] = (nucleus_tool_call){.name = r.calls[i].name,
                                   .arguments = r.calls[i].arguments,
                                   .id = r.calls[i].id};
    memset(&r.calls[i], 0, sizeof r.calls[i]);
  }
  *out = (nucleus_tool_reply){.content = r.content,
                              .content_len = r.content_len,
                              .reasoning = r.reasoning,
                              .reasoning_len = r.reasoning_len,
                              .calls = calls,
                              .n_calls = r.n_calls,
                              .decided = r.decided};
  r.content = NULL;
  r.reasoning = NULL;
  nc_tool_scan_result_clear(&r);
  return NC_OK;
}

void nucleus_tool_reply_clear(nucleus_tool_reply *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_calls; i++) {
    free(r->calls[i].name);
    free(r->calls[i].arguments);
    free(r->calls[i].id);
  }
  free(r->calls);
  free(r->content);
  free(r->reasoning);
  memset(r, 0, sizeof *r);
}
