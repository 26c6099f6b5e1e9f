/* The nucleus subcommands: each lives in its own cmd_*.c file. */
#ifndef NUCLEUS_CLI_COMMANDS_H
#define NUCLEUS_CLI_COMMANDS_H

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* The default model path (models/ beside the binary's repository, or
 * $NUCLEUS_MODEL), fetched with scripts/fetch_model.sh when missing.
 * Returns a static string or NULL after printing an error. */
const char *cli_default_model(void);

#endif
