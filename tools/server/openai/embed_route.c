/* nucleus serve: the model of an embeddings or rerank request, and their
 * inputs. */
#include "embed_route.h"

#include <stdlib.h>
#include <string.h>

embed_service *embed_route(server_ctx *srv, const json_t *root, bool rank,
                           const char **id, api_error *e) {
  const json_t *model = json_object_get(root, "model");
  if (model && !json_is_null(model) && !json_is_string(model)) {
    api_fail(e, 400, "model", "'model' must be a string");
    return NULL;
  }
  const char *name = json_string_value(model);
  bool main = !srv->embed_extra || (name && !strcmp(name, srv->model_id) &&
                                    strcmp(name, srv->embed_model_id) != 0);
  embed_service *s = main ? srv->embed_main : srv->embed_extra;
  *id = main ? srv->model_id : srv->embed_model_id;
  if (!s) {
    api_fail(e, 400, "model",
             "model '%s' is not an embedding model (its file names no "
             "pooling; serve one with --embedding-model FILE)",
             *id);
    return NULL;
  }
  if (rank && nucleus_model_n_cls_out(embed_service_model(s)) < 1) {
    api_fail(e, 400, "model",
             "model '%s' is not a reranker (it has no rank head, "
             "cls.output)",
             *id);
    return NULL;
  }
  return s;
}

void embed_inputs_free(embed_inputs *x) {
  for (size_t i = 0; x->in && i < x->n; i++)
    free((void *)x->in[i].tokens);
  free(x->in);
  x->in = NULL;
  x->n = 0;
}

int embed_inputs_add_text(embed_inputs *x, const nucleus_model *m,
                          const char *text, size_t len, api_error *e) {
  nucleus_error err = {0};
  int32_t *toks = NULL, *own;
  size_t k = 0;
  nucleus_status st =
      nucleus_tokenize(m, text, len, true, true, &toks, &k, &err);
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, "input",
                    "input %zu: %s", x->n, err.message);
  own = malloc((k ? k : 1) * sizeof *own);
  if (!own) {
    nucleus_free(toks);
    return api_fail(e, 500, NULL, "out of memory");
  }
  if (k) memcpy(own, toks, k * sizeof *own);
  nucleus_free(toks);
  x->in[x->n++] = (nucleus_embed_input){own, k};
  x->tokens += k;
  return 0;
}

void embed_inputs_truncate(embed_inputs *x, size_t max) {
  for (size_t i = 0; i < x->n; i++)
    if (x->in[i].n_tokens > max) {
      x->tokens -= x->in[i].n_tokens - max;
      x->in[i].n_tokens = max;
    }
}

int embed_fail(api_error *e, nucleus_status st, const nucleus_error *err) {
  const bool asked =
      st == NUCLEUS_ERR_INVALID_ARGUMENT || st == NUCLEUS_ERR_LIMIT;
  int rc = api_fail(e, asked ? 400 : 500, NULL, "%s", err->message);
  if (st == NUCLEUS_ERR_LIMIT) e->code = "context_length_exceeded";
  return rc;
}
