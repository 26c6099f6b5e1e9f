/* nucleus serve: parsing and validating generation parameters. */
#include "request_parse.h"

#include "speculative.h"
#include "structured.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A field's value, or NULL when it is absent or JSON null. */
static const json_t *field(const json_t *root, const char *key) {
  const json_t *v = json_object_get(root, key);
  return json_is_null(v) ? NULL : v;
}

/* Reads an optional integer in [lo, hi] (integral floats accepted). */
static int get_int(const json_t *root, const char *key, long long lo,
                   long long hi, long long *out, bool *present, api_error *e) {
  const json_t *v = field(root, key);
  if (present) *present = v != NULL;
  if (!v) return 0;
  long long x;
  if (json_is_integer(v)) {
    x = json_integer_value(v);
  } else if (json_is_real(v) && isfinite(json_real_value(v)) &&
             json_real_value(v) == floor(json_real_value(v)) &&
             fabs(json_real_value(v)) < 9e15) {
    x = (long long)json_real_value(v);
  } else {
    return api_fail(e, 400, key, "'%s' must be an integer", key);
  }
  if (x < lo || x > hi)
    return api_fail(e, 400, key, "'%s' must be in [%lld, %lld], got %lld", key,
                    lo, hi, x);
  *out = x;
  return 0;
}

static int get_bool(const json_t *root, const char *key, bool *out,
                    api_error *e) {
  const json_t *v = field(root, key);
  if (!v) return 0;
  if (!json_is_boolean(v))
    return api_fail(e, 400, key, "'%s' must be true or false", key);
  *out = json_is_true(v);
  return 0;
}

static int add_stop(gen_request *r, const json_t *s, api_error *e) {
  if (!json_is_string(s))
    return api_fail(e, 400, "stop",
                    "'stop' must be a string or a list of "
                    "strings");
  size_t i = r->params.n_stop;
  nucleus_error err = {0};
  if (nucleus_stop_string_check(i, json_string_value(s), json_string_length(s),
                                &err) != NUCLEUS_OK)
    return api_fail(e, 400, "stop", "%s", err.message);
  r->stop_copies[i] = strdup(json_string_value(s));
  if (!r->stop_copies[i]) return api_fail(e, 500, NULL, "out of memory");
  r->stop_ptrs[i] = r->stop_copies[i];
  r->params.n_stop = i + 1;
  return 0;
}

static int parse_stop(const json_t *root, gen_request *r, api_error *e) {
  const json_t *v = field(root, "stop");
  if (!v) return 0;
  if (json_is_array(v)) {
    size_t i;
    const json_t *s;
    json_array_foreach(v, i, s) if (add_stop(r, s, e)) return -1;
  } else if (add_stop(r, v, e)) {
    return -1;
  }
  r->params.stop = r->stop_ptrs;
  return 0;
}

static int parse_logit_bias(const json_t *root, int32_t n_vocab, gen_request *r,
                            api_error *e) {
  const json_t *v = field(root, "logit_bias");
  if (!v) return 0;
  if (!json_is_object(v))
    return api_fail(e, 400, "logit_bias",
                    "'logit_bias' must be an object of token id -> bias");
  size_t n = json_object_size(v);
  if (n == 0) return 0;
  /* one past the limit: the check's own message refuses it */
  size_t cap = n < NUCLEUS_MAX_LOGIT_BIAS ? n : NUCLEUS_MAX_LOGIT_BIAS;
  r->bias = calloc(cap, sizeof *r->bias);
  if (!r->bias) return api_fail(e, 500, NULL, "out of memory");
  const char *key;
  const json_t *val;
  size_t i = 0;
  json_object_foreach((json_t *)v, key, val) {
    errno = 0;
    char *end = NULL;
    long id = strtol(key, &end, 10);
    if (errno || end == key || *end || id < INT32_MIN || id > INT32_MAX)
      return api_fail(e, 400, "logit_bias",
                      "logit_bias key '%.64s' is not a token id", key);
    if (!json_is_number(val))
      return api_fail(e, 400, "logit_bias",
                      "logit_bias value for token %ld must be a number", id);
    nucleus_logit_bias b = {(int32_t)id, (float)json_number_value(val)};
    nucleus_error err = {0};
    if (nucleus_logit_bias_check(i, b, n_vocab, &err) != NUCLEUS_OK)
      return api_fail(e, 400, "logit_bias", "%s", err.message);
    r->bias[i++] = b;
  }
  r->params.sampling.logit_bias = r->bias;
  r->params.sampling.n_logit_bias = i;
  return 0;
}

