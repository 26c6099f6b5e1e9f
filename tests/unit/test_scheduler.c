/* The scheduler as a pure function: plans from hand-made states. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/scheduler.h"

#define MAXN 16

typedef struct fixture {
  nc_sched_group groups[MAXN];
  nc_sched_seq seqs[MAXN];
  int32_t n_groups, n_seqs;
  nc_sched_item items[MAXN];
  nc_sched_verdict verdicts[MAXN];
  nc_sched_plan plan;
} fixture;

static void add_group(fixture *f, bool running, uint64_t order, int64_t held,
                      int32_t kv_len, int32_t todo) {
  int32_t g = f->n_groups++;
  f->groups[g] = (nc_sched_group){running, order, held, f->n_seqs, 1};
  f->seqs[f->n_seqs++] = (nc_sched_seq){g, kv_len, todo, false, 0};
}

static void run_capped(fixture *f, int64_t free_blocks, int64_t total,
                       int32_t budget, int32_t max_running,
                       int32_t prefill_budget) {
  nc_sched_capacity cap = {free_blocks, total,       16,
                           budget,      max_running, prefill_budget};
  f->plan = (nc_sched_plan){f->items, 0, f->verdicts};
  nc_schedule(f->groups, f->n_groups, f->seqs, f->n_seqs, &cap, &f->plan);
}

static void run(fixture *f, int64_t free_blocks, int64_t total, int32_t budget,
                int32_t max_running) {
  run_capped(f, free_blocks, total, budget, max_running, 0);
}

static int32_t tokens_of(const fixture *f, int32_t seq) {
  for (int32_t i = 0; i < f->plan.n_items; i++)
    if (f->items[i].seq == seq) return f->items[i].n_tokens;
  return 0;
}

static void test_blocks_for(void **state) {
  (void)state;
  nc_sched_seq s = {0, 15, 1, false, 0};
  assert_int_equal(nc_sched_blocks_for(&s, 1, 16), 0); /* fills block 0 */
  assert_int_equal(nc_sched_blocks_for(&s, 2, 16), 1);
  s.kv_len = 16;
  assert_int_equal(nc_sched_blocks_for(&s, 1, 16), 1);
  s.kv_len = 5;
  s.cow = true; /* shared partial block: the write copies it */
  assert_int_equal(nc_sched_blocks_for(&s, 1, 16), 1);
  s.kv_len = 0;
  assert_int_equal(nc_sched_blocks_for(&s, 40, 16), 3);
}

static void test_decode_before_prefill_chunks(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, true, 1, 2, 20, 1);  /* decoding */
  add_group(&f, true, 2, 0, 0, 100); /* prefilling */
  add_group(&f, false, 0, 0, 0, 10); /* waiting */
  run(&f, 100, 100, 32, 8);
  assert_int_equal(tokens_of(&f, 0), 1);
  assert_int_equal(tokens_of(&f, 1), 31); /* the chunk the budget leaves */
  assert_int_equal(tokens_of(&f, 2), 0);  /* budget spent: keeps waiting */
  assert_int_equal(f.verdicts[2], NC_SCHED_KEEP);
}

/* While a sequence decodes, the step's prompt chunks (running and newly
 * admitted) share prefill_budget; decode rows never count against it. */
static void test_prefill_budget_beside_decoding(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, true, 1, 0, 0, 100); /* prefilling, oldest */
  add_group(&f, true, 2, 2, 20, 1);  /* decoding */
  add_group(&f, true, 3, 2, 30, 1);  /* decoding */
  add_group(&f, false, 0, 0, 0, 50); /* waiting */
  run_capped(&f, 100, 100, 512, 8, 40);
  assert_int_equal(tokens_of(&f, 0), 40); /* the cap, not the budget */
  assert_int_equal(tokens_of(&f, 1), 1);
  assert_int_equal(tokens_of(&f, 2), 1);
  assert_int_equal(f.verdicts[3], NC_SCHED_KEEP); /* no prompt tokens left */

  /* a smaller first chunk leaves the rest to an admission */
  f.seqs[0].todo = 25;
  run_capped(&f, 100, 100, 512, 8, 40);
  assert_int_equal(tokens_of(&f, 0), 25);
  assert_int_equal(f.verdicts[3], NC_SCHED_ADMIT);
  assert_int_equal(tokens_of(&f, 3), 15);

  /* nothing decoding: the token budget alone */
  f.seqs[0].todo = 100;
  f.seqs[1].todo = 0;
  f.seqs[2].todo = 0;
  run_capped(&f, 100, 100, 512, 8, 40);
  assert_int_equal(tokens_of(&f, 0), 100);
  assert_int_equal(f.verdicts[3], NC_SCHED_ADMIT);
  assert_int_equal(tokens_of(&f, 3), 50);

  /* without a bound (0): the decode rows first, the chunk what is left */
  f.seqs[1].todo = 1;
  run_capped(&f, 100, 100, 64, 8, 0);
  assert_int_equal(tokens_of(&f, 0), 63);
  assert_int_equal(tokens_of(&f, 1), 1);
}

/* A budget below 0: the decode rows alone, no chunk and no admission (the
 * engine times such a step); with nothing decoding it bounds nothing. */
