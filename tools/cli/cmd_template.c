/* nucleus template: print the prompt a model's chat template makes of a
 * conversation (exactly, with no newline added). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_io.h"
#include "commands.h"
#include "nucleus.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: nucleus template [-m MODEL] [--chat-template FILE] "
          "[--now SECONDS] MESSAGES.json\n\n"
          "Renders the model's chat template (tokenizer.chat_template, or "
          "FILE)\nfor the conversation in MESSAGES.json ('-' for standard "
          "input) and\nprints the prompt exactly, with no newline added. The "
          "file holds\neither a JSON array of messages or an object:\n"
          "  {\"messages\": [...], \"add_generation_prompt\": true,"
          " \"tools\": [...],\n   \"chat_template_kwargs\": {...}}\n"
          "(add_generation_prompt defaults to true, tools to none; the\n"
          "chat_template_kwargs become extra template variables).\n"
          "  -m MODEL              the GGUF file (default: the default "
          "model)\n"
          "  --chat-template FILE  use the Jinja template in FILE instead\n"
          "  --now SECONDS         strftime_now() shows this time (seconds "
          "since\n"
          "                        the epoch, in UTC) instead of the local "
          "time now:\n"
          "                        a reproducible render\n");
}

/* Reads a whole file ("-": standard input); NULL with a message on error. */
static char *read_all(const char *path, size_t *len) {
  char *text = cli_read_file(path, len);
  if (!text)
    fprintf(stderr, "nucleus template: cannot read %s: %s\n", path,
            strerror(errno));
  return text;
}

/* Splits the conversation file into messages/tools JSON texts. */
static int parse_conversation(const char *text, size_t len, char **messages,
                              char **tools, char **kwargs, bool *add_gen) {
  json_error_t je;
  json_t *j = json_loadb(text, len, JSON_ALLOW_NUL, &je);
  *messages = *tools = *kwargs = NULL;
  *add_gen = true;
  if (!j) {
    fprintf(stderr, "nucleus template: invalid JSON: %s (line %d, column %d)\n",
            je.text, je.line, je.column);
    return 1;
  }
  json_t *msgs = j, *tl = NULL, *kw = NULL;
  if (json_is_object(j)) {
    msgs = json_object_get(j, "messages");
    tl = json_object_get(j, "tools");
    kw = json_object_get(j, "chat_template_kwargs");
    if (kw && !json_is_object(kw)) {
      fprintf(stderr, "nucleus template: chat_template_kwargs must be an "
                      "object\n");
      json_decref(j);
      return 1;
    }
    json_t *agp = json_object_get(j, "add_generation_prompt");
    if (agp && !json_is_boolean(agp)) {
      fprintf(stderr, "nucleus template: add_generation_prompt must be true "
                      "or false\n");
      json_decref(j);
      return 1;
    }
    if (agp) *add_gen = json_is_true(agp);
  }
  if (!json_is_array(msgs)) {
    fprintf(stderr, "nucleus template: expected a JSON array of messages or "
                    "an object with \"messages\": [...]\n");
    json_decref(j);
    return 1;
  }
  *messages = json_dumps(msgs, JSON_ENCODE_ANY);
  if (tl && !json_is_null(tl)) *tools = json_dumps(tl, JSON_ENCODE_ANY);
  if (kw) *kwargs = json_dumps(kw, 0);
  json_decref(j);
  return *messages ? 0 : 1;
}

int cmd_template(int argc, char **argv) {
  const char *model_path = NULL, *tmpl_path = NULL, *conv_path = NULL;
  long long now = 0; /* strftime_now's clock; 0: the local time now */
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(arg, "-m") || !strcmp(arg, "--model") ||
               !strcmp(arg, "--chat-template")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "nucleus template: %s needs a file\n", arg);
        return 2;
      }
      if (arg[1] == '-' && arg[2] == 'c')
        tmpl_path = argv[++i];
      else
        model_path = argv[++i];
    } else if (!strcmp(arg, "--now")) {
      char *end = NULL;
      errno = 0;
      now = i + 1 < argc ? strtoll(argv[i + 1], &end, 10) : 0;
      if (i + 1 >= argc || !*argv[i + 1] || *end || errno || now <= 0) {
        fprintf(stderr,
                "nucleus template: --now needs seconds since the epoch, "
                "1 or more (got '%s')\n",
                i + 1 < argc ? argv[i + 1] : "");
        return 2;
      }
      i++;
    } else if (arg[0] == '-' && arg[1]) {
      fprintf(stderr, "nucleus template: unknown option '%s'\n\n", arg);
      usage(stderr);
      return 2;
    } else if (conv_path) {
      fprintf(stderr, "nucleus template: one MESSAGES.json only\n");
      return 2;
    } else {
      conv_path = arg;
    }
  }
  if (!conv_path) {
    usage(stderr);
    return 2;
  }
  size_t len;
  char *conv = read_all(conv_path, &len), *tmpl = NULL;
  if (!conv) return 1;
  if (tmpl_path && !(tmpl = read_all(tmpl_path, &len))) {
    free(conv);
    return 1;
  }
  char *messages = NULL, *tools = NULL, *kwargs = NULL;
  bool add_gen = true;
  int rc = parse_conversation(conv, strlen(conv), &messages, &tools, &kwargs,
                              &add_gen);
  free(conv);
  char model_buf[CLI_MODEL_PATH_MAX];
  if (!rc && !model_path &&
      !(model_path = cli_default_model(model_buf, sizeof model_buf)))
    rc = 1;
  nucleus_model *model = NULL;
  nucleus_error err = {0};
  if (!rc) {
    nucleus_model_params mp = nucleus_model_default_params();
    mp.chat_template = tmpl;
    if (nucleus_model_load(model_path, &mp, &model, &err) != NUCLEUS_OK) {
      fprintf(stderr, "nucleus template: %s\n", err.message);
      rc = 1;
    }
  }
  if (!rc) {
    cli_note_template(model, "nucleus template");
    char *out = NULL;
    size_t n = 0;
    if (nucleus_chat_render_at(model, messages, tools, kwargs, add_gen,
                               (int64_t)now, &out, &n, &err) != NUCLEUS_OK) {
      fprintf(stderr, "nucleus template: %s\n", err.message);
      rc = 1;
    } else {
      fwrite(out, 1, n, stdout);
      if (fflush(stdout) != 0) rc = 1;
    }
    nucleus_free(out);
  }
  nucleus_model_free(model);
  free(messages);
  free(tools);
  free(kwargs);
  free(tmpl);
  return rc;
}
