/* Where the default model lives, and fetching it when it is missing.
 *
 * Looked for, in order: $NUCLEUS_MODEL (a file), then the file
 * SmolLM2-135M-Instruct.Q4_1.gguf in $NUCLEUS_MODELS, in
 * $XDG_CACHE_HOME/nucleus (~/.cache/nucleus), and in the models/ folder of
 * the repository the binary was built in. Missing everywhere, a binary in
 * its repository fetches it there; any other prints where it looked and
 * the command that fetches it. */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

#define DEFAULT_MODEL_NAME "SmolLM2-135M-Instruct.Q4_1.gguf"

/* The repository root when the binary lives in <root>/build/<variant>/ and
 * <root>/scripts/fetch_model.sh exists. */
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
  char script[PATH_MAX + 32];
  snprintf(script, sizeof script, "%s/scripts/fetch_model.sh", exe);
  if (access(script, X_OK) != 0) return -1;
  if ((size_t)snprintf(buf, cap, "%s", exe) >= cap) return -1;
  return 0;
}

/* The user's cache folder for models ($XDG_CACHE_HOME or ~/.cache). */
static int cache_dir(char *buf, size_t cap) {
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;
  if (xdg && *xdg)
    n = snprintf(buf, cap, "%s/nucleus", xdg);
  else if (home && *home)
    n = snprintf(buf, cap, "%s/.cache/nucleus", home);
  else
    return -1;
  return n > 0 && (size_t)n < cap ? 0 : -1;
}

static bool found_in(const char *dir, char *path, size_t cap) {
  int n = snprintf(path, cap, "%s/%s", dir, DEFAULT_MODEL_NAME);
  return n > 0 && (size_t)n < cap && access(path, R_OK) == 0;
}

const char *cli_default_model(char *path, size_t cap) {
  const char *env = getenv("NUCLEUS_MODEL");
  if (env && *env) {
    snprintf(path, cap, "%s", env);
    return path;
  }
  char dirs[3][PATH_MAX];
  int nd = 0;
  const char *models = getenv("NUCLEUS_MODELS");
  if (models && *models) snprintf(dirs[nd++], PATH_MAX, "%s", models);
  if (cache_dir(dirs[nd], PATH_MAX) == 0) nd++;
  char root[PATH_MAX];
  bool in_repo = repo_root(root, sizeof root) == 0;
  if (in_repo) snprintf(dirs[nd++], PATH_MAX, "%s/models", root);
  for (int i = 0; i < nd; i++)
    if (found_in(dirs[i], path, cap)) return path;
  if (in_repo) {
    fprintf(stderr,
            "default model missing: fetching it with %s/scripts/"
            "fetch_model.sh\n",
            root);
    char cmd[3 * PATH_MAX + 128];
    snprintf(cmd, sizeof cmd, "'%s/scripts/fetch_model.sh' '%s/models'", root,
             root);
    if (system(cmd) == 0 && found_in(dirs[nd - 1], path, cap)) return path;
    fprintf(stderr, "error: could not fetch the default model\n");
    return NULL;
  }
  char where[3 * PATH_MAX + 16] = "";
  for (int i = 0; i < nd; i++) {
    size_t used = strlen(where);
    snprintf(where + used, sizeof where - used, "%s%s", i ? ", " : "", dirs[i]);
  }
  fprintf(stderr,
          "error: the default model %s is not in %s (set $NUCLEUS_MODELS to "
          "look elsewhere).\n"
          "Fetch it from a nucleus checkout with:\n"
          "  scripts/fetch_model.sh %s\n"
          "or pass -m MODEL.\n",
          DEFAULT_MODEL_NAME, nd ? where : "any folder ($HOME is unset)",
          nd ? dirs[0] : "DIR");
  return NULL;
}
