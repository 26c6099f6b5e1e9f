/* sampler: logits to tokens, per request, across a batch.
 *
 * A sampler (nc_sampler) holds one completion's settings and history; the
 * workspace (nc_sample_workspace) is the caller's reusable scratch. One
 * nc_sample_batch call samples every row of a [rows, vocab] logits matrix,
 * each row with its own sampler. A row's result depends only on its logits,
 * its sampler and its suppress list: never on the other rows.
 *
 * THE ORDER (fixed, one per request):
 *   0. grammar: the row's grammar mask (structured output, grammar.h), when
 *      given: tokens whose bit is clear -> -inf. A hard constraint: no later
 *      stage can bring a masked token back;
 *   1. logit bias (values clamped to [-100, 100]), then masks: tokens not in
 *      allowed_tokens, banned_tokens and the row's suppress list -> -inf;
 *   2. repetition penalty over prompt + output, once per distinct token
 *      (not per occurrence): a positive logit is divided by r, a negative
 *      one multiplied by r;
 *   3. presence and frequency penalties over the output only (OpenAI):
 *      logit -= count * frequency + (count > 0) * presence;
 *   4. temperature 0 = greedy: the argmax of the logits after 1-3, ties to
 *      the lowest id; nothing below runs. Otherwise logits / T;
 *   5. top-k: the k largest logits (exactly k: ties at the boundary go to
 *      the lower ids; k >= n_vocab keeps everything), by a heap that skips
 *      blocks of 16 that cannot enter it (no sort of the vocabulary);
 *   6. top-p: the smallest set, in order of probability (ties to the lower
 *      id), whose mass reaches p of the mass left after top-k; the top token
 *      is always kept, so p -> 0 tends to greedy. Found without sorting:
 *      the tokens within a threshold of the max are collected (the
 *      threshold widens only while they hold less than the target mass),
 *      then a quickselect on mass finds the prefix among them;
 *   7. min-p: keep p_i >= min_p * p_max (after temperature and top-k/top-p:
 *      relative to the top token, so truncation does not change it);
 *   8. typical-p (locally typical sampling): with H the entropy of what is
 *      left, keep the smallest set ordered by |-log p_i - H| (ties to the
 *      lower id) whose mass reaches typical_p; at least one token (which
 *      need not be the top one);
 *   9. draw: one uniform u from the request's counter-based generator keyed
 *      on (seed, stream, step) (see rng.h), inverse CDF over the kept tokens
 *      in a deterministic order (the kept set as the truncating stages left
 *      it; every token by id when nothing truncated). A token of zero
 *      probability is never drawn. An inspected row records the walk: u's
 *      target, the drawn token's running-sum interval (the doubles compared)
 *      and the listed candidates' intervals in walk order.
 *
 * Choices that differ from vLLM / llama.cpp:
 *   - llama.cpp applies temperature last (after top-k/top-p/min-p); we apply
 *     it before truncation like vLLM/HF, so top-p and min-p see the tempered
 *     distribution.
 *   - vLLM applies min-p before top-k/top-p; we apply it after (like HF and
 *     SGLang). Since min-p is relative to the top token, the only difference
 *     is that top-p's mass is measured before min-p cuts the tail.
 *   - vLLM keeps every token tied with the k-th logit; we keep exactly k.
 *   - vLLM raises 0 < T < 0.01 to 0.01; we keep T exact (the computation is
 *     done as exp((x - max) / T), which does not overflow), so tiny T tends
 *     to greedy (a T whose inverse overflows, below ~3e-39, is greedy).
 *     T is allowed in [0, 100] (OpenAI documents 0..2).
 *   - llama.cpp's repetition/presence/frequency penalties read a window of
 *     the last 64 tokens (prompt tail included); we use the whole prompt +
 *     output for repetition and the output only for presence/frequency (as
 *     vLLM and OpenAI).
 *   - typical-p is after top-p/min-p (llama.cpp: before top-p; vLLM: none).
 *   - logprobs: raw by default (log-softmax of the unprocessed logits, as
 *     OpenAI, vLLM and llama.cpp's /v1); processed_logprobs gives the final
 *     distribution after truncation (for greedy rows: the log-softmax of the
 *     logits after steps 1-3, like vLLM's processed mode). -inf is reported
 *     as -9999.0 (NC_LOGPROB_FLOOR), as OpenAI and vLLM do; every reported
 *     logprob lies in [-9999, 0].
 *   - a row whose logits hold NaN or +inf, or whose tokens are all masked,
 *     fails alone (its result carries the status); the other rows are
 *     sampled as usual.
 */
