/* nucleus serve: a chat request's reasoning (reasoning_request.h). */
#include "reasoning_request.h"

#include <string.h>

int reasoning_request_prepare(server_ctx *srv, gen_request *r,
                              const char *prompt_text, size_t len,
                              api_error *e) {
  (void)e;
  const bool thinks =
      strcmp(nucleus_model_reasoning_format(srv->model), "none") != 0;
  const bool split = r->reasoning_format == REASONING_SPLIT_DEFAULT
                         ? !srv->cfg->reasoning_inline
                         : r->reasoning_format == REASONING_SPLIT_AUTO;
  r->reply.calls = r->tools.choice != TOOL_CHOICE_NONE;
  r->reply.reasoning = thinks && split;
  r->reply.in_reasoning =
      thinks && nucleus_reasoning_prompt_opens(srv->model, prompt_text, len);
  /* the markers must reach the reply to be read (Gemma 4's are control
   * tokens) */
  if (r->reply.reasoning) r->params.skip_special_tokens = false;
  return 0;
}
