/* nucleus serve: the Responses API's stored responses (store: true), for
 * GET / DELETE /v1/responses/{id} and previous_response_id. An in-memory
 * map from id to the response object and the conversation that led to it
 * (chat messages, the reply included), bounded by a count and by bytes
 * (--responses-max, --responses-max-bytes); the least recently used entry
 * goes first. Thread-safe: HTTP threads share one store. */
#ifndef NUCLEUS_SERVER_RESPONSES_STORE_H
#define NUCLEUS_SERVER_RESPONSES_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The longest id the store keeps ("resp_" and 48 hex digits). */
#define RESPONSES_MAX_ID 63

typedef struct responses_store responses_store;

/* NULL when out of memory. max_count 0: nothing is stored. */
responses_store *responses_store_create(size_t max_count, size_t max_bytes);
void responses_store_destroy(responses_store *s);

/* Stores (a copy of) response and messages under id, replacing an entry
 * of the same id, then drops the least recently used entries until both
 * limits hold. An entry larger than max_bytes alone is not stored: false
 * (also when out of memory or max_count is 0). */
bool responses_store_put(responses_store *s, const char *id,
                         const json_t *response, const json_t *messages);

/* Deep copies of the entry's response and messages (either pointer may be
 * NULL); the entry becomes the most recently used. false: no such id. */
bool responses_store_get(responses_store *s, const char *id, json_t **response,
                         json_t **messages);

/* false: no such id. */
bool responses_store_delete(responses_store *s, const char *id);

/* The limits and the present use, for /props. */
void responses_store_usage(responses_store *s, size_t *count, size_t *bytes,
                           size_t *max_count, size_t *max_bytes);

#endif
