/* libFuzzer target for what a client's request body reaches in nucleus
 * serve before any model work: the JSON body -> generation parameters
 * (tools/server/openai/request_parse.c: sampling, stop strings, stop_token_ids,
 * logit_bias, logprobs, n, lengths, flags), the engine's check of those
 * parameters (nucleus_request_params_validate), and the prompt
 * (tools/server/openai/prompt.c: messages and their content parts, tools, the
 * completion prompt as text or token ids), and the same body as an
 * Anthropic Messages API request (tools/server/anthropic/
 * messages_request.c) and as an OpenAI Responses API request
 * (tools/server/openai/responses_request.c, responses_input.c), each
 * translated and read as chat; and the same body as an embeddings and as
 * a rerank request (tools/server/openai/embed_request.c: inputs as texts or
 * token ids, encoding_format, dimensions, truncate; query, documents,
 * top_n, return_documents).
 *
 * The input is the request body, as the HTTP handler gets it; both the
 * chat and the completions paths run on it. The model is not loaded: the
 * few public calls prompt.c makes into it are stood in for below (the
 * chat template renders through the real template engine with a ChatML
 * template that prints the tools; tokenizing gives one id per byte). Any
 * crash, sanitizer report, leak, failed FUZZ_CHECK or an error without a
 * message is a bug. Build: make fuzz-request; the seeds (fuzz/corpus/
 * request/) are request bodies of the e2e tests (scripts/
 * gen_request_seeds.py), replayed by tests/unit/test_request_fuzz.c. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anthropic/messages_request.h"
#include "chat/chat_template.h"
#include "http/api_error.h"
#include "model/model.h"
#include "nucleus.h"
#include "openai/embed_request.h"
#include "openai/prompt.h"
#include "openai/request_fields.h"
#include "openai/request_parse.h"
#include "openai/responses_request.h"
#include "sampling/sampler_contract.h"
#include "server.h"

#define FUZZ_CHECK(c)                                                          \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "fuzz_request: check failed: %s (%s:%d)\n", #c,          \
              __FILE__, __LINE__);                                             \
      abort();                                                                 \
    }                                                                          \
  } while (0)

enum { FUZZ_N_VOCAB = 49152, FUZZ_N_EMBD = 384 };

/* ------------------------------------------ stand-ins for the model's API */

/* The model handle the harness passes around is its hyperparameters. */
const nc_hparams *nc_model_hparams(const nucleus_model *m) {
  return (const nc_hparams *)(const void *)m;
}

void nucleus_free(void *ptr) {
  free(ptr);
}

/* The harness's server has no vision projector: prompt.c refuses images
 * before it would tokenize them. */
nucleus_status nucleus_tokenize_with_images(const nucleus_model *model,
                                            const nucleus_mmproj *mmproj,
                                            const char *text, size_t len,
                                            const nucleus_image *const *images,
                                            size_t n_images, int32_t **ids_out,
                                            size_t *n_out, nucleus_error *err) {
  FUZZ_CHECK(!"images reach the tokenizer without a projector");
  return NUCLEUS_ERR_INTERNAL;
}

static const char CHATML[] =
    "{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n' }}{%- for t in tools "
    "%}{{- t | tojson }}{{- '\\n' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- endif %}{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' "
    "+ m.content }}{%- if m.tool_calls is defined %}{%- for c in m.tool_calls "
    "%}{{- c | tojson }}{%- endfor %}{%- endif %}{{- '<|im_end|>\\n' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant"
    "\\n' }}{%- endif %}";

/* prompt.c hands over a normalized, non-empty list of {role, content}
 * objects, content a string; tools NULL or a non-empty list; kwargs NULL or
 * an object. Rendered with the real template engine, tokenized a byte a
 * token. */
nucleus_status nucleus_chat_apply(const nucleus_model *model,
                                  const nucleus_chat_params *p, char **text_out,
                                  size_t *text_len_out, int32_t **ids_out,
                                  size_t *n_ids_out, nucleus_error *err) {
  FUZZ_CHECK(model && p && p->messages_json && (text_out || ids_out));
  FUZZ_CHECK(!(p->continue_final_message && p->add_generation_prompt));
  json_t *m = json_loads(p->messages_json, 0, NULL);
  FUZZ_CHECK(json_is_array(m) && json_array_size(m) > 0);
  size_t i;
  json_t *msg;
  json_array_foreach(m, i, msg) {
    FUZZ_CHECK(json_is_object(msg));
    FUZZ_CHECK(json_is_string(json_object_get(msg, "role")));
    FUZZ_CHECK(json_is_string(json_object_get(msg, "content")));
  }
  json_decref(m);
  if (p->tools_json) {
    json_t *t = json_loads(p->tools_json, 0, NULL);
    FUZZ_CHECK(json_is_array(t) && json_array_size(t) > 0);
    json_decref(t);
  }
  if (p->kwargs_json) {
    json_t *k = json_loads(p->kwargs_json, 0, NULL);
    FUZZ_CHECK(json_is_object(k));
    json_decref(k);
  }
  char *text = NULL;
  size_t len = 0;
  nc_code rc = nc_chat_template_render(
      CHATML, sizeof CHATML - 1, p->messages_json, p->tools_json,
      p->add_generation_prompt, "<s>", "</s>", &text, &len, err);
  if (rc != NC_OK) return rc;
  if (ids_out) {
    rc =
        nucleus_tokenize(model, text, len, true, true, ids_out, n_ids_out, err);
  }
  if (text_out && rc == NC_OK) {
    *text_out = text;
    if (text_len_out) *text_len_out = len;
  } else {
    free(text);
  }
  return rc;
}

