/* nucleus serve: turning request bodies into prompt tokens: chat messages
 * through the model's template, completion prompts as text or token ids. */
#ifndef NUCLEUS_SERVER_PROMPT_H
#define NUCLEUS_SERVER_PROMPT_H

#include <jansson.h>

#include "api_error.h"
#include "server.h"

/* Renders root["messages"] (and root["tools"]) with the chat template.
 * *text is allocated (release with nucleus_free). */
int prompt_render_chat(server_ctx *srv, const json_t *root, char **text,
                       size_t *len, api_error *e);

/* The prompt tokens of a chat request (template, then tokenize with
 * special tokens parsed, never two BOS). *ids: release with free(). */
int prompt_chat_tokens(server_ctx *srv, const json_t *root, int32_t **ids,
                       size_t *n, api_error *e);

/* The prompt tokens of a completions request (root["prompt"]: a string,
 * a list of token ids, or a list holding one of those). */
int prompt_completion_tokens(server_ctx *srv, const json_t *root, int32_t **ids,
                             size_t *n, api_error *e);

/* Tokenizes text; *ids: release with free(). */
int prompt_tokenize(server_ctx *srv, const char *text, size_t len,
                    bool add_special, bool parse_special, int32_t **ids,
                    size_t *n, api_error *e);

#endif
