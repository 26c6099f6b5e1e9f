/* nucleus chat: an interactive chat with the model's own chat template. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_images.h"
#include "cli_io.h"
#include "cli_options.h"
#include "cli_stream.h"
#include "commands.h"
#include "model_flags.h"

/* The one piece of global state: set by the SIGINT handler. */
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  g_interrupted = 1;
}

static void usage(FILE *out) {
  fprintf(out, "usage: nucleus chat [options]\n\n"
               "  -s, --system TEXT       system prompt\n"
               "  --tools FILE            a JSON list of tools (OpenAI's "
               "format); the model's\n"
               "                          calls are shown and you type each "
               "result\n"
               "  --stats                 after each reply, print its tokens, "
               "speeds,\n"
               "                          time to first token and the prompt "
               "tokens\n"
               "                          reused from the previous turns' KV\n"
               "  --hide-thinking         a thinking model's reasoning is not "
               "shown (it is\n"
               "                          shown dimmed on a terminal, plain "
               "otherwise)\n"
               "  --reasoning-format F    auto (default): the thinking is "
               "split off and shown\n"
               "                          as such; none: printed as the model "
               "wrote it\n"
               "  --reasoning-budget N    thinking tokens before the engine "
               "closes the block\n"
               "                          (default -1: none)\n"
               "  --reasoning-effort E    low, medium or high: harmony's "
               "effort; thinking on\n"
               "                          for the other thinking templates\n"
               "  --mmproj FILE           the model's vision projector: /image "
               "PATH attaches\n"
               "                          an image (PNG, JPEG, WebP) to the "
               "next message\n"
               "In the chat: /reset clears the history, /exit (or Ctrl-D) "
               "quits,\n/image PATH attaches an image (--mmproj), Ctrl-C stops "
               "the current reply.\n\n");
  fprintf(out, "Sampling defaults as listed (llama.cpp's), or as the model "
               "file\nrecommends (general.sampling.*).\n");
  cli_options_help(out, NUCLEUS_SURFACE_CLI);
}

static void add_message(json_t *messages, const char *role, const char *text,
                        size_t len) {
  json_t *m = json_object();
  json_object_set_new(m, "role", json_string(role));
  json_object_set_new(m, "content", json_stringn(text, len));
  json_array_append_new(messages, m);
}

/* Reads one line (without the newline); NULL at end of input. A Ctrl-C at
 * the prompt returns "" so the caller re-prompts. */
static char *read_line(void) {
  size_t cap = 256, len = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  for (;;) {
    int ch = fgetc(stdin);
    if (ch == EOF) {
      if (ferror(stdin) && errno == EINTR && g_interrupted) {
        clearerr(stdin);
        g_interrupted = 0;
        buf[0] = '\0';
        fputc('\n', stdout);
        return buf;
      }
      if (len == 0) {
        free(buf);
        return NULL;
      }
      break;
    }
    if (ch == '\n') break;
    if (len + 2 > cap) {
      char *p = realloc(buf, cap * 2);
      if (!p) {
        free(buf);
        return NULL;
      }
      buf = p;
      cap *= 2;
    }
    buf[len++] = (char)ch;
  }
  buf[len] = '\0';
  return buf;
}

/* A thinking model's options (--hide-thinking, --reasoning-*). */
typedef struct chat_thinking {
  bool hide, inline_text; /* --hide-thinking, --reasoning-format none */
  int32_t budget;         /* --reasoning-budget, -1: none */
  const char *kwargs;     /* --reasoning-effort as template variables */
  bool tty;               /* stdout is a terminal: thinking dimmed */
} chat_thinking;

/* Renders the history, tokenizes it and streams the reply. Returns the
 * reply text (malloc'd) or NULL; *opened: the prompt opened the thinking
 * block (the reply begins inside it). */
