/* engine_internal: the engine's state, shared by engine.c (the request
 * lifecycle and step loop) and engine_beam.c (beam search). Only the engine
 * thread touches it, except the fields marked as guarded by mu. */
#ifndef NC_ENGINE_INTERNAL_H
#define NC_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "grammar/grammar.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/context.h"
#include "model/model.h"
#include "prefill_budget.h"
#include "reasoning_track.h"
#include "request.h"
#include "sampling/beam.h"
#include "sampling/sampler.h"
#include "sampling/spec_ngram.h"
#include "sampling/spec_policy.h"
#include "sampling/spec_verify.h"
#include "scheduler.h"
#include "step_trace.h"
#include "stop_matcher.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/vocab.h"

typedef struct group group;

/* Speculative decoding's state of one completion (spec.c). */
typedef struct nc_spec_state {
  int32_t draft[NUCLEUS_MAX_DRAFT]; /* this step's drafts */
  int32_t n_draft;                  /* 0: a plain step */
  nc_spec_accept accept; /* the estimated acceptance (spec_policy.h) */
  nc_spec_accept top;    /* the model's top probability (its bound) */
  /* n-gram drafts: counts per class of the match that drafts
   * (spec_ngram.h), read through accept (spec_policy.h's parts), and this
   * step's class (of its drafts or its shadow; -1: none) */
  nc_spec_accept by_match[NC_NGRAM_CLASSES];
  int32_t match_class;
  int32_t idle;               /* steps without drafts since the last draft */
  int32_t shadow;             /* a plain step's would-be first draft (n-gram and
                                 prediction: the acceptance is learnt for free), -1 */
  int32_t pred_from, pred_at; /* predicted outputs: the source cursor */
  int32_t drafted, accepted;  /* totals (usage) */
  int32_t last_kept;          /* the last verifying step's kept drafts */
  int32_t draft_seq;          /* the draft model's KV sequence, -1: none */
  int32_t draft_room;         /* the draft model: drafts set aside this step */
  float *q; /* the draft model's (or MTP head's) distributions of this
               step's drafts ([q_rows, n_vocab], grown to the step's
               draft_room by nc_spec_q_reserve) */
  int32_t q_rows;
  /* the tries in a row after which no draft length paid (spec.c) */
  int32_t probes;
} nc_spec_state;

typedef struct completion {
  group *owner;
  int32_t index;
  int32_t kv_seq; /* -1 when not in the cache */
  nc_sampler *sampler;
  nc_detok *detok;
  nc_stop_matcher *stop;
  int32_t *tokens; /* prompt + generated; the last one may not be fed yet */
  int32_t n_tokens, cap;
  int32_t n_generated;
  bool finished;
  nucleus_inspect *inspect; /* this step's record, when inspect_top_n > 0 */
  /* Structured output (params.grammar): this completion's position in the
   * language and this step's token mask (ceil(n_vocab / 64) words). */
  nc_grammar_matcher *grammar;
  uint64_t *grammar_mask;
  /* A lazy grammar (params.grammar_trigger) not started yet: the bytes
   * generated so far that may still hold the trigger's start. */
  bool grammar_waiting;
  char grammar_tail[NUCLEUS_MAX_GRAMMAR_TRIGGER_BYTES];
  size_t grammar_tail_len;
  nc_spec_state spec;
  /* The thinking block (params.reasoning): where it is, its tokens; the
   * budget's close marker being forced (force_mask: this step's one
   * allowed token); the answer grammar waiting for the block's end. */
  nc_reasoning_track think;
  int32_t *forced;
  size_t n_forced, forced_at;
  bool force_spent; /* the budget's close was forced already */
  uint64_t *force_mask;
  bool grammar_after;
} completion;

