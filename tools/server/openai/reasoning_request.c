/* nucleus serve: a chat request's reasoning (reasoning_request.h). */
#include "reasoning_request.h"

#include <stdlib.h>
#include <string.h>

int reasoning_effort_kwargs(const nucleus_model *model, const json_t *root,
                            json_t **kwargs, api_error *e) {
  const json_t *v = json_object_get(root, "reasoning_effort");
  if (!v || json_is_null(v)) return 0;
  const char *family = nucleus_model_reasoning_format(model);
  if (!strcmp(family, "none"))
    return api_fail(e, 400, "reasoning_effort",
                    "'reasoning_effort' is not supported for this model's "
                    "chat template (it has no thinking block: thinking "
                    "templates are <think>, harmony and Gemma 4's)");
  const char *s = json_string_value(v);
  if (!s || (strcmp(s, "low") && strcmp(s, "medium") && strcmp(s, "high")))
    return api_fail(e, 400, "reasoning_effort",
                    "'reasoning_effort' must be \"low\", \"medium\" or "
                    "\"high\"");
  if (!*kwargs) *kwargs = json_object();
  if (!*kwargs) return api_fail(e, 500, NULL, "out of memory");
  /* harmony's templates read the effort; the others only switch thinking
   * on (their models have no levels) */
  const bool harmony = !strcmp(family, "harmony");
  const char *key = harmony ? "reasoning_effort" : "enable_thinking";
  if (!json_object_get(*kwargs, key))
    json_object_set_new(*kwargs, key,
                        harmony ? json_incref((json_t *)v) : json_true());
  return 0;
}

/* Appends the open marker (and a newline, as the templates write it) to
 * the prompt's tokens. */
static int append_open(server_ctx *srv, const char *open, int32_t **prompt,
                       size_t *n_prompt, api_error *e) {
  char text[NUCLEUS_MAX_REASONING_MARKER_BYTES + 2];
  snprintf(text, sizeof text, "%s\n", open);
  int32_t *ids = NULL;
  size_t n = 0;
  nucleus_error err = {0};
  if (nucleus_tokenize(srv->model, text, strlen(text), false, true, &ids, &n,
                       &err) != NUCLEUS_OK)
    return api_fail(e, 500, NULL, "tokenize: %s", err.message);
  int32_t *grown = realloc(*prompt, (*n_prompt + n) * sizeof *grown);
  if (!grown) {
    nucleus_free(ids);
    return api_fail(e, 500, NULL, "out of memory");
  }
  memcpy(grown + *n_prompt, ids, n * sizeof *ids);
  nucleus_free(ids);
  *prompt = grown;
  *n_prompt += n;
  return 0;
}

/* The request field of a raw GBNF grammar (structured.h's names). */
static bool gbnf_field(const char *param) {
  return param &&
         (!strcmp(param, "grammar") || !strcmp(param, "guided_grammar") ||
          !strcmp(param, "structured_outputs.grammar"));
}

int reasoning_request_prepare(server_ctx *srv, gen_request *r,
                              const char *prompt_text, size_t len,
                              int32_t **prompt, size_t *n_prompt,
                              api_error *e) {
  const char *family = nucleus_model_reasoning_format(srv->model);
  const bool thinks = strcmp(family, "none") != 0;
  const bool split = r->reasoning_format == REASONING_SPLIT_DEFAULT
                         ? !srv->cfg->reasoning_inline
                         : r->reasoning_format == REASONING_SPLIT_AUTO;
  r->reply.calls = r->tools.choice != TOOL_CHOICE_NONE;
  r->reply.reasoning = thinks && split;
  r->reply.in_reasoning =
      thinks && nucleus_reasoning_prompt_opens(srv->model, prompt_text, len);
  nucleus_reasoning_params *rp = &r->params.reasoning;
  const int32_t given = rp->budget;
  int32_t budget =
      r->reasoning_budget_given ? given : srv->cfg->reasoning_budget;
  /* the server's default budget fits the request's max_tokens; a budget
   * the request gives must (nucleus_reasoning_check) */
  if (!r->reasoning_budget_given && r->params.max_tokens >= 0 &&
      budget > r->params.max_tokens)
    budget = r->params.max_tokens;
  bool opened = false;
  if (!nucleus_reasoning_params_for(srv->model, prompt_text, len, budget,
                                    &r->params, &opened)) {
    if (r->reasoning_budget_given)
      return api_fail(e, 400, "max_reasoning_tokens",
                      "'max_reasoning_tokens' needs a thinking model with "
                      "thinking on: %s",
                      thinks ? "the prompt closes the thinking block (it is "
                               "switched off)"
                             : "this model's chat template has no thinking "
                               "block");
    return 0;
  }
  /* the markers must reach the reply to be read and tracked (Gemma 4's
   * and harmony's are control tokens) */
  r->params.skip_special_tokens = false;
  /* harmony's grammars cover its whole reply (channels included), and so
   * does a GBNF grammar given as such (the client writes the thinking
   * into it); JSON schemas, regexes, choices and tools are the answer's
   * (not with drafts or beams, which cannot follow the block: there the
   * grammar covers the whole reply, as before) */
  if (r->params.grammar && strcmp(family, "harmony") &&
      !gbnf_field(r->grammar_param) &&
      r->params.speculative.type == NUCLEUS_SPEC_OFF &&
      r->params.beam_width <= 1) {
    if (rp->open && append_open(srv, rp->open, prompt, n_prompt, e)) return -1;
    r->reply.in_reasoning = true;
    rp->open = NULL;
    rp->answer_grammar = true;
  }
  nucleus_error err = {0};
  if (nucleus_reasoning_check(&r->params, &err) != NUCLEUS_OK)
    return api_fail(e, 400, "max_reasoning_tokens", "%s", err.message);
  return 0;
}

bool reasoning_request_tracked(const gen_request *r) {
  return r->params.reasoning.close != NULL;
}
