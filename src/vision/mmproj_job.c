/* mmproj_job: an image's encode a part at a time (mmproj.h). */
#include "mmproj.h"

#include <stdlib.h>

#include "encode.h"
#include "image.h"

struct nc_mmproj_job {
  const nucleus_mmproj *mm;
  const nucleus_image *image;
  const nc_encoder *enc;
  nc_vit v;
  void *st;     /* the encoder's state, after the begin */
  float *out;   /* the rows */
  float *own;   /* out when the job made it */
  int32_t part; /* next: 0 begin, 1 .. n_layer the layers, then finish */
  int32_t N;    /* the image's patches */
  bool done, failed;
};

static const nc_encoder *encoder_of(const nucleus_mmproj *mm) {
  switch (mm->projector) {
  case NC_PROJECTOR_GEMMA3: return &nc_encoder_gemma3;
  case NC_PROJECTOR_QWEN3VL: return &nc_encoder_qwen3vl;
  case NC_PROJECTOR_QWEN2VL:
  case NC_PROJECTOR_QWEN25VL: return &nc_encoder_qwen2vl;
  case NC_PROJECTOR_GEMMA4V: return &nc_encoder_gemma4v;
  }
  return NULL;
}

/* The patches the tower runs on: Gemma 3's fixed square, else the smart
 * resize's grid. */
static int32_t patches_of(const nucleus_mmproj *mm,
                          const nucleus_image *image) {
  const int32_t P = mm->patch_size;
  if (!nc_mmproj_dyn_size(mm)) {
    const int32_t side = mm->image_size / P;
    return side * side;
  }
  int32_t W, H;
  nc_qwen_image_size(mm, image->width, image->height, &W, &H);
  return (W / P) * (H / P);
}

/* Layer il on N patches: Q K V and out (4 E^2 a patch), the MLP (2 or 3
 * E F), the attention (2 N E for the scores and again for the values),
 * Qwen3-VL's DeepStack tap (N / 4 merged rows of 4 E through 4 E x 4 E
 * and 4 E x T). */
static double layer_flops(const nucleus_mmproj *mm, int32_t il, int32_t N) {
  const double E = mm->n_embd, F = mm->n_ff, T = mm->n_embd_text, n = N;
  const nc_vit_layer *L = &mm->layers[il];
  const double mlp = (L->ffn_gate.data ? 3.0 : 2.0) * E * F;
  double f = 2.0 * n * (4.0 * E * E + mlp) + 4.0 * n * n * E;
  if (L->ds_fc1.data) f += 2.0 * (n / 4) * (16.0 * E * E + 4.0 * E * T);
  return f;
}

static double part_flops(const nc_mmproj_job *job, int32_t part) {
  const nucleus_mmproj *mm = job->mm;
  const double E = mm->n_embd, T = mm->n_embd_text, n = job->N;
  if (part == 0) { /* the patch embedding (Qwen: two temporal kernels) */
    const double cpp = 3.0 * mm->patch_size * mm->patch_size;
    return 2.0 * n * cpp * E * (mm->patch_embd_1.data ? 2.0 : 1.0);
  }
  if (part <= mm->n_layer) return layer_flops(mm, part - 1, job->N);
  if (nc_mmproj_is_qwen(mm)) /* the merger's mm.0 and mm.2 */
    return 2.0 * (n / 4) * (16.0 * E * E + 4.0 * E * T);
  /* the projection of the pooled rows */
  return 2.0 * nc_mmproj_image_tokens(mm, job->image) * E * T;
}

double nc_mmproj_layer_flops(const nucleus_mmproj *mm,
                             const nucleus_image *image) {
  return mm->n_layer > 0 ? layer_flops(mm, 0, patches_of(mm, image)) : 0.0;
}

nc_code nc_mmproj_job_begin(const nucleus_mmproj *mm,
                            const nucleus_image *image, float *out,
                            nc_mmproj_job **job, nc_error *err) {
  *job = NULL;
  nc_mmproj_job *j = calloc(1, sizeof *j);
  if (!j) return nc_fail(err, NC_ERR_NOMEM, "vision: out of memory");
  j->mm = mm;
  j->image = image;
  j->enc = encoder_of(mm);
  j->N = patches_of(mm, image);
  j->out = out;
  if (!j->out) {
    const size_t n = (size_t)nc_mmproj_image_tokens(mm, image) *
                     (size_t)nc_mmproj_n_embd(mm);
    j->own = j->out = malloc(n * sizeof *j->out);
  }
  nc_code rc = j->enc ? NC_OK
                      : nc_fail(err, NC_ERR_INTERNAL,
                                "vision: no encoder for "
                                "the projector");
  if (rc == NC_OK && !j->out)
    rc = nc_fail(err, NC_ERR_NOMEM, "vision: out of memory for the rows");
  if (rc == NC_OK) rc = nc_vit_init(&j->v, mm->kern, NULL, err);
  if (rc != NC_OK) {
    free(j->own);
    free(j);
    return rc;
  }
  *job = j;
  return NC_OK;
}

