/* engine_image_jobs: the images of requests encoded inside the engine's
 * steps (docs/VISION.md "Encoding in the steps"). Each running request
 * with an image still to encode holds one job (vision/mmproj.h); every
 * step, before its plan, the jobs advance a part (the preprocessing and
 * patch embedding, one vision layer, or the merger and projection) at a
 * time, round robin over the requests, until the step's budget is spent:
 * an image of seconds' work never holds the other requests' decoding for
 * longer than a step's share. A prompt's chunk stops before an image
 * whose rows are not ready. The parts are the same however the encode is
 * sliced, so the rows are nc_mmproj_encode's bits. Jobs standing at the
 * same vision layer in a pass run it as one batch (each weight product
 * once over all their patches: nc_mmproj_jobs_run), the first job in the
 * round robin's order and those after it whose parts the budget still
 * holds (their FLOPs summed). A job waits in a pass for one behind it on
 * the same projector when that one reaches its part within what the
 * step's budget has left (then they run as one): never longer than the
 * budget's share. The rows are the same bits batched or not. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "gguf/gguf.h"
#include "vision/image.h"
#include "vision/mmproj.h"

double nc_image_jobs_budget(const nucleus_model *model, int32_t tokens) {
  /* 2 FLOPs per weight of the layers (a multiply-add each token), the
   * experts' weights by the share of them a token runs through; the
   * embedding lookup and the output head (one row a chunk) not counted */
  const gguf_file *f = nc_model_gguf(model);
  const nc_hparams *hp = nc_model_hparams(model);
  double weights = 0.0;
  for (int64_t i = 0; f && i < gguf_tensor_count(f); i++) {
    const gguf_tensor_info *t = gguf_tensor_at(f, i);
    if (strncmp(t->name, "blk.", 4) != 0) continue;
    double n = 1.0;
    for (uint32_t d = 0; d < t->n_dims; d++)
      n *= (double)t->ne[d];
    if (strstr(t->name, "_exps") && hp->n_expert > 0)
      n *= (double)hp->n_expert_used / (double)hp->n_expert;
    weights += n;
  }
  return 2.0 * weights * (double)tokens;
}

nc_code nc_image_jobs_init(nucleus_engine *e, nc_error *err) {
  if (!e->params.mmproj || e->params.no_image_batch) return NC_OK;
  const size_t n = (size_t)e->step.max_groups;
  e->image_batch_jobs = malloc(n * sizeof *e->image_batch_jobs);
  e->image_batch_groups = malloc(n * sizeof *e->image_batch_groups);
  e->image_ran = malloc(n * sizeof *e->image_ran);
  if (!e->image_batch_jobs || !e->image_batch_groups || !e->image_ran)
    return nc_fail(err, NC_ERR_NOMEM, "out of memory (image batches)");
  return nc_mmproj_batch_new(e->params.mmproj, &e->image_batch, err);
}

void nc_image_jobs_free(nucleus_engine *e) {
  nc_mmproj_batch_free(e->image_batch);
  free(e->image_batch_jobs);
  free(e->image_batch_groups);
  free(e->image_ran);
  e->image_batch = NULL;
  e->image_batch_jobs = NULL;
  e->image_batch_groups = NULL;
  e->image_ran = NULL;
}

void nc_image_jobs_drop(group *g) {
  nc_mmproj_job_free(g->image_job);
  g->image_job = NULL;
}

/* The prompt rows of comps[0] in the KV cache; -1: a request not prefilling
 * its prompt in this step's running set. */
static int32_t prefill_at(const nucleus_engine *e, const group *g) {
  const completion *c = &g->comps[0];
  if (!g->running || c->finished || c->kv_seq < 0) return -1;
  const int32_t kv_len = nc_kv_seq_len(e->kv, c->kv_seq);
  return kv_len < g->req->n_prompt ? kv_len : -1;
}

static void fail(nucleus_engine *e, group *g, size_t i, nc_error *err) {
  nc_image_jobs_drop(g);
  nc_error_prefix(err, "images[%zu]", i);
  nc_engine_finish_group(e, g, NUCLEUS_FINISH_ERROR, err);
}

/* Gives g a job for its next image to encode, if any (copying the rows of
 * a picture it encoded already instead). False: the request failed. */
static bool start_next(nucleus_engine *e, group *g) {
  const nucleus_request *r = g->req;
  const int32_t kv_len = prefill_at(e, g);
  if (g->image_job || kv_len < 0) return true;
  const int64_t E = nc_mmproj_n_embd(e->params.mmproj);
  for (size_t i = 0; i < r->params.n_images; i++) {
    if (g->image_embd[i] || r->image_at[i] + r->image_rows[i] <= kv_len)
      continue; /* ready, or in the cache already (a prefix hit) */
    nc_error err = {0};
    /* the same picture already encoded for this request: its rows (the
     * encoder is deterministic), not a second encode */
    const float *twin = NULL;
    for (size_t j = 0; j < r->params.n_images && !twin; j++)
      if (g->image_embd[j] &&
          nc_image_same(r->params.images[j], r->params.images[i]))
        twin = g->image_embd[j];
    if (twin) {
      const size_t bytes = (size_t)r->image_rows[i] * (size_t)E * sizeof(float);
      g->image_embd[i] = malloc(bytes);
      if (!g->image_embd[i]) {
        nc_fail(&err, NC_ERR_NOMEM, "out of memory for the rows");
        fail(e, g, i, &err);
        return false;
      }
      memcpy(g->image_embd[i], twin, bytes);
      continue;
    }
    if (nc_mmproj_job_begin(e->params.mmproj, r->params.images[i], NULL,
                            &g->image_job, &err) != NC_OK) {
      fail(e, g, i, &err);
      return false;
    }
    g->image_job_at = (int32_t)i;
    e->stats.images_encoded_total++;
    return true;
  }
  return true;
}

