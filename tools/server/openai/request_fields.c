/* nucleus serve: the table of request fields and the check of a body's
 * field names against it. */
#include "request_fields.h"

#include <string.h>

enum { CHAT = 1, COMPLETIONS = 2, BOTH = CHAT | COMPLETIONS };

typedef enum field_use {
  FIELD_READ,    /* the server reads it (its own checks apply) */
  FIELD_IGNORED, /* accepted and left alone: it changes nothing */
  FIELD_REFUSED, /* a 400: it would change the answer */
} field_use;

typedef struct request_field {
  const char *name;
  unsigned routes; /* where it is a field; elsewhere a 400 */
  field_use use;
  /* READ and IGNORED: what it is; REFUSED: why, after "'name' " */
  const char *note;
} request_field;

static const request_field FIELDS[] = {
    /* the prompt */
    {"messages", CHAT, FIELD_READ, "the conversation"},
    {"prompt", COMPLETIONS, FIELD_READ, "text, token ids, or a list of one"},
    {"model", BOTH, FIELD_READ, "echoed back; any name serves the one model"},
    /* the contract's parameters (the table above) */
    {"temperature", BOTH, FIELD_READ, "the contract's"},
    {"top_p", BOTH, FIELD_READ, "the contract's"},
    {"top_k", BOTH, FIELD_READ, "the contract's"},
    {"min_p", BOTH, FIELD_READ, "the contract's"},
    {"typical_p", BOTH, FIELD_READ, "the contract's"},
    {"repetition_penalty", BOTH, FIELD_READ, "the contract's"},
    {"presence_penalty", BOTH, FIELD_READ, "the contract's"},
    {"frequency_penalty", BOTH, FIELD_READ, "the contract's"},
    {"max_tokens", BOTH, FIELD_READ, "the contract's"},
    {"max_completion_tokens", BOTH, FIELD_READ,
     "`max_tokens` (wins when both are given)"},
    {"min_tokens", BOTH, FIELD_READ, "the contract's"},
    {"n", BOTH, FIELD_READ, "the contract's"},
    {"ignore_eos", BOTH, FIELD_READ, "the contract's"},
    {"include_stop_str_in_output", BOTH, FIELD_READ, "the contract's"},
    {"skip_special_tokens", BOTH, FIELD_READ, "the contract's"},
    {"seed", BOTH, FIELD_READ, "any 64-bit integer"},
    {"stop", BOTH, FIELD_READ, "stop strings"},
    {"stop_token_ids", BOTH, FIELD_READ, "stop tokens"},
    {"logit_bias", BOTH, FIELD_READ, "token id -> bias"},
    {"logprobs", BOTH, FIELD_READ,
     "chat: true / false; completions: the number of alternatives"},
    {"top_logprobs", CHAT, FIELD_READ, "alternatives per token"},
    {"inspect", BOTH, FIELD_READ, "`{\"top_n\": N}`: what the sampler did"},
    {"cache_salt", BOTH, FIELD_READ, "prefix cache tenant"},
    {"stream", BOTH, FIELD_READ, "server-sent events"},
    {"stream_options", BOTH, FIELD_READ, "`include_usage`"},
    {"echo", BOTH, FIELD_READ,
     "completions: the prompt (with logprobs, its tokens') before the "
     "completion; chat: false only"},
    {"suffix", BOTH, FIELD_READ, "\"\" only (any other is refused)"},
    /* beam search (vLLM's fields) */
    {"use_beam_search", BOTH, FIELD_READ, "beam search"},
    {"best_of", BOTH, FIELD_READ,
     "the beam width; without beam search it must equal `n`"},
    {"length_penalty", BOTH, FIELD_READ, "beam search only"},
    {"early_stopping", BOTH, FIELD_READ, "beam search only"},
    /* structured output */
    {"response_format", BOTH, FIELD_READ, "`json_object`, `json_schema`"},
    {"structured_outputs", BOTH, FIELD_READ, "vLLM's"},
    {"grammar", BOTH, FIELD_READ, "GBNF"},
    {"json_schema", BOTH, FIELD_READ, "a JSON Schema"},
    {"guided_json", BOTH, FIELD_READ, "vLLM's older name"},
    {"guided_regex", BOTH, FIELD_READ, "vLLM's older name"},
    {"guided_choice", BOTH, FIELD_READ, "vLLM's older name"},
    {"guided_grammar", BOTH, FIELD_READ, "vLLM's older name"},
    {"guided_decoding_backend", BOTH, FIELD_IGNORED,
     "vLLM's choice of engine: nucleus has one"},
    /* speculative decoding */
    {"speculative", BOTH, FIELD_READ,
     "the drafter: type, n_max, n_min, strict"},
    {"prediction", BOTH, FIELD_READ,
     "OpenAI's predicted output: drafts for speculative decoding"},
    /* tools and the chat template */
    {"tools", CHAT, FIELD_READ, "function tools"},
    {"tool_choice", CHAT, FIELD_READ, "none, auto, required or a name"},
    {"parallel_tool_calls", CHAT, FIELD_READ, "true / false"},
    {"add_generation_prompt", CHAT, FIELD_READ, "the template's"},
    {"continue_final_message", CHAT, FIELD_READ, "the last message stays open"},
    {"chat_template_kwargs", CHAT, FIELD_READ,
     "extra template variables (not the template's own)"},
    {"reasoning_format", CHAT, FIELD_READ,
     "none (the thinking stays in `content`) or auto (it goes to "
     "`reasoning_content`)"},
    {"max_reasoning_tokens", CHAT, FIELD_READ,
     "the thinking budget: past it the engine closes the thinking block "
     "(at most `max_tokens`)"},
    {"reasoning_effort", CHAT, FIELD_READ,
     "low, medium or high: harmony's (gpt-oss) effort; turns thinking on "
     "for the other thinking templates; refused for templates without "
     "thinking"},
    {"modalities", CHAT, FIELD_READ,
     "`[\"text\"]` only (\"audio\" is refused)"},
    /* OpenAI's fields that change nothing in the answer */
    {"store", BOTH, FIELD_IGNORED, "nucleus stores no completions"},
    {"metadata", BOTH, FIELD_IGNORED, "tags for stored completions"},
    {"user", BOTH, FIELD_IGNORED, "an end-user id"},
    {"safety_identifier", BOTH, FIELD_IGNORED, "an end-user id"},
    {"prompt_cache_key", BOTH, FIELD_IGNORED,
     "a routing hint; the prefix cache needs none (see `cache_salt`)"},
    {"service_tier", BOTH, FIELD_IGNORED,
     "a processing tier (latency, price); nucleus has one"},
    /* fields that would change the answer and nucleus does not do */
    {"audio", BOTH, FIELD_REFUSED,
     "is not supported: nucleus answers in text, not audio"},
    {"verbosity", BOTH, FIELD_REFUSED, "is not supported"},
    {"web_search_options", BOTH, FIELD_REFUSED,
     "is not supported: nucleus does not search the web"},
    {"functions", BOTH, FIELD_REFUSED, "is not supported: use 'tools'"},
    {"function_call", BOTH, FIELD_REFUSED,
     "is not supported: use 'tool_choice'"},
    {"n_predict", BOTH, FIELD_REFUSED, "is llama.cpp's name: use 'max_tokens'"},
    {"mirostat", BOTH, FIELD_REFUSED, "is not supported"},
    {"tfs_z", BOTH, FIELD_REFUSED, "is not supported"},
    {"dry_multiplier", BOTH, FIELD_REFUSED, "is not supported"},
    {"xtc_probability", BOTH, FIELD_REFUSED, "is not supported"},
    {"bad_words", BOTH, FIELD_REFUSED, "is not supported: use 'logit_bias'"},
    {"allowed_token_ids", BOTH, FIELD_REFUSED,
     "is not supported: use 'logit_bias' or a grammar"},
    {"prompt_logprobs", BOTH, FIELD_REFUSED, "is not supported"},
    {"truncate_prompt_tokens", BOTH, FIELD_REFUSED, "is not supported"},
    {"guided_whitespace_pattern", BOTH, FIELD_REFUSED, "is not supported"},
};
#define N_FIELDS (sizeof FIELDS / sizeof FIELDS[0])