struct group {
  nucleus_request *req;
  completion *comps;
  int32_t n_comps;  /* params.n */
  int32_t n_active; /* 1 until the prompt is prefilled, then n */
  int32_t n_finished;
  bool running;
  uint64_t admit_order;
  int32_t *suppress; /* eog + stop token ids, masked until min_tokens */
  int32_t n_suppress;
  int32_t completion_tokens;
  double t_admit_ms, t_first_token_ms;
  /* Prefix cache: the root of its blocks' hash chain (its cache_salt), and
   * the prompt tokens found cached at its first admission. */
  uint64_t salt;
  bool queried;
  int32_t cached_tokens;
  /* Beam search (params.beam_width > 1): comps are the live beams. */
  nc_beam *beam;
  float *beam_rows;    /* [width, n_vocab] log-softmax of each live beam */
  uint8_t *beam_ready; /* which rows hold this step's logits */
  /* With drafts (n-gram, prediction): each live beam's rows for its fed
   * token and drafts ([width][1 + draft_max][n_vocab]), and the request's
   * drafted and kept totals (the beams come and go). */
  int32_t beam_row_stride; /* rows per beam: 1 + draft_max, or 1 */
  int32_t beam_drafted, beam_accepted;
  /* The request's images (docs/VISION.md): each one's rows, encoded in
   * the steps before its chunk is fed ([params.n_images], NULL entries
   * until then); the one encoding (engine_image_jobs.c), NULL: none, and
   * its index. */
  float **image_embd;
  struct nc_mmproj_job *image_job;
  int32_t image_job_at;
};

/* One step's scratch, sized at create for the most groups and sequences the
 * engine holds at once (take_inbox admits no more: the rest wait in the
 * inbox), freed at destroy. */
typedef struct engine_step {
  int32_t max_groups;         /* requests held (running or waiting) */
  int32_t max_seqs;           /* their completions (n or beam_width each) */
  nucleus_request **taken;    /* [max_groups]: this step's new requests */
  nc_sched_group *sg;         /* [max_groups] */
  nc_sched_verdict *verdicts; /* [max_groups] */
  nc_sched_seq *ss;           /* [max_seqs] */
  completion **seq_comp;      /* [max_seqs]: scheduler seq -> completion */
  nc_sched_item *items;       /* [max_seqs] */
  nc_sample_row *rows;        /* [max_seqs] */
  nc_sample_result *results;  /* [max_seqs] */
  completion **row_comp;      /* [max_seqs]: rows with logits -> completion */
  int32_t *row_at;            /* [max_seqs]: their first logits row */
  completion **sample_comp;   /* [max_seqs]: sampling rows -> completion */
  nc_code *mask_rc;           /* [max_seqs]: each row's grammar mask */
  nc_error *mask_err;         /* [max_seqs]: its failure */
  completion **fed;           /* [max_seqs]: completions in the batch */
  completion **drafting;      /* [max_seqs]: the draft model's this step */
  completion **mtp_drafting;  /* [max_seqs]: the MTP head's this step */
  int32_t *seq_ids;           /* [max_seqs]: one group's KV sequences */
} engine_step;

struct nucleus_engine {
  nucleus_model *model;
  const nc_vocab *vocab;
  nucleus_engine_params params;
  int32_t n_vocab;
  nc_kv_cache *kv;
  nc_context *ctx;
  nc_batch batch;
  float *logits;
  nc_sample_workspace *ws;
  int32_t *eog_ids;
  int32_t n_eog;
  nc_grammar_vocab *grammar_vocab; /* the vocab's trie, at the first grammar */
  struct nc_spec_draft *draft;     /* the draft model's state, or NULL */
  struct nc_spec_mtp *mtp; /* the MTP drafter's (a model with its MTP head) */

  /* Engine-thread state. */
  group **groups; /* [step.max_groups], arrival order */
  int32_t n_groups;
  int32_t n_seqs_held; /* completions of the held groups */
  uint64_t admit_counter;
  engine_step step;
  nc_spec_cost spec_cost; /* decode steps' forward times (spec_policy.h) */
  /* the step each decode row count was last timed at (prefill_budget.h) */
  int64_t decode_timed_at[NC_SPEC_COST_ROWS + 1];
  /* prompt rows' forward times beside them (prefill_budget.h) */
  nc_prompt_cost prompt_cost;
  nc_step_trace *trace; /* NUCLEUS_STEP_TRACE's file, or NULL */
  /* the MTP head's own time per draft (the draft model's: spec_draft.c);
   * the draft model's verify steps' sampling per row */
  nc_spec_drafter_cost mtp_cost, verify_cost;
  /* Image encoding in the steps (engine_image_jobs.c): a step's FLOPs,
   * the group after the one whose job ran last (round robin). */
  double image_budget;
  int32_t image_next;
  /* the shared products' scratch (NULL: each job alone, or no
   * projector) and the jobs of one batch ([step.max_groups]) */
  struct nc_mmproj_batch *image_batch;
  struct nc_mmproj_job **image_batch_jobs;
  group **image_batch_groups;
  bool *image_ran; /* [step.max_groups]: ran in this pass (by index) */

