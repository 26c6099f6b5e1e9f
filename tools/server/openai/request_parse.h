/* nucleus serve: a /v1/chat/completions or /v1/completions JSON body ->
 * engine request parameters, every field range-checked with an error that
 * names it. The prompt itself is handled by prompt.h. */
#ifndef NUCLEUS_SERVER_REQUEST_PARSE_H
#define NUCLEUS_SERVER_REQUEST_PARSE_H

#include <jansson.h>
#include <stdbool.h>

#include "http/api_error.h"
#include "nucleus.h"
#include "tool_request.h"

/* How a chat prompt ends (chat requests and /apply-template). */
typedef struct chat_opts {
  bool add_generation_prompt;  /* true unless asked otherwise */
  bool continue_final_message; /* the last message stays open */
} chat_opts;

/* Reads add_generation_prompt, continue_final_message and checks
 * chat_template_kwargs: 0, or -1 with *e. */
int chat_opts_parse(const json_t *root, chat_opts *o, api_error *e);

/* --reasoning-format / "reasoning_format": the thinking block split into
 * reasoning_content (auto), or left in the content as written (none). */
typedef enum reasoning_split {
  REASONING_SPLIT_DEFAULT, /* not given */
  REASONING_SPLIT_NONE,
  REASONING_SPLIT_AUTO,
} reasoning_split;

/* "none" / "auto" -> *out; false for any other name. */
bool reasoning_split_from_name(const char *s, reasoning_split *out);

typedef struct gen_request {
  bool chat;
  bool stream;
  bool include_usage;
  bool echo;             /* completions: the prompt before the text */
  bool logprobs;         /* report the chosen token's logprob */
  int32_t top_logprobs;  /* alternatives per token */
  bool max_tokens_given; /* else: until the context is full */
  bool beam;             /* use_beam_search */
  chat_opts chat_opts;   /* chat: how the template ends */
  tool_opts tools;       /* chat: tools, tool_choice */
  /* chat: "reasoning_format": REASONING_SPLIT_DEFAULT when absent (the
   * server's --reasoning-format decides) */
  reasoning_split reasoning_format;
  /* chat: "max_reasoning_tokens" given (params.reasoning.budget holds it;
   * else the server's --reasoning-budget applies) */
  bool reasoning_budget_given;
  /* chat: how the reply is read (completions.c fills it once the prompt is
   * known): its calls, its thinking split out, the prompt opened it */
  nucleus_reply_format reply;
  char model[256];               /* echoed back in responses */
  nucleus_request_params params; /* points into the storage below */
  char *stop_copies[NUCLEUS_MAX_STOP_STRINGS];
  const char *stop_ptrs[NUCLEUS_MAX_STOP_STRINGS];
  nucleus_logit_bias *bias;
  int32_t *stop_ids;
  /* cache_salt as given (params.cache_salt points here or at salted). */
  char cache_salt[NUCLEUS_MAX_CACHE_SALT_BYTES + 1];
  char salted[64];          /* the salt mixed with the API key (salt by key) */
  nucleus_grammar *grammar; /* structured output (params.grammar), or NULL */
  /* The field the grammar came from ("response_format", "grammar", "tools",
   * ...; a static string): the param of its errors at run time. */
  const char *grammar_param;
  /* "prediction": its text, then its tokens (params.speculative points at
   * them; speculative.h). */
  char *prediction_text;
  size_t prediction_len;
  int32_t *prediction_ids;
} gen_request;

/* Parses root (an object) over defaults (the server's: OpenAI's, with the
 * model's recommendations). n_vocab bounds token ids. Returns 0, or -1
 * with *e filled (400 naming the parameter). */
int gen_request_parse(const json_t *root, bool chat, int32_t n_vocab,
                      const nucleus_request_params *defaults, gen_request *out,
                      api_error *e);

void gen_request_free(gen_request *r);

#endif
