/* nucleus serve: a POST /v1/responses body (OpenAI's Responses API) ->
 * the chat completions body the one generation job runs (job.h), the
 * conversation it continues (previous_response_id, from the store) and the
 * response object's settings. Every field is checked here: an unknown or
 * unsupported one is a 400 naming it, never ignored. */
#ifndef NUCLEUS_SERVER_RESPONSES_REQUEST_H
#define NUCLEUS_SERVER_RESPONSES_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "http/api_error.h"
#include "image_input.h"
#include "responses_store.h"
#include "server.h"

/* OpenAI's bounds on metadata: pairs, key and value lengths. */
#define RESPONSES_MAX_METADATA 16
#define RESPONSES_MAX_METADATA_KEY 64
#define RESPONSES_MAX_METADATA_VALUE 512

/* What a stream has written so far (responses_stream.c). */
typedef struct responses_stream_state {
  int64_t seq;       /* the next event's sequence_number */
  size_t n_items;    /* output items opened so far */
  int open;          /* the item being written: RESPONSES_OPEN_* */
  char *text;        /* the open item's text so far */
  size_t len, cap;   /* of text */
  json_t *items;     /* the finished items, in order */
  json_t *call_ids;  /* the call ids the stream gave, in order */
  bool message_seen; /* a message item was written */
  bool failed;       /* response.failed was written */
} responses_stream_state;

enum { RESPONSES_OPEN_NONE, RESPONSES_OPEN_REASONING, RESPONSES_OPEN_MESSAGE };

typedef struct responses_req {
  char id[RESPONSES_MAX_ID + 1]; /* "resp_" + hex */
  const char *hex;               /* id's random part: item ids reuse it */
  bool stream;
  bool store;
  json_t *skeleton;     /* the response object at creation (in_progress) */
  json_t *chat;         /* the chat completions body to run */
  json_t *conversation; /* the chat messages before the reply, without the
                           instructions (what a follow-up continues) */
  responses_stream_state st;
  /* the input's images, decoded once: the chat job takes them */
  image_list images;
} responses_req;

/* Parses root (any JSON value) for srv: 0, or -1 with *e (400 naming the
 * field; a previous_response_id that is not stored is a 400 naming it).
 * Free r with responses_req_free either way. */
int responses_request_parse(server_ctx *srv, const json_t *root,
                            responses_req *r, api_error *e);

void responses_req_free(responses_req *r);

/* An error of the chat job names a chat field: rename it to the Responses
 * field it came from (messages -> input, response_format -> text.format,
 * max_completion_tokens -> max_output_tokens, ...). */
void responses_error_param(api_error *e);

/* Appends input (a string: one user message; or a list of items: message,
 * function_call, function_call_output, reasoning) to msgs as chat
 * messages; a function_call_output must answer a function_call of msgs.
 * input_image parts are decoded into images' memo (images->allow_urls:
 * --allow-image-urls). 0, or -1 with *e naming input[i]. */
int responses_input_append(const json_t *input, json_t *msgs,
                           image_list *images, api_error *e);

/* At most this many input items per request. */
#define RESPONSES_MAX_INPUT_ITEMS 4096

#endif
