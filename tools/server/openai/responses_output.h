/* nucleus serve: the Responses API's output: the items of a chat reply
 * (reasoning, message, function calls) and the finished response object,
 * built from the chat completion the job made. Item ids are
 * "<kind>_<the response id's hex>_<output index>", so that a stream's items
 * and the final object's agree. */
#ifndef NUCLEUS_SERVER_RESPONSES_OUTPUT_H
#define NUCLEUS_SERVER_RESPONSES_OUTPUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* One item; done: status "completed" (else "in_progress", with empty
 * content for a stream's output_item.added). */
json_t *responses_item_message(const char *hex, size_t index, const char *text,
                               size_t len, bool done);
json_t *responses_item_reasoning(const char *hex, size_t index,
                                 const char *text, size_t len, bool done);
json_t *responses_item_call(const char *hex, size_t index, const char *call_id,
                            const char *name, const char *args, bool done);
/* The id of the item at index of kind "msg", "rs" or "fc" into buf. */
void responses_item_id(char *buf, size_t cap, const char *kind, const char *hex,
                       size_t index);

/* The items of a chat reply message ({content, reasoning_content,
 * tool_calls}): its reasoning, then its text (a message item, also when
 * empty unless there are calls), then each call. */
json_t *responses_output_items(const json_t *message, const char *hex);

/* The finished response: skeleton with output (taken), status (incomplete
 * when max_output_tokens cut the reply) and usage, from the chat completion
 * chat (its finish_reason and usage). */
json_t *responses_final(const json_t *skeleton, json_t *output,
                        const json_t *chat);

#endif
