/* The token mask's cost in CPU time (load-robust): grammar_mask_bench MODEL
 * GRAMMAR_FILE [STEPS] [SEED] [--check | --reference] walks random paths
 * through the grammar (each step: the mask, then a uniformly drawn allowed
 * token; a path ends when the grammar completes or an end token is drawn, and
 * the next starts on a fresh matcher) until STEPS masks were computed, and
 * prints the mask's microseconds per step (CLOCK_THREAD_CPUTIME_ID): mean,
 * p50, p90, p99, max. --check also computes each mask with the reference
 * trie walk and fails (exit 1) on the first difference; --reference times
 * the reference walk instead (the cost without the memo). --text FILE
 * replays FILE's tokens (as the tokenizer splits it) instead of drawing
 * them, over and over, each time on a fresh matcher. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grammar/grammar_state.h"
#include "grammar_tool_load.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s MODEL GRAMMAR [STEPS] [SEED] [--check|--reference]\n",
            argv[0]);
    return 2;
  }
  long steps = argc > 3 ? atol(argv[3]) : 200;
  uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
  bool check = false, reference = false;
  const char *text_file = NULL;
  for (int i = 5; i < argc; i++) {
    if (strcmp(argv[i], "--check") == 0) check = true;
    if (strcmp(argv[i], "--reference") == 0) reference = true;
    if (strcmp(argv[i], "--text") == 0 && i + 1 < argc) text_file = argv[++i];
  }
  if (steps < 1 || steps > 1000000) steps = 200;
  if (seed == 0) seed = 1;
  nc_vocab *v = NULL;
  nc_grammar *g = NULL;
  nc_grammar_vocab *gv = NULL;
  if (grammar_tool_load(argv[1], argv[2], &v, &g, &gv)) return 1;
  nc_error err = {0};
  int32_t *trace = NULL; /* --text: its tokens, replayed in turn */
  size_t n_trace = 0, at_trace = 0;
  if (text_file) {
    FILE *tf = fopen(text_file, "rb");
    static char sample[1 << 16];
    size_t tl = tf ? fread(sample, 1, sizeof sample, tf) : 0;
    if (tf) fclose(tf);
    while (tl > 0 && (sample[tl - 1] == '\n' || sample[tl - 1] == '\r'))
      tl--; /* the file's own line end */
    if (tl == 0 ||
        nc_tokenize(v, sample, tl, false, false, &trace, &n_trace, &err) !=
            NC_OK ||
        n_trace == 0) {
      fprintf(stderr, "--text %s: nothing to replay\n", text_file);
      return 1;
    }
  }
  int32_t n = nc_grammar_vocab_n_tokens(gv);
  size_t words = ((size_t)n + 63) / 64;
  uint64_t *mask = calloc(words, sizeof *mask);
  uint64_t *ref = calloc(words, sizeof *ref);
  int32_t *allowed = malloc((size_t)n * sizeof *allowed);
  double *us = malloc((size_t)steps * sizeof *us);
  if (!mask || !ref || !allowed || !us) return 1;
  long done = 0, paths = 0;
  uint64_t units_max = 0; /* the budget's units one mask spent, at most */
  int rc = 0;
  while (done < steps && rc == 0) {
    nc_grammar_matcher *m = NULL;
    if (nc_grammar_matcher_create(g, &m, &err) != NC_OK) return 1;
    paths++;
    while (done < steps) {
      double t0 = now_us();
      if ((reference ? nc_grammar_mask_reference(m, gv, mask, &err)
                     : nc_grammar_matcher_mask(m, gv, mask, &err)) != NC_OK) {
        fprintf(stderr, "mask: %s\n", err.message);
        rc = 1;
        break;
      }
      us[done++] = now_us() - t0;
      if (m->work.spent > units_max) units_max = m->work.spent;
      if (check) {
        if (nc_grammar_mask_reference(m, gv, ref, &err) != NC_OK) {
          fprintf(stderr, "reference: %s\n", err.message);
          rc = 1;
          break;
        }
        if (memcmp(mask, ref, words * sizeof *mask) != 0) {
          fprintf(stderr, "mask differs from the reference at step %ld\n",
                  done);
          rc = 1;
          break;
        }
      }
      int32_t k = 0;
      for (int32_t i = 0; i < n; i++)
        if ((mask[i / 64] >> (i % 64)) & 1) allowed[k++] = i;
      if (k == 0) break;
      int32_t t = allowed[next_rand(&seed) % (uint64_t)k];
      if (trace) {
        if (at_trace == n_trace) break; /* the text's end: a new path */
        t = trace[at_trace++];
        if (!((mask[t / 64] >> (t % 64)) & 1)) {
          fprintf(stderr, "--text: token %d (the %zu-th) is masked\n", (int)t,
                  at_trace);
          rc = 1;
          break;
        }
      }
      bool ok;
      if (nc_grammar_matcher_accept_token(m, gv, t, &ok, &err) != NC_OK ||
          !ok) {
        fprintf(stderr, "allowed token %d refused\n", (int)t);
        rc = 1;
        break;
      }
      if (nc_grammar_matcher_complete(m) ||
          nc_grammar_vocab_kind(gv, t) == NC_GRAMMAR_TOKEN_END)
        break;
    }
    nc_grammar_matcher_free(m);
    at_trace = 0;
  }
  free(trace);
  qsort(us, (size_t)done, sizeof *us, cmp_double);
  double sum = 0;
  for (long i = 0; i < done; i++)
    sum += us[i];
  if (done > 0)
    printf("mask us/step over %ld steps (%ld paths): mean %.1f p50 %.1f "
           "p90 %.1f p99 %.1f max %.1f; work units max %llu%s\n",
           done, paths, sum / (double)done, us[done / 2], us[done * 9 / 10],
           us[done * 99 / 100], us[done - 1], (unsigned long long)units_max,
           check       ? " (checked)"
           : reference ? " (reference walk)"
                       : "");
  free(us);
  free(allowed);
  free(ref);
  free(mask);
  nc_grammar_vocab_free(gv);
  nc_grammar_free(g);
  nc_vocab_free(v);
  return rc;
}