/* The CHATML stand-in renders no call syntax (and no harmony). */
const char *nucleus_model_tool_format(const nucleus_model *model) {
  (void)model;
  return "generic";
}

/* ... and no thinking markers. */
const char *nucleus_model_reasoning_format(const nucleus_model *model) {
  (void)model;
  return "none";
}

nucleus_reasoning_markers
nucleus_model_reasoning_markers(const nucleus_model *model) {
  (void)model;
  return (nucleus_reasoning_markers){NULL, NULL, NULL};
}

bool nucleus_reasoning_prompt_opens(const nucleus_model *model,
                                    const char *prompt, size_t len) {
  (void)model, (void)prompt, (void)len;
  return false;
}

bool nucleus_reasoning_params_for(const nucleus_model *model,
                                  const char *prompt, size_t len,
                                  int32_t budget,
                                  nucleus_request_params *params,
                                  bool *in_reasoning) {
  (void)model, (void)prompt, (void)len, (void)budget, (void)params;
  *in_reasoning = false;
  return false;
}

nucleus_chat_params nucleus_chat_default_params(void) {
  nucleus_chat_params p = {.add_generation_prompt = true};
  return p;
}

/* The parameter contract's public face (src/api/api_params.c, whose model
 * lookups need a real model), over the real table. */
const nucleus_param_info *nucleus_params_find(const char *name) {
  return nc_params_find(name);
}

nucleus_status nucleus_params_set(nucleus_request_params *p, const char *name,
                                  double v, nucleus_error *err) {
  const nucleus_param_info *info = nc_params_find(name);
  FUZZ_CHECK(info); /* the server names only rows of the table */
  return nc_params_set(p, info, v, err);
}

nucleus_status nucleus_tokenize(const nucleus_model *model, const char *text,
                                size_t len, bool add_special,
                                bool parse_special, int32_t **ids_out,
                                size_t *n_out, nucleus_error *err) {
  (void)model;
  (void)add_special;
  (void)parse_special;
  (void)err;
  int32_t *ids = malloc((len ? len : 1) * sizeof *ids);
  if (!ids) return NUCLEUS_ERR_NOMEM;
  for (size_t i = 0; i < len; i++)
    ids[i] = (unsigned char)text[i];
  *ids_out = ids;
  *n_out = len;
  return NUCLEUS_OK;
}

/* The embedder's parameters: mean pooling, FUZZ_N_EMBD floats a vector
 * (the check api_embed.c makes of dimensions). */
nucleus_embed_params nucleus_embed_default_params(void) {
  return (nucleus_embed_params){.pooling = NUCLEUS_POOLING_MODEL,
                                .normalize = true};
}

nucleus_status nucleus_embed_params_validate(const nucleus_model *model,
                                             const nucleus_embed_params *p,
                                             nucleus_error *err) {
  (void)model;
  FUZZ_CHECK(p->pooling == NUCLEUS_POOLING_MODEL && p->normalize);
  if (p->dimensions < 0 || p->dimensions > FUZZ_N_EMBD) {
    snprintf(err->message, sizeof err->message,
             "dimensions %d: must be in [1, %d] (the model's vector size), "
             "or 0 for all",
             (int)p->dimensions, FUZZ_N_EMBD);
    return NUCLEUS_ERR_INVALID_ARGUMENT;
  }
  return NUCLEUS_OK;
}

/* The query's bytes then the document's, a token each (as tokenizing). */
nucleus_status nucleus_rerank_tokens(const nucleus_model *model,
                                     const char *query, size_t qlen,
                                     const char *doc, size_t dlen,
                                     int32_t **ids_out, size_t *n_out,
                                     nucleus_error *err) {
  (void)model;
  (void)err;
  int32_t *ids = malloc((qlen + dlen + 1) * sizeof *ids);
  if (!ids) return NUCLEUS_ERR_NOMEM;
  for (size_t i = 0; i < qlen; i++)
    ids[i] = (unsigned char)query[i];
  for (size_t i = 0; i < dlen; i++)
    ids[qlen + i] = (unsigned char)doc[i];
  *ids_out = ids;
  *n_out = qlen + dlen;
  return NUCLEUS_OK;
}

