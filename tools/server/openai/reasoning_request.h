/* nucleus serve: what a chat request asks of a thinking model's reasoning:
 * how its reply is read (the thinking split into reasoning_content, or
 * left in the content: reasoning_format / --reasoning-format; whether the
 * prompt already opened the thinking block). Every chat-shaped API (chat
 * completions, messages, responses) prepares its request here once the
 * prompt is rendered. */
#ifndef NUCLEUS_SERVER_REASONING_REQUEST_H
#define NUCLEUS_SERVER_REASONING_REQUEST_H

#include <stddef.h>

#include "http/api_error.h"
#include "request_parse.h"
#include "server.h"

/* Fills r->reply for the rendered prompt (prompt_text[0, len)) and turns
 * off skip_special_tokens where the family's markers may be control
 * tokens. 0, or -1 with *e. */
int reasoning_request_prepare(server_ctx *srv, gen_request *r,
                              const char *prompt_text, size_t len,
                              api_error *e);

#endif