static int parse_stop_token_ids(const json_t *root, int32_t n_vocab,
                                gen_request *r, api_error *e) {
  const json_t *v = field(root, "stop_token_ids");
  if (!v) return 0;
  if (!json_is_array(v))
    return api_fail(e, 400, "stop_token_ids",
                    "'stop_token_ids' must be a list of token ids");
  size_t n = json_array_size(v);
  if (n == 0) return 0;
  /* one past the limit: the check's own message refuses it */
  size_t cap = n < NUCLEUS_MAX_STOP_TOKEN_IDS ? n : NUCLEUS_MAX_STOP_TOKEN_IDS;
  r->stop_ids = calloc(cap, sizeof *r->stop_ids);
  if (!r->stop_ids) return api_fail(e, 500, NULL, "out of memory");
  size_t i;
  const json_t *id;
  json_array_foreach(v, i, id) {
    if (!json_is_integer(id))
      return api_fail(e, 400, "stop_token_ids",
                      "stop_token_ids[%zu] must be an integer", i);
    json_int_t x = json_integer_value(id);
    int32_t t = x < INT32_MIN ? INT32_MIN : x > INT32_MAX ? INT32_MAX : x;
    nucleus_error err = {0};
    if (nucleus_stop_token_id_check(i, t, n_vocab, &err) != NUCLEUS_OK)
      return api_fail(e, 400, "stop_token_ids", "%s", err.message);
    r->stop_ids[i] = t;
  }
  r->params.stop_token_ids = r->stop_ids;
  r->params.n_stop_token_ids = n;
  return 0;
}

/* Reads an optional request field into the contract's parameter `name`
 * (include/nucleus.h: nucleus_params_*): the kind is checked here, the
 * range and the message come from the library, as on every surface. */
static int get_param(const json_t *root, const char *key, const char *name,
                     gen_request *r, bool *present, api_error *e) {
  const json_t *v = field(root, key);
  if (present) *present = v != NULL;
  if (!v) return 0;
  const nucleus_param_info *info = nucleus_params_find(name);
  double x;
  if (info->kind == NUCLEUS_PARAM_BOOL) {
    if (!json_is_boolean(v))
      return api_fail(e, 400, key, "'%s' must be true or false", key);
    x = json_is_true(v);
  } else {
    if (!json_is_number(v) ||
        (info->kind == NUCLEUS_PARAM_INT && json_is_real(v) &&
         json_real_value(v) != floor(json_real_value(v))))
      return api_fail(e, 400, key, "'%s' must be %s", key,
                      info->kind == NUCLEUS_PARAM_INT ? "an integer"
                                                      : "a number");
    x = json_number_value(v);
  }
  nucleus_error err = {0};
  if (nucleus_params_set(&r->params, name, x, &err) != NUCLEUS_OK)
    return api_fail(e, 400, key, "%s", err.message);
  return 0;
}

/* The contract's parameters that are plain request fields of the same
 * name on both routes. */
static const char *const PLAIN_PARAMS[] = {
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "typical_p",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "n",
    "min_tokens",
    "ignore_eos",
    "include_stop_str_in_output",
    "skip_special_tokens",
};

