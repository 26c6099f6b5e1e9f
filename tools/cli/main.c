/* nucleus: one binary, many subcommands. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "nucleus.h"

typedef struct command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *help;
} command;

static const command COMMANDS[] = {
    {"run", cmd_run, "generate a continuation of a prompt"},
    {"chat", cmd_chat, "interactive chat with the model's template"},
    {"serve", cmd_serve, "OpenAI-compatible HTTP server"},
    {"info", cmd_info, "print a GGUF file's metadata and tensors"},
    {"tokenize", cmd_tokenize, "print the token ids of a text"},
    {"embed", cmd_embed, "print the embeddings of texts (JSON)"},
    {"rerank", cmd_rerank, "score documents for a query with a reranker"},
    {"template", cmd_template, "render the chat template for messages"},
    {"perplexity", cmd_perplexity, "perplexity of a text file"},
    {"imatrix", cmd_imatrix, "an importance matrix for quantize --imatrix"},
    {"quantize", cmd_quantize, "write a model quantized to a file type"},
    {"bench", cmd_bench, "prefill and decode speed"},
    {"params", cmd_params, "the generation parameters and their defaults"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: nucleus <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
    fprintf(out, "  %-11s %s\n", COMMANDS[i].name, COMMANDS[i].help);
  fprintf(out, "\nnucleus <command> --help for the command's options\n"
               "nucleus --version prints the release\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
      !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    printf("nucleus %s\n", nucleus_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
    if (!strcmp(argv[1], COMMANDS[i].name))
      return COMMANDS[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "nucleus: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
