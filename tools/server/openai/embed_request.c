/* nucleus serve: the embeddings and rerank bodies (embed_request.h). */
#include "embed_request.h"

#include <stdlib.h>
#include <string.h>

static const char *const FIELDS[] = {"input", "model", "encoding_format",
                                     "dimensions", "truncate"};

int embeddings_check_fields(const json_t *root, api_error *e) {
  return api_check_fields(root, FIELDS, sizeof FIELDS / sizeof FIELDS[0],
                          "an embeddings request", e);
}

/* One list of token ids as input i. */
static int add_ids(embed_inputs *x, const json_t *arr, api_error *e) {
  const size_t k = json_array_size(arr);
  int32_t *ids = malloc((k ? k : 1) * sizeof *ids);
  if (!ids) return api_fail(e, 500, NULL, "out of memory");
  for (size_t j = 0; j < k; j++) {
    const json_t *t = json_array_get(arr, j);
    if (!json_is_integer(t) || json_integer_value(t) < 0 ||
        json_integer_value(t) > INT32_MAX) {
      free(ids);
      return api_fail(e, 400, "input",
                      "input %zu: element %zu is not a token id (an integer "
                      ">= 0)",
                      x->n, j);
    }
    ids[j] = (int32_t)json_integer_value(t);
  }
  x->in[x->n++] = (nucleus_embed_input){ids, k};
  x->tokens += k;
  return 0;
}

static int parse_input(const json_t *input, const nucleus_model *m,
                       embed_inputs *x, api_error *e) {
  if (json_is_string(input)) {
    x->in = calloc(1, sizeof *x->in);
    if (!x->in) return api_fail(e, 500, NULL, "out of memory");
    return embed_inputs_add_text(x, m, json_string_value(input),
                                 json_string_length(input), e);
  }
  const size_t n = json_array_size(input);
  if (!json_is_array(input) || n == 0)
    return api_fail(e, 400, "input",
                    "'input' must be a string, a list of strings, a list of "
                    "token ids or a list of such lists, not empty");
  /* a list of integers is one input */
  if (json_is_integer(json_array_get(input, 0))) {
    x->in = calloc(1, sizeof *x->in);
    if (!x->in) return api_fail(e, 500, NULL, "out of memory");
    return add_ids(x, input, e);
  }
  if (n > EMBED_MAX_INPUTS)
    return api_fail(e, 400, "input", "%zu inputs: at most %d per request", n,
                    EMBED_MAX_INPUTS);
  x->in = calloc(n, sizeof *x->in);
  if (!x->in) return api_fail(e, 500, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const json_t *v = json_array_get(input, i);
    int rc;
    if (json_is_string(v))
      rc = embed_inputs_add_text(x, m, json_string_value(v),
                                 json_string_length(v), e);
    else if (json_is_array(v))
      rc = add_ids(x, v, e);
    else
      rc = api_fail(e, 400, "input",
                    "input %zu must be a string or a list of token ids", i);
    if (rc) return rc;
  }
  return 0;
}

int embeddings_request_parse(const json_t *root, const nucleus_model *m,
                             embeddings_request *r, api_error *e) {
  memset(r, 0, sizeof *r);
  r->p = nucleus_embed_default_params();
  const json_t *fmt = json_object_get(root, "encoding_format");
  if (fmt && !json_is_null(fmt)) {
    const char *f = json_string_value(fmt);
    if (!f || (strcmp(f, "float") && strcmp(f, "base64")))
      return api_fail(e, 400, "encoding_format",
                      "'encoding_format' must be \"float\" or \"base64\"");
    r->b64 = !strcmp(f, "base64");
  }
  const json_t *dims = json_object_get(root, "dimensions");
  if (dims && !json_is_null(dims)) {
    if (!json_is_integer(dims) || json_integer_value(dims) < 1 ||
        json_integer_value(dims) > INT32_MAX)
      return api_fail(e, 400, "dimensions",
                      "'dimensions' must be an integer >= 1");
    r->p.dimensions = (int32_t)json_integer_value(dims);
  }
  const json_t *trunc = json_object_get(root, "truncate");
  if (trunc && !json_is_null(trunc) && !json_is_boolean(trunc))
    return api_fail(e, 400, "truncate", "'truncate' must be true or false");
  r->truncate = json_is_true(trunc);
  nucleus_error err = {0};
  if (nucleus_embed_params_validate(m, &r->p, &err) != NUCLEUS_OK)
    return api_fail(e, 400, "dimensions", "%s", err.message);
  const json_t *input = json_object_get(root, "input");
  if (!input) return api_fail(e, 400, "input", "'input' is required");
  return parse_input(input, m, &r->x, e);
}

