/* Where the default model lives, and fetching it when it is missing. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

#define DEFAULT_MODEL_NAME "SmolLM2-135M-Instruct.Q4_1.gguf"

/* The repository root: the binary lives in <root>/build/<variant>/nucleus. */
static int repo_root(char *buf, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  for (int up = 0; up < 3; up++) {
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = '\0';
  }
  if ((size_t)snprintf(buf, cap, "%s", exe) >= cap) return -1;
  return 0;
}

const char *cli_default_model(void) {
  static char path[PATH_MAX + 64];
  const char *env = getenv("NUCLEUS_MODEL");
  if (env && *env) return env;
  char root[PATH_MAX];
  if (repo_root(root, sizeof root) != 0) {
    fprintf(stderr, "error: cannot locate the default model; pass -m MODEL\n");
    return NULL;
  }
  snprintf(path, sizeof path, "%s/models/%s", root, DEFAULT_MODEL_NAME);
  if (access(path, R_OK) == 0) return path;
  char script[PATH_MAX + 64];
  snprintf(script, sizeof script, "%s/scripts/fetch_model.sh", root);
  if (access(script, X_OK) != 0) {
    fprintf(stderr, "error: default model %s is missing; pass -m MODEL\n",
            path);
    return NULL;
  }
  fprintf(stderr, "default model missing: fetching it with %s\n", script);
  char cmd[3 * PATH_MAX + 128];
  snprintf(cmd, sizeof cmd, "'%s' '%s/models'", script, root);
  if (system(cmd) != 0 || access(path, R_OK) != 0) {
    fprintf(stderr, "error: could not fetch the default model\n");
    return NULL;
  }
  return path;
}