/* After a part of g's job: a finished job's rows go to the request and its
 * next image starts. */
static void after_part(nucleus_engine *e, group *g) {
  if (!nc_mmproj_job_done(g->image_job)) return;
  g->image_embd[g->image_job_at] = nc_mmproj_job_take(g->image_job);
  nc_image_jobs_drop(g);
  start_next(e, g);
}

/* The next part of the n groups' jobs (gs[0]'s alone, or a vision layer of
 * all as one batch: nc_mmproj_jobs_run). A failure ends each request. */
static void run_parts(nucleus_engine *e, group *const *gs, int32_t n) {
  nc_mmproj_job *one[1];
  nc_mmproj_job **jobs = n > 1 ? e->image_batch_jobs : one;
  for (int32_t i = 0; i < n; i++)
    jobs[i] = gs[i]->image_job;
  nc_error err = {0};
  if (nc_mmproj_jobs_run(jobs, n, e->image_batch, nc_context_threadpool(e->ctx),
                         &err) != NC_OK) {
    for (int32_t i = 0; i < n; i++) {
      nc_error each = err;
      fail(e, gs[i], (size_t)gs[i]->image_job_at, &each);
    }
    return;
  }
  if (n > 1)
    for (int32_t i = 0; i < n; i++)
      e->stats.image_rows_batched += nc_mmproj_job_patches(jobs[i]);
  for (int32_t i = 0; i < n; i++)
    after_part(e, gs[i]);
}

static bool waiting_job(const nucleus_engine *e, const group *g) {
  return g->image_job && prefill_at(e, g) >= 0;
}

/* Whether the job of groups[gi] waits in this pass for another job on the
 * same projector, to run its part with it as one batch within what the
 * step's budget has left: one behind that can catch up with it first, or
 * one that ran in this pass and stands at its part now (the two as one in
 * the next pass). A wait of a pass or a few; of a step at most, should
 * other jobs take that budget first. */
static bool waits(const nucleus_engine *e, int32_t gi, double spent) {
  const nc_mmproj_job *a = e->groups[gi]->image_job;
  const double own = nc_mmproj_job_cost(a);
  for (int32_t k = 0; k < e->n_groups; k++) {
    const group *o = e->groups[k];
    if (k == gi || !waiting_job(e, o)) continue;
    const double c = nc_mmproj_job_catch_up(a, o->image_job);
    if (c > 0.0 && spent + c + own <= e->image_budget) return true;
    if (e->image_ran[k] && nc_mmproj_job_batches_with(a, o->image_job) &&
        spent + own + nc_mmproj_job_cost(o->image_job) <= e->image_budget)
      return true;
  }
  return false;
}

void nc_image_jobs_step(nucleus_engine *e) {
  if (!e->params.mmproj || e->n_groups == 0) return;
  for (int32_t k = 0; k < e->n_groups; k++) {
    group *g = e->groups[k];
    if (g->req->params.n_images) start_next(e, g);
  }
  const int32_t n = e->n_groups;
  group **batch = e->image_batch ? e->image_batch_groups : NULL;
  double spent = 0.0;
  bool ran = false, any = true;
  int32_t at = e->image_next % n;
  while (any) { /* passes: one part of each job that fits */
    any = false;
    if (batch) memset(e->image_ran, 0, (size_t)n * sizeof *e->image_ran);
    for (int32_t k = 0; k < n; k++) {
      const int32_t gi = (at + k) % n;
      group *g = e->groups[gi];
      if (!waiting_job(e, g) || (batch && e->image_ran[gi])) continue;
      if (batch && waits(e, gi, spent)) continue;
      double cost = nc_mmproj_job_cost(g->image_job);
      if (ran && spent + cost > e->image_budget) continue;
      /* the other jobs at the same vision layer that have not run in this
       * pass join its batch while the budget holds their parts too (the
       * sum of theirs) */
      group *alone[1] = {g};
      group **members = batch ? batch : alone;
      int32_t m = 0;
      members[m++] = g;
      if (batch) e->image_ran[gi] = true;
      for (int32_t j = 1; batch && j < n && m < NC_MMPROJ_BATCH_MAX; j++) {
        const int32_t oi = (gi + j) % n;
        group *o = e->groups[oi];
        if (!waiting_job(e, o) || e->image_ran[oi] ||
            !nc_mmproj_job_batches_with(g->image_job, o->image_job))
          continue;
        const double c = nc_mmproj_job_cost(o->image_job);
        if (spent + cost + c > e->image_budget) continue;
        cost += c;
        members[m++] = o;
        e->image_ran[oi] = true;
      }
      run_parts(e, members, m);
      spent += cost;
      ran = any = true;
      e->image_next = gi + 1;
    }
  }
}

int32_t nc_image_jobs_todo(const group *g, int32_t kv_len, int32_t todo) {
  const nucleus_request *r = g->req;
  for (size_t i = 0; i < r->params.n_images; i++) {
    const int32_t s = r->image_at[i];
    if (g->image_embd[i] || s + r->image_rows[i] <= kv_len) continue;
    const int32_t before = s > kv_len ? s - kv_len : 0;
    return todo < before ? todo : before;
  }
  return todo;
}
