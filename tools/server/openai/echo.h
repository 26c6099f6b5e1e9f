/* nucleus serve: `echo` on /v1/completions (OpenAI's legacy API): the
 * prompt's text before each choice's completion and, when logprobs are
 * asked for, the prompt's tokens with their own logprobs before the
 * completion's (the first token has none: null, as OpenAI's). The echoed
 * text is the prompt's tokens' pieces, so that every text_offset indexes
 * it; for a text prompt without special tokens it is that text. */
#ifndef NUCLEUS_SERVER_ECHO_H
#define NUCLEUS_SERVER_ECHO_H

#include "job.h"

/* Builds j's echo (completion_out_set_echo) from its prompt tokens: 0, or
 * -1 with *e. The logprobs cost a forward pass over the prompt on the
 * calling thread (nucleus_prompt_logprobs). */
int echo_prepare(server_ctx *srv, job *j, api_error *e);

#endif
