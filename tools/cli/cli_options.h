/* Options shared by the generating commands (run, chat, serve): the model,
 * threads, context, and every sampling and stopping flag, named as
 * llama.cpp names them where it has a name. */
#ifndef NUCLEUS_CLI_OPTIONS_H
#define NUCLEUS_CLI_OPTIONS_H

#include <stdbool.h>

#include "nucleus.h"

#define CLI_MAX_PARAMS 64 /* rows of the parameter contract tracked */

typedef struct cli_options {
  const char *model_path;
  const char *chat_template_file;
  nucleus_engine_params engine;
  nucleus_request_params request;
  /* Storage the request params point into. */
  const char *stops[NUCLEUS_MAX_STOP_STRINGS];
  nucleus_logit_bias bias[NUCLEUS_MAX_LOGIT_BIAS];
  int32_t stop_ids[NUCLEUS_MAX_STOP_TOKEN_IDS];
  /* The model options (model_flags.h: -t, -fa, -ctk, -ctv, --load-mode,
   * the RoPE overrides, ...); chat_template comes from the file above. */
  nucleus_model_params model;
  bool parse_special_in_content; /* chat: as nucleus_chat_params says */
  bool given[CLI_MAX_PARAMS];    /* by contract row: set on the command line */
  nucleus_grammar *grammar;      /* --grammar / --grammar-file, or NULL */
  /* --prediction TEXT / --prediction-file FILE (tokenized by
   * cli_options_prepare once the model is loaded, into prediction_ids). */
  const char *prediction_arg;
  bool prediction_is_file;
  int32_t *prediction_ids;
  /* --model-draft FILE: loaded by cli_options_prepare into
   * engine.draft_model (freed by cli_options_free). */
  const char *draft_model_path;
  nucleus_model *draft_model;
} cli_options;

/* Frees what parsing built (the grammar). */
void cli_options_free(cli_options *o);

void cli_options_init(cli_options *o);

/* Tries to consume argv[*i] (and its value). Returns 1 when consumed, 0 when
 * the flag is not one of these, -1 after printing an error. */
int cli_options_parse(cli_options *o, int argc, char **argv, int *i);

/* Prints the shared flags' help, with the defaults of surface. */
void cli_options_help(FILE *out, nucleus_surface surface);

/* Every contract parameter not given on the command line takes the
 * surface's default (the model's recommendation first). */
void cli_options_defaults(cli_options *o, const nucleus_model *model,
                          nucleus_surface surface);

/* What needs the model: tokenizes the prediction (--prediction*), loads
 * the draft model (--model-draft) and checks the speculative-decoding flags
 * (nucleus_speculative_check). Prints errors; -1 on failure. */
int cli_options_prepare(cli_options *o, const nucleus_model *model);

/* True when the contract parameter called name was given. */
bool cli_options_given(const cli_options *o, const char *name);

/* Loads the model (the default one when no -m), with the chat template
 * override read from --chat-template. Prints errors; NULL on failure. */
nucleus_model *cli_load_model(const cli_options *o);

#endif
