/* engine_image_jobs: the images of requests encoded inside the engine's
 * steps (docs/VISION.md "Encoding in the steps"). Each running request
 * with an image still to encode holds one job (vision/mmproj.h); every
 * step, before its plan, the jobs advance a part (the preprocessing and
 * patch embedding, one vision layer, or the merger and projection) at a
 * time, round robin over the requests, until the step's budget is spent:
 * an image of seconds' work never holds the other requests' decoding for
 * longer than a step's share. A prompt's chunk stops before an image
 * whose rows are not ready. The parts are the same however the encode is
 * sliced, so the rows are nc_mmproj_encode's bits. */
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

/* Runs one part of g's job; a finished job's rows go to the request and
 * its next image starts. */
static void run_part(nucleus_engine *e, group *g) {
  nc_error err = {0};
  bool done = false;
  const size_t i = (size_t)g->image_job_at;
  if (nc_mmproj_job_run(g->image_job, nc_context_threadpool(e->ctx),
                        nc_mmproj_job_cost(g->image_job), &done,
                        &err) != NC_OK) {
    fail(e, g, i, &err);
    return;
  }
  if (!done) return;
  g->image_embd[i] = nc_mmproj_job_take(g->image_job);
  nc_image_jobs_drop(g);
  start_next(e, g);
}

void nc_image_jobs_step(nucleus_engine *e) {
  if (!e->params.mmproj || e->n_groups == 0) return;
  for (int32_t k = 0; k < e->n_groups; k++) {
    group *g = e->groups[k];
    if (g->req->params.n_images) start_next(e, g);
  }
  const int32_t n = e->n_groups;
  double spent = 0.0;
  bool ran = false, any = true;
  int32_t at = e->image_next % n;
  while (any) { /* passes: one part of each job that fits */
    any = false;
    for (int32_t k = 0; k < n; k++) {
      const int32_t gi = (at + k) % n;
      group *g = e->groups[gi];
      if (!g->image_job || prefill_at(e, g) < 0) continue;
      const double cost = nc_mmproj_job_cost(g->image_job);
      if (ran && spent + cost > e->image_budget) continue;
      run_part(e, g);
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
