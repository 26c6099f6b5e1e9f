/* vision_encode: the time nucleus_mmproj_encode takes on one image (the
 * public call: resize, normalise, the ViT, the projector), for
 * bench/vision.py. Prints one line: "rows N ms BEST MEDIAN cpu_ms BEST
 * MEDIAN" over REPS encodes after one warm-up (cpu_ms: the process's CPU
 * time, every thread's, for comparing builds on a busy machine).
 *
 * usage: vision_encode LM.gguf MMPROJ.gguf IMAGE THREADS [REPS] [FLASH] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nucleus.h"

static double clock_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n > 0 ? malloc((size_t)n) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: vision_encode LM.gguf MMPROJ.gguf IMAGE THREADS "
                    "[REPS] [FLASH 0/1]\n");
    return 2;
  }
  const int threads = atoi(argv[4]);
  const int reps = argc > 5 ? atoi(argv[5]) : 3;
  const int flash = argc > 6 ? atoi(argv[6]) : 1;
  if (threads < 1 || threads > 512 || reps < 1 || reps > 100) {
    fprintf(stderr, "THREADS in [1, 512], REPS in [1, 100]\n");
    return 2;
  }
  nucleus_model_params mp = nucleus_model_default_params();
  mp.n_threads = threads;
  mp.flash_attn = flash ? NUCLEUS_FLASH_ATTN_ON : NUCLEUS_FLASH_ATTN_OFF;
  nucleus_model *lm = NULL;
  nucleus_mmproj *mm = NULL;
  nucleus_image *img = NULL;
  nucleus_error err = {0};
  size_t len = 0;
  char *bytes = slurp(argv[3], &len);
  if (!bytes) {
    fprintf(stderr, "cannot read %s\n", argv[3]);
    return 1;
  }
  int rc = 1;
  float *out = NULL;
  double *ms = calloc(2 * (size_t)reps, sizeof *ms);
  int32_t rows = 0;
  if (nucleus_model_load(argv[1], &mp, &lm, &err) != NUCLEUS_OK ||
      nucleus_mmproj_load(argv[2], lm, &mp, &mm, &err) != NUCLEUS_OK ||
      nucleus_image_decode(bytes, len, NULL, &img, &err) != NUCLEUS_OK ||
      nucleus_mmproj_image_tokens(mm, img, &rows, &err) != NUCLEUS_OK) {
    fprintf(stderr, "error: %s\n", err.message);
    goto done;
  }
  const size_t n = (size_t)rows * (size_t)nucleus_mmproj_n_embd(mm);
  out = malloc(n * sizeof *out);
  if (!out || !ms) goto done;
  for (int r = -1; r < reps; r++) { /* r = -1: the warm-up */
    const double t0 = clock_ms(CLOCK_MONOTONIC);
    const double c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    if (nucleus_mmproj_encode(mm, img, out, n, &err) != NUCLEUS_OK) {
      fprintf(stderr, "error: %s\n", err.message);
      goto done;
    }
    if (r >= 0) {
      ms[r] = clock_ms(CLOCK_MONOTONIC) - t0;
      ms[reps + r] = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
  }
  qsort(ms, (size_t)reps, sizeof *ms, cmp);
  qsort(ms + reps, (size_t)reps, sizeof *ms, cmp);
  printf("rows %d ms %.1f %.1f cpu_ms %.1f %.1f\n", (int)rows, ms[0],
         ms[reps / 2], ms[reps], ms[reps + reps / 2]);
  rc = 0;
done:
  free(out);
  free(ms);
  free(bytes);
  nucleus_image_free(img);
  nucleus_mmproj_free(mm);
  nucleus_model_free(lm);
  return rc;
}