static char *reply(nucleus_model *model, nucleus_engine *engine,
                   const cli_options *o, json_t *messages,
                   const char *tools_json, bool stats, const chat_thinking *th,
                   const chat_images *ci, bool *opened) {
  char *history = json_dumps(messages, JSON_COMPACT);
  int32_t *ids = NULL;
  size_t n_ids = 0;
  char *prompt = NULL;
  size_t prompt_len = 0;
  nucleus_request *req = NULL;
  nucleus_error err = {0};
  char *text = NULL;
  if (!history) return NULL;
  nucleus_chat_params cp = nucleus_chat_default_params();
  cp.messages_json = history;
  cp.tools_json = tools_json;
  cp.kwargs_json = th->kwargs;
  cp.describe_tools = true;
  cp.parse_special_in_content = o->parse_special_in_content;
  nucleus_request_params params = o->request;
  *opened = false;
  bool tracked = false;
  /* with images: the text, then its tokens with the images' rows */
  nucleus_status st = ci->n_sent
                          ? nucleus_chat_apply(model, &cp, &prompt, &prompt_len,
                                               NULL, NULL, &err)
                          : nucleus_chat_apply(model, &cp, &prompt, &prompt_len,
                                               &ids, &n_ids, &err);
  if (st == NUCLEUS_OK && ci->n_sent)
    st =
        chat_images_tokenize(ci, model, prompt, prompt_len, &ids, &n_ids, &err);
  if (st == NUCLEUS_OK)
    tracked = nucleus_reasoning_params_for(model, prompt, prompt_len,
                                           th->budget, &params, opened);
  params.images = (const nucleus_image *const *)ci->v;
  params.n_images = (size_t)ci->n_sent;
  /* the markers must reach the reply (Gemma 4's are control tokens) */
  if (tracked) params.skip_special_tokens = false;
  if (!ids || nucleus_engine_submit(engine, ids, n_ids, &params, &req, &err) !=
                  NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    goto done;
  }
  cli_stream_result res;
  g_interrupted = 0;
  const cli_thinking_view view = {
      .fmt = {.reasoning = tracked && !th->inline_text,
              .in_reasoning = *opened},
      .dim = th->tty,
      .hide = th->hide,
  };
  cli_stream_request(model, req, &params, stdout, &g_interrupted,
                     view.fmt.reasoning ? &view : NULL, &res);
  if (res.reason == NUCLEUS_FINISH_ABORT)
    fprintf(stderr, "(reply stopped)\n");
  else if (res.reason == NUCLEUS_FINISH_LENGTH)
    fprintf(stderr, "(reply cut: %s)\n", "length limit reached");
  else if (res.reason == NUCLEUS_FINISH_ERROR)
    fprintf(stderr, "error: %s\n", res.detail);
  g_interrupted = 0;
  if (stats) cli_print_summary(&res);
  text = res.text ? res.text : strdup("");
  res.text = NULL;
done:
  nucleus_request_free(req);
  nucleus_free(ids);
  nucleus_free(prompt);
  free(history);
  return text;
}

/* The reply joins the history as the template expects it: its thinking as
 * reasoning_content (which thinking templates keep or drop), the answer
 * as content. */
static void add_reply(nucleus_model *model, json_t *messages, const char *text,
                      bool opened) {
  nucleus_reply_format f = nucleus_reply_default_format();
  f.calls = false;
  f.in_reasoning = opened;
  nucleus_tool_reply r;
  nucleus_error err;
  if (nucleus_reply_scan(model, &f, text, strlen(text), true, &r, &err) !=
      NUCLEUS_OK) {
    add_message(messages, "assistant", text, strlen(text));
    return;
  }
  add_message(messages, "assistant", r.content, r.content_len);
  if (r.reasoning_len)
    json_object_set_new(json_array_get(messages, json_array_size(messages) - 1),
                        "reasoning_content",
                        json_stringn(r.reasoning, r.reasoning_len));
  nucleus_tool_reply_clear(&r);
}

/* A JSON list of tools from path, compact (malloc'd); NULL with a message. */
static char *load_tools(const char *path) {
  json_error_t je;
  json_t *t = json_load_file(path, 0, &je);
  if (!json_is_array(t)) {
    fprintf(stderr, "error: --tools %s: %s\n", path,
            t ? "not a JSON list of tools" : je.text);
    json_decref(t);
    return NULL;
  }
  size_t i;
  json_t *tool;
  json_array_foreach(t, i, tool) {
    if (!json_is_string(
            json_object_get(json_object_get(tool, "function"), "name"))) {
      fprintf(stderr,
              "error: --tools %s: tools[%zu] must be {\"type\": "
              "\"function\", \"function\": {\"name\": ...}}\n",
              path, i);
      json_decref(t);
      return NULL;
    }
  }
  char *s = json_dumps(t, JSON_COMPACT);
  json_decref(t);
  return s;
}

/* The reply's calls, if any: shown, each result typed by the user, and the
 * turn recorded as the assistant's calls plus one tool message per call.
 * Returns true when there were calls (the model answers next). */
