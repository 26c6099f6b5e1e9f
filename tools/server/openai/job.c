/* nucleus serve: a generation job's steps: the request parsed into
 * parameters and a prompt, submitted, and waited for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "echo.h"
#include "harmony.h"
#include "http/auth.h"
#include "http/http_reply.h"
#include "job.h"
#include "prompt.h"
#include "reasoning_request.h"
#include "request_fields.h"
#include "routes.h"
#include "tool_grammar.h"

/* One line per generation request, written when it ends. */
static void log_job(const job *j) {
  const completion_out *o = &j->out;
  if (!j->g || !o->choices) return;
  double ttft, elapsed;
  gen_timing(j->g, &ttft, &elapsed);
  const char *finish = finish_reason_text(o->choices[0].finish);
  fprintf(stderr,
          "nucleus: %s %s n=%d prompt=%d completion=%d finish=%s ttft=%.3fs "
          "(engine %.3fs) total=%.3fs\n",
          o->id, j->req.stream ? "stream" : "sync", o->n, o->prompt_tokens,
          o->completion_tokens, finish ? finish : "gone", ttft,
          o->timings.time_to_first_token_ms * 1e-3, elapsed);
}

void job_free(job *j) {
  if (!j) return;
  log_job(j);
  gen_free(j->g);
  completion_out_free(&j->out);
  gen_request_free(&j->req);
  free(j->prompt);
  image_list_clear(&j->images);
  if (j->ext_free) j->ext_free(j->ext);
  free(j);
}

static int context_error(server_ctx *srv, bool chat, size_t n_prompt,
                         const gen_request *req, api_error *e) {
  const char *param = chat ? "messages" : "prompt";
  if (req && req->max_tokens_given)
    api_fail(e, 400, param,
             "this model's maximum context length is %d tokens, but %lld "
             "tokens were requested (%zu in the %s, %d in the completion)",
             srv->n_ctx, (long long)n_prompt + req->params.max_tokens, n_prompt,
             param, req->params.max_tokens);
  else
    api_fail(e, 400, param,
             "this model's maximum context length is %d tokens, but the %s "
             "has %zu tokens",
             srv->n_ctx, param, n_prompt);
  e->code = "context_length_exceeded";
  return -1;
}

/* Tokenizes the prediction's text into r->params.speculative and checks
 * the whole (nucleus_speculative_check). 0, or -1 with *e. */
static int prepare_speculative(const nucleus_model *model, gen_request *r,
                               api_error *e) {
  nucleus_spec_params *sp = &r->params.speculative;
  nucleus_error err = {0};
  if (r->prediction_text) {
    size_t n = 0;
    if (nucleus_tokenize(model, r->prediction_text, r->prediction_len, false,
                         false, &r->prediction_ids, &n, &err) != NUCLEUS_OK)
      return api_fail(e, 400, "prediction", "%s", err.message);
    sp->prediction = r->prediction_ids;
    sp->n_prediction = n;
  }
  if (nucleus_speculative_check(sp, r->params.beam_width,
                                nucleus_model_n_vocab(model),
                                &err) != NUCLEUS_OK)
    return api_fail(e, 400, r->prediction_text ? "prediction" : "speculative",
                    "%s", err.message);
  return 0;
}

int job_prepare(server_ctx *srv, const char *body, size_t len, bool chat,
                job *j, api_error *e) {
  json_error_t jerr;
  json_t *root = json_loadb(body, len, 0, &jerr);
  if (!root)
    return api_fail(e, 400, NULL, "invalid JSON at line %d, column %d: %s",
                    jerr.line, jerr.column, jerr.text);
  int rc = job_prepare_json(srv, root, chat, j, e);
  json_decref(root);
  return rc;
}

