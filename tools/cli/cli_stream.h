/* Running one request on an engine and printing its events: shared by
 * `run` and `chat`. */
#ifndef NUCLEUS_CLI_STREAM_H
#define NUCLEUS_CLI_STREAM_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "nucleus.h"

typedef struct cli_stream_result {
  nucleus_finish_reason reason;
  char *text; /* completion 0's whole text (malloc'd) */
  size_t text_len;
  nucleus_usage usage;
  nucleus_timings timings;
  uint64_t seed;
  char detail[600]; /* "stop string \"...\"", "eog token 2", error message */
} cli_stream_result;

/* How a chat reply's thinking is shown (`nucleus chat`): split off by fmt
 * (nucleus_reply_scan) and printed dimmed (dim: ANSI faint, for a
 * terminal) or plain before the answer, or not at all (hide). */
typedef struct cli_thinking_view {
  nucleus_reply_format fmt;
  bool dim;
  bool hide;
} cli_thinking_view;

/* Streams completion 0 to out as it arrives (other completions are printed
 * whole when they finish); with thinking (n 1), its reasoning and answer
 * as the view says, never a byte printed twice. With top_logprobs, a
 * table of each token's logprob and alternatives goes to out at the end.
 * interrupt, when it turns non-zero, cancels the request. */
int cli_stream_request(const nucleus_model *model, nucleus_request *req,
                       const nucleus_request_params *params, FILE *out,
                       volatile sig_atomic_t *interrupt,
                       const cli_thinking_view *thinking,
                       cli_stream_result *result);

void cli_stream_result_free(cli_stream_result *r);

/* "finish: length" style summary and speeds, on stderr. */
void cli_print_summary(const cli_stream_result *r);

#endif
