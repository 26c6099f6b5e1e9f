#include "model_flags.h"

#include <string.h>

int model_flags_parse(nucleus_model_params *mp, int argc, char **argv, int *i,
                      char *msg, size_t cap) {
  const char *a = argv[*i];
  const nucleus_option_info *opt =
      a[0] == '-' ? nucleus_model_options_find(a) : NULL;
  if (!opt) return 0;
  const char *v = NULL;
  if (opt->kind != NUCLEUS_OPTION_FLAG) {
    if (*i + 1 >= argc) {
      snprintf(msg, cap, "%s needs a value", a);
      return -1;
    }
    v = argv[++*i];
  }
  nucleus_error err = {0};
  if (nucleus_model_params_set(mp, opt, v, &err) != NUCLEUS_OK) {
    snprintf(msg, cap, "%s: %s", a, err.message);
    return -1;
  }
  return 1;
}

/* Prints text from column 26 on, wrapped at 79 columns. */
static void wrapped(FILE *out, const char *text) {
  const int indent = 26, width = 79 - indent;
  size_t n = strlen(text);
  while (n > (size_t)width) {
    int cut = width;
    while (cut > 0 && text[cut] != ' ')
      cut--;
    if (cut == 0) cut = width;
    fprintf(out, "%.*s\n%*s", cut, text, indent, "");
    text += cut + (text[cut] == ' ');
    n = strlen(text);
  }
  fprintf(out, "%s\n", text);
}

void model_flags_help(FILE *out) {
  const nucleus_model_params d = nucleus_model_default_params();
  for (size_t k = 0; k < nucleus_model_options_count(); k++) {
    const nucleus_option_info *o = nucleus_model_options_at(k);
    char names[64], line[512];
    snprintf(names, sizeof names, "%s%s%s%s%s",
             o->cli_alias ? o->cli_alias : "", o->cli_alias ? ", " : "",
             o->cli_flag, o->metavar ? " " : "", o->metavar ? o->metavar : "");
    snprintf(line, sizeof line, "%s", o->help);
    if (o->kind != NUCLEUS_OPTION_FLAG) {
      char val[40];
      nucleus_model_params_format(&d, o, val, sizeof val);
      snprintf(line + strlen(line), sizeof line - strlen(line), "; default %s",
               val);
    }
    fprintf(out, "  %-23s ", names);
    wrapped(out, line);
  }
}