#ifndef NC_SAMPLER_H
#define NC_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define NC_LOGPROB_FLOOR (-9999.0f)
/* (the scalar parameters' ranges live in sampler_contract.c only) */

/* The stages, in the pipeline's order, as the inspector names them
 * (nucleus_inspect.stages): grammar (a structured-output mask, when one
 * runs before step 1), logit_bias (step 1: bias and masks),
 * repetition_penalty (2), presence_frequency_penalty (3), temperature (4),
 * top_k (5), top_p (6), min_p (7), typical_p (8). */
typedef enum nc_stage {
  NC_STAGE_GRAMMAR,
  NC_STAGE_LOGIT_BIAS,
  NC_STAGE_REPETITION,
  NC_STAGE_PRESENCE_FREQUENCY,
  NC_STAGE_TEMPERATURE,
  NC_STAGE_TOP_K,
  NC_STAGE_TOP_P,
  NC_STAGE_MIN_P,
  NC_STAGE_TYPICAL_P,
  NC_STAGE_COUNT,
} nc_stage;

const char *nc_stage_name(nc_stage stage);

typedef struct nc_sampler nc_sampler;
typedef struct nc_sample_workspace nc_sample_workspace;

/* Checks every field against its allowed range and every token id against
 * n_vocab; the message names the parameter, its value and the range. Each
 * logit_bias entry as nc_logit_bias_check. */
nc_code nc_sampling_validate(const nucleus_sampling_params *p, int32_t n_vocab,
                             nc_error *err);

/* Entry index of a logit bias: index below NUCLEUS_MAX_LOGIT_BIAS, the
 * token in [0, n_vocab) (not checked when n_vocab <= 0: the vocabulary is
 * not known yet), the bias a number in [-NUCLEUS_MAX_LOGIT_BIAS_VALUE,
 * NUCLEUS_MAX_LOGIT_BIAS_VALUE]. The one message of each failure, on every
 * surface (nucleus_logit_bias_check). */
nc_code nc_logit_bias_check(size_t index, nucleus_logit_bias b, int32_t n_vocab,
                            nc_error *err);

/* Validates p, then copies everything it needs (the caller's arrays may be
 * freed afterwards). seed keys the generator; stream distinguishes the
 * completions of one request (n > 1). */
nc_code nc_sampler_create(const nucleus_sampling_params *p, int32_t n_vocab,
                          uint64_t seed, uint64_t stream, nc_sampler **out,
                          nc_error *err);
void nc_sampler_free(nc_sampler *s);

/* A full copy (settings, history, step) with another stream. */
nc_code nc_sampler_clone(const nc_sampler *s, uint64_t new_stream,
                         nc_sampler **out, nc_error *err);

/* Prompt tokens: seen by the repetition penalty. Ids out of range are
 * ignored. */
void nc_sampler_accept_prompt(nc_sampler *s, const int32_t *ids, size_t n);
/* One output token: updates the penalty counts incrementally, step++.
 * (Should growing the history fail for lack of memory, that token's count
 * is lost: the penalty weakens, nothing else changes.) */
void nc_sampler_accept(nc_sampler *s, int32_t id);

uint64_t nc_sampler_step(const nc_sampler *s); /* output tokens accepted */
uint64_t nc_sampler_seed(const nc_sampler *s);
uint64_t nc_sampler_stream(const nc_sampler *s);
/* How many times id appeared in the output; -1 when never seen at all,
 * 0 when seen only in the prompt. Kept only while a penalty is active
 * (otherwise always -1): nothing else reads the history. */
int32_t nc_sampler_count(const nc_sampler *s, int32_t id);

