#include "scheduler.h"

#include <stddef.h>
#include <stdint.h>

static int64_t div_up(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int64_t nc_sched_blocks_for(const nc_sched_seq *s, int32_t n,
                            int32_t block_tokens) {
  if (n <= 0) return 0;
  int64_t have = div_up(s->kv_len, block_tokens);
  int64_t need = div_up((int64_t)s->kv_len + n, block_tokens) - have;
  if (s->cow && s->kv_len % block_tokens != 0) need += 1;
  return need;
}

typedef struct sched_state {
  const nc_sched_group *groups;
  int32_t n_groups;
  const nc_sched_seq *seqs;
  const nc_sched_capacity *cap;
  nc_sched_plan *plan;
  int64_t free_blocks;
  int32_t budget;
  int32_t prefill_left; /* prompt tokens the step may still carry */
} sched_state;

static bool is_running(const sched_state *st, int32_t g) {
  nc_sched_verdict v = st->plan->verdicts[g];
  if (v == NC_SCHED_PREEMPT || v == NC_SCHED_FAIL) return false;
  return st->groups[g].running || v == NC_SCHED_ADMIT;
}

/* The most recently admitted running group, or -1. */
static int32_t newest_running(const sched_state *st) {
  int32_t best = -1;
  for (int32_t g = 0; g < st->n_groups; g++) {
    if (!st->groups[g].running || !is_running(st, g)) continue;
    if (best < 0 || st->groups[g].admit_order > st->groups[best].admit_order)
      best = g;
  }
  return best;
}

/* Removes a group's items from the plan and returns their tokens. */
static void drop_items(sched_state *st, int32_t g) {
  int32_t w = 0;
  for (int32_t i = 0; i < st->plan->n_items; i++) {
    nc_sched_item it = st->plan->items[i];
    if (st->seqs[it.seq].group == g) {
      st->budget += it.n_tokens;
      if (st->seqs[it.seq].todo > 1) st->prefill_left += it.n_tokens;
      st->free_blocks += nc_sched_blocks_for(&st->seqs[it.seq], it.n_tokens,
                                             st->cap->block_tokens);
      continue;
    }
    st->plan->items[w++] = it;
  }
  st->plan->n_items = w;
}

static void preempt(sched_state *st, int32_t g, nc_sched_verdict why) {
  drop_items(st, g);
  st->free_blocks += st->groups[g].blocks_held;
  st->plan->verdicts[g] = why;
}

/* Whether any running group other than g is still running. */
static bool others_running(const sched_state *st, int32_t g) {
  for (int32_t o = 0; o < st->n_groups; o++)
    if (o != g && st->groups[o].running && is_running(st, o)) return true;
  return false;
}

/* Schedules the running group g's decoding sequences (one token to feed)
 * or its prompt chunks; may preempt newer groups. */
static void schedule_running(sched_state *st, int32_t g, bool decoding) {
  const nc_sched_group *grp = &st->groups[g];
  int32_t bt = st->cap->block_tokens;
  for (int32_t k = 0; k < grp->n_seqs; k++) {
    int32_t si = grp->first_seq + k;
    const nc_sched_seq *s = &st->seqs[si];
    if ((s->todo == 1) != decoding) continue;
    if (s->todo <= 0 || st->budget <= 0) continue;
    int32_t n = s->todo < st->budget ? s->todo : st->budget;
    if (n > 1 && n > st->prefill_left) n = st->prefill_left;
    if (n <= 0) continue;
    /* Shrink a prefill chunk to the blocks at hand before preempting. */
    while (n > 1 && nc_sched_blocks_for(s, n, bt) > st->free_blocks)
      n--;
    while (nc_sched_blocks_for(s, n, bt) > st->free_blocks) {
      int32_t victim = newest_running(st);
      if (victim < 0 || victim == g) {
        /* Nothing newer to preempt: wait for the older requests, or, when
         * it runs alone and still does not fit, it never will. */
        preempt(st, g,
                others_running(st, g) ? NC_SCHED_PREEMPT : NC_SCHED_FAIL);
        return;
      }
      preempt(st, victim, NC_SCHED_PREEMPT);
    }
    st->free_blocks -= nc_sched_blocks_for(s, n, bt);
    st->budget -= n;
    if (s->todo > 1) st->prefill_left -= n;
    st->plan->items[st->plan->n_items++] = (nc_sched_item){si, n};
  }
}

static int64_t group_total_need(const sched_state *st, int32_t g) {
  const nc_sched_group *grp = &st->groups[g];
  int64_t need = 0;
  for (int32_t k = 0; k < grp->n_seqs; k++) {
    const nc_sched_seq *s = &st->seqs[grp->first_seq + k];
    /* The whole remaining input plus room for the first generated token,
     * and the cached prefix blocks it takes from the free ones. */
    need += nc_sched_blocks_for(s, s->todo + 1, st->cap->block_tokens) + s->pin;
  }
  return need;
}

static int32_t running_seqs(const sched_state *st) {
  int32_t n = 0;
  for (int32_t g = 0; g < st->n_groups; g++)
    if (is_running(st, g)) n += st->groups[g].n_seqs;
  return n;
}

/* Whether a running sequence decodes (has one token to feed). */
static bool any_decoding(const nc_sched_group *groups, int32_t n_groups,
                         const nc_sched_seq *seqs) {
  for (int32_t g = 0; g < n_groups; g++) {
    if (!groups[g].running) continue;
    for (int32_t k = 0; k < groups[g].n_seqs; k++)
      if (seqs[groups[g].first_seq + k].todo == 1) return true;
  }
  return false;
}

void nc_schedule(const nc_sched_group *groups, int32_t n_groups,
                 const nc_sched_seq *seqs, int32_t n_seqs,
                 const nc_sched_capacity *cap, nc_sched_plan *plan) {
  (void)n_seqs;
  sched_state st = {groups,           n_groups,          seqs,     cap, plan,
                    cap->free_blocks, cap->token_budget, INT32_MAX};
  if (cap->prefill_budget != 0 && any_decoding(groups, n_groups, seqs))
    st.prefill_left = cap->prefill_budget > 0 ? cap->prefill_budget : 0;
  plan->n_items = 0;
  for (int32_t g = 0; g < n_groups; g++)
    plan->verdicts[g] = NC_SCHED_KEEP;

  /* Running groups, oldest admission first (admission orders are unique):
   * every decoding sequence's token, then the prompt chunks, so that an
   * older group's prompt never takes a newer one's decode row. */
  for (int pass = 0; pass < 2; pass++) {
    bool started = false;
    uint64_t last = 0;
    for (;;) {
      int32_t next = -1;
      for (int32_t g = 0; g < n_groups; g++) {
        if (!groups[g].running || (started && groups[g].admit_order <= last))
          continue;
        if (next < 0 || groups[g].admit_order < groups[next].admit_order)
          next = g;
      }
      if (next < 0) break;
      started = true;
      last = groups[next].admit_order;
      if (plan->verdicts[next] == NC_SCHED_KEEP)
        schedule_running(&st, next, pass == 0);
    }
  }

  /* Waiting groups in arrival order: no overtaking. */
  for (int32_t g = 0; g < n_groups; g++) {
    if (groups[g].running || plan->verdicts[g] != NC_SCHED_KEEP) continue;
    int64_t need = group_total_need(&st, g);
    if (need > cap->total_blocks) {
      plan->verdicts[g] = NC_SCHED_FAIL;
      continue;
    }
    if (st.budget <= 0 || st.prefill_left <= 0 || need > st.free_blocks ||
        running_seqs(&st) + groups[g].n_seqs > cap->max_running)
      break;
    plan->verdicts[g] = NC_SCHED_ADMIT;
    st.free_blocks -= need;
    for (int32_t k = 0; k < groups[g].n_seqs && st.budget > 0; k++) {
      int32_t si = groups[g].first_seq + k;
      int32_t n = seqs[si].todo < st.budget ? seqs[si].todo : st.budget;
      if (n > 1 && n > st.prefill_left) n = st.prefill_left;
      if (n <= 0) continue;
      st.budget -= n;
      if (seqs[si].todo > 1) st.prefill_left -= n;
      plan->items[plan->n_items++] = (nc_sched_item){si, n};
    }
  }
}