int job_prepare_json(server_ctx *srv, const json_t *root, bool chat, job *j,
                     api_error *e) {
  int rc = request_fields_check(root, chat, srv->cfg->strict_params, stderr, e);
  if (!rc)
    rc =
        gen_request_parse(root, chat, srv->n_vocab, &srv->defaults, &j->req, e);
  /* generation runs on the main model, and not on an embedding model */
  if (!rc && srv->embed_model && !strcmp(j->req.model, srv->embed_model_id))
    rc = api_fail(e, 400, "model",
                  "model '%s' is an embedding model: it serves "
                  "/v1/embeddings and /v1/rerank, not generation",
                  srv->embed_model_id);
  if (!rc && srv->embed_main)
    rc = api_fail(e, 400, "model",
                  "model '%s' is an embedding model: it serves "
                  "/v1/embeddings and /v1/rerank, not generation",
                  srv->model_id);
  char *text = NULL; /* a chat prompt's text */
  size_t text_len = 0;
  if (!rc && chat) {
    rc = prompt_chat(srv, root, &j->req.chat_opts, &text, &text_len, &j->prompt,
                     &j->n_prompt, &j->images, e);
    /* the request keeps copies at submit; the job holds them till then */
    j->req.params.images = (const nucleus_image *const *)j->images.v;
    j->req.params.n_images = j->images.n;
  } else if (!rc)
    rc = prompt_completion_tokens(srv, root, &j->prompt, &j->n_prompt, e);
  if (!rc && (j->req.tools.choice == TOOL_CHOICE_REQUIRED ||
              j->req.tools.choice == TOOL_CHOICE_NAMED)) {
    if (j->req.grammar)
      rc = api_fail(e, 400, "tool_choice",
                    "a 'tool_choice' that forces a call cannot be combined "
                    "with structured output");
    else
      rc = tool_grammar_build(json_object_get(root, "tools"), &j->req.tools,
                              nucleus_model_tool_format(srv->model),
                              &j->req.grammar, e);
    j->req.params.grammar = j->req.grammar;
    j->req.grammar_param = "tools";
  } else if (!rc && j->req.tools.choice == TOOL_CHOICE_AUTO &&
             !j->req.grammar) {
    /* auto: free text until the family's call opener, then a valid call */
    const char *trigger = NULL;
    tool_grammar_lazy(json_object_get(root, "tools"), &j->req.tools,
                      nucleus_model_tool_format(srv->model), &j->req.grammar,
                      &trigger);
    j->req.params.grammar = j->req.grammar;
    j->req.grammar_param = "tools";
    j->req.params.grammar_trigger = trigger;
  }
  /* the thinking, once the prompt and the grammar are known */
  if (!rc && chat)
    rc = reasoning_request_prepare(srv, &j->req, text, text_len, &j->prompt,
                                   &j->n_prompt, e);
  nucleus_free(text);
  if (rc) return -1;
  /* Families whose call openers are control tokens ([TOOL_CALLS],
   * <|python_tag|>, ...) need them in the reply to be read. */
  /* So do harmony's channels, with or without tools. */
  const char *fmt = nucleus_model_tool_format(srv->model);
  if ((j->req.tools.choice != TOOL_CHOICE_NONE && strcmp(fmt, "generic") &&
       strcmp(fmt, "hermes")) ||
      (chat && harmony_model(srv->model)))
    j->req.params.skip_special_tokens = false;
  if (j->n_prompt == 0)
    return api_fail(e, 400, chat ? "messages" : "prompt",
                    "the prompt is empty");
  if (j->n_prompt >= (size_t)srv->n_ctx)
    return context_error(srv, chat, j->n_prompt, NULL, e);
  /* max_tokens given: prompt + completion must fit, as OpenAI checks;
   * absent, the completion runs until the context is full (length). */
  if (j->req.max_tokens_given &&
      (long long)j->n_prompt + j->req.params.max_tokens > srv->n_ctx)
    return context_error(srv, chat, j->n_prompt, &j->req, e);
  if (prepare_speculative(srv->model, &j->req, e)) return -1;
  nucleus_error err = {0};
  if (nucleus_request_params_validate(srv->model, &j->req.params, &err) !=
      NUCLEUS_OK)
    return api_fail(e, 400, NULL, "%s", err.message);
  if (completion_out_init(&j->out, srv, &j->req, (int32_t)j->n_prompt))
    return api_fail(e, 500, NULL, "out of memory");
  return j->req.echo ? echo_prepare(srv, j, e) : 0;
}

