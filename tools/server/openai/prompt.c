/* nucleus serve: prompt building and tokenization. */
#include "prompt.h"

#include "harmony.h"
#include "image_input.h"
#include "reasoning_request.h"
#include "tool_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const ROLES[] = {"system", "user",      "assistant",
                                    "tool",   "developer", "function"};

static bool known_role(const char *role) {
  for (size_t i = 0; i < sizeof ROLES / sizeof ROLES[0]; i++)
    if (!strcmp(role, ROLES[i])) return true;
  return false;
}

/* What an image part leaves in its message's text: the marker
 * nucleus_tokenize_with_images splits at (llama.cpp's mtmd default). */
#define IMAGE_MARKER NUCLEUS_MEDIA_MARKER

/* An image part {"type": "image_url", "image_url": {"url": URL, "detail":
 * "auto"}}: decoded into images; 0, or -1 with *e. */
static int image_part(const json_t *part, size_t idx, size_t k,
                      image_list *images, api_error *e) {
  char path[96];
  snprintf(path, sizeof path, "messages[%zu].content[%zu].image_url", idx, k);
  const json_t *iu = json_object_get(part, "image_url");
  const json_t *url = json_object_get(iu, "url");
  const json_t *detail = json_object_get(iu, "detail");
  if (!json_is_object(iu) || !json_is_string(url))
    return api_fail(e, 400, "messages",
                    "%s must be {\"url\": \"data:image/...;base64,...\"}",
                    path);
  /* OpenAI's detail picks a resolution; an mmproj's preprocessing fixes
   * its own, so only "auto" (the default) means what it says. */
  if (detail && !json_is_null(detail) &&
      (!json_is_string(detail) || strcmp(json_string_value(detail), "auto")))
    return api_fail(e, 400, "messages",
                    "%s.detail: only \"auto\" is taken (the vision "
                    "projector sets the resolution)",
                    path);
  return image_input_url(json_string_value(url), json_string_length(url),
                         images->allow_urls, "messages", path, images, e);
}

/* A message's content as one string: text parts joined by "\n", an image
 * part as IMAGE_MARKER with no "\n" beside it (as llama.cpp joins them);
 * its images appended to *images. */
static json_t *content_text(const json_t *content, size_t idx,
                            image_list *images, api_error *e) {
  if (!content) return json_string("");
  if (json_is_string(content)) return json_copy((json_t *)content);
  if (!json_is_array(content)) {
    api_fail(e, 400, "messages",
             "messages[%zu].content must be a string or a list of parts", idx);
    return NULL;
  }
  size_t total = 0, i;
  const json_t *part;
  json_array_foreach(content, i, part) {
    const json_t *type = json_object_get(part, "type");
    const json_t *text = json_object_get(part, "text");
    if (json_is_string(type) && !strcmp(json_string_value(type), "image_url")) {
      if (image_part(part, idx, i, images, e)) return NULL;
      total += strlen(IMAGE_MARKER);
      continue;
    }
    if (!json_is_string(type) || strcmp(json_string_value(type), "text") ||
        !json_is_string(text)) {
      api_fail(e, 400, "messages",
               "messages[%zu].content[%zu]: only {\"type\": \"text\", "
               "\"text\": ...} and {\"type\": \"image_url\", ...} parts "
               "are supported",
               idx, i);
      return NULL;
    }
    total += json_string_length(text) + 1;
  }
  char *buf = malloc(total + 1);
  if (!buf) {
    api_fail(e, 500, NULL, "out of memory");
    return NULL;
  }
  size_t o = 0;
  bool after_image = false;
  json_array_foreach(content, i, part) {
    const json_t *text = json_object_get(part, "text");
    if (strcmp(json_string_value(json_object_get(part, "type")), "text")) {
      memcpy(buf + o, IMAGE_MARKER, strlen(IMAGE_MARKER));
      o += strlen(IMAGE_MARKER);
      after_image = true;
      continue;
    }
    if (o && !after_image) buf[o++] = '\n';
    after_image = false;
    memcpy(buf + o, json_string_value(text), json_string_length(text));
    o += json_string_length(text);
  }
  json_t *s = json_stringn(buf, o);
  free(buf);
  if (!s) api_fail(e, 400, "messages", "message content is not UTF-8");
  return s;
}

/* Checks the messages and returns a normalized copy ([{role, content}];
 * for a harmony template, as harmony_message makes them; with reasoning
 * (a thinking model's template), an assistant's reasoning_content kept
 * for the template, which renders or drops it as its family does: Qwen3
 * keeps only the turns after the last user message's, Gemma 4 a call's). */
