/* nucleus rerank: a reranker's relevance score of each DOCUMENT for a
 * query, as JSON in the shape of /v1/rerank's reply (sorted, best first). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "model_flags.h"
#include "nucleus.h"

static void usage(FILE *out) {
  fprintf(out, "usage: nucleus rerank -m MODEL -q QUERY [--top-n N]\n"
               "                      [model options] [--] DOCUMENT...\n\n"
               "Scores each DOCUMENT for QUERY with a reranker (a file with a\n"
               "rank head: BGE-reranker style cls.output, Qwen3-Reranker) and\n"
               "prints {\"results\": [{\"index\": i, \"relevance_score\": s,\n"
               "\"document\": {\"text\": ...}}, ...]} sorted by score, best "
               "first.\n"
               "  -q, --query QUERY  the query\n"
               "  --top-n N          only the N best (default: all)\n");
  model_flags_help(out);
}

typedef struct scored {
  size_t index;
  float score;
} scored;

/* Best first; ties in document order. */
static int by_score(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->score != y->score) return x->score < y->score ? 1 : -1;
  return x->index < y->index ? -1 : x->index > y->index;
}

int cmd_rerank(int argc, char **argv) {
  const char *path = NULL, *query = NULL;
  long top_n = -1;
  nucleus_model_params mp = nucleus_model_default_params();
  const char **docs = calloc((size_t)argc, sizeof *docs);
  size_t n = 0;
  char msg[640];
  int mrc, rc = 2;
  if (!docs) return 1;
  bool only_texts = false; /* after "--": every argument is text */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const bool has_val = flag_value(argc, argv, i) != NULL;
    if (only_texts) {
      docs[n++] = a;
    } else if (!strcmp(a, "--")) {
      only_texts = true;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      free(docs);
      return 0;
    } else if (!strcmp(a, "-m") && has_val) {
      path = argv[++i];
    } else if ((!strcmp(a, "-q") || !strcmp(a, "--query")) && i + 1 < argc) {
      query = argv[++i];
    } else if (!strcmp(a, "--top-n") && has_val) {
      char *end;
      errno = 0;
      top_n = strtol(argv[++i], &end, 10);
      if (errno || *end || end == argv[i] || top_n < 1) {
        fprintf(stderr,
                "nucleus rerank: --top-n %s: expected an integer >= 1\n",
                argv[i]);
        goto done;
      }
    } else if ((mrc = model_flags_parse(&mp, argc, argv, &i, msg,
                                        sizeof msg)) != 0) {
      if (mrc < 0) {
        fprintf(stderr, "nucleus rerank: %s\n", msg);
        goto done;
      }
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "nucleus rerank: unknown or incomplete option '%s'\n\n",
              a);
      usage(stderr);
      goto done;
    } else {
      docs[n++] = a;
    }
  }
  if (!path || !query || n == 0) {
    fprintf(stderr, "nucleus rerank: give -m MODEL, -q QUERY and at least "
                    "one DOCUMENT\n\n");
    usage(stderr);
    goto done;
  }
  rc = 1;
  nucleus_error err = {0};
  nucleus_model *model = NULL;
  if (nucleus_model_load(path, &mp, &model, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus rerank: %s\n", err.message);
    goto done;
  }
  nucleus_embed_params ep = nucleus_embed_default_params();
  ep.pooling = NUCLEUS_POOLING_RANK;
  nucleus_embed_input *in = calloc(n, sizeof *in);
  scored *s = calloc(n, sizeof *s);
  float *out = NULL;
  size_t total = 0;
  if (nucleus_embed_params_validate(model, &ep, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus rerank: %s\n", err.message);
    goto free_model;
  }
  const int32_t w = nucleus_embed_size(model, &ep);
  out = malloc(sizeof(float) * n * (size_t)w);
  if (!in || !s || !out) goto free_model;
  for (size_t i = 0; i < n; i++) {
    int32_t *ids = NULL;
    size_t k = 0;
    if (nucleus_rerank_tokens(model, query, strlen(query), docs[i],
                              strlen(docs[i]), &ids, &k, &err) != NUCLEUS_OK) {
      fprintf(stderr, "nucleus rerank: document %zu: %s\n", i, err.message);
      goto free_model;
    }
    in[i] = (nucleus_embed_input){ids, k};
    total += k;
  }
  if (nucleus_embed(model, in, n, &ep, out, &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus rerank: %s\n", err.message);
    goto free_model;
  }
  for (size_t i = 0; i < n; i++)
    s[i] = (scored){i, out[i * (size_t)w]};
  qsort(s, n, sizeof *s, by_score);
  const size_t keep = top_n > 0 && (size_t)top_n < n ? (size_t)top_n : n;
  json_t *results = json_array();
  for (size_t i = 0; i < keep; i++)
    json_array_append_new(
        results, json_pack("{s:I,s:f,s:{s:s}}", "index", (json_int_t)s[i].index,
                           "relevance_score", (double)s[i].score, "document",
                           "text", docs[s[i].index]));
  json_t *reply =
      json_pack("{s:s,s:o,s:{s:I,s:I}}", "model", nucleus_model_name(model),
                "results", results, "usage", "prompt_tokens", (json_int_t)total,
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
  free(s);
  free(out);
  nucleus_model_free(model);
done:
  free(docs);
  if (fflush(stdout) != 0) rc = 1;
  return rc;
}
