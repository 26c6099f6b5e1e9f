/* nucleus serve: the Messages API's answer built from a chat job's
 * record (openai/completion_json.h): the message object, its content
 * blocks (thinking, text, tool_use: read from the reply by the same
 * tool-call parser as chat completions), stop_reason and usage. */
#ifndef NUCLEUS_SERVER_MESSAGES_REPLY_H
#define NUCLEUS_SERVER_MESSAGES_REPLY_H

#include <jansson.h>

#include "openai/job.h"

/* "msg_" and the job's random hex. */
void messages_id(const completion_out *out, char *buf, size_t size);

/* end_turn, max_tokens, stop_sequence (a stop string ended it) or
 * tool_use (it ended by itself after calls). */
const char *messages_stop_reason(const choice_state *c, size_t n_calls);

/* {"input_tokens", "output_tokens", "cache_creation_input_tokens",
 * "cache_read_input_tokens"}: the prompt's tokens the prefix cache held
 * are cache reads, the rest input (their sum is the prompt). */
json_t *messages_usage(const completion_out *out);

/* A tool_use block {"type", "id", "name", "input"} of one of chat's calls
 * ({"id", "function": {"name", "arguments"}}); input is {} while a
 * stream's block opens (with_input false). */
json_t *messages_tool_use(const json_t *call, bool with_input);

/* The whole message of an ended job (choice 0). */
json_t *messages_response(const job *j);

#endif
