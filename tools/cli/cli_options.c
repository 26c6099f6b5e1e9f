#include "cli_options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_io.h"
#include "commands.h"
#include "model_flags.h"

void cli_options_init(cli_options *o) {
  memset(o, 0, sizeof *o);
  o->engine = nucleus_engine_default_params();
  o->request = nucleus_request_default_params();
  o->model = nucleus_model_default_params();
}

static bool parse_int(const char *flag, const char *s, long lo, long hi,
                      long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "error: %s: '%s' is not an integer in [%ld, %ld]\n", flag,
            s, lo, hi);
    return false;
  }
  *out = v;
  return true;
}

static bool parse_float(const char *flag, const char *s, float *out) {
  char *end;
  errno = 0;
  float v = strtof(s, &end);
  if (errno || end == s || *end || !isfinite(v)) {
    fprintf(stderr, "error: %s: '%s' is not a finite number\n", flag, s);
    return false;
  }
  *out = v;
  return true;
}

void cli_options_free(cli_options *o) {
  nucleus_model_free(o->draft_model);
  o->draft_model = NULL;
  o->engine.draft_model = NULL;
  nucleus_free(o->prediction_ids);
  o->prediction_ids = NULL;
  o->request.speculative.prediction = NULL;
  nucleus_grammar_free(o->grammar);
  o->grammar = NULL;
  o->request.grammar = NULL;
}

void cli_options_help(FILE *out, nucleus_surface surface) {
  fprintf(out, "  -m, --model FILE        GGUF model (default: the default "
               "model, fetched if missing)\n");
  fprintf(out,
          "  --chat-template FILE    override the model's chat template\n");
  fprintf(out,
          "  --seed N                seed (default: drawn and reported)\n");
  fprintf(out, "  --stop TEXT             stop string (repeatable, up to %d)\n",
          NUCLEUS_MAX_STOP_STRINGS);
  fprintf(out, "  --logit-bias ID=BIAS    add BIAS to token ID (repeatable)\n");
  fprintf(out,
          "  --stop-token-id ID      stop at token ID (repeatable, up to %d)\n",
          NUCLEUS_MAX_STOP_TOKEN_IDS);
  fprintf(out,
          "  --grammar GBNF          constrain the output to a GBNF grammar\n");
  fprintf(out, "  --grammar-file FILE     the same, read from FILE\n");
  fprintf(out, "  --json-schema SCHEMA    constrain the output to JSON that "
               "validates against\n"
               "                          a JSON Schema (the subset of "
               "docs/SERVER.md)\n");
  fprintf(out, "  --spec TYPE             speculative decoding: off (default), "
               "ngram (drafts from\n"
               "                          the prompt and output), prediction "
               "(drafts from\n"
               "                          --prediction), draft "
               "(--model-draft), mtp (the\n"
               "                          model's MTP head: qwen35 files "
               "that carry one); the output is\n"
               "                          the same (or, sampled with a draft "
               "model, from the\n"
               "                          same distribution), only faster\n");
  fprintf(out, "  --model-draft FILE      a draft model with the model's "
               "vocabulary (sets --spec\n"
               "                          draft)\n");
  fprintf(out, "  --draft-strict          a draft model's tokens kept only "
               "when the model's own\n"
               "                          draw equals them (llama.cpp's "
               "server), not by rejection\n"
               "                          sampling\n");
  fprintf(out,
          "  --draft-max N           drafted tokens per step at most "
          "(default %d, up to %d)\n",
          NUCLEUS_DEFAULT_DRAFT_MAX, NUCLEUS_MAX_DRAFT);
  fprintf(out, "  --draft-min N           draft nothing when fewer are "
               "proposed (default 0)\n");
  fprintf(out, "  --prediction TEXT       the expected output (OpenAI's "
               "predicted outputs):\n"
               "                          drafts from it (sets --spec "
               "prediction)\n");
  fprintf(out, "  --prediction-file FILE  the same, read from FILE\n");
  fprintf(out, "  --json-schema-file FILE the same, read from FILE (one of "
               "the four grammar\n"
               "                          flags at most)\n");
  for (size_t i = 0; i < nucleus_params_count(); i++) {
    const nucleus_param_info *p = nucleus_params_at(i);
    if (!p->cli_flag) continue;
    char names[64], def[48] = "";
    snprintf(names, sizeof names, "%s%s%s", p->cli_flag,
             p->cli_alias ? ", " : "", p->cli_alias ? p->cli_alias : "");
    if (p->kind != NUCLEUS_PARAM_BOOL)
      snprintf(def, sizeof def, " (default %g)", p->defaults[surface]);
    fprintf(out, "  %-23s %s%s\n", names, p->help, def);
  }
  fprintf(out, "  --parse-special-in-content\n"
               "                          chat: read special-token text in "
               "messages as control\n"
               "                          tokens\n");
  engine_flags_help(out);
  model_flags_help(out);
}