static const char *const RERANK_FIELDS[] = {"query", "documents", "top_n",
                                            "return_documents", "model"};

int rerank_check_fields(const json_t *root, api_error *e) {
  return api_check_fields(root, RERANK_FIELDS,
                          sizeof RERANK_FIELDS / sizeof RERANK_FIELDS[0],
                          "a rerank request", e);
}

const json_t *rerank_doc_text(const json_t *d) {
  if (json_is_string(d)) return d;
  const json_t *t = json_object_get(d, "text");
  return json_is_object(d) && json_is_string(t) ? t : NULL;
}

int rerank_request_parse(const json_t *root, const nucleus_model *m,
                         rerank_request *r, api_error *e) {
  memset(r, 0, sizeof *r);
  const json_t *query = json_object_get(root, "query");
  if (!json_is_string(query))
    return api_fail(e, 400, "query", "'query' must be a string");
  const json_t *docs = json_object_get(root, "documents");
  const size_t n = json_array_size(docs);
  if (!json_is_array(docs) || n == 0)
    return api_fail(e, 400, "documents",
                    "'documents' must be a non-empty list of strings");
  if (n > EMBED_MAX_INPUTS)
    return api_fail(e, 400, "documents", "%zu documents: at most %d", n,
                    EMBED_MAX_INPUTS);
  r->docs = docs;
  const json_t *top = json_object_get(root, "top_n");
  r->top_n = n;
  if (top && !json_is_null(top)) {
    if (!json_is_integer(top) || json_integer_value(top) < 1)
      return api_fail(e, 400, "top_n", "'top_n' must be an integer >= 1");
    if ((json_int_t)n > json_integer_value(top))
      r->top_n = (size_t)json_integer_value(top);
  }
  const json_t *ret = json_object_get(root, "return_documents");
  if (ret && !json_is_null(ret) && !json_is_boolean(ret))
    return api_fail(e, 400, "return_documents",
                    "'return_documents' must be true or false");
  r->with_docs = !ret || json_is_null(ret) || json_is_true(ret);
  embed_inputs *x = &r->x;
  x->in = calloc(n, sizeof(nucleus_embed_input));
  if (!x->in) return api_fail(e, 500, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const json_t *t = rerank_doc_text(json_array_get(docs, i));
    if (!t)
      return api_fail(e, 400, "documents",
                      "documents[%zu] must be a string or {\"text\": string}",
                      i);
    nucleus_error err = {0};
    int32_t *ids = NULL;
    size_t k = 0;
    nucleus_status st = nucleus_rerank_tokens(
        m, json_string_value(query), json_string_length(query),
        json_string_value(t), json_string_length(t), &ids, &k, &err);
    if (st != NUCLEUS_OK) return embed_fail(e, st, &err);
    x->in[x->n++] = (nucleus_embed_input){ids, k};
    x->tokens += k;
  }
  return 0;
}

void rerank_request_free(rerank_request *r) {
  for (size_t i = 0; r->x.in && i < r->x.n; i++)
    nucleus_free((void *)r->x.in[i].tokens);
  free(r->x.in);
  r->x.in = NULL;
  r->x.n = 0;
}