static int parse_params(const json_t *root, gen_request *r, api_error *e) {
  for (size_t i = 0; i < sizeof PLAIN_PARAMS / sizeof *PLAIN_PARAMS; i++)
    if (get_param(root, PLAIN_PARAMS[i], PLAIN_PARAMS[i], r, NULL, e))
      return -1;
  bool has = false;
  if (get_param(root, "max_tokens", "max_tokens", r, &has, e)) return -1;
  r->max_tokens_given = has;
  if (get_param(root, "max_completion_tokens", "max_tokens", r, &has, e))
    return -1;
  r->max_tokens_given |= has;
  if (r->params.max_tokens < 0) r->max_tokens_given = false; /* -1: full */
  long long k = 0;
  if (get_int(root, "seed", INT64_MIN, INT64_MAX, &k, &has, e)) return -1;
  if (has) {
    r->params.sampling.has_seed = true;
    r->params.sampling.seed = (uint64_t)k;
  }
  return 0;
}

/* top_logprobs (chat) and logprobs (completions, an integer) are the
 * contract's top_logprobs: its range and message. */
static int parse_logprobs(const json_t *root, gen_request *r, api_error *e) {
  bool has = false;
  if (r->chat) {
    if (get_bool(root, "logprobs", &r->logprobs, e)) return -1;
    if (get_param(root, "top_logprobs", "top_logprobs", r, &has, e)) return -1;
    if (has && r->params.sampling.top_logprobs > 0 && !r->logprobs)
      return api_fail(e, 400, "top_logprobs",
                      "'top_logprobs' needs 'logprobs': true");
  } else {
    const json_t *v = field(root, "logprobs");
    if (json_is_boolean(v))
      return api_fail(e, 400, "logprobs",
                      "'logprobs' must be an integer in [0, %d] for "
                      "completions",
                      NUCLEUS_MAX_TOP_LOGPROBS);
    if (get_param(root, "logprobs", "top_logprobs", r, &has, e)) return -1;
    r->logprobs = has;
  }
  r->top_logprobs = r->params.sampling.top_logprobs;
  r->params.sampling.logprobs = r->logprobs;
  return 0;
}

/* "inspect": {"top_n": N}: each generated token carries what the sampler
 * did at that step to the N most likely tokens (docs/SERVER.md); N is the
 * contract's inspect_top_n, 0 (off) being no object at all. */
static int parse_inspect(const json_t *root, gen_request *r, api_error *e) {
  const json_t *v = field(root, "inspect");
  if (!v) return 0;
  if (!json_is_object(v) || json_object_size(v) != 1 ||
      !json_object_get(v, "top_n"))
    goto shape;
  if (get_param(v, "top_n", "inspect_top_n", r, NULL, e)) {
    snprintf(e->param, sizeof e->param, "inspect.top_n");
    return -1;
  }
  if (r->params.sampling.inspect_top_n > 0) return 0;
shape:
  return api_fail(e, 400, "inspect",
                  "'inspect' must be an object {\"top_n\": N} with N in "
                  "[1, %d]",
                  NUCLEUS_MAX_INSPECT_TOP);
}

/* A 400 naming the first of names present in root: "'NAME' why". */
static int refuse_present(const json_t *root, const char *const *names,
                          size_t n, const char *why, api_error *e) {
  for (size_t i = 0; i < n; i++)
    if (field(root, names[i]))
      return api_fail(e, 400, names[i], "'%s' %s", names[i], why);
  return 0;
}

/* vLLM's beam search fields: use_beam_search with best_of (the beam
 * width, default n), length_penalty and early_stopping. Beam search ranks
 * raw log-probabilities: options that only sampling reads are refused
 * rather than ignored. */
