/* nucleus serve: POST /tokenize, /detokenize and /apply-template, shaped
 * like llama-server's. */
#include <stdlib.h>
#include <string.h>

#include "http/http_reply.h"
#include "http/json_text.h"
#include "prompt.h"
#include "routes.h"

static json_t *parse_body(const char *body, size_t len, api_error *e) {
  json_error_t jerr;
  json_t *root = json_loadb(body, len, 0, &jerr);
  if (!root) {
    api_fail(e, 400, NULL, "invalid JSON at line %d, column %d: %s", jerr.line,
             jerr.column, jerr.text);
    return NULL;
  }
  if (!json_is_object(root)) {
    json_decref(root);
    api_fail(e, 400, NULL, "the request body must be a JSON object");
    return NULL;
  }
  return root;
}

static int opt_bool(const json_t *root, const char *key, bool def, bool *out,
                    api_error *e) {
  const json_t *v = json_object_get(root, key);
  *out = def;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_boolean(v))
    return api_fail(e, 400, key, "'%s' must be true or false", key);
  *out = json_is_true(v);
  return 0;
}

/* {"id", "piece"}: the piece as a string when it is valid UTF-8, else as
 * its bytes (as llama-server does). */
static json_t *piece_entry(server_ctx *srv, int32_t id) {
  char buf[256];
  size_t n = 0;
  nucleus_error err;
  if (nucleus_token_piece(srv->model, id, buf, sizeof buf, &n, &err) !=
      NUCLEUS_OK)
    n = 0;
  if (n > sizeof buf) n = sizeof buf;
  size_t i = 0;
  while (i < n) {
    size_t l = utf8_sequence_length((const unsigned char *)buf + i, n - i);
    if (!l) break;
    i += l;
  }
  json_t *piece;
  if (i == n) {
    piece = json_stringn(buf, n);
  } else {
    piece = json_array();
    for (i = 0; i < n; i++)
      json_array_append_new(piece, json_integer((unsigned char)buf[i]));
  }
  return json_pack("{s:i,s:o}", "id", id, "piece", piece);
}

static enum MHD_Result tokenize(server_ctx *srv, struct MHD_Connection *conn,
                                json_t *root, api_error *e) {
  const json_t *content = json_object_get(root, "content");
  bool chat = json_object_get(root, "messages") != NULL;
  bool add_special, parse_special, with_pieces;
  if (!chat && !json_is_string(content)) {
    api_fail(e, 400, "content",
             "'content' must be a string (or give 'messages')");
    return reply_error(srv, conn, e);
  }
  if (opt_bool(root, "with_pieces", false, &with_pieces, e))
    return reply_error(srv, conn, e);
  int32_t *ids = NULL;
  size_t n = 0;
  if (chat) { /* the prompt tokens of a chat request, as vLLM's */
    chat_opts opts;
    if (chat_opts_parse(root, &opts, e) ||
        prompt_chat(srv, root, &opts, NULL, NULL, &ids, &n, NULL, e))
      return reply_error(srv, conn, e);
  } else if (opt_bool(root, "add_special", false, &add_special, e) ||
             opt_bool(root, "parse_special", true, &parse_special, e) ||
             prompt_tokenize(srv, json_string_value(content),
                             json_string_length(content), add_special,
                             parse_special, &ids, &n, e)) {
    return reply_error(srv, conn, e);
  }
  json_t *tokens = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(tokens, with_pieces ? piece_entry(srv, ids[i])
                                              : json_integer(ids[i]));
  free(ids);
  return reply_json(srv, conn, 200, json_pack("{s:o}", "tokens", tokens));
}

enum MHD_Result handle_tokenize(server_ctx *srv, struct MHD_Connection *conn,
                                const char *body, size_t len) {
  api_error e;
  json_t *root = parse_body(body, len, &e);
  if (!root) return reply_error(srv, conn, &e);
  enum MHD_Result r = tokenize(srv, conn, root, &e);
  json_decref(root);
  return r;
}

static enum MHD_Result detokenize(server_ctx *srv, struct MHD_Connection *conn,
                                  json_t *root, api_error *e) {
  const json_t *tokens = json_object_get(root, "tokens");
  if (!json_is_array(tokens)) {
    api_fail(e, 400, "tokens", "'tokens' must be a list of token ids");
    return reply_error(srv, conn, e);
  }
  size_t n = json_array_size(tokens), i;
  int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
  if (!ids) return MHD_NO;
  const json_t *v;
  json_array_foreach(tokens, i, v) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) >= srv->n_vocab) {
      free(ids);
      api_fail(e, 400, "tokens", "tokens[%zu] is not a token id in [0, %d)", i,
               srv->n_vocab);
      return reply_error(srv, conn, e);
    }
    ids[i] = (int32_t)json_integer_value(v);
  }
  char *text = NULL;
  size_t text_len = 0;
  nucleus_error err = {0};
  nucleus_status st =
      nucleus_detokenize(srv->model, ids, n, false, &text, &text_len, &err);
  free(ids);
  if (st != NUCLEUS_OK) {
    api_fail(e, 400, "tokens", "detokenize: %s", err.message);
    return reply_error(srv, conn, e);
  }
  json_t *content = json_text(text, text_len);
  nucleus_free(text);
  return reply_json(srv, conn, 200, json_pack("{s:o}", "content", content));
}

enum MHD_Result handle_detokenize(server_ctx *srv, struct MHD_Connection *conn,
                                  const char *body, size_t len) {
  api_error e;
  json_t *root = parse_body(body, len, &e);
  if (!root) return reply_error(srv, conn, &e);
  enum MHD_Result r = detokenize(srv, conn, root, &e);
  json_decref(root);
  return r;
}

enum MHD_Result handle_apply_template(server_ctx *srv,
                                      struct MHD_Connection *conn,
                                      const char *body, size_t len) {
  api_error e;
  json_t *root = parse_body(body, len, &e);
  if (!root) return reply_error(srv, conn, &e);
  char *text = NULL;
  size_t text_len = 0;
  chat_opts opts;
  int rc =
      chat_opts_parse(root, &opts, &e) ||
      prompt_chat(srv, root, &opts, &text, &text_len, NULL, NULL, NULL, &e);
  json_decref(root);
  if (rc) return reply_error(srv, conn, &e);
  json_t *prompt = json_text(text, text_len);
  nucleus_free(text);
  return reply_json(srv, conn, 200, json_pack("{s:o}", "prompt", prompt));
}
