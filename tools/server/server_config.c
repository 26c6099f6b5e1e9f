/* nucleus serve: parsing the command line into a server_config. */
#include "server_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/model_flags.h"

#define MIB (1024u * 1024u)

void server_config_usage(FILE *out) {
  fprintf(out,
          "usage: nucleus serve [options]\n"
          "  -m, --model FILE        GGUF model (default: the bundled one)\n"
          "  --host ADDR             bind address (default 127.0.0.1)\n"
          "  --port N                TCP port (default 8080)\n"
          "  --api-key KEY           require 'Authorization: Bearer KEY'\n"
          "                          (or $NUCLEUS_API_KEY)\n"
          "  --max-body-bytes N      request body limit (default 8 MiB)\n"
          "  --drain-timeout S       seconds to finish requests on SIGTERM "
          "(default 30)\n"
          "  --timeout S             idle connection timeout (default 30)\n"
          "  --max-connections N     open connections (default 1024)\n"
          "  --chat-template FILE    override the model's chat template\n"
          "  --cors-origin ORIGIN    let browser pages from ORIGIN (or *) call "
          "the API\n"
          "  --responses-max N       /v1/responses kept for GET and "
          "previous_response_id\n"
          "                          (default 1024; 0 stores none; the least "
          "recently\n"
          "                          used goes first)\n"
          "  --responses-max-bytes N  their bytes at most (default 64 MiB)\n"
          "  --read-timeout S        a request's headers and body must arrive "
          "within S\n"
          "                          seconds, however slowly they trickle "
          "(default 10)\n"
          "  --max-connections-per-ip N  open connections from one address "
          "(default 128)\n"
          "  --allowed-host NAME     accept this name in the Host header "
          "(repeatable;\n"
          "                          IP literals and localhost always are; * "
          "for any)\n"
          "  --prefix-cache-salt-by-key  requests share cached prefixes only "
          "with\n"
          "                          requests presenting the same API key\n"
          "  --strict-params         refuse a request field nucleus does not "
          "know (400)\n"
          "                          instead of ignoring it with a warning "
          "line\n"
          "  --allow-image-urls      fetch the http(s) URL of an image part "
          "(16 MiB,\n"
          "                          5 s, redirects to http(s) only); off, "
          "such a\n"
          "                          part is a 400\n"
          "  --request-fields        print the table of request fields (read, "
          "ignored,\n"
          "                          refused) as Markdown and exit\n"
          "  --parse-special-in-content  read special-token text inside chat "
          "messages\n"
          "                          as control tokens (lets users forge "
          "turns)\n"
          "  --reasoning-format F    auto (default): a thinking model's "
          "reasoning goes to\n"
          "                          reasoning_content; none: it stays in "
          "the content\n"
          "                          (a request's 'reasoning_format' "
          "overrides it)\n"
          "  --reasoning-budget N    thinking tokens before the engine closes "
          "the block\n"
          "                          (default -1: none; a request's "
          "'max_reasoning_tokens'\n"
          "                          overrides it)\n"
          "  --metrics-names SET     nucleus (default) or llm-d: /metrics also "
          "carries\n"
          "                          vLLM's gauge names "
          "(vllm:num_requests_waiting, "
          "...)\n"
          "                          that the llm-d endpoint picker reads\n"
          "  --spec TYPE             speculative decoding for every request: "
          "off (default),\n"
          "                          ngram, draft or mtp (the model's MTP "
          "head, loaded\n"
          "                          with it); a request's "
          "'speculative' or 'prediction'\n"
          "                          overrides it (docs/SPECULATIVE.md)\n"
          "  --draft-max N           drafted tokens per step at most "
          "(default %d, up to %d)\n"
          "  --draft-min N           draft nothing when fewer are proposed "
          "(default 0)\n"
          "  --model-draft FILE      a draft model with the model's "
          "vocabulary (sets --spec\n"
          "                          draft)\n"
          "  --mmproj FILE           the model's vision projector (a clip "
          "GGUF): requests\n"
          "                          may carry images (docs/SERVER.md, "
          "Images)\n"
          "  --embedding-model FILE  an embedding model or reranker served "
          "beside the model:\n"
          "                          POST /v1/embeddings and /v1/rerank run "
          "on it unless\n"
          "                          'model' names the main model "
          "(docs/SERVER.md)\n"
          "engine options (a 503 past --max-queue waiting requests):\n",
          NUCLEUS_DEFAULT_DRAFT_MAX, NUCLEUS_MAX_DRAFT);
  engine_flags_help(out);
  fprintf(out, "model options:\n");
  model_flags_help(out);
}

static int parse_long(const char *opt, const char *s, long lo, long hi,
                      long *out, char *msg, size_t cap) {
  if (!s) {
    snprintf(msg, cap, "%s needs a value", opt);
    return -1;
  }
  errno = 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    snprintf(msg, cap, "%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo,
             hi);
    return -1;
  }
  *out = v;
  return 0;
}

