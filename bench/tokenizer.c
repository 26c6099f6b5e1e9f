/* Tokenizer throughput: seconds (thread CPU time, best of R runs) to
 * tokenize each file with a model's vocab. Driven by bench/tokenizer.py,
 * which compares with llama.cpp in the same run.
 *   build/release/bench/tokenizer MODEL.gguf REPEATS FILE... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/gguf.h"
#include "tokenizer/vocab.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return p;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODEL.gguf REPEATS FILE...\n", argv[0]);
    return 2;
  }
  nc_error err = {0};
  gguf_file *f = NULL;
  nc_vocab *v = NULL;
  double t0 = now_s();
  if (gguf_open(argv[1], &f, &err) != NC_OK ||
      nc_vocab_load(f, &v, &err) != NC_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    return 1;
  }
  printf("load %.4f s\n", now_s() - t0);
  int reps = atoi(argv[2]);
  for (int i = 3; i < argc; i++) {
    size_t len = 0;
    char *text = read_file(argv[i], &len);
    if (!text) {
      fprintf(stderr, "error: cannot read %s\n", argv[i]);
      return 1;
    }
    double best = 1e30;
    size_t n_ids = 0;
    for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
      int32_t *ids = NULL;
      double t = now_s();
      if (nc_tokenize(v, text, len, false, false, &ids, &n_ids, &err) !=
          NC_OK) {
        fprintf(stderr, "error: %s\n", err.message);
        return 1;
      }
      t = now_s() - t;
      if (t < best) best = t;
      free(ids);
    }
    printf("%s %zu bytes %zu tokens %.6f s\n", argv[i], len, n_ids, best);
    free(text);
  }
  nc_vocab_free(v);
  gguf_close(f);
  return 0;
}
