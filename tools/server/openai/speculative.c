/* nucleus serve: the "speculative" and "prediction" request fields. */
#include "speculative.h"

#include <stdlib.h>
#include <string.h>

#include "request_parse.h"

static const json_t *field(const json_t *root, const char *key) {
  const json_t *v = json_object_get(root, key);
  return json_is_null(v) ? NULL : v;
}

static int bad_speculative(api_error *e) {
  return api_fail(e, 400, "speculative",
                  "'speculative' must be false or an object {\"type\": "
                  "\"off\" | \"ngram\" | \"draft\" | \"mtp\", \"n_max\": N, "
                  "\"n_min\": N, "
                  "\"strict\": B}");
}

static int get_count(const json_t *o, const char *key, int32_t *out,
                     api_error *e) {
  const json_t *v = field(o, key);
  if (!v) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
      json_integer_value(v) > INT32_MAX)
    return api_fail(e, 400, "speculative",
                    "'speculative.%s' must be an integer", key);
  *out = (int32_t)json_integer_value(v);
  return 0;
}

static int parse_object(const json_t *v, nucleus_spec_params *sp,
                        bool *explicit_type, api_error *e) {
  const char *key;
  const json_t *x;
  json_object_foreach((json_t *)v, key, x) {
    if (strcmp(key, "type") && strcmp(key, "n_max") && strcmp(key, "n_min") &&
        strcmp(key, "strict"))
      return api_fail(e, 400, "speculative",
                      "'speculative.%.64s' is not a field: type, n_max, "
                      "n_min, strict",
                      key);
  }
  const json_t *t = field(v, "type");
  if (t) {
    nucleus_spec_type type;
    if (!json_is_string(t) ||
        !nucleus_spec_type_from_name(json_string_value(t), &type) ||
        type == NUCLEUS_SPEC_PREDICTION)
      return api_fail(e, 400, "speculative",
                      "'speculative.type' must be \"off\", \"ngram\", "
                      "\"draft\" or \"mtp\" (a prediction comes in "
                      "'prediction')");
    sp->type = type;
    *explicit_type = true;
  }
  const json_t *strict = field(v, "strict");
  if (strict && !json_is_boolean(strict))
    return api_fail(e, 400, "speculative",
                    "'speculative.strict' must be true or false");
  sp->strict = json_is_true(strict);
  return get_count(v, "n_max", &sp->draft_max, e) ||
         get_count(v, "n_min", &sp->draft_min, e);
}

/* The prediction's text: a string, or text parts (OpenAI's content). */
static int parse_prediction(const json_t *v, gen_request *r, api_error *e) {
  static const char shape[] =
      "'prediction' must be {\"type\": \"content\", \"content\": a string or "
      "a list of {\"type\": \"text\", \"text\": string}}";
  const json_t *type = json_object_get(v, "type"),
               *content = json_object_get(v, "content");
  if (!json_is_object(v) || !json_is_string(type) ||
      strcmp(json_string_value(type), "content") || !content ||
      json_object_size(v) != 2)
    return api_fail(e, 400, "prediction", "%s", shape);
  size_t len = 0, i;
  const json_t *part;
  if (json_is_string(content)) {
    len = json_string_length(content);
  } else if (json_is_array(content)) {
    json_array_foreach(content, i, part) {
      const json_t *pt = json_object_get(part, "type"),
                   *tx = json_object_get(part, "text");
      if (!json_is_object(part) || !json_is_string(pt) ||
          strcmp(json_string_value(pt), "text") || !json_is_string(tx))
        return api_fail(e, 400, "prediction", "%s", shape);
      len += json_string_length(tx);
    }
  } else {
    return api_fail(e, 400, "prediction", "%s", shape);
  }
  r->prediction_text = malloc(len + 1);
  if (!r->prediction_text) return api_fail(e, 500, NULL, "out of memory");
  if (json_is_string(content)) {
    memcpy(r->prediction_text, json_string_value(content), len);
  } else {
    size_t at = 0;
    json_array_foreach(content, i, part) {
      const json_t *tx = json_object_get(part, "text");
      memcpy(r->prediction_text + at, json_string_value(tx),
             json_string_length(tx));
      at += json_string_length(tx);
    }
  }
  r->prediction_text[len] = '\0';
  r->prediction_len = len;
  return 0;
}

int speculative_parse(const json_t *root, gen_request *r, api_error *e) {
  nucleus_spec_params *sp = &r->params.speculative;
  const json_t *v = field(root, "speculative");
  bool explicit_type = false;
  if (v && json_is_false(v)) {
    sp->type = NUCLEUS_SPEC_OFF;
    explicit_type = true;
  } else if (v && !json_is_object(v)) {
    return bad_speculative(e);
  } else if (v && parse_object(v, sp, &explicit_type, e)) {
    return -1;
  }
  const json_t *pred = field(root, "prediction");
  if (pred) {
    if (explicit_type)
      return api_fail(e, 400, "prediction",
                      "'prediction' drafts by itself: drop "
                      "'speculative.type' (or 'speculative': false)");
    if (parse_prediction(pred, r, e)) return -1;
    sp->type = NUCLEUS_SPEC_PREDICTION;
  } else if (!explicit_type && r->beam &&
             (sp->type == NUCLEUS_SPEC_DRAFT || sp->type == NUCLEUS_SPEC_MTP)) {
    sp->type = NUCLEUS_SPEC_OFF; /* the draft model, the head: not beams' */
  }
  return 0;
}
