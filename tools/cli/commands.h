/* The nucleus subcommands: each lives in its own cmd_*.c file. */
#ifndef NUCLEUS_CLI_COMMANDS_H
#define NUCLEUS_CLI_COMMANDS_H

#include <stddef.h>

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_rerank(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_imatrix(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_quantize(int argc, char **argv);

/* The default model's path (see default_model.c) written into buf, or
 * NULL after printing why it cannot be had. */
const char *cli_default_model(char *buf, size_t cap);
#define CLI_MODEL_PATH_MAX 4096

#endif
