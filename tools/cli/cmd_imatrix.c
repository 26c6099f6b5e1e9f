/* nucleus imatrix: an importance matrix for nucleus quantize --imatrix (and
 * llama-quantize --imatrix), as llama-imatrix computes one over a text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_io.h"
#include "cli_options.h"
#include "commands.h"
#include "model_flags.h"
#include "nucleus.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: nucleus imatrix [-m MODEL] -f TEXT [-o OUT.gguf] [-c N]\n"
          "                       [--chunks K] [--process-output] [model "
          "options]\n\n"
          "An importance matrix for nucleus quantize --imatrix (and\n"
          "llama-quantize --imatrix), as llama-imatrix computes it: the\n"
          "text cut into chunks of N tokens, each run from an empty cache,\n"
          "the squares of every layer matmul's inputs summed per column.\n"
          "  -m MODEL          the GGUF file (default: the default model)\n"
          "  -f TEXT           the calibration text\n"
          "  -o OUT.gguf       where to write it (default imatrix.gguf)\n"
          "  -c N              chunk size in tokens (default 512)\n"
          "  --chunks K        at most K chunks (default: all)\n"
          "  --process-output  also collect output.weight\n"
          "model options:\n");
  model_flags_help(out);
}

static void on_chunk(void *arg, int32_t done, int32_t n) {
  (void)arg;
  fprintf(stderr, "\rimatrix: chunk %d of %d", (int)done, (int)n);
  if (done == n) fputc('\n', stderr);
}

int cmd_imatrix(int argc, char **argv) {
  const char *model_path = NULL, *text_path = NULL, *out = "imatrix.gguf";
  nucleus_imatrix_params ip = nucleus_imatrix_default_params();
  nucleus_model_params mp = nucleus_model_default_params();
  char msg[640];
  int mrc;
  long v;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const bool has_val = flag_value(argc, argv, i) != NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "-m") && has_val) {
      model_path = argv[++i];
    } else if (!strcmp(a, "-f") && has_val) {
      text_path = argv[++i];
    } else if (!strcmp(a, "-o") && has_val) {
      out = argv[++i];
    } else if (!strcmp(a, "-c") && has_val) {
      if (!cli_parse_long(argv[++i], 16, 1 << 20, &v)) {
        fprintf(stderr, "error: -c %s: expected an integer in [16, %d]\n",
                argv[i], 1 << 20);
        return 2;
      }
      ip.n_ctx = (int32_t)v;
    } else if (!strcmp(a, "--chunks") && has_val) {
      if (!cli_parse_long(argv[++i], 1, 1 << 30, &v)) {
        fprintf(stderr, "error: --chunks %s: expected a positive integer\n",
                argv[i]);
        return 2;
      }
      ip.max_chunks = (int32_t)v;
    } else if (!strcmp(a, "--process-output")) {
      ip.process_output = true;
    } else if ((mrc = model_flags_parse(&mp, argc, argv, &i, msg,
                                        sizeof msg)) != 0) {
      if (mrc < 0) {
        fprintf(stderr, "error: %s\n", msg);
        return 2;
      }
    } else {
      fprintf(stderr, "error: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!text_path) {
    fprintf(stderr, "error: -f TEXT is required\n\n");
    usage(stderr);
    return 2;
  }
  char model_buf[CLI_MODEL_PATH_MAX];
  if (!model_path &&
      !(model_path = cli_default_model(model_buf, sizeof model_buf)))
    return 1;
  size_t text_len = 0;
  char *text = cli_read_file(text_path, &text_len);
  if (!text) {
    fprintf(stderr, "error: cannot read %s: %s\n", text_path, strerror(errno));
    return 1;
  }
  nucleus_model *model = NULL;
  nucleus_error err;
  int32_t *tokens = NULL;
  size_t n_tokens = 0;
  int rc = 1;
  ip.dataset = text_path;
  if (nucleus_model_load(model_path, &mp, &model, &err) != NUCLEUS_OK ||
      nucleus_tokenize(model, text, text_len, true, false, &tokens, &n_tokens,
                       &err) != NUCLEUS_OK ||
      nucleus_imatrix_compute(model, tokens, n_tokens, &ip, out, on_chunk, NULL,
                              &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
  } else {
    printf("wrote %s\n", out);
    rc = 0;
  }
  nucleus_free(tokens);
  free(text);
  nucleus_model_free(model);
  return rc;
}
