/* nucleus params: the generation-parameter contract as a Markdown table
 * (docs/SERVER.md's parameter table is this output; a test keeps the two
 * equal), or, with -m, the defaults in force for a model. */
#include <stdio.h>
#include <string.h>

#include "cli_options.h"
#include "commands.h"
#include "model_flags.h"

static void usage(FILE *out) {
  fprintf(out, "usage: nucleus params [-m MODEL]\n\n"
               "Prints every generation parameter: its request field, CLI "
               "flag, range and\n"
               "default on each surface. With -m, also the defaults in force "
               "for that model\n"
               "(its general.sampling.* recommendations first).\n");
}

static void range(char *buf, size_t cap, const nucleus_param_info *p) {
  if (p->kind == NUCLEUS_PARAM_BOOL)
    snprintf(buf, cap, "true / false");
  else
    snprintf(buf, cap, "%s%.10g, %.10g]", p->min_exclusive ? "(" : "[", p->min,
             p->max);
}

static void value(char *buf, size_t cap, const nucleus_param_info *p,
                  double v) {
  if (p->kind == NUCLEUS_PARAM_BOOL)
    snprintf(buf, cap, "%s", v != 0 ? "true" : "false");
  else
    snprintf(buf, cap, "%g", v);
}

int cmd_params(int argc, char **argv) {
  const char *model_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
    if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) &&
        flag_value(argc, argv, i)) {
      model_path = argv[++i];
      continue;
    }
    fprintf(stderr, "error: unknown option '%s'\n\n", argv[i]);
    usage(stderr);
    return 2;
  }
  /* The model first: a file that does not load is the answer, not a table
   * printed before its error. */
  nucleus_model *model = NULL;
  if (model_path) {
    cli_options o;
    cli_options_init(&o);
    o.model_path = model_path;
    if (!(model = cli_load_model(&o))) return 1;
  }
  printf("| parameter | CLI flag | range | library | server | CLI | model "
         "file key | meaning |\n|---|---|---|---:|---:|---:|---|---|\n");
  for (size_t i = 0; i < nucleus_params_count(); i++) {
    const nucleus_param_info *p = nucleus_params_at(i);
    char r[64], d[3][32];
    range(r, sizeof r, p);
    for (int s = 0; s < 3; s++)
      value(d[s], sizeof d[s], p, p->defaults[s]);
    char flags[64] = "";
    if (p->cli_flag)
      snprintf(flags, sizeof flags, "`%s`%s%s%s", p->cli_flag,
               p->cli_alias ? ", `" : "", p->cli_alias ? p->cli_alias : "",
               p->cli_alias ? "`" : "");
    printf("| `%s` | %s | %s | %s | %s | %s | %s%s%s | %s |\n", p->name, flags,
           r, d[0], d[1], d[2], p->gguf_key ? "`" : "",
           p->gguf_key ? p->gguf_key : "", p->gguf_key ? "`" : "", p->help);
  }
  if (!model) return 0;
  nucleus_request_params srv =
      nucleus_request_params_for(model, NUCLEUS_SURFACE_SERVER);
  nucleus_request_params cli =
      nucleus_request_params_for(model, NUCLEUS_SURFACE_CLI);
  printf("\nIn force for %s (server / CLI):\n", nucleus_model_name(model));
  for (size_t i = 0; i < nucleus_params_count(); i++) {
    const nucleus_param_info *p = nucleus_params_at(i);
    char a[32], b[32];
    value(a, sizeof a, p, nucleus_params_value(&srv, p->name));
    value(b, sizeof b, p, nucleus_params_value(&cli, p->name));
    printf("  %-28s %s / %s%s\n", p->name, a, b,
           nucleus_model_recommends(model, p->name, NULL) ? "  (the model's)"
                                                          : "");
  }
  nucleus_model_free(model);
  return 0;
}
