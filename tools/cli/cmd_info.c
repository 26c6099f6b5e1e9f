/* nucleus info: print a GGUF file's metadata and tensor table. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "nucleus.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: nucleus info [FILE.gguf | -m FILE.gguf]\n\n"
          "Prints the header, every metadata key (type and value; arrays\n"
          "abbreviated with their count) and the tensor table (name, type,\n"
          "shape, offset, bytes), then the tensor types and the\n"
          "architectures this build runs.\n"
          "Without a file: the default model.\n"
          "Exit status 1 when the file is missing or malformed.\n");
}

int cmd_info(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(arg, "-m") || !strcmp(arg, "--model")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "nucleus info: %s needs a file\n", arg);
        return 2;
      }
      arg = argv[++i];
    } else if (arg[0] == '-' && arg[1]) {
      fprintf(stderr, "nucleus info: unknown option '%s'\n\n", arg);
      usage(stderr);
      return 2;
    }
    if (path) {
      fprintf(stderr, "nucleus info: one file at a time\n\n");
      usage(stderr);
      return 2;
    }
    path = arg;
  }
  char model_buf[CLI_MODEL_PATH_MAX];
  if (!path) path = cli_default_model(model_buf, sizeof model_buf);
  if (!path) return 1;
  nucleus_error err = {0};
  if (nucleus_print_gguf_info(path, stdout, &err) != NUCLEUS_OK) {
    fflush(stdout);
    fprintf(stderr, "nucleus info: %s\n", err.message);
    return 1;
  }
  printf("supported tensor types:");
  for (size_t i = 0; i < nucleus_type_count(); i++)
    printf("%s %s", i ? "," : "", nucleus_type_name(i));
  printf("\nsupported architectures:");
  for (size_t i = 0; i < nucleus_arch_count(); i++)
    printf("%s %s", i ? "," : "", nucleus_arch_name(i));
  printf("\n");
  return fflush(stdout) == 0 ? 0 : 1;
}
