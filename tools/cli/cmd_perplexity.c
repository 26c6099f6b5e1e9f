/* nucleus perplexity: llama-perplexity's method over the public API.
 *
 * The text is tokenized once (BOS added when the model asks). It is cut
 * into non-overlapping windows of N tokens; each window is evaluated from an
 * empty cache (its first token replaced by BOS when the model adds one) and
 * scores the tokens of its second half: for positions j in [N/2, N-1), the
 * negative log-likelihood of token j+1 under the logits of position j.
 * PPL = exp(mean NLL). The last line printed is "PPL = <value>". */
#include <errno.h>
#include <math.h>
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
          "usage: nucleus perplexity [-m MODEL] -f TEXT [-c N] [--chunks K]\n"
          "                          [model options]\n\n"
          "Perplexity of a text file, as llama-perplexity computes it:\n"
          "non-overlapping windows of N tokens, each scored on its second\n"
          "half.\n"
          "  -m MODEL                the GGUF file (default: the default "
          "model)\n"
          "  -f TEXT                 the text file\n"
          "  -c N                    window size in tokens (default 512)\n"
          "  --chunks K              score at most K windows (default: "
          "all)\n"
          "model options:\n");
  model_flags_help(out);
}

/* -log softmax(row)[tok], as llama-perplexity: max in float, the sum of
 * expf in double. */
static double nll_of(const float *row, int32_t n_vocab, int32_t tok) {
  float mx = row[0];
  for (int32_t i = 1; i < n_vocab; i++)
    mx = row[i] > mx ? row[i] : mx;
  double sum = 0.0;
  for (int32_t i = 0; i < n_vocab; i++)
    sum += expf(row[i] - mx);
  return -((double)(row[tok] - mx) - log(sum));
}

int cmd_perplexity(int argc, char **argv) {
  const char *model_path = NULL, *text_path = NULL;
  long n_ctx = 512, max_chunks = -1;
  nucleus_model_params mp = nucleus_model_default_params();
  char msg[640];
  int mrc;
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
    } else if (!strcmp(a, "-c") && has_val) {
      if (!cli_parse_long(argv[++i], 4, 1 << 20, &n_ctx)) {
        fprintf(stderr, "error: -c %s: expected an integer in [4, %d]\n",
                argv[i], 1 << 20);
        return 2;
      }
    } else if (!strcmp(a, "--chunks") && has_val) {
      if (!cli_parse_long(argv[++i], 1, 1 << 30, &max_chunks)) {
        fprintf(stderr, "error: --chunks %s: expected a positive integer\n",
                argv[i]);
        return 2;
      }
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
  int rc = 1;
  int32_t *tokens = NULL, *plain = NULL, *window = NULL;
  float *logits = NULL;
  if (nucleus_model_load(model_path, &mp, &model, &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    goto done;
  }
  size_t n_tokens = 0, n_plain = 0;
  if (nucleus_tokenize(model, text, text_len, true, false, &tokens, &n_tokens,
                       &err) != NUCLEUS_OK ||
      nucleus_tokenize(model, text, text_len, false, false, &plain, &n_plain,
                       &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    goto done;
  }
  /* Does the model add BOS? Then every window starts with it. */
  const int32_t bos = nucleus_token_bos(model);
  const bool add_bos = bos >= 0 && n_tokens == n_plain + 1 && tokens[0] == bos;
  if (n_tokens < 2 * (size_t)n_ctx) {
    fprintf(stderr,
            "error: %s tokenizes to %zu tokens; a window of %ld needs at "
            "least %ld\n",
            text_path, n_tokens, n_ctx, 2 * n_ctx);
    goto done;
  }
  const int32_t n_vocab = nucleus_model_n_vocab(model);
  long n_chunk = (long)(n_tokens / (size_t)n_ctx);
  if (max_chunks > 0 && max_chunks < n_chunk) n_chunk = max_chunks;
  window = malloc(sizeof(int32_t) * (size_t)n_ctx);
  logits = malloc(sizeof(float) * (size_t)n_ctx * (size_t)n_vocab);
  if (!window || !logits) {
    fprintf(stderr, "error: out of memory for a window of %ld tokens\n", n_ctx);
    goto done;
  }
  fprintf(stderr,
          "perplexity: %zu tokens, %ld chunks of %ld, scoring the second "
          "half of each%s\n",
          n_tokens, n_chunk, n_ctx, add_bos ? " (BOS first)" : "");
  const long first = n_ctx / 2;
  double nll = 0.0, nll2 = 0.0;
  long count = 0;
  for (long c = 0; c < n_chunk; c++) {
    memcpy(window, tokens + c * n_ctx, sizeof(int32_t) * (size_t)n_ctx);
    if (add_bos) window[0] = bos;
    if (nucleus_eval_logits(model, window, (size_t)n_ctx, true, logits, &err) !=
        NUCLEUS_OK) {
      fprintf(stderr, "\nerror: %s\n", err.message);
      goto done;
    }
    for (long j = first; j < n_ctx - 1; j++) {
      const double v =
          nll_of(logits + j * n_vocab, n_vocab, tokens[c * n_ctx + j + 1]);
      nll += v;
      nll2 += v * v;
      count++;
    }
    printf("[%ld]%.4f,", c + 1, exp(nll / (double)count));
    fflush(stdout);
  }
  printf("\n");
  const double mean = nll / (double)count;
  double var = nll2 / (double)count - mean * mean;
  const double ppl = exp(mean);
  const double err_ppl =
      var > 0 && count > 1 ? ppl * sqrt(var / (double)(count - 1)) : 0.0;
  printf("Final estimate: PPL = %.4f +/- %.5f (%ld tokens scored)\n", ppl,
         err_ppl, count);
  printf("PPL = %.4f\n", ppl);
  rc = 0;
done:
  nucleus_free(tokens);
  nucleus_free(plain);
  free(window);
  free(logits);
  nucleus_model_free(model);
  free(text);
  return rc;
}