static bool tool_turn(nucleus_model *model, json_t *messages, const char *text,
                      bool tty) {
  nucleus_tool_reply r;
  nucleus_error err = {0};
  if (nucleus_tool_reply_scan(model, text, strlen(text), true, &r, &err) !=
          NUCLEUS_OK ||
      !r.n_calls) {
    if (r.content || r.calls) nucleus_tool_reply_clear(&r);
    return false;
  }
  json_t *calls = json_array();
  json_t *results = json_array();
  for (size_t i = 0; i < r.n_calls; i++) {
    char id[32];
    snprintf(id, sizeof id, "call_%zu_%zu", json_array_size(messages), i);
    fprintf(stdout, "[tool call %s] %s(%s)\n", id, r.calls[i].name,
            r.calls[i].arguments);
    if (tty) {
      fprintf(stdout, "result of %s> ", r.calls[i].name);
      fflush(stdout);
    }
    char *line = read_line();
    json_array_append_new(calls, json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id,
                                           "type", "function", "function",
                                           "name", r.calls[i].name, "arguments",
                                           r.calls[i].arguments));
    json_array_append_new(results, json_pack("{s:s,s:s,s:s}", "role", "tool",
                                             "tool_call_id", id, "content",
                                             line ? line : ""));
    free(line);
  }
  json_t *m = json_object();
  json_object_set_new(m, "role", json_string("assistant"));
  json_object_set_new(m, "content", json_stringn(r.content, r.content_len));
  json_object_set_new(m, "tool_calls", calls);
  json_array_append_new(messages, m);
  json_array_extend(messages, results);
  json_decref(results);
  nucleus_tool_reply_clear(&r);
  return true;
}