static int parse_beam(const json_t *root, gen_request *r, api_error *e) {
  long long k = 0;
  bool has = false, beam = false;
  if (get_bool(root, "use_beam_search", &beam, e)) return -1;
  if (!beam) {
    if (get_int(root, "best_of", 1, INT32_MAX, &k, &has, e)) return -1;
    if (has && k != r->params.n)
      return api_fail(e, 400, "best_of",
                      "'best_of' must equal n unless 'use_beam_search' is "
                      "true (it is then the beam width)");
    static const char *const beam_only[] = {"length_penalty", "early_stopping"};
    return refuse_present(root, beam_only, 2,
                          "applies only with 'use_beam_search': true", e);
  }
  /* best_of is the contract's beam_width (default n): its range and
   * message, then the one check of n against it. */
  nucleus_error err = {0};
  if (get_param(root, "best_of", "beam_width", r, &has, e)) return -1;
  if (!has && nucleus_params_set(&r->params, "beam_width", r->params.n, &err) !=
                  NUCLEUS_OK)
    return api_fail(e, 400, "n", "%s", err.message);
  if (nucleus_beam_check(r->params.n, r->params.beam_width, &err) != NUCLEUS_OK)
    return api_fail(e, 400, "best_of", "%s", err.message);
  if (get_param(root, "length_penalty", "length_penalty", r, NULL, e) ||
      get_param(root, "early_stopping", "early_stopping", r, NULL, e))
    return -1;
  static const char *const refused[] = {"stop",
                                        "logprobs",
                                        "top_logprobs",
                                        "inspect",
                                        "logit_bias",
                                        "presence_penalty",
                                        "frequency_penalty",
                                        "repetition_penalty",
                                        "top_k",
                                        "top_p",
                                        "min_p",
                                        "typical_p",
                                        "seed",
                                        "min_tokens"};
  if (refuse_present(root, refused, sizeof refused / sizeof refused[0],
                     "does not apply to beam search, which ranks the raw "
                     "log-probabilities",
                     e))
    return -1;
  const json_t *t = field(root, "temperature");
  if (t && (!json_is_number(t) || json_number_value(t) != 0))
    return api_fail(e, 400, "temperature",
                    "beam search is deterministic: 'temperature' must be 0 "
                    "or absent");
  r->beam = true;
  return 0;
}

int chat_opts_parse(const json_t *root, chat_opts *o, api_error *e) {
  o->add_generation_prompt = true;
  o->continue_final_message = false;
  bool agp_given = field(root, "add_generation_prompt") != NULL;
  if (get_bool(root, "add_generation_prompt", &o->add_generation_prompt, e) ||
      get_bool(root, "continue_final_message", &o->continue_final_message, e))
    return -1;
  if (o->continue_final_message) {
    if (agp_given && o->add_generation_prompt)
      return api_fail(e, 400, "continue_final_message",
                      "'continue_final_message' and 'add_generation_prompt' "
                      "cannot both be true");
    o->add_generation_prompt = false;
  }
  const json_t *kw = field(root, "chat_template_kwargs");
  if (kw && !json_is_object(kw))
    return api_fail(e, 400, "chat_template_kwargs",
                    "'chat_template_kwargs' must be an object");
  return 0;
}

bool reasoning_split_from_name(const char *s, reasoning_split *out) {
  if (s && !strcmp(s, "none")) {
    *out = REASONING_SPLIT_NONE;
    return true;
  }
  if (s && !strcmp(s, "auto")) {
    *out = REASONING_SPLIT_AUTO;
    return true;
  }
  return false;
}

/* Chat only (request_fields.h refuses them elsewhere): how the template
 * ends the prompt, how the reply's thinking is returned. */
static int parse_template_flags(const json_t *root, gen_request *r,
                                api_error *e) {
  if (!r->chat) return 0;
  const json_t *rf = field(root, "reasoning_format");
  if (rf &&
      !reasoning_split_from_name(json_string_value(rf), &r->reasoning_format))
    return api_fail(e, 400, "reasoning_format",
                    "'reasoning_format' must be \"none\" (the thinking stays "
                    "in the content) or \"auto\" (it goes to "
                    "reasoning_content)");
  /* its range: nucleus_reasoning_check, once the family is known */
  long long budget = 0;
  if (get_int(root, "max_reasoning_tokens", INT32_MIN, INT32_MAX, &budget,
              &r->reasoning_budget_given, e))
    return -1;
  if (r->reasoning_budget_given) r->params.reasoning.budget = (int32_t)budget;
  return chat_opts_parse(root, &r->chat_opts, e);
}