static json_t *normalize_messages(const json_t *msgs, bool harmony,
                                  bool reasoning, image_list *images,
                                  api_error *e) {
  if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
    api_fail(e, 400, "messages", "'messages' must be a non-empty list");
    return NULL;
  }
  json_t *out = json_array();
  if (!out) return NULL;
  size_t i;
  const json_t *m;
  json_array_foreach(msgs, i, m) {
    const json_t *role = json_object_get(m, "role");
    if (!json_is_object(m) || !json_is_string(role) ||
        !known_role(json_string_value(role))) {
      json_decref(out);
      api_fail(e, 400, "messages",
               "messages[%zu] must be an object with a role among system, "
               "user, assistant, tool, developer",
               i);
      return NULL;
    }
    const json_t *content = json_object_get(m, "content");
    json_t *text =
        content_text(json_is_null(content) ? NULL : content, i, images, e);
    json_t *copy = json_object();
    if (!text || !copy) {
      json_decref(text);
      json_decref(copy);
      json_decref(out);
      return NULL;
    }
    json_object_set(copy, "role", (json_t *)role);
    json_object_set_new(copy, "content", text);
    const char *keep[] = {"name", "tool_calls", "tool_call_id",
                          "reasoning_content"};
    for (size_t k = 0; k < (reasoning ? 4u : 3u); k++) {
      json_t *v = json_object_get(m, keep[k]);
      if (v) json_object_set(copy, keep[k], v);
    }
    if (harmony) harmony_message(copy, m);
    json_array_append_new(out, copy);
  }
  return out;
}

/* The rendered text's tokens with the images' rows in place of their
 * markers (nucleus_tokenize_with_images). */
static int tokenize_with_images(server_ctx *srv, const char *text, size_t len,
                                const image_list *images, int32_t **ids,
                                size_t *n, api_error *e) {
  nucleus_error err = {0};
  nucleus_status st = nucleus_tokenize_with_images(
      srv->model, srv->mmproj, text, len,
      (const nucleus_image *const *)images->v, images->n, ids, n, &err);
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, "messages",
                    "images: %s", err.message);
  return 0;
}

int prompt_chat(server_ctx *srv, const json_t *root, const chat_opts *opts,
                char **text, size_t *len, int32_t **ids, size_t *n,
                image_list *images_out, api_error *e) {
  const json_t *raw = json_object_get(root, "messages");
  if (json_is_array(raw) && tool_messages_check(raw, e)) return -1;
  image_list images = {.allow_urls = srv->cfg->allow_image_urls};
  /* the images a translation (Messages, Responses) decoded: taken, not
   * decoded again */
  if (images_out) {
    images.seen = images_out->seen;
    images.n_seen = images_out->n_seen;
    images.seen_pixels = images_out->seen_pixels;
    images.n_decoded = images_out->n_decoded;
    *images_out = (image_list){.allow_urls = images_out->allow_urls};
  }
  json_t *msgs = normalize_messages(
      raw, harmony_model(srv->model),
      strcmp(nucleus_model_reasoning_format(srv->model), "none") != 0, &images,
      e);
  /* Every image was checked (a bad one is a 400 naming its part); a model
   * without a vision projector takes none. */
  if (msgs && images.n && !srv->mmproj) {
    size_t n_images = images.n;
    image_list_clear(&images);
    json_decref(msgs);
    return api_fail(e, 400, "messages",
                    "this model does not take images (%zu in the messages; "
                    "the server runs without --mmproj)",
                    n_images);
  }
  if (!msgs) {
    image_list_clear(&images);
    return e->status ? -1 : api_fail(e, 500, NULL, "out of memory");
  }
  char *msgs_json = json_dumps(msgs, JSON_COMPACT);
  json_decref(msgs);
  char *tools_json = NULL, *kwargs_json = NULL;
  /* tool_choice "none": the model is not told of the tools. */
  const json_t *tools = json_object_get(root, "tools");
  const json_t *tc = json_object_get(root, "tool_choice");
  if (json_is_string(tc) && !strcmp(json_string_value(tc), "none"))
    tools = NULL;
  if (json_is_array(tools) && json_array_size(tools))
    tools_json = json_dumps(tools, JSON_COMPACT);
  const json_t *kw_in = json_object_get(root, "chat_template_kwargs");
  json_t *kwargs = json_is_object(kw_in) ? json_deep_copy(kw_in) : NULL;
  if (reasoning_effort_kwargs(srv->model, root, &kwargs, e)) {
    json_decref(kwargs);
    free(msgs_json);
    free(tools_json);
    image_list_clear(&images);
    return -1;
  }
  if (kwargs) kwargs_json = json_dumps(kwargs, JSON_COMPACT);
  const bool kw_lost = kwargs && !kwargs_json;
  json_decref(kwargs);
  if (!msgs_json || kw_lost) {
    free(msgs_json);
    free(tools_json);
    free(kwargs_json);
    image_list_clear(&images);
    return api_fail(e, 500, NULL, "out of memory");
  }
  nucleus_chat_params p = nucleus_chat_default_params();
  p.messages_json = msgs_json;
  p.tools_json = tools_json;
  p.describe_tools = true;
  p.kwargs_json = kwargs_json;
  p.add_generation_prompt = opts->add_generation_prompt;
  p.continue_final_message = opts->continue_final_message;
  p.parse_special_in_content = srv->cfg->parse_special_in_content;
  nucleus_error err = {0};
  /* With images: the text (a NUCLEUS_MEDIA_MARKER per image), then its
   * tokens with the images' rows, as llama-server and llama-mtmd-cli
   * tokenize it (special-token text in the contents is parsed there). */
  char *rendered = NULL;
  size_t rendered_len = 0;
  nucleus_status st =
      images.n ? nucleus_chat_apply(srv->model, &p, &rendered, &rendered_len,
                                    NULL, NULL, &err)
               : nucleus_chat_apply(srv->model, &p, text, len, ids, n, &err);
  free(msgs_json);
  free(tools_json);
  free(kwargs_json);
  if (st != NUCLEUS_OK) {
    image_list_clear(&images);
    /* the library names what it refused: kwargs, else the messages */
    bool by_kwargs = !strncmp(err.message, "chat_template_kwargs",
                              strlen("chat_template_kwargs"));
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400,
                    by_kwargs ? "chat_template_kwargs" : "messages",
                    "chat template: %s", err.message);
  }
  int rc = 0;
  if (images.n && ids)
    rc = tokenize_with_images(srv, rendered, rendered_len, &images, ids, n, e);
  if (images.n && !rc && text) {
    *text = rendered;
    *len = rendered_len;
  } else {
    nucleus_free(rendered);
  }
  image_list_forget(&images);
  if (!rc && images_out)
    *images_out = images;
  else
    image_list_clear(&images);
  return rc;
}

