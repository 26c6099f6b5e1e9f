/* nucleus serve: the tool-calling fields of a chat request (tools,
 * tool_choice, parallel_tool_calls) and the tool turns of its messages,
 * checked with errors that name the parameter. */
#ifndef NUCLEUS_SERVER_TOOL_REQUEST_H
#define NUCLEUS_SERVER_TOOL_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/api_error.h"

#define SERVER_MAX_TOOLS 128
#define SERVER_MAX_TOOL_NAME 64

typedef enum tool_choice_kind {
  TOOL_CHOICE_NONE,     /* no tools, or tool_choice "none": plain text */
  TOOL_CHOICE_AUTO,     /* the model decides; calls are parsed out */
  TOOL_CHOICE_REQUIRED, /* at least one call, constrained by a grammar */
  TOOL_CHOICE_NAMED,    /* a call of the named function */
} tool_choice_kind;

typedef struct tool_opts {
  tool_choice_kind choice;
  size_t n_tools;
  char name[SERVER_MAX_TOOL_NAME + 1]; /* TOOL_CHOICE_NAMED */
  bool parallel;                       /* parallel_tool_calls (default true) */
} tool_opts;

/* Reads tools, tool_choice and parallel_tool_calls of root (chat: whether
 * the route is /v1/chat/completions; elsewhere they are refused). Returns
 * 0, or -1 with *e (400 naming the parameter). */
int tool_opts_parse(const json_t *root, bool chat, tool_opts *o, api_error *e);

/* Checks the tool turns of messages: an assistant's tool_calls (a list of
 * {"id", "type": "function", "function": {"name", "arguments": string}})
 * and each tool message's tool_call_id. 0, or -1 with *e. */
int tool_messages_check(const json_t *messages, api_error *e);

#endif