/* Structured output (structured.h); tools are tool_request.h's. */
static int parse_structured(const json_t *root, gen_request *r, api_error *e) {
  if (structured_parse(root, &r->grammar, &r->grammar_param, e)) return -1;
  r->params.grammar = r->grammar;
  return tool_opts_parse(root, r->chat, &r->tools, e);
}

/* vLLM's cache_salt: a string of at most NUCLEUS_MAX_CACHE_SALT_BYTES. */
static int parse_cache_salt(const json_t *root, gen_request *r, api_error *e) {
  const json_t *s = field(root, "cache_salt");
  if (!s) return 0;
  if (!json_is_string(s))
    return api_fail(e, 400, "cache_salt", "'cache_salt' must be a string");
  size_t len = json_string_length(s);
  nucleus_error err = {0};
  if (nucleus_cache_salt_check(json_string_value(s), len, &err) != NUCLEUS_OK)
    return api_fail(e, 400, "cache_salt", "%s", err.message);
  memcpy(r->cache_salt, json_string_value(s), len + 1);
  r->params.cache_salt = r->cache_salt[0] ? r->cache_salt : NULL;
  return 0;
}

static int parse_flags(const json_t *root, gen_request *r, api_error *e) {
  if (get_bool(root, "stream", &r->stream, e)) return -1;
  const json_t *so = field(root, "stream_options");
  if (so) {
    if (!json_is_object(so))
      return api_fail(e, 400, "stream_options",
                      "'stream_options' must be an object");
    const json_t *iu = field(so, "include_usage");
    if (iu && !json_is_boolean(iu))
      return api_fail(e, 400, "stream_options",
                      "'stream_options.include_usage' must be true or false");
    r->include_usage = json_is_true(iu);
  }
  if (get_bool(root, "echo", &r->echo, e)) return -1;
  if (r->echo && r->chat)
    return api_fail(e, 400, "echo",
                    "'echo' is supported on /v1/completions only");
  const json_t *suffix = field(root, "suffix");
  if (suffix && !(json_is_string(suffix) && !json_string_length(suffix)))
    return api_fail(e, 400, "suffix", "'suffix' is not supported");
  const json_t *model = field(root, "model");
  if (model && !json_is_string(model))
    return api_fail(e, 400, "model", "'model' must be a string");
  if (model)
    snprintf(r->model, sizeof r->model, "%s", json_string_value(model));
  return 0;
}

int gen_request_parse(const json_t *root, bool chat, int32_t n_vocab,
                      const nucleus_request_params *defaults, gen_request *r,
                      api_error *e) {
  memset(r, 0, sizeof *r);
  r->chat = chat;
  r->params = *defaults;
  if (!json_is_object(root))
    return api_fail(e, 400, NULL, "the request body must be a JSON object");
  if (parse_flags(root, r, e) || parse_params(root, r, e) ||
      parse_logprobs(root, r, e) || parse_inspect(root, r, e) ||
      parse_stop(root, r, e) || parse_logit_bias(root, n_vocab, r, e) ||
      parse_stop_token_ids(root, n_vocab, r, e) || parse_beam(root, r, e) ||
      parse_template_flags(root, r, e) || parse_structured(root, r, e) ||
      parse_cache_salt(root, r, e) || speculative_parse(root, r, e)) {
    gen_request_free(r);
    return -1;
  }
  return 0;
}

void gen_request_free(gen_request *r) {
  for (size_t i = 0; i < NUCLEUS_MAX_STOP_STRINGS; i++)
    free(r->stop_copies[i]);
  free(r->bias);
  free(r->stop_ids);
  nucleus_grammar_free(r->grammar);
  free(r->prediction_text);
  nucleus_free(r->prediction_ids);
  memset(r, 0, sizeof *r);
}