/* The whole of file path (at most 1 MiB, the grammar engine's own bound)
 * into *text (malloc'd) and *len. Prints an error naming flag; -1. */
static int read_small_file(const char *flag, const char *path, char **text,
                           size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "error: %s: cannot open '%s'\n", flag, path);
    return -1;
  }
  size_t cap = 1 << 20;
  *text = malloc(cap + 1);
  *len = *text ? fread(*text, 1, cap + 1, f) : 0;
  bool bad = ferror(f);
  fclose(f);
  if (!*text || bad || *len > cap) {
    free(*text);
    *text = NULL;
    fprintf(stderr, "error: %s: '%s' is %s\n", flag, path,
            bad ? "unreadable" : "over 1 MiB");
    return -1;
  }
  return 0;
}

int cli_options_parse(cli_options *o, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  const char *v = flag_value(argc, argv, *i);
#define NEED_VALUE()                                                           \
  do {                                                                         \
    if (!v) {                                                                  \
      fprintf(stderr, "error: %s needs a value\n", a);                         \
      return -1;                                                               \
    }                                                                          \
    (*i)++;                                                                    \
  } while (0)
  if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
    NEED_VALUE();
    o->model_path = v;
    return 1;
  }
  char msg[640];
  int mrc = model_flags_parse(&o->model, argc, argv, i, msg, sizeof msg);
  if (!mrc)
    mrc = engine_flags_parse(&o->engine, argc, argv, i, msg, sizeof msg);
  if (mrc) {
    if (mrc < 0) fprintf(stderr, "error: %s\n", msg);
    return mrc;
  }
  if (!strcmp(a, "--chat-template")) {
    NEED_VALUE();
    o->chat_template_file = v;
    return 1;
  }
  if (!strcmp(a, "--seed")) {
    NEED_VALUE();
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    if (errno || end == v || *end || *v == '-') {
      fprintf(stderr, "error: --seed: '%s' is not a non-negative integer\n", v);
      return -1;
    }
    o->request.sampling.has_seed = true;
    o->request.sampling.seed = s;
    return 1;
  }
  if (!strcmp(a, "--stop")) {
    NEED_VALUE();
    nucleus_error err = {0};
    if (nucleus_stop_string_check(o->request.n_stop, v, strlen(v), &err) !=
        NUCLEUS_OK) {
      fprintf(stderr, "error: --stop: %s\n", err.message);
      return -1;
    }
    o->stops[o->request.n_stop++] = v;
    o->request.stop = o->stops;
    return 1;
  }
  bool gbnf = !strcmp(a, "--grammar") || !strcmp(a, "--grammar-file");
  bool schema = !strcmp(a, "--json-schema") || !strcmp(a, "--json-schema-file");
  if (gbnf || schema) {
    NEED_VALUE();
    if (o->grammar) {
      fprintf(stderr,
              "error: %s: a grammar was given already (--grammar, "
              "--grammar-file, --json-schema and --json-schema-file exclude "
              "each other)\n",
              a);
      return -1;
    }
    char *text = NULL;
    size_t len = strlen(v);
    if (strstr(a, "-file") && read_small_file(a, v, &text, &len)) return -1;
    nucleus_error err = {0};
    nucleus_status st = gbnf ? nucleus_grammar_create(text ? text : v, len,
                                                      NULL, &o->grammar, &err)
                             : nucleus_grammar_from_json_schema(
                                   text ? text : v, len, &o->grammar, &err);
    free(text);
    if (st != NUCLEUS_OK) {
      fprintf(stderr, "error: %s: %s\n", a, err.message);
      return -1;
    }
    o->request.grammar = o->grammar;
    return 1;
  }
  if (!strcmp(a, "--spec")) {
    NEED_VALUE();
    if (!nucleus_spec_type_from_name(v, &o->request.speculative.type)) {
      fprintf(stderr,
              "error: --spec: '%s' is not a drafter: off, ngram, prediction, "
              "draft or mtp\n",
              v);
      return -1;
    }
    return 1;
  }
  if (!strcmp(a, "--draft-max") || !strcmp(a, "--draft-min")) {
    NEED_VALUE();
    long n; /* the range at prepare, by the library's one check */
    if (!parse_int(a, v, INT32_MIN, INT32_MAX, &n)) return -1;
    if (!strcmp(a, "--draft-max"))
      o->request.speculative.draft_max = (int32_t)n;
    else
      o->request.speculative.draft_min = (int32_t)n;
    return 1;
  }
  if (!strcmp(a, "--draft-strict")) {
    o->request.speculative.strict = true;
    return 1;
  }
  if (!strcmp(a, "--model-draft")) {
    NEED_VALUE();
    o->draft_model_path = v;
    return 1;
  }
  if (!strcmp(a, "--prediction") || !strcmp(a, "--prediction-file")) {
    NEED_VALUE();
    o->prediction_arg = v;
    o->prediction_is_file = !strcmp(a, "--prediction-file");
    o->request.speculative.type = NUCLEUS_SPEC_PREDICTION;
    return 1;
  }
  if (!strcmp(a, "--stop-token-id")) {
    NEED_VALUE();
    long id;
    if (!parse_int(a, v, INT32_MIN, INT32_MAX, &id)) return -1;
    /* The count here; the id against the vocabulary at submit, with the
     * server's message (a negative one too). */
    nucleus_error err = {0};
    size_t n = o->request.n_stop_token_ids;
    if (nucleus_stop_token_id_check(n, 0, 0, &err) != NUCLEUS_OK) {
      fprintf(stderr, "error: %s: %s\n", a, err.message);
      return -1;
    }
    o->stop_ids[n] = (int32_t)id;
    o->request.n_stop_token_ids = n + 1;
    o->request.stop_token_ids = o->stop_ids;
    return 1;
  }
  if (!strcmp(a, "--logit-bias")) {
    NEED_VALUE();
    const char *eq = strchr(v, '=');
    long id;
    float bias;
    char idbuf[32];
    if (!eq || (size_t)(eq - v) >= sizeof idbuf) {
      fprintf(stderr, "error: --logit-bias: expected ID=BIAS, got '%s'\n", v);
      return -1;
    }
    memcpy(idbuf, v, (size_t)(eq - v));
    idbuf[eq - v] = '\0';
    if (!parse_int("--logit-bias", idbuf, INT32_MIN, INT32_MAX, &id) ||
        !parse_float("--logit-bias", eq + 1, &bias))
      return -1;
    /* The count and the bias here; the token against the vocabulary at
     * submit, with the server's message (a negative one too). */
    nucleus_logit_bias b = {(int32_t)id, bias};
    nucleus_error err = {0};
    size_t n = o->request.sampling.n_logit_bias;
    nucleus_logit_bias probe = {b.token < 0 ? 0 : b.token, b.bias};
    if (nucleus_logit_bias_check(n, probe, 0, &err) != NUCLEUS_OK) {
      fprintf(stderr, "error: --logit-bias: %s\n", err.message);
      return -1;
    }
    o->bias[n] = b;
    o->request.sampling.n_logit_bias = n + 1;
    o->request.sampling.logit_bias = o->bias;
    return 1;
  }
  for (size_t k = 0; k < nucleus_params_count(); k++) {
    const nucleus_param_info *p = nucleus_params_at(k);
    if (!p->cli_flag ||
        (strcmp(a, p->cli_flag) && (!p->cli_alias || strcmp(a, p->cli_alias))))
      continue;
    double x = 1;
    if (p->kind != NUCLEUS_PARAM_BOOL) {
      NEED_VALUE();
      char *end;
      errno = 0;
      x = strtod(v, &end);
      if (errno || end == v || *end) {
        fprintf(stderr, "error: %s: '%s' is not a number\n", a, v);
        return -1;
      }
    }
    nucleus_error err = {0};
    if (nucleus_params_set(&o->request, p->name, x, &err) != NUCLEUS_OK) {
      fprintf(stderr, "error: %s: %s\n", a, err.message);
      return -1;
    }
    if (k < CLI_MAX_PARAMS) o->given[k] = true;
    if (!strcmp(p->name, "top_logprobs")) o->request.sampling.logprobs = true;
    return 1;
  }
  if (!strcmp(a, "--parse-special-in-content")) {
    o->parse_special_in_content = true;
    return 1;
  }
  return 0;