static void test_no_prefill_beside_decoding(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, true, 1, 0, 0, 100); /* prefilling */
  add_group(&f, true, 2, 2, 20, 1);  /* decoding */
  add_group(&f, false, 0, 0, 0, 50); /* waiting */
  run_capped(&f, 100, 100, 512, 8, -1);
  assert_int_equal(f.plan.n_items, 1);
  assert_int_equal(tokens_of(&f, 1), 1);
  assert_int_equal(f.verdicts[0], NC_SCHED_KEEP);
  assert_int_equal(f.verdicts[2], NC_SCHED_KEEP);

  f.seqs[1].todo = 0; /* nothing decoding */
  run_capped(&f, 100, 100, 512, 8, -1);
  assert_int_equal(tokens_of(&f, 0), 100);
  assert_int_equal(f.verdicts[2], NC_SCHED_ADMIT);
  assert_int_equal(tokens_of(&f, 2), 50);
}

static void test_admission_in_order(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, false, 0, 0, 0, 100); /* needs 7 blocks */
  add_group(&f, false, 0, 0, 0, 10);  /* needs 1 block */
  run(&f, 5, 100, 512, 8);
  /* The head does not fit: nobody overtakes it. */
  assert_int_equal(f.verdicts[0], NC_SCHED_KEEP);
  assert_int_equal(f.verdicts[1], NC_SCHED_KEEP);
  assert_int_equal(f.plan.n_items, 0);
  run(&f, 8, 100, 512, 8);
  assert_int_equal(f.verdicts[0], NC_SCHED_ADMIT);
  assert_int_equal(f.verdicts[1], NC_SCHED_ADMIT);
  assert_int_equal(tokens_of(&f, 0), 100);
  assert_int_equal(tokens_of(&f, 1), 10);
}

static void test_max_running(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, true, 1, 1, 3, 1);
  add_group(&f, true, 2, 1, 3, 1);
  add_group(&f, false, 0, 0, 0, 4);
  run(&f, 100, 100, 512, 2);
  assert_int_equal(f.verdicts[2], NC_SCHED_KEEP);
  assert_int_equal(f.plan.n_items, 2);
}

static void test_preempts_newest(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, true, 5, 3, 32, 1); /* oldest; needs a new block */
  add_group(&f, true, 9, 2, 20, 1); /* newest */
  add_group(&f, true, 7, 2, 20, 1);
  run(&f, 0, 7, 512, 8);
  assert_int_equal(f.verdicts[1], NC_SCHED_PREEMPT);
  assert_int_equal(f.verdicts[0], NC_SCHED_KEEP);
  assert_int_equal(f.verdicts[2], NC_SCHED_KEEP);
  assert_int_equal(tokens_of(&f, 0), 1);
  assert_int_equal(tokens_of(&f, 2), 1);
  assert_int_equal(tokens_of(&f, 1), 0);
}

static void test_newest_waits_for_older(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, true, 1, 3, 30, 1); /* fits in its block */
  add_group(&f, true, 2, 2, 32, 1); /* newest, needs a block: none free */
  run(&f, 0, 5, 512, 8);
  assert_int_equal(f.verdicts[0], NC_SCHED_KEEP);
  assert_int_equal(f.verdicts[1], NC_SCHED_PREEMPT);
  assert_int_equal(tokens_of(&f, 0), 1);
}

static void test_alone_and_too_big_fails(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, true, 1, 4, 64, 1); /* holds the whole pool, needs more */
  run(&f, 0, 4, 512, 8);
  assert_int_equal(f.verdicts[0], NC_SCHED_FAIL);
  assert_int_equal(f.plan.n_items, 0);
  fixture w = {0};
  add_group(&w, false, 0, 0, 0, 1000); /* a prompt larger than the pool */
  add_group(&w, false, 0, 0, 0, 8);
  run(&w, 10, 10, 2048, 8);
  assert_int_equal(w.verdicts[0], NC_SCHED_FAIL);
  assert_int_equal(w.verdicts[1], NC_SCHED_ADMIT);
}

static void test_prefill_chunk_shrinks_to_blocks(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, true, 1, 1, 16, 100); /* prefill continuing */
  run(&f, 2, 10, 512, 8);
  assert_int_equal(tokens_of(&f, 0), 32); /* two free blocks of 16 */
  assert_int_equal(f.verdicts[0], NC_SCHED_KEEP);
}

/* A waiting request whose prompt starts with cached blocks needs only the
 * rest plus the cached blocks it takes off the free count. */
static void test_cached_prefix_admission(void **state) {
  (void)state;
  fixture f = {0};
  add_group(&f, false, 0, 0, 32, 5); /* 32 cached, 5 to feed */
  f.seqs[0].pin = 2;                 /* both cached blocks idle */
  run(&f, 3, 64, 512, 8);            /* 1 new block + 2 pinned */
  assert_int_equal(f.verdicts[0], NC_SCHED_ADMIT);
  assert_int_equal(tokens_of(&f, 0), 5); /* only the rest is fed */
  run(&f, 2, 64, 512, 8);
  assert_int_equal(f.verdicts[0], NC_SCHED_KEEP);
  f.seqs[0].pin = 0; /* the cached blocks are held by others: not free */
  run(&f, 1, 64, 512, 8);
  assert_int_equal(f.verdicts[0], NC_SCHED_ADMIT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocks_for),
      cmocka_unit_test(test_cached_prefix_admission),
      cmocka_unit_test(test_decode_before_prefill_chunks),
      cmocka_unit_test(test_prefill_budget_beside_decoding),
      cmocka_unit_test(test_no_prefill_beside_decoding),
      cmocka_unit_test(test_admission_in_order),
      cmocka_unit_test(test_max_running),
      cmocka_unit_test(test_preempts_newest),
      cmocka_unit_test(test_newest_waits_for_older),
      cmocka_unit_test(test_alone_and_too_big_fails),
      cmocka_unit_test(test_prefill_chunk_shrinks_to_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
