/* nucleus serve: turning request bodies into prompt tokens: chat messages
 * through the model's template, completion prompts as text or token ids. */
#ifndef NUCLEUS_SERVER_PROMPT_H
#define NUCLEUS_SERVER_PROMPT_H

#include <jansson.h>

#include "http/api_error.h"
#include "image_input.h"
#include "request_parse.h"
#include "server.h"

/* Renders root["messages"] (with root["tools"] and
 * root["chat_template_kwargs"]) with the chat template, as opts ends it,
 * and/or tokenizes it (special-token text inside contents stays text
 * unless --parse-special-in-content; never two BOS). Either output may be
 * NULL. *text: release with nucleus_free; *ids: with nucleus_free.
 * Image parts (a 400 without --mmproj) leave NUCLEUS_MEDIA_MARKER in the
 * text and their rows (NUCLEUS_TOKEN_IMAGE) in the ids, special-token
 * text parsed as llama.cpp's server does; the decoded images go to
 * *images (NULL: freed), in order. */
int prompt_chat(server_ctx *srv, const json_t *root, const chat_opts *opts,
                char **text, size_t *len, int32_t **ids, size_t *n,
                image_list *images, api_error *e);

/* The prompt tokens of a completions request (root["prompt"]: a string,
 * a list of token ids, or a list holding one of those). */
int prompt_completion_tokens(server_ctx *srv, const json_t *root, int32_t **ids,
                             size_t *n, api_error *e);

/* Tokenizes text; *ids: release with free(). */
int prompt_tokenize(server_ctx *srv, const char *text, size_t len,
                    bool add_special, bool parse_special, int32_t **ids,
                    size_t *n, api_error *e);

#endif