int prompt_tokenize(server_ctx *srv, const char *text, size_t len,
                    bool add_special, bool parse_special, int32_t **ids,
                    size_t *n, api_error *e) {
  nucleus_error err = {0};
  int32_t *toks = NULL;
  size_t count = 0;
  nucleus_status st = nucleus_tokenize(srv->model, text, len, add_special,
                                       parse_special, &toks, &count, &err);
  if (st != NUCLEUS_OK)
    return api_fail(e, st == NUCLEUS_ERR_NOMEM ? 500 : 400, NULL,
                    "tokenize: %s", err.message);
  /* Copy into memory this module owns, so callers use plain free(). */
  *ids = malloc((count ? count : 1) * sizeof **ids);
  if (!*ids) {
    nucleus_free(toks);
    return api_fail(e, 500, NULL, "out of memory");
  }
  if (count) memcpy(*ids, toks, count * sizeof **ids);
  nucleus_free(toks);
  *n = count;
  return 0;
}

static int token_list(server_ctx *srv, const json_t *arr, int32_t **ids,
                      size_t *n, api_error *e) {
  size_t count = json_array_size(arr), i;
  *ids = malloc((count ? count : 1) * sizeof **ids);
  if (!*ids) return api_fail(e, 500, NULL, "out of memory");
  const json_t *v;
  json_array_foreach(arr, i, v) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) >= srv->n_vocab) {
      free(*ids);
      *ids = NULL;
      return api_fail(e, 400, "prompt",
                      "prompt[%zu] is not a token id in [0, %d)", i,
                      srv->n_vocab);
    }
    (*ids)[i] = (int32_t)json_integer_value(v);
  }
  *n = count;
  return 0;
}

int prompt_completion_tokens(server_ctx *srv, const json_t *root, int32_t **ids,
                             size_t *n, api_error *e) {
  const json_t *p = json_object_get(root, "prompt");
  if (json_is_array(p) && json_array_size(p) == 1 &&
      !json_is_integer(json_array_get(p, 0)))
    p = json_array_get(p, 0); /* ["text"] or [[ids]] */
  if (json_is_string(p) && json_string_length(p) == 0)
    return api_fail(e, 400, "prompt", "the prompt is empty");
  if (json_is_string(p))
    return prompt_tokenize(srv, json_string_value(p), json_string_length(p),
                           true, true, ids, n, e);
  if (json_is_array(p)) {
    const json_t *first = json_array_get(p, 0);
    if (first && !json_is_integer(first))
      return api_fail(e, 400, "prompt",
                      "only one prompt per request is supported");
    return token_list(srv, p, ids, n, e);
  }
  return api_fail(e, 400, "prompt",
                  "'prompt' must be a string or a list of token ids");
}
