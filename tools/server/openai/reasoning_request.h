/* nucleus serve: what a chat request asks of a thinking model's reasoning:
 * how its reply is read (the thinking split into reasoning_content, or
 * left in the content: reasoning_format / --reasoning-format; whether the
 * prompt already opened the thinking block), reasoning_effort as the
 * family's switch, and what the engine tracks (params.reasoning): the
 * thinking budget (max_reasoning_tokens / --reasoning-budget), and a
 * grammar (structured output, forced calls) that applies to the answer
 * after the thinking only. Every chat-shaped API (chat completions,
 * messages, responses) prepares its request here once the prompt is
 * rendered and its grammar built. */
#ifndef NUCLEUS_SERVER_REASONING_REQUEST_H
#define NUCLEUS_SERVER_REASONING_REQUEST_H

#include <jansson.h>
#include <stddef.h>

#include "http/api_error.h"
#include "request_parse.h"
#include "server.h"

/* *kwargs (a JSON object, or NULL: one is made) gains the family's switch
 * for root["reasoning_effort"] (low, medium or high): harmony's
 * reasoning_effort, the others' enable_thinking true; a variable the
 * request's chat_template_kwargs set already wins. 0, or -1 with *e (a
 * value outside those; a template without thinking). */
int reasoning_effort_kwargs(const nucleus_model *model, const json_t *root,
                            json_t **kwargs, api_error *e);

/* Fills r->reply and r->params.reasoning for the rendered prompt
 * (prompt_text[0, len); *prompt, *n_prompt its tokens). With structured
 * output or a tool grammar on a <think> or Gemma 4 family whose thinking
 * is on, the grammar waits for the end of the thinking (a GBNF `grammar`
 * covers the whole reply); a prompt that does not open the block then
 * gets the open marker appended (the model thinks first, as it would).
 * 0, or -1 with *e (a budget out of range, named max_reasoning_tokens). */
int reasoning_request_prepare(server_ctx *srv, gen_request *r,
                              const char *prompt_text, size_t len,
                              int32_t **prompt, size_t *n_prompt, api_error *e);

/* usage.completion_tokens_details.reasoning_tokens applies: the engine
 * tracks the request's thinking block. */
bool reasoning_request_tracked(const gen_request *r);

#endif
