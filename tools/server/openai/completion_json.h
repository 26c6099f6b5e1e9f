/* nucleus serve: the OpenAI response objects for chat.completion(.chunk)
 * and text_completion, built from engine events. One completion_out per
 * request accumulates what a non-streaming response needs. */
#ifndef NUCLEUS_SERVER_COMPLETION_JSON_H
#define NUCLEUS_SERVER_COMPLETION_JSON_H

#include <jansson.h>

#include "request_parse.h"
#include "server.h"
#include "tool_reply.h"

typedef struct choice_state {
  char *text; /* accumulated text (non-streaming) */
  size_t len, cap;
  json_t *logprobs; /* chat: {"content": [...]}; completions: 4 arrays */
  json_t *inspect;  /* one sampler record per token, when asked */
  size_t text_offset;
  nucleus_finish_reason finish;
  char *stop_string; /* the stop string that ended it, or NULL */
  bool finished;
  tool_reply tools; /* what of the reply's calls was streamed */
} choice_state;

typedef struct completion_out {
  server_ctx *srv;
  const gen_request *req;
  char id[48];
  int64_t created;
  const char *model;
  int32_t n;
  choice_state *choices;
  int32_t prompt_tokens;
  int32_t cached_tokens; /* of the prompt, from the prefix cache */
  int32_t completion_tokens;
  int32_t draft_tokens, accepted_draft_tokens; /* speculative decoding */
  int32_t reasoning_tokens; /* of the completions' thinking blocks */
  nucleus_timings timings;  /* from the engine's DONE event */
  bool failed;  /* some completion ended with NUCLEUS_FINISH_ERROR */
  bool aborted; /* some completion was cancelled (server shutdown) */
  bool tools;   /* chat with tools: replies are read for calls (tool_reply.h) */
  nucleus_error error;
  const char *error_param; /* the request field at fault in error, or NULL */
  /* completions with echo: the prompt's text, and with logprobs its
   * tokens' (completion_out_set_echo) */
  char *echo_text;
  size_t echo_len;
  json_t *echo_logprobs;
} completion_out;

int completion_out_init(completion_out *out, server_ctx *srv,
                        const gen_request *req, int32_t prompt_tokens);
void completion_out_free(completion_out *out);

/* echo: every choice's text starts with text (len bytes) and its logprobs
 * with logprobs (completions' four arrays, or NULL); takes both. */
void completion_out_set_echo(completion_out *out, char *text, size_t len,
                             json_t *logprobs);

/* Completions' logprobs: the four parallel arrays, empty. */
json_t *completions_logprobs_empty(void);
/* Appends one token at text_offset offset: its logprob and the top
 * alternatives (up to top_n of n_top); a token without context (a
 * prompt's first) has neither: scored false gives null for both. */
void completions_logprob_put(server_ctx *srv, json_t *lp, int32_t token,
                             bool scored, float logprob,
                             const nucleus_token_logprob *top, int32_t n_top,
                             int32_t top_n, size_t offset);

/* Records one event (text, logprobs, finish reasons, usage). When
 * accumulate is false the text is not kept (streaming). Returns -1 when
 * out of memory. */
int completion_out_record(completion_out *out, const nucleus_event *ev,
                          bool accumulate);

/* The whole non-streaming response. */
json_t *completion_out_response(const completion_out *out);

/* Streaming chunks (NULL when there is nothing to send). */
/* A choice's opening chunk: chat's role; completions' echoed prompt
 * (NULL without echo). */
json_t *completion_chunk_role(const completion_out *out, int32_t index);
json_t *completion_chunk_token(const completion_out *out,
                               const nucleus_event *ev);
/* The text a FINISH event releases and the end token's sampler record
 * (NULL when it has neither). */
json_t *completion_chunk_text(const completion_out *out,
                              const nucleus_event *ev);
json_t *completion_chunk_finish(const completion_out *out, int32_t index);
json_t *completion_chunk_usage(const completion_out *out);

const char *finish_reason_text(nucleus_finish_reason r);

#endif
