/* nucleus embed: the embedding of each TEXT as JSON, in the shape of
 * OpenAI's /v1/embeddings reply. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "model_flags.h"
#include "nucleus.h"

static void usage(FILE *out) {
  fprintf(
      out,
      "usage: nucleus embed -m MODEL [--pooling P] [--no-normalize]\n"
      "                     [--dimensions N] [model options] [--] TEXT...\n\n"
      "Prints the embedding of each TEXT (tokenized with the model's\n"
      "special tokens) as JSON: {\"object\": \"list\", \"data\": [{\"index\":\n"
      "i, \"embedding\": [...]}, ...], \"usage\": {\"prompt_tokens\": n}}.\n"
      "  --pooling P      model (the file's), mean, cls, last or rank\n"
      "  --no-normalize   the vectors as pooled (default: L2-normalised)\n"
      "  --dimensions N   the first N values, then normalised "
      "(Matryoshka)\n");
  model_flags_help(out);
}

/* An integer option's value; false when it is not one. */
static bool parse_i32(const char *s, int32_t *out) {
  char *end;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < INT32_MIN || v > INT32_MAX) return false;
  *out = (int32_t)v;
  return true;
}

int cmd_embed(int argc, char **argv) {
  const char *path = NULL;
  nucleus_model_params mp = nucleus_model_default_params();
  nucleus_embed_params ep = nucleus_embed_default_params();
  const char **texts = calloc((size_t)argc, sizeof *texts);
  size_t n = 0;
  char msg[640];
  int mrc, rc = 2;
  if (!texts) return 1;
  bool only_texts = false; /* after "--": every argument is text */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const bool has_val = flag_value(argc, argv, i) != NULL;
    if (only_texts) {
      texts[n++] = a;
    } else if (!strcmp(a, "--")) {
      only_texts = true;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      free(texts);
      return 0;
    } else if (!strcmp(a, "-m") && has_val) {
      path = argv[++i];
    } else if (!strcmp(a, "--pooling") && has_val) {
      if (!nucleus_pooling_parse(argv[++i], &ep.pooling)) {
        fprintf(stderr,
                "nucleus embed: --pooling %s: expected model, mean, cls, "
                "last or rank\n",
                argv[i]);
        goto done;
      }
    } else if (!strcmp(a, "--no-normalize")) {
      ep.normalize = false;
    } else if (!strcmp(a, "--dimensions") && has_val) {
      if (!parse_i32(argv[++i], &ep.dimensions)) {
        fprintf(stderr, "nucleus embed: --dimensions %s: not an integer\n",
                argv[i]);
        goto done;
      }
    } else if ((mrc = model_flags_parse(&mp, argc, argv, &i, msg,
                                        sizeof msg)) != 0) {
      if (mrc < 0) {
        fprintf(stderr, "nucleus embed: %s\n", msg);
        goto done;
      }
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "nucleus embed: unknown or incomplete option '%s'\n\n",
              a);
      usage(stderr);
      goto done;
    } else {
      texts[n++] = a;
    }
  }
  if (!path || n == 0) {
    fprintf(stderr, "nucleus embed: give -m MODEL and at least one TEXT\n\n");
    usage(stderr);
    goto done;
  }
  rc = 1;
  nucleus_error err = {0};
  nucleus_model *model = NULL;
  if (nucleus_model_load(path, &mp, &model, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus embed: %s\n", err.message);
    goto done;
  }
  nucleus_embed_input *in = calloc(n, sizeof *in);
  float *out = NULL;
  const int32_t w = nucleus_embed_size(model, &ep);
  size_t total = 0;
  if (nucleus_embed_params_validate(model, &ep, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus embed: %s\n", err.message);
    goto free_model;
  }
  out = malloc(sizeof(float) * n * (size_t)w);
  if (!in || !out) goto free_model;
  for (size_t i = 0; i < n; i++) {
    int32_t *ids = NULL;
    size_t k = 0;
    if (nucleus_tokenize(model, texts[i], strlen(texts[i]), true, true, &ids,
                         &k, &err) != NUCLEUS_OK) {
      fprintf(stderr, "nucleus embed: text %zu: %s\n", i, err.message);
      goto free_model;
    }
    in[i] = (nucleus_embed_input){ids, k};
    total += k;
  }
  if (nucleus_embed(model, in, n, &ep, out, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus embed: %s\n", err.message);
    goto free_model;
  }
  json_t *data = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array();
    for (int32_t j = 0; j < w; j++)
      json_array_append_new(v, json_real(out[i * (size_t)w + (size_t)j]));
    json_array_append_new(data,
                          json_pack("{s:s,s:I,s:o}", "object", "embedding",
                                    "index", (json_int_t)i, "embedding", v));
  }
  json_t *reply =
      json_pack("{s:s,s:s,s:s,s:o,s:{s:I,s:I}}", "object", "list", "model",
                nucleus_model_name(model), "pooling",
                nucleus_pooling_name(ep.pooling == NUCLEUS_POOLING_MODEL
                                         ? nucleus_model_pooling(model)
                                         : ep.pooling),
                "data", data, "usage", "prompt_tokens", (json_int_t)total,
                "total_tokens", (json_int_t)total);
  if (reply && json_dumpf(reply, stdout, JSON_REAL_PRECISION(9)) == 0) {
    putchar('\n');
    rc = 0;
  }
  json_decref(reply);
free_model:
  for (size_t i = 0; in && i < n; i++)
    nucleus_free((void *)in[i].tokens);
  free(in);
  free(out);
  nucleus_model_free(model);
done:
  free(texts);
  if (fflush(stdout) != 0) rc = 1;
  return rc;
}