  /* Shared with submitters: guarded by mu. */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  nucleus_request **inbox;
  int32_t n_inbox, cap_inbox;
  bool shutdown;
  bool stepped; /* no thread: the caller drives nc_engine_step (tests) */
  uint64_t next_id;
  nucleus_engine_stats stats;
};

/* How a completion ends: the fields of its FINISH event. */
typedef struct nc_finish {
  nucleus_finish_reason reason;
  int32_t stop_token;      /* the matched stop/eog token, or -1 */
  const char *stop_string; /* the matched stop string, or NULL */
  const char *text;        /* text released at the end, or NULL */
  size_t text_len;
  const nc_error *error;          /* for NUCLEUS_FINISH_ERROR, or NULL */
  bool grammar_error;             /* that error came from the grammar */
  const nucleus_inspect *inspect; /* the end token's step, or NULL */
} nc_finish;

/* A finish that carries only its reason (and error). */
static inline nc_finish nc_finish_of(nucleus_finish_reason reason,
                                     const nc_error *error) {
  return (nc_finish){.reason = reason, .stop_token = -1, .error = error};
}

/* engine.c */
/* The process's CPU time in ms (every thread's): what the draft length's
 * choice times steps and drafters by. */
double nc_engine_cpu_ms(void);
void nc_engine_release_kv(nucleus_engine *e, completion *c);
bool nc_engine_push_token(completion *c, int32_t tok);
/* Emits the FINISH event of completion index (n_generated tokens). */
void nc_engine_emit_finish(group *g, int32_t index, int32_t n_generated,
                           const nc_finish *f);
/* Ends every unfinished completion of a group with one reason (a beam
 * search: every rank it returns). */
void nc_engine_finish_group(nucleus_engine *e, group *g,
                            nucleus_finish_reason reason,
                            const nc_error *error);

/* One sampled token for one completion: its TOKEN event (unless it is an
 * end token), then the finish rules. */
void nc_engine_handle_token(nucleus_engine *e, group *g, completion *c,
                            const nc_sample_result *res);
/* This step's grammar mask of a completion with a grammar; false when the
 * matcher failed (the completion is finished with the error). */
bool nc_engine_grammar_mask(nucleus_engine *e, group *g, completion *c);
/* Ends one completion: the one way every completion finishes. */
void nc_engine_finish(nucleus_engine *e, group *g, completion *c,
                      const nc_finish *f);

/* spec.c: speculative decoding */
/* Fills c->spec with this step's drafts for a completion that feeds one
 * generated token at position kv_len (0 drafts: a plain step), within the
 * step's spare batch rows and KV blocks (both lowered by what it takes),
 * as many as pay at cost[k], what k drafts cost against a decode step.
 * The draft model's completions get 0 here and c->spec.draft_room set to
 * the drafts set aside for them: nc_spec_draft_batch drafts them all. */
int32_t nc_spec_propose(nucleus_engine *e, group *g, completion *c,
                        int32_t kv_len, const double *cost, int32_t *spare_rows,
                        int64_t *spare_blocks);
/* A beam's drafts at most: draft_max, at most NC_SPEC_BEAM_DRAFT_MAX (a
 * beam group keeps [width][1 + drafts][n_vocab] rows, and beams of width
 * 3 or more seldom keep long drafts). */
#define NC_SPEC_BEAM_DRAFT_MAX 8
int32_t nc_spec_beam_draft_max(const nucleus_request_params *p);
/* Room for `rows` draft distributions in c->spec.q (grown, never shrunk:
 * the draft length adapts, and a long draft is paid for only once it is
 * drafted); false when out of memory. */
bool nc_spec_q_reserve(nucleus_engine *e, completion *c, int32_t rows);
/* The rule a group's drafts with q are verified by (and proposed for:
 * nc_spec_draft_token): strict when its request asks for it. */
nc_spec_rule nc_spec_rule_of(const group *g);
/* After a plain step that looked its first draft up (spec.shadow): counts
 * whether the model's token was that draft in the acceptance estimate. */
void nc_spec_shadow_check(const group *g, completion *c, int32_t token);
/* Counts a verification that kept `kept` of `drafted` drafts (engine
 * stats, the completion's totals, the prediction cursor) and in the
 * completion's acceptance estimate. */
void nc_spec_account(nucleus_engine *e, const group *g, nc_spec_state *sp,
                     int32_t kept, int32_t drafted);
/* Verifies this step's drafts against the logits of the fed token and its
 * drafts (1 + n_draft rows from logits), emits the kept tokens and the
 * target's token after them, updates the counters and the acceptance,
 * and takes the rejected positions back from the KV cache. */
