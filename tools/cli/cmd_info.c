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
          "shape, offset, bytes), the KV cache's bytes per position when\n"
          "this build runs the model (and those of its sliding-window\n"
          "layers, and a hybrid model's recurrent state per sequence), then\n"
          "the tensor types and the architectures this build runs.\n"
          "Without a file: the default model.\n"
          "Exit status 1 when the file is missing or malformed.\n");
}

/* The KV cache per position of the file's model, when this build runs it:
 * all of it, and the part on sliding-window layers (kept for the window's
 * positions only). */
static void kv_line(const char *path) {
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = 1;
  nucleus_model *m = NULL;
  nucleus_error err = {0};
  if (nucleus_model_load(path, &mp, &m, &err) != NUCLEUS_OK) return;
  int32_t window = 0;
  const size_t all = nucleus_model_kv_bytes_per_position(m);
  const size_t swa = nucleus_model_kv_bytes_per_position_swa(m, &window);
  printf("KV cache (%s): %zu bytes per position", nucleus_model_arch(m), all);
  if (swa)
    printf(", %zu of them on sliding-window layers, kept for the last %d "
           "positions only: %zu per position past the window",
           swa, (int)window, all - swa);
  int32_t n_layer = 0, n_rec = 0;
  const int32_t own = nucleus_model_kv_layers(m, &n_layer);
  const size_t state = nucleus_model_state_bytes_per_sequence(m, &n_rec);
  /* (a recurrent layer keeps state, no K/V) */
  if (own + n_rec < n_layer)
    printf("; %d of %d layers keep K/V, %d read another layer's", (int)own,
           (int)n_layer, (int)(n_layer - own - n_rec));
  if (state)
    printf("; recurrent state (%d of %d layers): %zu bytes per sequence, "
           "whatever its length",
           (int)n_rec, (int)n_layer, state);
  printf("\n");
  nucleus_model_free(m);
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
  kv_line(path);
  printf("supported tensor types:");
  for (size_t i = 0; i < nucleus_type_count(); i++)
    printf("%s %s", i ? "," : "", nucleus_type_name(i));
  printf("\nsupported architectures:");
  for (size_t i = 0; i < nucleus_arch_count(); i++)
    printf("%s %s", i ? "," : "", nucleus_arch_name(i));
  printf("\n");
  return fflush(stdout) == 0 ? 0 : 1;
}