double nc_mmproj_job_cost(const nc_mmproj_job *job) {
  return job->done || job->failed ? 0.0 : part_flops(job, job->part);
}

/* Runs the next part. */
static nc_code run_part(nc_mmproj_job *job, nc_error *err) {
  const int32_t n_layer = job->mm->n_layer;
  nc_code rc;
  if (job->part == 0)
    rc = job->enc->begin(job->mm, job->image, &job->v, job->out, &job->st, err);
  else if (job->part <= n_layer)
    rc = job->enc->layer(job->st, &job->v, job->part - 1, err);
  else
    rc = job->enc->finish(job->st, &job->v, err);
  if (rc != NC_OK) {
    job->failed = true;
    return rc;
  }
  if (job->part++ > n_layer) { /* finished: the scratch goes */
    job->done = true;
    job->enc->free_state(job->st);
    job->st = NULL;
    nc_vit_free(&job->v);
  }
  return NC_OK;
}

nc_code nc_mmproj_job_run(nc_mmproj_job *job, nc_threadpool *tp, double budget,
                          bool *done, nc_error *err) {
  if (job->failed)
    return nc_fail(err, NC_ERR_INTERNAL, "vision: the encode failed before");
  nc_vit_set_pool(&job->v, tp);
  double spent = 0.0;
  bool first = true;
  while (!job->done) {
    const double cost = part_flops(job, job->part);
    if (!first && spent + cost > budget) break;
    nc_code rc = run_part(job, err);
    if (rc != NC_OK) {
      *done = false;
      return rc;
    }
    spent += cost;
    first = false;
  }
  *done = job->done;
  return NC_OK;
}

bool nc_mmproj_job_done(const nc_mmproj_job *job) {
  return job->done;
}

int32_t nc_mmproj_job_parts(const nc_mmproj_job *job) {
  return job->part;
}

float *nc_mmproj_job_take(nc_mmproj_job *job) {
  if (!job->done || !job->own) return NULL;
  float *rows = job->own;
  job->own = NULL;
  return rows;
}

void nc_mmproj_job_free(nc_mmproj_job *job) {
  if (!job) return;
  if (job->enc && job->enc->free_state) job->enc->free_state(job->st);
  if (!job->done) nc_vit_free(&job->v);
  free(job->own);
  free(job);
}

bool nc_mmproj_job_batches_with(const nc_mmproj_job *a,
                                const nc_mmproj_job *b) {
  const bool layer = a->part >= 1 && a->part <= a->mm->n_layer;
  return a->mm == b->mm && a->enc && a->enc->layer_batch && layer &&
         a->part == b->part && !a->done && !b->done && !a->failed && !b->failed;
}

nc_code nc_mmproj_jobs_run(nc_mmproj_job *const *jobs, int32_t n,
                           nc_mmproj_batch *batch, nc_threadpool *tp,
                           nc_error *err) {
  if (n == 1) {
    bool done = false;
    return nc_mmproj_job_run(jobs[0], tp, 0.0, &done, err);
  }
  if (n < 1 || n > NC_MMPROJ_BATCH_MAX || !batch)
    return nc_fail(err, NC_ERR_INTERNAL, "vision: a batch of %d jobs", (int)n);
  for (int32_t i = 0; i < n; i++)
    if (!nc_mmproj_job_batches_with(jobs[0], jobs[i]))
      return nc_fail(err, NC_ERR_INTERNAL,
                     "vision: jobs at other parts in one batch");
  nc_enc_rows rows[NC_MMPROJ_BATCH_MAX];
  const nc_encoder *enc = jobs[0]->enc;
  for (int32_t i = 0; i < n; i++)
    enc->rows(jobs[i]->st, &rows[i]);
  nc_mmproj_batch_set_pool(batch, tp);
  nc_code rc =
      enc->layer_batch(batch, jobs[0]->mm, rows, n, jobs[0]->part - 1, err);
  for (int32_t i = 0; i < n; i++) {
    if (rc != NC_OK)
      jobs[i]->failed = true;
    else
      jobs[i]->part++; /* a layer: never the last part */
  }
  return rc;
}

int32_t nc_mmproj_job_patches(const nc_mmproj_job *job) {
  return job->N;
}

double nc_mmproj_job_catch_up(const nc_mmproj_job *a, const nc_mmproj_job *b) {
  const bool layer = a->part >= 1 && a->part <= a->mm->n_layer;
  if (a->mm != b->mm || !a->enc || !a->enc->layer_batch || !layer ||
      b->part >= a->part || a->done || b->done || a->failed || b->failed)
    return 0.0;
  double f = 0.0;
  for (int32_t p = b->part; p <= a->part; p++)
    f += part_flops(b, p);
  return f;
}