void nc_spec_verify_step(nucleus_engine *e, group *g, completion *c,
                         const float *logits);

/* spec_draft.c: the draft model */
typedef struct nc_spec_draft nc_spec_draft;
/* Its KV cache and context beside the engine's (NULL draft: *out NULL);
 * a vocabulary that is not the model's is refused, naming the first token
 * that differs. After step_alloc (its job list has e->step.max_seqs). */
nc_code nc_spec_draft_create(nucleus_engine *e, nucleus_model *draft,
                             nc_spec_draft **out, nc_error *err);
void nc_spec_draft_free(nc_spec_draft *d);
/* Drafts for the n completions cs (each with spec.draft_room > 0) in
 * forward calls shared by all of them: brings each draft sequence up to
 * its completion's tokens, then samples up to draft_room drafts each
 * (c->spec.draft, their distributions in c->spec.q), one forward per draft
 * position for all. Sets each spec.n_draft (0 below draft_min; fewer when
 * the draft's KV pool is short) and clears spec.draft_room. */
void nc_spec_draft_batch(nucleus_engine *e, completion *const *cs, int32_t n);
/* What one draft costs (CPU ms) where `rows` completions draft together:
 * the draft model's forward call of that many rows, its drafts' sampling
 * included, over the rows (its timed calls by row count, spec_policy.h's
 * nc_spec_row_ms); 0 until two row counts are timed. The catch-up of a
 * draft sequence over the tokens since its last draft (its prompt, on the
 * first) is timed by its row count too, so it is not charged to the
 * drafts: rows past a step's one or two are a one-time cost, not a
 * draft's. */
double nc_spec_draft_ms(const nucleus_engine *e, int32_t rows);
/* Keeps the draft sequence's first len positions (the kept tokens). */
void nc_spec_draft_truncate(nucleus_engine *e, completion *c, int32_t len);
/* Frees c's draft sequence (when c leaves the KV cache). */
void nc_spec_draft_release(nucleus_engine *e, completion *c);

/* spec_mtp.c: the MTP head (a model loaded with it; else *out NULL) */
typedef struct nc_spec_mtp nc_spec_mtp;
nc_code nc_spec_mtp_create(nucleus_engine *e, nc_spec_mtp **out, nc_error *err);
void nc_spec_mtp_free(nc_spec_mtp *m);
/* Drafts for the n completions cs (each with spec.draft_room > 0, its
 * last token not fed yet), one forward of the head per draft position for
 * all: spec.draft and spec.q, spec.n_draft (0 below draft_min; fewer when
 * the KV pool is short); clears spec.draft_room. */
void nc_spec_mtp_batch(nucleus_engine *e, completion *const *cs, int32_t n);

/* engine_image_jobs.c: the images' encodes, sliced over the steps */
/* The step's encoding budget (e->image_budget): image_step_tokens tokens'
 * estimated FLOPs through the model. */
double nc_image_jobs_budget(const nucleus_model *model, int32_t tokens);
/* The batches' scratch (engine create, once the step arrays are made:
 * with a projector and no_image_batch off); freed by
 * nc_image_jobs_free (NULL-safe). */
nc_code nc_image_jobs_init(nucleus_engine *e, nc_error *err);
void nc_image_jobs_free(nucleus_engine *e);
/* Before a step's plan: starts each running request's next image to
 * encode (the first whose rows are not ready past its prompt's fed rows;
 * a picture it encoded already is copied, not encoded), then advances the
 * pending jobs a part at a time, round robin over the requests, within
 * e->image_budget (at least one part while any waits), the jobs at the
 * same vision layer as one batch; a finished job's rows go to
 * g->image_embd. A failure ends only its request. */
void nc_image_jobs_step(nucleus_engine *e);
/* The prompt rows of a running request the step may feed from kv_len
 * (todo of them wait): those before its first image whose rows are not
 * ready. */
int32_t nc_image_jobs_todo(const group *g, int32_t kv_len, int32_t todo);
/* Frees g's pending job (a request ending, cancelled or failed). */
void nc_image_jobs_drop(group *g);

/* engine_beam.c */
nc_code nc_beam_group_init(nucleus_engine *e, group *g, nc_error *err);
void nc_beam_group_free(group *g);
/* Takes one beam's logits of this step; advances the search once every
 * live beam has them (forking and freeing KV sequences). */
void nc_beam_take_logits(nucleus_engine *e, group *g, completion *c,
                         const float *logits);

#endif
