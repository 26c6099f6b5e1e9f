/* Options shared by the generating commands (run, chat, serve): the model,
 * threads, context, and every sampling and stopping flag, named as
 * llama.cpp names them where it has a name. */
#ifndef NUCLEUS_CLI_OPTIONS_H
#define NUCLEUS_CLI_OPTIONS_H

#include <stdbool.h>

#include "nucleus.h"

#define CLI_MAX_LOGIT_BIAS 256

typedef struct cli_options {
  const char *model_path;
  const char *chat_template_file;
  int n_threads;
  nucleus_engine_params engine;
  nucleus_request_params request;
  /* Storage the request params point into. */
  const char *stops[NUCLEUS_MAX_STOP_STRINGS];
  nucleus_logit_bias bias[CLI_MAX_LOGIT_BIAS];
  bool reference_kernels;
  bool no_repack;
  bool parse_special_in_content; /* chat: as nucleus_chat_params says */
} cli_options;

void cli_options_init(cli_options *o);

/* Tries to consume argv[*i] (and its value). Returns 1 when consumed, 0 when
 * the flag is not one of these, -1 after printing an error. */
int cli_options_parse(cli_options *o, int argc, char **argv, int *i);

/* Prints the shared flags' help. */
void cli_options_help(FILE *out);

/* Loads the model (the default one when no -m), with the chat template
 * override read from --chat-template. Prints errors; NULL on failure. */
nucleus_model *cli_load_model(const cli_options *o);

#endif
