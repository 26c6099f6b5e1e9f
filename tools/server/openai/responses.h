/* nucleus serve: POST /v1/responses, GET and DELETE /v1/responses/{id}
 * (OpenAI's Responses API) over the chat job (job.h): the request is
 * translated (responses_request.h), run as a chat completion, and its
 * answer read back as output items (responses_output.h), streamed as typed
 * events (responses_stream.c) and kept in the store (responses_store.h). */
#ifndef NUCLEUS_SERVER_RESPONSES_H
#define NUCLEUS_SERVER_RESPONSES_H

#include "job.h"
#include "responses_request.h"

/* The response object of a finished job (chat: its chat completion; items:
 * the output items, taken), kept in the store when r->store. NULL when out
 * of memory. */
json_t *responses_finish(server_ctx *srv, responses_req *r, const json_t *chat,
                         json_t *items);

/* The stream of typed events (response.created ... response.completed). */
extern const job_stream_ops responses_stream_ops;

#endif
