/* Unit-test helpers for llama.cpp logits goldens (the format of
 * scripts/gen_logits_golden.py) and for comparing logit rows. */
#ifndef NUCLEUS_TESTS_LOGITS_GOLDEN_H
#define NUCLEUS_TESTS_LOGITS_GOLDEN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPK 32
#define MAX_PROMPTS 8
#define MAX_TOKENS 512

typedef struct golden_pos {
  double lse;
  int32_t id[TOPK];
  float logit[TOPK];
} golden_pos;

typedef struct golden_prompt {
  int32_t n;
  int32_t tokens[MAX_TOKENS];
  golden_pos *pos;
} golden_prompt;

/* log(sum(exp(x))) over n logits, in double. */
static inline double logits_lse(const float *x, int32_t n) {
  double mx = -INFINITY, s = 0;
  for (int32_t i = 0; i < n; i++)
    mx = x[i] > mx ? x[i] : mx;
  for (int32_t i = 0; i < n; i++)
    s += exp((double)x[i] - mx);
  return mx + log(s);
}

/* Reads a golden (the format of scripts/gen_logits_golden.py: "# ..."
 * comments, "prompt N", "tokens ...", then per position "pos P lse X" and
 * a line of TOPK "id:logit") into g[]; returns the number of prompts, or
 * -1 when the file is missing or malformed. */
static inline int load_golden(golden_prompt *g, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  static char line[1 << 16];
  int cur = -1, pos = -1, rc = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    if (!strncmp(line, "prompt ", 7)) {
      if (++cur >= MAX_PROMPTS) break;
      g[cur].n = atoi(line + 7);
      if (g[cur].n < 1 || g[cur].n > MAX_TOKENS)
        rc = -1;
      else
        g[cur].pos = calloc((size_t)g[cur].n, sizeof *g[cur].pos);
      pos = -1;
    } else if (cur >= 0 && !strncmp(line, "tokens ", 7)) {
      char *s = line + 7;
      for (int i = 0; i < g[cur].n; i++)
        g[cur].tokens[i] = (int32_t)strtol(s, &s, 10);
    } else if (cur >= 0 && !strncmp(line, "pos ", 4)) {
      char *s = line + 4;
      pos = (int)strtol(s, &s, 10);
      s = strstr(s, "lse ");
      if (pos < 0 || pos >= g[cur].n || !s)
        rc = -1;
      else
        g[cur].pos[pos].lse = strtod(s + 4, NULL);
    } else if (cur >= 0 && pos >= 0 && line[0] >= '0' && line[0] <= '9') {
      char *s = line;
      for (int k = 0; k < TOPK && !rc; k++) {
        g[cur].pos[pos].id[k] = (int32_t)strtol(s, &s, 10);
        if (*s != ':')
          rc = -1;
        else
          g[cur].pos[pos].logit[k] = strtof(s + 1, &s);
      }
    }
  }
  fclose(f);
  if (rc) return -1;
  return cur + 1 > 0 ? (cur + 1 > MAX_PROMPTS ? MAX_PROMPTS : cur + 1) : -1;
}

static inline int32_t argmax(const float *x, int32_t n) {
  int32_t b = 0;
  for (int32_t i = 1; i < n; i++)
    if (x[i] > x[b]) b = i;
  return b;
}

/* The ids of the TOPK largest of x (n >= TOPK), largest first. */
static inline void top_ids(const float *x, int32_t n, int32_t top[TOPK]) {
  int k = 0;
  for (int32_t i = 0; i < n; i++) {
    int j;
    if (k < TOPK)
      j = k++;
    else if (x[i] > x[top[TOPK - 1]])
      j = TOPK - 1;
    else
      continue;
    while (j > 0 && x[top[j - 1]] < x[i]) {
      top[j] = top[j - 1];
      j--;
    }
    top[j] = i;
  }
}

static inline double logsumexp(const float *x, int32_t n) {
  float max = x[argmax(x, n)];
  double s = 0;
  for (int32_t i = 0; i < n; i++)
    s += exp((double)x[i] - max);
  return max + log(s);
}

/* KL(p || q) over the whole vocabulary, p and q the softmax of a and b. */
static inline double kl_full(const float *a, const float *b, int32_t n) {
  const double la = logsumexp(a, n), lb = logsumexp(b, n);
  double kl = 0;
  for (int32_t i = 0; i < n; i++) {
    const double lpa = a[i] - la, lpb = b[i] - lb;
    kl += exp(lpa) * (lpa - lpb);
  }
  return kl > 0 ? kl : 0;
}

#endif