/* Scratch for rows of up to n_vocab logits. */
nc_code nc_sample_workspace_create(int32_t n_vocab, nc_sample_workspace **out,
                                   nc_error *err);
/* The SIMD level (NC_SIMD_*, kernels/sampler_simd.h) of the row passes:
 * the backend table's (NC_SIMD_BEST until set). Same results at any level. */
void nc_sample_workspace_set_simd(nc_sample_workspace *ws, int simd);
void nc_sample_workspace_free(nc_sample_workspace *ws);

typedef struct nc_sample_row {
  const nc_sampler *sampler;
  const float *logits;     /* n_vocab of the sampler */
  const int32_t *suppress; /* extra tokens masked this step (min_tokens) */
  int32_t n_suppress;
  /* When not NULL, what the pipeline did to this row is recorded here
   * (for inspect_top_n candidates; the sampler's inspect_top_n, at least
   * 1 when its own is 0). NULL costs nothing and the result never depends
   * on it. */
  nucleus_inspect *inspect;
  /* Stage 0 ("grammar"): bit i of grammar[i / 64] set = token i allowed;
   * NULL: no grammar. ceil(n_vocab / 64) words. */
  const uint64_t *grammar;
} nc_sample_row;

typedef struct nc_sample_result {
  int32_t token; /* -1 when the row failed */
  float logprob; /* of token (raw or processed, see above) */
  int32_t n_top; /* top_logprobs of the sampler (0 when not asked) */
  nucleus_token_logprob top[NUCLEUS_MAX_TOP_LOGPROBS]; /* descending */
  nc_code status;                                      /* this row's outcome */
  int32_t n_kept; /* candidates left after truncation (1 for greedy) */
  /* the final distribution's largest probability (1 for greedy): what a
   * point-mass draft, or a strictly verified one, is kept with at most */
  float p_top;
} nc_sample_result;

/* Samples every row; does not advance the samplers (call nc_sampler_accept
 * with the token you keep). Returns NC_OK when every row succeeded;
 * otherwise the first failing row's code, with err naming the row; the
 * other rows are still sampled and results[i].status tells them apart.
 * logprob and top are filled only when the sampler asks for logprobs
 * (logprobs or top_logprobs > 0); n_kept is n_vocab when nothing truncated.
 * A workspace serves one thread at a time; samplers are only read, so one
 * sampler may appear in several rows (e.g. to score alternatives). */
nc_code nc_sample_batch(nc_sample_workspace *ws, const nc_sample_row *rows,
                        int32_t n_rows, nc_sample_result *results,
                        nc_error *err);

/* The same over a thread pool (threadpool.h): the rows are split among its
 * threads, thread i using ws[i] (n_ws >= the pool's size). The results are
 * identical to nc_sample_batch's, whatever the thread count. With tp NULL
 * or one thread: nc_sample_batch on ws[0]. */
typedef struct nc_threadpool nc_threadpool;
nc_code nc_sample_batch_parallel(nc_sample_workspace *const *ws, int n_ws,
                                 nc_threadpool *tp, const nc_sample_row *rows,
                                 int32_t n_rows, nc_sample_result *results,
                                 nc_error *err);

/* The final distribution of one row (after step 8) without drawing: the
 * kept ids and their probabilities (summing to 1), in descending
 * probability (ties to the lower id). ids and probs have room for n_vocab.
 * For greedy rows: the argmax with probability 1. For tests and tools. */
nc_code nc_sample_distribution(nc_sample_workspace *ws,
                               const nc_sample_row *row, int32_t *ids,
                               double *probs, int32_t *n_out, nc_error *err);

/* A row's raw logprobs outside a step (a prompt's own tokens): the
 * log-softmax of x[0..V) at token tok into *logprob, computed as a step's
 * raw logprob is, and the n_top (in [0, NUCLEUS_MAX_TOP_LOGPROBS]) most
 * likely tokens, descending (ties to the lower id), into top; returns how
 * many. simd: the row passes' level (NC_SIMD_*). */
int32_t nc_row_logprobs(const float *x, int32_t V, int32_t tok, int32_t n_top,
                        int simd, float *logprob, nucleus_token_logprob *top);

#endif
