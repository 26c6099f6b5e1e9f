/* nucleus serve: what a harmony (gpt-oss) chat template needs of a
 * request beyond the OpenAI shape: a past assistant message's
 * `reasoning_content` as its `thinking`, its calls' arguments as objects
 * (the template writes them with tojson); `reasoning_effort` is
 * reasoning_request.h's. */
#ifndef NUCLEUS_SERVER_HARMONY_H
#define NUCLEUS_SERVER_HARMONY_H

#include <jansson.h>
#include <stdbool.h>

#include "http/api_error.h"
#include "nucleus.h"

/* Whether the model's chat template speaks harmony. */
bool harmony_model(const nucleus_model *model);

/* msg (a normalized message, changed in place) given the request's message
 * src: thinking from src's reasoning_content; tool_calls with their
 * arguments parsed (a string that is not a JSON object stays a string). */
void harmony_message(json_t *msg, const json_t *src);

#endif