#undef NEED_VALUE
}

nucleus_model *cli_load_model(const cli_options *o) {
  char model_buf[CLI_MODEL_PATH_MAX];
  const char *path = o->model_path
                         ? o->model_path
                         : cli_default_model(model_buf, sizeof model_buf);
  if (!path) return NULL;
  nucleus_model_params mp = o->model;
  /* --spec mtp: the model's MTP head drafts (loaded with it) */
  mp.mtp = o->request.speculative.type == NUCLEUS_SPEC_MTP;
  char *tmpl = NULL;
  if (o->chat_template_file) {
    tmpl = cli_read_file(o->chat_template_file, NULL);
    if (!tmpl) {
      fprintf(stderr, "error: cannot read chat template %s: %s\n",
              o->chat_template_file, strerror(errno));
      return NULL;
    }
    mp.chat_template = tmpl;
  }
  nucleus_model *model = NULL;
  nucleus_error err = {0};
  nucleus_status rc = nucleus_model_load(path, &mp, &model, &err);
  free(tmpl);
  if (rc != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    return NULL;
  }
  return model;
}

void cli_options_defaults(cli_options *o, const nucleus_model *model,
                          nucleus_surface surface) {
  nucleus_request_params d = nucleus_request_params_for(model, surface);
  for (size_t k = 0; k < nucleus_params_count() && k < CLI_MAX_PARAMS; k++) {
    const nucleus_param_info *p = nucleus_params_at(k);
    if (!o->given[k])
      nucleus_params_set(&o->request, p->name,
                         nucleus_params_value(&d, p->name), NULL);
  }
}