int cmd_chat(int argc, char **argv) {
  cli_options o;
  cli_options_init(&o);
  const char *system_prompt = NULL, *tools_path = NULL, *effort = NULL;
  const char *mmproj_path = NULL;
  bool stats = false;
  chat_thinking th = {.budget = -1, .tty = isatty(STDOUT_FILENO)};
  for (int i = 1; i < argc; i++) {
    int r = cli_options_parse(&o, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--stats")) {
      stats = true;
      continue;
    }
    if ((!strcmp(argv[i], "-s") || !strcmp(argv[i], "--system")) &&
        flag_value(argc, argv, i)) {
      system_prompt = argv[++i];
      continue;
    }
    if (!strcmp(argv[i], "--tools") && flag_value(argc, argv, i)) {
      tools_path = argv[++i];
      continue;
    }
    if (!strcmp(argv[i], "--mmproj") && flag_value(argc, argv, i)) {
      mmproj_path = argv[++i];
      continue;
    }
    if (!strcmp(argv[i], "--hide-thinking")) {
      th.hide = true;
      continue;
    }
    if (!strcmp(argv[i], "--reasoning-format") && flag_value(argc, argv, i)) {
      const char *v = argv[++i];
      if (strcmp(v, "none") && strcmp(v, "auto")) {
        fprintf(stderr, "error: --reasoning-format: '%s' is not none or auto\n",
                v);
        return 2;
      }
      th.inline_text = !strcmp(v, "none");
      continue;
    }
    if (!strcmp(argv[i], "--reasoning-budget") && flag_value(argc, argv, i)) {
      char *end = NULL;
      long v = strtol(argv[++i], &end, 10);
      if (!*argv[i] || *end || v < INT32_MIN || v > INT32_MAX) {
        fprintf(stderr, "error: --reasoning-budget: '%s' is not an integer\n",
                argv[i]);
        return 2;
      }
      th.budget = (int32_t)v; /* its range: nucleus_reasoning_check */
      continue;
    }
    if (!strcmp(argv[i], "--reasoning-effort") && flag_value(argc, argv, i)) {
      effort = argv[++i];
      if (strcmp(effort, "low") && strcmp(effort, "medium") &&
          strcmp(effort, "high")) {
        fprintf(stderr,
                "error: --reasoning-effort: '%s' is not low, medium or high\n",
                effort);
        return 2;
      }
      continue;
    }
    fprintf(stderr, "error: unknown or incomplete option '%s'\n\n", argv[i]);
    usage(stderr);
    return 2;
  }
  if (o.request.n != 1 || o.request.beam_width != 1) {
    fprintf(stderr, "error: chat replies with one sampled completion (no "
                    "--n-completions, no --beam-width)\n");
    return 2;
  }
  char *tools_json = tools_path ? load_tools(tools_path) : NULL;
  if (tools_path && !tools_json) return 2;
  nucleus_model *model = cli_load_model(&o);
  if (!model) {
    free(tools_json);
    return 1;
  }
  cli_options_defaults(&o, model, NUCLEUS_SURFACE_CLI);
  if (cli_options_prepare(&o, model)) {
    nucleus_model_free(model);
    free(tools_json);
    cli_options_free(&o);
    return 2;
  }
  nucleus_error err = {0};
  /* Fail early and clearly when the model has no chat template. */
  char *probe = NULL;
  size_t probe_len = 0;
  if (nucleus_chat_render(model, "[{\"role\":\"user\",\"content\":\"hi\"}]",
                          NULL, true, &probe, &probe_len, &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    nucleus_model_free(model);
    free(tools_json);
    return 1;
  }
  nucleus_free(probe);
  cli_note_template(model, "nucleus chat");
  const char *family = nucleus_model_reasoning_format(model);
  char kwargs[64];
  if (effort) { /* harmony reads the effort; the others switch thinking on */
    if (!strcmp(family, "none")) {
      fprintf(stderr, "error: --reasoning-effort: this model's chat template "
                      "has no thinking block\n");
      nucleus_model_free(model);
      free(tools_json);
      return 2;
    }
    if (!strcmp(family, "harmony"))
      snprintf(kwargs, sizeof kwargs, "{\"reasoning_effort\": \"%s\"}", effort);
    else
      snprintf(kwargs, sizeof kwargs, "{\"enable_thinking\": true}");
    th.kwargs = kwargs;
  }
  nucleus_request_params check = o.request;
  check.reasoning =
      (nucleus_reasoning_params){.close = "-", .budget = th.budget};
  if (nucleus_reasoning_check(&check, &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: --reasoning-budget: %s\n", err.message);
    nucleus_model_free(model);
    free(tools_json);
    return 2;
  }
  chat_images images = {0};
  if (mmproj_path && nucleus_mmproj_load(mmproj_path, model, &o.model,
                                         &images.mmproj, &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: --mmproj %s: %s\n", mmproj_path, err.message);
    nucleus_model_free(model);
    free(tools_json);
    return 1;
  }
  o.engine.mmproj = images.mmproj;
  nucleus_engine *engine = NULL;
  if (o.engine.kv_cache_tokens == 0) o.engine.kv_cache_tokens = 8192;
  if (nucleus_engine_create(model, &o.engine, &engine, &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    nucleus_mmproj_free(images.mmproj);
    nucleus_model_free(model);
    free(tools_json);
    return 1;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_sigint; /* no SA_RESTART: reads return on Ctrl-C */
  sigaction(SIGINT, &sa, NULL);

  json_t *messages = json_array();
  if (system_prompt)
    add_message(messages, "system", system_prompt, strlen(system_prompt));
  bool tty = isatty(STDIN_FILENO);
  fprintf(stderr, "nucleus chat: %s. /reset clears the history, /exit quits.\n",
          nucleus_model_name(model));
  if (tools_json)
    fprintf(stderr, "tools: %s call syntax\n",
            nucleus_model_tool_format(model));
  for (;;) {
    if (tty) {
      fputs("> ", stdout);
      fflush(stdout);
    }
    char *line = read_line();
    if (!line) break;
    if (!strcmp(line, "/exit") || !strcmp(line, "/quit")) {
      free(line);
      break;
    }
    if (!strncmp(line, "/image", 6) && (line[6] == ' ' || !line[6])) {
      const char *path = line + 6;
      while (*path == ' ')
        path++;
      if (!*path)
        fprintf(stderr, "error: /image PATH: the image file to attach\n");
      else
        chat_images_attach(&images, path);
      free(line);
      continue;
    }
    if (!strcmp(line, "/reset")) {
      chat_images_clear(&images);
      json_array_clear(messages);
      if (system_prompt)
        add_message(messages, "system", system_prompt, strlen(system_prompt));
      fprintf(stderr, "(history cleared)\n");
      free(line);
      continue;
    }
    if (!line[0]) {
      free(line);
      continue;
    }
    char *content = chat_images_message(&images, line);
    free(line);
    if (!content) continue;
    add_message(messages, "user", content, strlen(content));
    free(content);
    bool opened = false;
    char *text = reply(model, engine, &o, messages, tools_json, stats, &th,
                       &images, &opened);
    if (!text) {
      /* Could not even start: forget the turn (and its images). */
      json_array_remove(messages, json_array_size(messages) - 1);
      chat_images_forget_turn(&images);
      continue;
    }
    /* Calls get their results typed in, then the model answers (at most a
     * few rounds before the user's turn again). */
    for (int round = 0; tools_json && round < 8 && text &&
                        tool_turn(model, messages, text, tty);
         round++) {
      free(text);
      text = reply(model, engine, &o, messages, tools_json, stats, &th, &images,
                   &opened);
    }
    if (text) add_reply(model, messages, text, opened);
    free(text);
  }
  free(tools_json);
  json_decref(messages);
  nucleus_engine_free(engine);
  chat_images_clear(&images);
  nucleus_mmproj_free(images.mmproj);
  nucleus_model_free(model);
  cli_options_free(&o);
  return 0;
}