static const request_field *find(const char *name) {
  for (size_t i = 0; i < N_FIELDS; i++)
    if (!strcmp(FIELDS[i].name, name)) return &FIELDS[i];
  return NULL;
}

static const char *route_path(unsigned route) {
  return route == CHAT ? "/v1/chat/completions" : "/v1/completions";
}

/* modalities: ["text"] (or []); anything else asks for what nucleus does
 * not make. */
static int check_modalities(const json_t *v, api_error *e) {
  if (!v || json_is_null(v)) return 0;
  if (!json_is_array(v))
    return api_fail(e, 400, "modalities",
                    "'modalities' must be a list of strings");
  size_t i;
  const json_t *m;
  json_array_foreach(v, i, m) {
    if (!json_is_string(m))
      return api_fail(e, 400, "modalities",
                      "'modalities' must be a list of strings");
    if (strcmp(json_string_value(m), "text"))
      return api_fail(e, 400, "modalities",
                      "'modalities' asks for \"%.32s\": nucleus answers in "
                      "text only ([\"text\"])",
                      json_string_value(m));
  }
  return 0;
}

int request_fields_check(const json_t *root, bool chat, bool strict, FILE *log,
                         api_error *e) {
  if (!json_is_object(root)) return 0;
  unsigned route = chat ? CHAT : COMPLETIONS;
  const char *key;
  const json_t *v;
  const char *unknown[REQUEST_FIELDS_MAX_LOGGED];
  size_t n_unknown = 0;
  json_object_foreach((json_t *)root, key, v) {
    const request_field *f = find(key);
    if (!f) {
      if (strict)
        return api_fail(e, 400, key,
                        "'%.64s' is not a field of %s (the server runs with "
                        "--strict-params)",
                        key, route_path(route));
      if (n_unknown < REQUEST_FIELDS_MAX_LOGGED) unknown[n_unknown] = key;
      n_unknown++;
      continue;
    }
    if (json_is_null(v)) continue; /* null is absent, as the parser reads */
    if (!(f->routes & route))
      return api_fail(e, 400, f->name, "'%s' applies only to %s", f->name,
                      route_path(f->routes));
    if (f->use == FIELD_REFUSED)
      return api_fail(e, 400, f->name, "'%s' %s", f->name, f->note);
  }
  if (check_modalities(json_object_get(root, "modalities"), e)) return -1;
  if (n_unknown && log) {
    fprintf(log, "nucleus: warning: %s: unknown request field%s ignored:",
            route_path(route), n_unknown > 1 ? "s" : "");
    size_t shown = n_unknown < REQUEST_FIELDS_MAX_LOGGED
                       ? n_unknown
                       : REQUEST_FIELDS_MAX_LOGGED;
    for (size_t i = 0; i < shown; i++)
      fprintf(log, "%s '%.64s'", i ? "," : "", unknown[i]);
    if (n_unknown > shown) fprintf(log, " and %zu more", n_unknown - shown);
    fprintf(log, " (--strict-params refuses them)\n");
  }
  return 0;
}

static const char *use_text(const request_field *f, unsigned route) {
  if (!(f->routes & route)) return "refused";
  switch (f->use) {
  case FIELD_READ: return "read";
  case FIELD_IGNORED: return "ignored";
  case FIELD_REFUSED: return "refused";
  }
  return "";
}

void request_fields_print(FILE *out) {
  fprintf(out, "| field | /v1/chat/completions | /v1/completions | what it "
               "is, or why it is refused |\n|---|---|---|---|\n");
  for (size_t i = 0; i < N_FIELDS; i++) {
    const request_field *f = &FIELDS[i];
    fprintf(out, "| `%s` | %s | %s | %s |\n", f->name, use_text(f, CHAT),
            use_text(f, COMPLETIONS), f->note);
  }
}
