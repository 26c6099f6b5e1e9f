/* nucleus run: generate a continuation of a prompt, streamed. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_images.h"
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
  fprintf(out,
          "usage: nucleus run [options] -p PROMPT\n\n"
          "Streams a continuation: greedy unless --temp is given; with\n"
          "--temp the other sampling options default as listed\n"
          "(llama.cpp's), or as the model file recommends\n"
          "(general.sampling.*).\n\n"
          "  -p, --prompt TEXT       the prompt\n"
          "  -f, --file FILE         read the prompt from a file\n"
          "  --tokens 1,2,3          the prompt as token ids\n"
          "  --mmproj FILE           a vision projector for the model\n"
          "                          (llama.cpp's mmproj GGUF)\n"
          "  --image FILE            an image (PNG, JPEG, WebP; repeat for\n"
          "                          more): the prompt becomes one user\n"
          "                          turn of the chat template, the images\n"
          "                          before the text, as llama-mtmd-cli\n"
          "                          builds it; only the reply is printed\n");
  cli_options_help(out, NUCLEUS_SURFACE_CLI);
}

static int32_t *parse_tokens(const char *s, size_t *n_out) {
  size_t cap = 16, n = 0;
  int32_t *ids = malloc(cap * sizeof *ids);
  while (ids && *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || v < 0 || v > INT32_MAX) {
      free(ids);
      return NULL;
    }
    if (n == cap) {
      cap *= 2;
      int32_t *p = realloc(ids, cap * sizeof *ids);
      if (!p) {
        free(ids);
        return NULL;
      }
      ids = p;
    }
    ids[n++] = (int32_t)v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') {
      free(ids);
      return NULL;
    }
  }
  *n_out = n;
  return ids;
}

int cmd_run(int argc, char **argv) {
  cli_options o;
  cli_options_init(&o);
  const char *prompt = NULL, *tokens_arg = NULL, *file = NULL, *mmproj = NULL;
  const char *image_paths[CLI_MAX_IMAGES];
  int n_images = 0;
  for (int i = 1; i < argc; i++) {
    int r = cli_options_parse(&o, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--image") && n_images == CLI_MAX_IMAGES) {
      fprintf(stderr, "error: --image: at most %d images\n", CLI_MAX_IMAGES);
      return 2;
    }
    const char **dest = !strcmp(a, "-p") || !strcmp(a, "--prompt") ? &prompt
                        : !strcmp(a, "-f") || !strcmp(a, "--file") ? &file
                        : !strcmp(a, "--tokens")                   ? &tokens_arg
                        : !strcmp(a, "--mmproj")                   ? &mmproj
                        : !strcmp(a, "--image") ? &image_paths[n_images]
                                                : NULL;
    if (dest) {
      if (!(*dest = flag_value(argc, argv, i))) {
        fprintf(stderr, "error: %s needs a value\n\n", a);
        usage(stderr);
        return 2;
      }
      i++;
      if (!strcmp(a, "--image")) n_images++;
    } else {
      fprintf(stderr, "error: unknown or incomplete option '%s'\n\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (o.request.beam_width > 1 && cli_options_given(&o, "temperature") &&
      o.request.sampling.temperature != 0) {
    fprintf(stderr, "error: --temp does not apply to beam search, which ranks "
                    "the raw log-probabilities\n");
    return 2;
  }
  if (n_images > 0 && (!mmproj || tokens_arg)) {
    fprintf(stderr, "error: --image needs --mmproj and a text prompt (-p or "
                    "-f), not --tokens\n");
    return 2;
  }
  char *file_text = NULL;
  if (file) {
    file_text = cli_read_file(file, NULL);
    if (!file_text) {
      fprintf(stderr, "error: cannot read %s: %s\n", file, strerror(errno));
      return 1;
    }
    prompt = file_text;
  }
  if (!prompt && !tokens_arg) {
    fprintf(stderr, "error: give a prompt with -p, -f or --tokens\n\n");
    usage(stderr);
    free(file_text);
    return 2;
  }

  nucleus_model *model = cli_load_model(&o);
  if (!model) {
    free(file_text);
    return 1;
  }
  /* Greedy unless --temp; with a temperature, the other sampling
   * parameters take llama.cpp's CLI defaults (or the model's). */
  if (cli_options_given(&o, "temperature") &&
      o.request.sampling.temperature > 0)
    cli_options_defaults(&o, model, NUCLEUS_SURFACE_CLI);
  else
    o.request.sampling.temperature = 0;
  int rc = 1;
  int32_t *ids = NULL;
  size_t n_ids = 0;
  nucleus_error err = {0};
  nucleus_engine *engine = NULL;
  nucleus_request *req = NULL;
  cli_images ci = {0};
  if (cli_options_prepare(&o, model)) goto done;
  if (n_images > 0) {
    if (cli_images_prompt(model, &o.model, mmproj, image_paths, n_images,
                          prompt, &ci))
      goto done;
    o.engine.mmproj = ci.mmproj;
    o.request.images = (const nucleus_image *const *)ci.images;
    o.request.n_images = (size_t)ci.n_images;
    ids = ci.ids;
    n_ids = ci.n_ids;
    ci.ids = NULL;
    prompt = NULL; /* a chat turn: only the reply is printed */
  } else if (tokens_arg) {
    ids = parse_tokens(tokens_arg, &n_ids);
    if (!ids) {
      fprintf(stderr, "error: --tokens: expected comma-separated ids\n");
      goto done;
    }
  } else if (nucleus_tokenize(model, prompt, strlen(prompt), true, true, &ids,
                              &n_ids, &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    goto done;
  }
  /* One request, nothing to reuse: llama.cpp's orders, its logits bit for
   * bit (nucleus.h, nucleus_row_orders). */
  if (o.engine.row_orders == NUCLEUS_ROW_ORDERS_AUTO)
    o.engine.row_orders = NUCLEUS_ROW_ORDERS_LLAMA;
  /* One request: a KV pool of one context is enough. */
  if (o.engine.kv_cache_tokens == 0) {
    int32_t ctx = o.engine.n_ctx ? o.engine.n_ctx : 8192;
    int32_t n_ctx_train = nucleus_model_n_ctx_train(model);
    if (ctx > n_ctx_train) ctx = n_ctx_train;
    int32_t seqs =
        o.request.beam_width > o.request.n ? o.request.beam_width : o.request.n;
    o.engine.kv_cache_tokens = (int64_t)ctx * seqs;
  }
  if (nucleus_engine_create(model, &o.engine, &engine, &err) != NUCLEUS_OK ||
      nucleus_engine_submit(engine, ids, n_ids, &o.request, &req, &err) !=
          NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    goto done;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  if (prompt && o.request.n == 1) fputs(prompt, stdout);
  cli_stream_result res;
  cli_stream_request(model, req, &o.request, stdout, &g_interrupted, NULL,
                     &res);
  cli_print_summary(&res);
  rc = res.reason == NUCLEUS_FINISH_ERROR ? 1 : 0;
  cli_stream_result_free(&res);
done:
  nucleus_request_free(req);
  nucleus_engine_free(engine);
  nucleus_free(ids);
  cli_images_free(&ci);
  nucleus_model_free(model);
  free(file_text);
  cli_options_free(&o);
  return rc;
}
