/* nucleus serve: a chat reply read as a nucleus_reply_format says
 * (nucleus_reply_scan): split into its reasoning (the thinking block) and
 * its answer (content, and tool calls in the model's family syntax). The
 * message of a whole reply, or the deltas of a streamed one: reasoning and
 * content as they are decided, each call once it is complete (index, id,
 * name and its arguments), never a marker or an opener leaked, never a
 * delta revised; the deltas joined equal the whole reply's message.
 *
 * This is the shared reading of replies: the Messages and Responses APIs
 * turn the same deltas into thinking blocks / reasoning items. */
#ifndef NUCLEUS_SERVER_TOOL_REPLY_H
#define NUCLEUS_SERVER_TOOL_REPLY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "nucleus.h"

typedef struct tool_reply {
  size_t content_sent;   /* bytes of decided content already streamed */
  size_t reasoning_sent; /* bytes of decided reasoning already streamed */
  size_t calls_sent;     /* calls already streamed */
} tool_reply;

/* How a reply ends, for what is still undecided at its end. */
typedef enum tool_reply_end {
  TOOL_REPLY_GOING, /* more text will come */
  TOOL_REPLY_WHOLE, /* it ended by itself: an unclosed call is content */
  TOOL_REPLY_CUT,   /* max_tokens cut it: the calls complete before the cut
                       count, a cut call (and a cut opener) is dropped, never
                       content */
} tool_reply_end;

/* The delta of the text so far (reply[0, len)): {"reasoning_content": ...,
 * "content": ..., "tool_calls": [...]} with what became decided since the
 * last call, or NULL when nothing did. */
json_t *tool_reply_delta(const nucleus_model *model,
                         const nucleus_reply_format *fmt, tool_reply *t,
                         const char *reply, size_t len, tool_reply_end end);

/* The assistant message of an ended reply (end: WHOLE or CUT): content
 * (null when empty and there are calls), reasoning_content (when the
 * reply has reasoning) and tool_calls. *n_calls: how many. */
json_t *tool_reply_message(const nucleus_model *model,
                           const nucleus_reply_format *fmt, const char *reply,
                           size_t len, tool_reply_end end, size_t *n_calls);

#endif
