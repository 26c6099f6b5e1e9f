/* nucleus serve: every top-level field of a /v1/chat/completions or
 * /v1/completions body and what the server does with it: reads it,
 * ignores it (it changes nothing in the answer: store, metadata, user,
 * ...), or refuses it with a 400 naming it (it would change the answer and
 * nucleus does not do that: audio, prediction, reasoning_effort, ...). A
 * field the table does not know is ignored with a warning line, or
 * refused when the server runs with --strict-params. docs/SERVER.md's
 * table of request fields is request_fields_print's output (a test keeps
 * them equal). */
#ifndef NUCLEUS_SERVER_REQUEST_FIELDS_H
#define NUCLEUS_SERVER_REQUEST_FIELDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "http/api_error.h"

/* At most this many unknown field names are written into one request's
 * warning line; the rest are counted. */
#define REQUEST_FIELDS_MAX_LOGGED 8

/* Checks root's top-level field names (root an object; anything else is
 * left to the parser) for a chat (or completions) request: 0, or -1 with
 * *e (a 400 naming the field). Unknown fields are refused when strict,
 * else named in one warning line on log (NULL: not written). */
int request_fields_check(const json_t *root, bool chat, bool strict, FILE *log,
                         api_error *e);

/* The table as Markdown (docs/SERVER.md's block). */
void request_fields_print(FILE *out);

#endif
