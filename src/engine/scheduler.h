/* scheduler: the pure policy of what runs next.
 *
 * Each engine step, the scheduler turns the state of every request (groups
 * of sequences: one per completion or beam) and the capacity of the step
 * (free KV blocks, a token budget, a cap on running sequences) into a plan:
 * which sequences feed how many tokens, which waiting requests are admitted,
 * which running ones are preempted to make room, and which can never fit.
 * It touches no model, no cache and no clock, so it is tested on its own.
 *
 * Policy:
 * - Running sequences go first, oldest admission first: every decoding
 *   sequence feeds its one token, then each prompt still being prefilled
 *   feeds a chunk of what the budget leaves (chunked prefill: a long prompt
 *   never stalls decoding, an older one no newer stream's either).
 *   While any sequence decodes, the prompt chunks of the step (running and
 *   newly admitted) share prefill_budget tokens, so that a step with
 *   prompt work costs a bounded multiple of a decode step (the engine
 *   derives the bound from its measured step times: --decode-stall).
 * - When the pool is short for a running sequence, the most recently
 *   admitted running request is preempted (its blocks return; it goes back
 *   to the queue and is recomputed later). A request that cannot fit even
 *   with every other request preempted fails instead of looping.
 * - Waiting requests are admitted in arrival order (no overtaking) while
 *   their whole remaining input fits in the free blocks, the budget has
 *   tokens left and the running cap allows. Free blocks include cached
 *   prefix blocks nobody holds (evicted on demand); a waiting request whose
 *   prompt starts with cached blocks needs only the rest, plus the cached
 *   blocks it takes off the free count (pin).
 */
#ifndef NC_SCHEDULER_H
#define NC_SCHEDULER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct nc_sched_seq {
  int32_t group;  /* index into the groups array */
  int32_t kv_len; /* positions already in the cache */
  int32_t todo;   /* tokens waiting to be fed (prompt rest, or 1) */
  bool cow;       /* its last (partial) block is shared: a write copies it */
  int32_t pin;    /* waiting, with a cached prefix (kv_len): the cached
                     blocks its admission takes off the free count */
} nc_sched_seq;

typedef struct nc_sched_group {
  bool running;
  uint64_t admit_order; /* running: larger = admitted more recently */
  int64_t blocks_held;  /* blocks that return to the pool if preempted */
  int32_t first_seq;    /* its sequences: seqs[first_seq .. +n_seqs) */
  int32_t n_seqs;
} nc_sched_group;

typedef struct nc_sched_capacity {
  int64_t free_blocks;
  int64_t total_blocks;
  int32_t block_tokens;
  int32_t token_budget; /* tokens one forward call may carry */
  int32_t max_running;  /* sequences running at once */
  /* Prompt tokens (chunks of more than one token) a step may carry when it
   * also feeds sequences that decode (one token to feed), so that a
   * decoding stream waits no more than a bounded step; 0: no bound but the
   * token budget; below 0: none (the decode rows alone: the engine times
   * such a step). A step with nothing decoding is not bounded by it. */
  int32_t prefill_budget;
} nc_sched_capacity;

typedef struct nc_sched_item {
  int32_t seq;      /* index into the seqs array */
  int32_t n_tokens; /* tokens it feeds this step */
} nc_sched_item;

typedef enum nc_sched_verdict {
  NC_SCHED_KEEP = 0, /* unchanged (waiting stays waiting) */
  NC_SCHED_ADMIT,    /* waiting -> running this step */
  NC_SCHED_PREEMPT,  /* running -> waiting: free its blocks, recompute */
  NC_SCHED_FAIL,     /* can never fit in the pool: end it with an error */
} nc_sched_verdict;

/* Caller-provided output storage: items has room for n_seqs entries and
 * verdicts for n_groups. */
typedef struct nc_sched_plan {
  nc_sched_item *items;
  int32_t n_items;
  nc_sched_verdict *verdicts;
} nc_sched_plan;

/* Blocks needed to extend a sequence by n tokens. */
int64_t nc_sched_blocks_for(const nc_sched_seq *s, int32_t n,
                            int32_t block_tokens);

/* Groups are given in arrival order. */
void nc_schedule(const nc_sched_group *groups, int32_t n_groups,
                 const nc_sched_seq *seqs, int32_t n_seqs,
                 const nc_sched_capacity *cap, nc_sched_plan *plan);

#endif