int cli_options_prepare(cli_options *o, const nucleus_model *model) {
  nucleus_spec_params *sp = &o->request.speculative;
  nucleus_error err = {0};
  if (o->draft_model_path && !o->draft_model) {
    if (nucleus_model_load(o->draft_model_path, &o->model, &o->draft_model,
                           &err) != NUCLEUS_OK) {
      fprintf(stderr, "error: --model-draft %s: %s\n", o->draft_model_path,
              err.message);
      return -1;
    }
    o->engine.draft_model = o->draft_model;
    if (sp->type == NUCLEUS_SPEC_OFF) sp->type = NUCLEUS_SPEC_DRAFT;
  }
  if (o->prediction_arg) {
    char *text = NULL;
    size_t len = strlen(o->prediction_arg);
    if (o->prediction_is_file &&
        read_small_file("--prediction-file", o->prediction_arg, &text, &len))
      return -1;
    size_t n = 0;
    nucleus_free(o->prediction_ids);
    o->prediction_ids = NULL;
    nucleus_status st =
        nucleus_tokenize(model, text ? text : o->prediction_arg, len, false,
                         false, &o->prediction_ids, &n, &err);
    free(text);
    if (st != NUCLEUS_OK) {
      fprintf(stderr, "error: --prediction: %s\n", err.message);
      return -1;
    }
    sp->prediction = o->prediction_ids;
    sp->n_prediction = n;
  }
  if (nucleus_speculative_check(sp, o->request.beam_width,
                                nucleus_model_n_vocab(model),
                                &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    return -1;
  }
  if (sp->strict && sp->type != NUCLEUS_SPEC_DRAFT &&
      sp->type != NUCLEUS_SPEC_MTP) {
    fprintf(stderr, "error: --draft-strict: only with a draft model "
                    "(--model-draft) or the MTP head (--spec mtp): n-gram "
                    "and prediction drafts are verified the same either "
                    "way\n");
    return -1;
  }
  return 0;
}

bool cli_options_given(const cli_options *o, const char *name) {
  for (size_t k = 0; k < nucleus_params_count() && k < CLI_MAX_PARAMS; k++)
    if (!strcmp(nucleus_params_at(k)->name, name)) return o->given[k];
  return false;
}
