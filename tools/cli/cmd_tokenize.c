/* nucleus tokenize: print the token ids (and pieces) of a text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_io.h"
#include "commands.h"
#include "nucleus.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: nucleus tokenize [-m MODEL] [--ids] [--no-bos]\n"
          "                        [--no-parse-special] (--stdin | TEXT)\n\n"
          "Tokenizes TEXT (or standard input, byte for byte, with --stdin)\n"
          "with the model's tokenizer and prints one line per token:\n"
          "  ID -> 'PIECE'   (non-printable bytes escaped as \\xNN)\n"
          "  --ids               print one line: [id, id, ...]\n"
          "  --no-bos            do not add BOS/EOS even if the model asks\n"
          "  --no-parse-special  treat special-token text as plain text\n"
          "  -m MODEL            the GGUF file (default: the default model)\n");
}

int cmd_tokenize(int argc, char **argv) {
  const char *path = NULL, *text = NULL;
  bool ids_only = false, no_bos = false, from_stdin = false;
  bool parse_special = true;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(arg, "-m") || !strcmp(arg, "--model")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "nucleus tokenize: %s needs a file\n", arg);
        return 2;
      }
      path = argv[++i];
    } else if (!strcmp(arg, "--ids")) {
      ids_only = true;
    } else if (!strcmp(arg, "--no-bos")) {
      no_bos = true;
    } else if (!strcmp(arg, "--stdin")) {
      from_stdin = true;
    } else if (!strcmp(arg, "--no-parse-special")) {
      parse_special = false;
    } else if (!strcmp(arg, "--")) {
      if (i + 1 < argc && !text) text = argv[++i];
      if (i + 1 < argc) {
        fprintf(stderr, "nucleus tokenize: one TEXT only (quote it)\n");
        return 2;
      }
    } else if (arg[0] == '-' && arg[1]) {
      fprintf(stderr, "nucleus tokenize: unknown option '%s'\n\n", arg);
      usage(stderr);
      return 2;
    } else if (text) {
      fprintf(stderr, "nucleus tokenize: one TEXT only (quote it)\n");
      return 2;
    } else {
      text = arg;
    }
  }
  if (from_stdin == (text != NULL)) {
    fprintf(stderr, "nucleus tokenize: give either TEXT or --stdin\n\n");
    usage(stderr);
    return 2;
  }
  char *input = NULL;
  size_t len = 0;
  if (from_stdin) {
    input = cli_read_stream(stdin, &len);
    if (!input) {
      fprintf(stderr, "nucleus tokenize: cannot read standard input\n");
      return 1;
    }
    text = input;
  } else {
    len = strlen(text);
  }
  char model_buf[CLI_MODEL_PATH_MAX];
  if (!path) path = cli_default_model(model_buf, sizeof model_buf);
  if (!path) {
    free(input);
    return 1;
  }
  nucleus_error err = {0};
  nucleus_model_params mp = nucleus_model_default_params();
  nucleus_model *model = NULL;
  if (nucleus_model_load(path, &mp, &model, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus tokenize: %s\n", err.message);
    free(input);
    return 1;
  }
  int32_t *ids = NULL;
  size_t n = 0;
  int rc = 0;
  if (nucleus_tokenize(model, text, len, !no_bos, parse_special, &ids, &n,
                       &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus tokenize: %s\n", err.message);
    rc = 1;
  } else if (ids_only) {
    putchar('[');
    for (size_t i = 0; i < n; i++)
      printf("%s%d", i ? ", " : "", ids[i]);
    puts("]");
  } else {
    char buf[512];
    for (size_t i = 0; i < n; i++) {
      size_t plen = 0;
      if (nucleus_token_piece(model, ids[i], buf, sizeof buf, &plen, &err) !=
          NUCLEUS_OK)
        plen = 0;
      printf("%6d -> ", ids[i]);
      cli_print_piece(stdout, buf, plen < sizeof buf ? plen : sizeof buf);
      putchar('\n');
    }
  }
  nucleus_free(ids);
  nucleus_model_free(model);
  free(input);
  if (fflush(stdout) != 0) rc = 1;
  return rc;
}
