/* Test helper: how far a model's logits are from a llama.cpp golden
 * (logits_golden.h), each prompt run in one call (chunked_forward.h).
 * Include after cmocka.h. */
#ifndef NC_TEST_GOLDEN_AGREEMENT_H
#define NC_TEST_GOLDEN_AGREEMENT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chunked_forward.h"
#include "logits_golden.h"

typedef struct agreement {
  int64_t n_pos, top1;
  double kl_mean, kl_max, diff_max;
} agreement;

/* Adds a prompt's first n rows (lg: n rows of nv logits) to a: per
 * position KL(llama.cpp || nucleus) over llama.cpp's top 32 plus one bucket
 * for the rest (into *kl_sum and kl_max), top-1, max |logit diff|. */
static inline void golden_add_rows(agreement *a, double *kl_sum,
                                   const golden_prompt *g, int32_t n,
                                   const float *lg, int32_t nv) {
  for (int32_t i = 0; i < n; i++) {
    const golden_pos *gp = &g->pos[i];
    const float *row = lg + (int64_t)i * nv;
    const double our = logits_lse(row, nv);
    double pt = 0, qt = 0, kl = 0;
    for (int k = 0; k < TOPK; k++) {
      const double pk = exp(gp->logit[k] - gp->lse);
      const double qk = exp(row[gp->id[k]] - our);
      pt += pk;
      qt += qk;
      kl += pk * log(pk / qk);
      a->diff_max =
          fmax(a->diff_max, fabs((double)row[gp->id[k]] - gp->logit[k]));
    }
    const double pr = fmax(1.0 - pt, 1e-30), qr = fmax(1.0 - qt, 1e-30);
    kl += pr * log(pr / qr);
    *kl_sum += kl;
    a->kl_max = fmax(a->kl_max, kl);
    a->top1 += argmax(row, nv) == gp->id[0];
    a->n_pos++;
  }
}

/* golden_add_rows over all of the prompt's rows. */
static inline void golden_add_prompt(agreement *a, double *kl_sum,
                                     const golden_prompt *g, const float *lg,
                                     int32_t nv) {
  golden_add_rows(a, kl_sum, g, g->n, lg, nv);
}

/* golden_add_prompt over every prompt, each run in one call, as a prompt
 * (as_prompt) or as tokens fed one per decode (flash attention's row
 * order, batch.h). */
static inline agreement golden_agreement(const nucleus_model *m,
                                         const golden_prompt *gold,
                                         int n_prompts, bool as_prompt) {
  agreement a = {0};
  double kl_sum = 0;
  const int32_t nv = nc_model_hparams(m)->n_vocab;
  float *lg = malloc(sizeof(float) * MAX_TOKENS * (size_t)nv);
  for (int p = 0; p < n_prompts; p++) {
    const golden_prompt *g = &gold[p];
    const int32_t all[1] = {g->n};
    run_chunked_prompt(m, g->tokens, g->n, as_prompt ? g->n : 0, all, 1, lg);
    golden_add_prompt(&a, &kl_sum, g, lg, nv);
  }
  a.kl_mean = kl_sum / (double)a.n_pos;
  free(lg);
  return a;
}

/* Fails the test unless a and b hold the same bits, saying the largest
 * difference. */
static inline void assert_same_bits(const float *a, const float *b, int64_t n,
                                    const char *what) {
  if (memcmp(a, b, sizeof(float) * (size_t)n) != 0) {
    double md = 0;
    for (int64_t i = 0; i < n; i++)
      md = fmax(md, fabs((double)a[i] - b[i]));
    fail_msg("%s: not bit-identical (max |diff| %g)", what, md);
  }
}

#endif
