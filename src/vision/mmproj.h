/* mmproj: a vision projector file (general.architecture "clip": llama.cpp's
 * mmproj) loaded beside a language model, and what it turns an image into:
 * rows of the language model's input embeddings (nucleus_mmproj in
 * include/nucleus.h). The face of src/vision to the engine and the API. */
#ifndef NC_MMPROJ_H
#define NC_MMPROJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mapped_file.h"
#include "base/status.h"
#include "base/threadpool.h"
#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "model/model.h"

/* Loads path for model (checked: key by key, tensor by tensor). how: the
 * file's load mode; n_threads 0: the model's. */
nc_code nc_mmproj_load(const char *path, const nucleus_model *model,
                       nc_file_load how, int n_threads, nucleus_mmproj **out,
                       nc_error *err);
void nc_mmproj_free(nucleus_mmproj *mm);

/* What a projector needs of the language model beside it: nc_mmproj_load
 * takes it from the model; the fuzzer (fuzz/fuzz_mmproj.c) makes one up. */
typedef struct nc_mmproj_lm {
  const char *arch;       /* general.architecture (read during the load) */
  int32_t n_embd;         /* the width of its input rows */
  int32_t n_deepstack;    /* Qwen3-VL's n_deepstack_layers (else 0) */
  const nc_kernels *kern; /* the table the encoder multiplies with */
  int n_threads;          /* > 0 */
  bool flash;             /* attention as llama.cpp's with flash attention */
} nc_mmproj_lm;

/* Loads an opened projector file for lm (the checks of nc_mmproj_load);
 * takes file, closing it on failure. */
nc_code nc_mmproj_load_gguf(gguf_file *file, const nc_mmproj_lm *lm,
                            nucleus_mmproj **out, nc_error *err);

const char *nc_mmproj_projector(const nucleus_mmproj *mm);
/* The width of an image's rows: the LM's n_embd (Qwen3-VL: times 1 +
 * n_deepstack, the DeepStack slices after the first, llama.cpp's
 * n_embd_inp). */
int32_t nc_mmproj_n_embd(const nucleus_mmproj *mm);
/* The rows image becomes (> 0). */
int32_t nc_mmproj_image_tokens(const nucleus_mmproj *mm,
                               const nucleus_image *image);
/* The grid of image's rows: nx columns by ny rows, row-major (Gemma 3:
 * the pooled square; Qwen: the merged patches of its resized size). */
void nc_mmproj_image_grid(const nucleus_mmproj *mm, const nucleus_image *image,
                          int32_t *nx, int32_t *ny);
/* The family's text around an image's rows (Gemma 3: "<start_of_image>",
 * "<end_of_image>"); "" where none. */
const char *nc_mmproj_image_begin(const nucleus_mmproj *mm);
const char *nc_mmproj_image_end(const nucleus_mmproj *mm);
/* Whether the language model's attention is bidirectional over an image's
 * rows (Gemma 3: yes; llama.cpp's mtmd_decode_use_non_causal). */
bool nc_mmproj_bidirectional(const nucleus_mmproj *mm);

/* Encodes image into out (nc_mmproj_image_tokens x n_embd floats,
 * row-major), threads from tp (NULL: a pool of the mmproj's n_threads for
 * the call). */
nc_code nc_mmproj_encode(const nucleus_mmproj *mm, const nucleus_image *image,
                         nc_threadpool *tp, float *out, nc_error *err);

/* An encode as a job run a part at a time (mmproj_job.c; encode.h: begin,
 * each vision layer, finish), so an engine can slice it over its steps;
 * nc_mmproj_encode runs one to its end. The parts and their order are the
 * same however the job is sliced: the rows are the same bits. */
typedef struct nc_mmproj_job nc_mmproj_job;

/* A job encoding image (kept by the caller while the job lives) with mm;
 * out: where its rows go (nc_mmproj_image_tokens x nc_mmproj_n_embd
 * floats), NULL: a buffer of the job's (nc_mmproj_job_take). Nothing runs
 * yet: the image's preprocessing is the first part. */
nc_code nc_mmproj_job_begin(const nucleus_mmproj *mm,
                            const nucleus_image *image, float *out,
                            nc_mmproj_job **job, nc_error *err);

/* The estimated FLOPs of the job's next part (2 per multiply-add of its
 * matrix products and attention); 0 once done. */
double nc_mmproj_job_cost(const nc_mmproj_job *job);

/* The estimated FLOPs of one vision layer of mm on image (its first): a
 * yardstick for budgets (docs/VISION.md "Encoding in the steps"). */
double nc_mmproj_layer_flops(const nucleus_mmproj *mm,
                             const nucleus_image *image);

/* Runs the job's parts on tp (NULL: the caller's thread) while their
 * estimated FLOPs stay within budget, at least one part; *done: the rows
 * are ready. After a failure the job runs no more (free it). */
nc_code nc_mmproj_job_run(nc_mmproj_job *job, nc_threadpool *tp, double budget,
                          bool *done, nc_error *err);

bool nc_mmproj_job_done(const nc_mmproj_job *job);
/* The parts run so far (n_layer + 2 once done). */
int32_t nc_mmproj_job_parts(const nc_mmproj_job *job);

/* The rows of a done job that made its own buffer: the caller's to free
 * (free()); NULL otherwise. */
float *nc_mmproj_job_take(nc_mmproj_job *job);

void nc_mmproj_job_free(nc_mmproj_job *job);

/* Jobs run together (docs/VISION.md "Encoding in the steps"): jobs of the
 * same projector standing at the same vision layer run it as one, each of
 * its weight products once over all their images' patches (the attention
 * and RoPE per image); each job's rows stay the bits of its encode alone.
 * A batch holds the shared scratch (encode_batch.c), kept across calls. */
typedef struct nc_mmproj_batch nc_mmproj_batch;

nc_code nc_mmproj_batch_new(const nucleus_mmproj *mm, nc_mmproj_batch **out,
                            nc_error *err);
void nc_mmproj_batch_free(nc_mmproj_batch *b);

/* Whether b's next part can run with a's as one: the same projector (a
 * family whose layers batch: Gemma 3, Qwen3-VL), both at the same vision
 * layer (not the begin or the finish). */
bool nc_mmproj_job_batches_with(const nc_mmproj_job *a, const nc_mmproj_job *b);

/* The estimated FLOPs of b's parts up to and with a's next one, when b,
 * behind a, can then run that one with a as one batch (the same projector,
 * a at a vision layer); 0 otherwise. */
double nc_mmproj_job_catch_up(const nc_mmproj_job *a, const nc_mmproj_job *b);

/* The most jobs in one nc_mmproj_jobs_run. */
enum { NC_MMPROJ_BATCH_MAX = 64 };

/* The next part of jobs[0 .. n) on tp: n 1, that job's part alone (as
 * nc_mmproj_job_run with a budget of 0); more, their layer as one in
 * batch's scratch (at most NC_MMPROJ_BATCH_MAX, every job batching with
 * jobs[0], batch made for their projector). After a failure none of them runs
 * again (free them). */
nc_code nc_mmproj_jobs_run(nc_mmproj_job *const *jobs, int32_t n,
                           nc_mmproj_batch *batch, nc_threadpool *tp,
                           nc_error *err);

/* The patches of the job's image: the rows its layers' products run on. */
int32_t nc_mmproj_job_patches(const nc_mmproj_job *job);

#endif
