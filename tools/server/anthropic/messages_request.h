/* nucleus serve: an Anthropic Messages API body (POST /v1/messages,
 * /v1/messages/count_tokens) checked and translated into the OpenAI-shaped
 * chat request the server's one generation path reads (openai/job.h): the
 * system prompt and the text, tool_use and tool_result blocks become chat
 * messages, tool calls and tool messages; tools become function tools;
 * tool_choice, stop_sequences, max_tokens and the sampling fields their
 * chat equivalents. A field the API does not have, or that nucleus does
 * not do, is a 400 naming it. */
#ifndef NUCLEUS_SERVER_MESSAGES_REQUEST_H
#define NUCLEUS_SERVER_MESSAGES_REQUEST_H

#include <jansson.h>
#include <stdbool.h>

#include "http/api_error.h"
#include "openai/image_input.h"

typedef enum messages_route {
  MESSAGES_CREATE,       /* /v1/messages: max_tokens required */
  MESSAGES_COUNT_TOKENS, /* /v1/messages/count_tokens: the prompt only */
} messages_route;

/* Checks body and returns the chat request (a new reference), or NULL
 * with *e (a 400 naming the field; 500 when out of memory). Image blocks
 * are decoded into images' memo (images->seen: the chat path takes them
 * from there; images->allow_urls: --allow-image-urls). */
json_t *messages_translate(const json_t *body, messages_route route,
                           image_list *images, api_error *e);

#endif