static uint64_t fnv64(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* --prefix-cache-salt-by-key: the cache salt becomes (presented API key,
 * the request's cache_salt), so that only requests with the same key share
 * cached prefixes (a request without a key is its own tenant: ""). */
static void salt_by_key(server_ctx *srv, struct MHD_Connection *conn,
                        gen_request *r) {
  if (!srv->cfg->prefix_cache_salt_by_key) return;
  size_t n = 0;
  const char *key = auth_request_key(conn, &n);
  snprintf(r->salted, sizeof r->salted, "k%016llx.%zu.s%016llx",
           (unsigned long long)fnv64(key ? key : "", key ? n : 0), n,
           (unsigned long long)fnv64(r->cache_salt, strlen(r->cache_salt)));
  r->params.cache_salt = r->salted;
}

int job_submit(server_ctx *srv, struct MHD_Connection *conn, job *j,
               api_error *e) {
  nucleus_error err = {0};
  salt_by_key(srv, conn, &j->req);
  nucleus_status st =
      gen_start(srv, conn, j->prompt, j->n_prompt, &j->req.params, &j->g, &err);
  switch (st) {
  case NUCLEUS_OK: return 0;
  case NUCLEUS_ERR_BUSY: return api_fail(e, 503, NULL, "%s", err.message);
  case NUCLEUS_ERR_LIMIT:
    context_error(srv, j->req.chat, j->n_prompt, &j->req, e);
    snprintf(e->message, sizeof e->message, "%s", err.message);
    return -1;
  case NUCLEUS_ERR_INVALID_ARGUMENT:
  case NUCLEUS_ERR_UNSUPPORTED:
    return api_fail(e, 400, NULL, "%s", err.message);
  case NUCLEUS_ERR_NOMEM:
    return api_fail(e, 503, NULL, "out of memory: %s", err.message);
  default: return api_fail(e, 500, NULL, "engine: %s", err.message);
  }
}

job_waited job_wait(server_ctx *srv, struct MHD_Connection *conn, job *j,
                    api_error *e) {
  for (;;) {
    nucleus_event ev;
    gen_wait w = gen_next(j->g, &ev);
    if (w == GEN_GONE) return JOB_GONE;
    if (w == GEN_FAILED || completion_out_record(&j->out, &ev, true) != 0) {
      api_fail(e, 500, NULL, "the engine stopped delivering events");
      return JOB_FAILED;
    }
    if (ev.kind == NUCLEUS_EVENT_DONE) break;
  }
  /* Generating took a while: restart the idle timer before answering. */
  reply_touch(conn, (unsigned)srv->cfg->timeout_s);
  if (j->out.failed) {
    /* A completion that could not run fails the request: OpenAI's finish
     * reasons have no "error". */
    api_fail(e, api_status_for(j->out.error.code), j->out.error_param, "%s",
             j->out.error.message);
    return JOB_FAILED;
  }
  if (j->out.aborted) {
    api_fail(e, 503, NULL,
             "the request was cancelled: the server is shutting down");
    return JOB_FAILED;
  }
  return JOB_DONE;
}

enum MHD_Result job_wait_and_reply(server_ctx *srv, struct MHD_Connection *conn,
                                   job *j) {
  api_error e;
  enum MHD_Result r;
  switch (job_wait(srv, conn, j, &e)) {
  case JOB_GONE: r = MHD_NO; break; /* the client left: close, no answer */
  case JOB_FAILED: r = reply_error(srv, conn, &e); break;
  default:
    r = reply_json(srv, conn, 200, completion_out_response(&j->out));
    break;
  }
  job_free(j);
  return r;
}
