#include "model_flags.h"

#include <stdbool.h>
#include <string.h>

const char *flag_value(int argc, char **argv, int i) {
  if (i + 1 >= argc) return NULL;
  const char *v = argv[i + 1];
  bool option = v[0] == '-' && ((v[1] >= 'a' && v[1] <= 'z') ||
                                (v[1] >= 'A' && v[1] <= 'Z') || v[1] == '-');
  return option && strcmp(v, "--") ? NULL : v;
}

/* The value of the option at argv[*i] (NULL for a flag); -1 when missing. */
static int take_value(const nucleus_option_info *opt, int argc, char **argv,
                      int *i, const char **v, char *msg, size_t cap) {
  *v = NULL;
  if (opt->kind == NUCLEUS_OPTION_FLAG) return 0;
  if (!flag_value(argc, argv, *i)) {
    snprintf(msg, cap, "%s needs a value", argv[*i]);
    return -1;
  }
  *v = argv[++*i];
  return 0;
}

int model_flags_parse(nucleus_model_params *mp, int argc, char **argv, int *i,
                      char *msg, size_t cap) {
  const char *a = argv[*i], *v;
  const nucleus_option_info *opt =
      a[0] == '-' ? nucleus_model_options_find(a) : NULL;
  if (!opt) return 0;
  if (take_value(opt, argc, argv, i, &v, msg, cap)) return -1;
  nucleus_error err = {0};
  if (nucleus_model_params_set(mp, opt, v, &err) != NUCLEUS_OK) {
    snprintf(msg, cap, "%s: %s", a, err.message);
    return -1;
  }
  return 1;
}

int engine_flags_parse(nucleus_engine_params *ep, int argc, char **argv, int *i,
                       char *msg, size_t cap) {
  const char *a = argv[*i], *v;
  const nucleus_option_info *opt =
      a[0] == '-' ? nucleus_engine_options_find(a) : NULL;
  if (!opt) return 0;
  if (take_value(opt, argc, argv, i, &v, msg, cap)) return -1;
  nucleus_error err = {0};
  if (nucleus_engine_params_set(ep, opt, v, &err) != NUCLEUS_OK) {
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

/* One option's line: its flags, its help, its other spelling and its
 * default (val, as the library formats it; NULL for a flag). */
static void help_line(FILE *out, const nucleus_option_info *o,
                      const char *val) {
  char names[64], line[512];
  snprintf(names, sizeof names, "%s%s%s%s%s", o->cli_alias ? o->cli_alias : "",
           o->cli_alias ? ", " : "", o->cli_flag, o->metavar ? " " : "",
           o->metavar ? o->metavar : "");
  snprintf(line, sizeof line, "%s", o->help);
  const char *also = nucleus_option_other_spelling(o);
  if (also)
    snprintf(line + strlen(line), sizeof line - strlen(line), " (%s too)",
             also);
  if (val)
    snprintf(line + strlen(line), sizeof line - strlen(line), "; default %s",
             val);
  fprintf(out, "  %-23s ", names);
  wrapped(out, line);
}

void model_flags_help(FILE *out) {
  const nucleus_model_params d = nucleus_model_default_params();
  for (size_t k = 0; k < nucleus_model_options_count(); k++) {
    const nucleus_option_info *o = nucleus_model_options_at(k);
    char val[64];
    nucleus_model_params_format(&d, o, val, sizeof val);
    help_line(out, o, o->kind != NUCLEUS_OPTION_FLAG ? val : NULL);
  }
}

void engine_flags_help(FILE *out) {
  const nucleus_engine_params d = nucleus_engine_default_params();
  for (size_t k = 0; k < nucleus_engine_options_count(); k++) {
    const nucleus_option_info *o = nucleus_engine_options_at(k);
    char val[64];
    nucleus_engine_params_format(&d, o, val, sizeof val);
    help_line(out, o, o->kind != NUCLEUS_OPTION_FLAG ? val : NULL);
  }
}