/* Which model a request names is read with the server's workers
 * (embed_route.c), not here. */
const nucleus_model *embed_service_model(const embed_service *s) {
  (void)s;
  FUZZ_CHECK(!"the harness picks no embedding worker");
  return NULL;
}

int32_t nucleus_model_n_cls_out(const nucleus_model *model) {
  (void)model;
  FUZZ_CHECK(!"the harness picks no embedding worker");
  return 0;
}

/* ------------------------------------------------------------ the checks */

static void check_error(const api_error *e) {
  FUZZ_CHECK(e->status >= 400 && e->status < 600);
  FUZZ_CHECK(e->message[0] != '\0');
  FUZZ_CHECK(memchr(e->message, '\0', sizeof e->message));
  FUZZ_CHECK(memchr(e->param, '\0', sizeof e->param));
  json_t *body = api_error_json(e);
  FUZZ_CHECK(body);
  char *text = json_dumps(body, JSON_COMPACT);
  FUZZ_CHECK(text);
  free(text);
  json_decref(body);
}

/* What gen_request_parse accepted is in range, as the engine requires. */
static void check_request(const gen_request *r, const nucleus_model *model) {
  const nucleus_request_params *p = &r->params;
  FUZZ_CHECK(p->n >= 1 && p->n <= nc_params_find("n")->max);
  FUZZ_CHECK(p->n_stop <= NUCLEUS_MAX_STOP_STRINGS);
  for (size_t i = 0; i < p->n_stop; i++) {
    FUZZ_CHECK(p->stop[i]);
    size_t len = strlen(p->stop[i]);
    FUZZ_CHECK(len >= 1 && len <= NUCLEUS_MAX_STOP_STRING_BYTES);
  }
  FUZZ_CHECK(p->n_stop_token_ids <= NUCLEUS_MAX_STOP_TOKEN_IDS);
  for (size_t i = 0; i < p->n_stop_token_ids; i++)
    FUZZ_CHECK(p->stop_token_ids[i] >= 0 &&
               p->stop_token_ids[i] < FUZZ_N_VOCAB);
  const nucleus_sampling_params *s = &p->sampling;
  FUZZ_CHECK(s->n_logit_bias <= NUCLEUS_MAX_LOGIT_BIAS);
  for (size_t i = 0; i < s->n_logit_bias; i++)
    FUZZ_CHECK(s->logit_bias[i].token >= 0 &&
               s->logit_bias[i].token < FUZZ_N_VOCAB);
  FUZZ_CHECK(r->top_logprobs >= 0);
  FUZZ_CHECK(memchr(r->model, '\0', sizeof r->model));
  /* The engine may still refuse a combination, with a message. */
  nucleus_error err = {0};
  if (nucleus_request_params_validate(model, p, &err) != NUCLEUS_OK)
    FUZZ_CHECK(err.message[0] != '\0');
}

/* What embeddings_request_parse or rerank_request_parse accepted: inputs
 * within the bounds, their token counts summed. */
static void check_inputs(const embed_inputs *x) {
  FUZZ_CHECK(x->n >= 1 && x->n <= EMBED_MAX_INPUTS && x->in);
  size_t tokens = 0;
  for (size_t i = 0; i < x->n; i++) {
    FUZZ_CHECK(x->in[i].tokens);
    for (size_t j = 0; j < x->in[i].n_tokens; j++)
      FUZZ_CHECK(x->in[i].tokens[j] >= 0);
    tokens += x->in[i].n_tokens;
  }
  FUZZ_CHECK(tokens == x->tokens);
}