/* "nucleus" / "llm-d" -> *out; -1 for any other name. */
static int metrics_names_parse(const char *s, metrics_names *out) {
  if (!s) return -1;
  if (!strcmp(s, "nucleus")) {
    *out = METRICS_NAMES_NUCLEUS;
    return 0;
  }
  if (!strcmp(s, "llm-d")) {
    *out = METRICS_NAMES_LLMD;
    return 0;
  }
  return -1;
}

static void set_defaults(server_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->host = "127.0.0.1";
  cfg->port = 8080;
  cfg->max_body_bytes = 8 * MIB;
  cfg->drain_timeout_s = 30;
  cfg->timeout_s = 30;
  cfg->max_connections = 1024;
  cfg->read_timeout_s = 10;
  cfg->max_connections_per_ip = 128;
  cfg->responses_max = 1024;
  cfg->responses_max_bytes = 64 * MIB;
  cfg->model = nucleus_model_default_params();
  cfg->engine = nucleus_engine_default_params();
  cfg->spec = nucleus_request_default_params().speculative;
  cfg->reasoning_budget = -1;
  const char *key = getenv("NUCLEUS_API_KEY");
  if (key && *key) cfg->api_key = key;
}

int server_config_parse(int argc, char **argv, server_config *cfg, char *msg,
                        size_t cap) {
  set_defaults(cfg);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = flag_value(argc, argv, i);
    long n = 0;
    int rc = 0;
    bool takes_value = true;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      cfg->help = true;
      takes_value = false;
    } else if (!strcmp(a, "--prefix-cache-salt-by-key")) {
      cfg->prefix_cache_salt_by_key = true;
      takes_value = false;
    } else if (!strcmp(a, "--strict-params")) {
      cfg->strict_params = true;
      takes_value = false;
    } else if (!strcmp(a, "--allow-image-urls")) {
      cfg->allow_image_urls = true;
      takes_value = false;
    } else if (!strcmp(a, "--request-fields")) {
      cfg->print_request_fields = true;
      takes_value = false;
    } else if (!strcmp(a, "--parse-special-in-content")) {
      cfg->parse_special_in_content = true;
      takes_value = false;
    } else if (!strcmp(a, "--reasoning-format")) {
      if (!v || (strcmp(v, "none") && strcmp(v, "auto"))) {
        snprintf(msg, cap, "--reasoning-format: '%s' is not none or auto",
                 v ? v : "");
        rc = -1;
      } else {
        cfg->reasoning_inline = !strcmp(v, "none");
      }
    } else if (!strcmp(a, "--reasoning-budget")) {
      /* the range: nucleus_reasoning_check once all are read */
      rc = parse_long(a, v, INT32_MIN, INT32_MAX, &n, msg, cap);
      cfg->reasoning_budget = (int32_t)n;
    } else if (!strcmp(a, "--metrics-names")) {
      if (metrics_names_parse(v, &cfg->metrics_names)) {
        snprintf(msg, cap, "--metrics-names: '%s' is not nucleus or llm-d",
                 v ? v : "");
        rc = -1;
      }
    } else if ((rc = model_flags_parse(&cfg->model, argc, argv, &i, msg,
                                       cap)) != 0) {
      rc = rc < 0 ? -1 : 0;
      takes_value = false; /* i is past the value */
    } else if ((rc = engine_flags_parse(&cfg->engine, argc, argv, &i, msg,
                                        cap)) != 0) {
      rc = rc < 0 ? -1 : 0;
      takes_value = false; /* i is past the value */
    } else if (!strcmp(a, "--spec")) {
      if (!v || !nucleus_spec_type_from_name(v, &cfg->spec.type) ||
          cfg->spec.type == NUCLEUS_SPEC_PREDICTION) {
        snprintf(msg, cap,
                 "--spec: '%s' is not a drafter for every request: off, "
                 "ngram, draft or mtp (a request brings its own "
                 "'prediction')",
                 v ? v : "");
        rc = -1;
      }
    } else if (!strcmp(a, "--model-draft")) {
      if (!v) rc = parse_long(a, v, 0, 0, &n, msg, cap);
      cfg->draft_model_path = v;
    } else if (!strcmp(a, "--embedding-model")) {
      if (!v) rc = parse_long(a, v, 0, 0, &n, msg, cap);
      cfg->embedding_model_path = v;
    } else if (!strcmp(a, "--mmproj")) {
      if (!v) rc = parse_long(a, v, 0, 0, &n, msg, cap);
      cfg->mmproj_path = v;
    } else if (!strcmp(a, "--draft-max") || !strcmp(a, "--draft-min")) {
      /* the range: nucleus_speculative_check once all are read */
      rc = parse_long(a, v, INT32_MIN, INT32_MAX, &n, msg, cap);
      if (!strcmp(a, "--draft-max"))
        cfg->spec.draft_max = (int32_t)n;
      else
        cfg->spec.draft_min = (int32_t)n;
    } else if (!strcmp(a, "--responses-max")) {
      rc = parse_long(a, v, 0, 100000, &n, msg, cap);
      cfg->responses_max = (size_t)n;
    } else if (!strcmp(a, "--responses-max-bytes")) {
      rc = parse_long(a, v, 0, 1L << 36, &n, msg, cap);
      cfg->responses_max_bytes = (size_t)n;
    } else if (!strcmp(a, "--read-timeout")) {
      rc = parse_long(a, v, 1, 86400, &n, msg, cap);
      cfg->read_timeout_s = (int)n;
    } else if (!strcmp(a, "--max-connections-per-ip")) {
      rc = parse_long(a, v, 1, 1 << 16, &n, msg, cap);
      cfg->max_connections_per_ip = (int)n;
    } else if (!strcmp(a, "--allowed-host")) {
      if (!v || !*v || strlen(v) > 253) {
        snprintf(msg, cap, "--allowed-host needs a host name (or '*')");
        rc = -1;
      } else if (cfg->n_allowed_hosts == SERVER_MAX_ALLOWED_HOSTS) {
        snprintf(msg, cap, "at most %d --allowed-host names",
                 SERVER_MAX_ALLOWED_HOSTS);
        rc = -1;
      } else {
        cfg->allowed_hosts[cfg->n_allowed_hosts++] = v;
      }
    } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
      if (!v) rc = parse_long(a, v, 0, 0, &n, msg, cap);
      cfg->model_path = v;
    } else if (!strcmp(a, "--host")) {
      if (!v) rc = parse_long(a, v, 0, 0, &n, msg, cap);
      cfg->host = v;
    } else if (!strcmp(a, "--port")) {
      rc = parse_long(a, v, 0, 65535, &n, msg, cap);
      cfg->port = (int)n;
    } else if (!strcmp(a, "--api-key")) {
      if (!v || !*v) {
        snprintf(msg, cap, "--api-key needs a non-empty value");
        rc = -1;
      }
      cfg->api_key = v;
    } else if (!strcmp(a, "--max-body-bytes")) {
      rc = parse_long(a, v, 1024, 1L << 32, &n, msg, cap);
      cfg->max_body_bytes = (size_t)n;
    } else if (!strcmp(a, "--drain-timeout")) {
      rc = parse_long(a, v, 0, 86400, &n, msg, cap);
      cfg->drain_timeout_s = (int)n;
    } else if (!strcmp(a, "--timeout")) {
      rc = parse_long(a, v, 1, 86400, &n, msg, cap);
      cfg->timeout_s = (int)n;
    } else if (!strcmp(a, "--max-connections")) {
      rc = parse_long(a, v, 1, 1 << 16, &n, msg, cap);
      cfg->max_connections = (int)n;
    } else if (!strcmp(a, "--cors-origin")) {
      if (!v || !*v) {
        snprintf(msg, cap, "--cors-origin needs an origin or '*'");
        rc = -1;
      }
      cfg->cors_origin = v;
    } else if (!strcmp(a, "--chat-template")) {
      if (!v) rc = parse_long(a, v, 0, 0, &n, msg, cap);
      cfg->chat_template_path = v;
    } else {
      snprintf(msg, cap, "unknown option '%s'", a);
      return -1;
    }
    if (rc) return -1;
    if (takes_value) i++;
  }
  if (cfg->draft_model_path && cfg->spec.type == NUCLEUS_SPEC_OFF)
    cfg->spec.type = NUCLEUS_SPEC_DRAFT; /* --model-draft: drafts by default */
  if (cfg->spec.type == NUCLEUS_SPEC_DRAFT && !cfg->draft_model_path) {
    snprintf(msg, cap, "--spec draft needs --model-draft FILE");
    return -1;
  }
  nucleus_error err = {0};
  if (nucleus_speculative_check(&cfg->spec, 1, 0, &err) != NUCLEUS_OK) {
    snprintf(msg, cap, "%s", err.message);
    return -1;
  }
  if (cfg->reasoning_budget >= 0 && cfg->spec.type != NUCLEUS_SPEC_OFF) {
    snprintf(msg, cap,
             "--reasoning-budget does not combine with --spec "
             "(a budget is not kept across drafted tokens)");
    return -1;
  }
  nucleus_request_params rp = nucleus_request_default_params();
  rp.reasoning.budget = cfg->reasoning_budget;
  rp.reasoning.close = "-";
  rp.max_tokens = -1;
  if (nucleus_reasoning_check(&rp, &err) != NUCLEUS_OK) {
    snprintf(msg, cap, "--reasoning-budget: %s", err.message);
    return -1;
  }
  return 0;
}