/* The body as POST /v1/embeddings and POST /v1/rerank read it. */
static void embedding_bodies(const json_t *root, const nucleus_model *model) {
  api_error fe = {0};
  if (embeddings_check_fields(root, &fe)) check_error(&fe);
  embeddings_request er;
  api_error ee = {0};
  if (embeddings_request_parse(root, model, &er, &ee) == 0) {
    check_inputs(&er.x);
    FUZZ_CHECK(er.p.dimensions >= 0 && er.p.dimensions <= FUZZ_N_EMBD);
    embed_inputs_truncate(&er.x, 8);
    for (size_t i = 0; i < er.x.n; i++)
      FUZZ_CHECK(er.x.in[i].n_tokens <= 8);
  } else {
    check_error(&ee);
  }
  embed_inputs_free(&er.x);
  api_error rf = {0};
  if (rerank_check_fields(root, &rf)) check_error(&rf);
  rerank_request rq;
  api_error re = {0};
  if (rerank_request_parse(root, model, &rq, &re) == 0) {
    check_inputs(&rq.x);
    FUZZ_CHECK(rq.x.n == json_array_size(rq.docs));
    FUZZ_CHECK(rq.top_n >= 1 && rq.top_n <= rq.x.n);
    for (size_t i = 0; i < rq.x.n; i++)
      FUZZ_CHECK(rerank_doc_text(json_array_get(rq.docs, i)));
  } else {
    check_error(&re);
  }
  rerank_request_free(&rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const nc_hparams hp = {.n_vocab = FUZZ_N_VOCAB, .n_ctx_train = 8192};
  const nucleus_model *model = (const nucleus_model *)(const void *)&hp;
  json_error_t je;
  json_t *root = json_loadb((const char *)data, size, 0, &je);
  if (!root) return 0; /* the handler answers 400 before parsing */
  if (!json_is_object(root)) {
    json_decref(root);
    return 0; /* likewise: "the body must be a JSON object" */
  }
  static const server_config cfg = {.host = "127.0.0.1"};
  server_ctx srv = {.cfg = &cfg,
                    .model = (nucleus_model *)(void *)&hp,
                    .n_vocab = FUZZ_N_VOCAB,
                    .n_ctx = 8192};
  srv.defaults = nucleus_request_default_params();
  nc_params_apply_defaults(&srv.defaults, NUCLEUS_SURFACE_SERVER);
  for (int chat = 0; chat < 2; chat++) {
    /* The field table first, as the handler runs it: a refusal names a
     * field; lenient, unknown fields pass (their warning line unwritten). */
    for (int strict = 0; strict < 2; strict++) {
      api_error fe = {0};
      if (request_fields_check(root, chat, strict, NULL, &fe))
        check_error(&fe);
      else
        FUZZ_CHECK(fe.status == 0);
    }
    gen_request r;
    api_error e = {0};
    if (gen_request_parse(root, chat, FUZZ_N_VOCAB, &srv.defaults, &r, &e) ==
        0) {
      check_request(&r, model);
      gen_request_free(&r);
    } else {
      check_error(&e);
    }
    int32_t *ids = NULL;
    size_t n = 0;
    api_error pe = {0};
    chat_opts opts;
    int rc =
        chat ? (chat_opts_parse(root, &opts, &pe) ||
                prompt_chat(&srv, root, &opts, NULL, NULL, &ids, &n, NULL, &pe))
             : prompt_completion_tokens(&srv, root, &ids, &n, &pe);
    if (rc == 0) {
      FUZZ_CHECK(ids);
      for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(ids[i] >= 0 && ids[i] < FUZZ_N_VOCAB);
      free(ids);
    } else {
      check_error(&pe);
      FUZZ_CHECK(ids == NULL || n == 0);
      free(ids);
    }
  }
  /* The Messages API's body: translated, then read as chat reads it. */
  for (int route = 0; route < 2; route++) {
    api_error me = {0};
    image_list images = {0}; /* the translation's decoded images */
    json_t *chat = messages_translate(
        root, route ? MESSAGES_COUNT_TOKENS : MESSAGES_CREATE, &images, &me);
    if (!chat) {
      check_error(&me);
      image_list_clear(&images);
      continue;
    }
    FUZZ_CHECK(json_array_size(json_object_get(chat, "messages")) > 0);
    gen_request r;
    api_error e = {0};
    if (gen_request_parse(chat, true, FUZZ_N_VOCAB, &srv.defaults, &r, &e) ==
        0) {
      check_request(&r, model);
      int32_t *ids = NULL;
      size_t n = 0;
      api_error pe = {0};
      if (prompt_chat(&srv, chat, &r.chat_opts, NULL, NULL, &ids, &n, &images,
                      &pe))
        check_error(&pe);
      free(ids);
      gen_request_free(&r);
    } else {
      check_error(&e);
    }
    image_list_clear(&images);
    json_decref(chat);
  }
  /* The Responses API's body (no store: a previous_response_id is a 400),
   * translated, then read as chat reads it. */
  responses_req rr;
  api_error re = {0};
  if (responses_request_parse(&srv, root, &rr, &re) == 0) {
    FUZZ_CHECK(json_is_object(rr.skeleton) && json_is_array(rr.conversation));
    gen_request r;
    api_error e = {0};
    if (gen_request_parse(rr.chat, true, FUZZ_N_VOCAB, &srv.defaults, &r, &e) ==
        0) {
      check_request(&r, model);
      int32_t *ids = NULL;
      size_t n = 0;
      api_error pe = {0};
      if (prompt_chat(&srv, rr.chat, &r.chat_opts, NULL, NULL, &ids, &n,
                      &rr.images, &pe))
        check_error(&pe);
      free(ids);
      gen_request_free(&r);
    } else {
      check_error(&e);
    }
  } else {
    check_error(&re);
  }
  responses_req_free(&rr);
  embedding_bodies(root, model);
  json_decref(root);
  return 0;
}
