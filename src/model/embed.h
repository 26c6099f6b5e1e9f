/* embed: the embedder. Runs many token sequences through a model in
 * embedding mode, packed into batches of whole sequences kept apart (each
 * its own sequence of a throwaway KV cache), pools each sequence's output
 * rows and applies what follows pooling: the rank head (rank pooling), the
 * dense projections, Matryoshka truncation and L2 normalisation. A
 * sequence's vector is the same bits alone or packed with others. */
#ifndef NC_EMBED_H
#define NC_EMBED_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "model.h"

/* What one call asks for. */
typedef struct nc_embed_opts {
  int pooling;        /* NC_POOLING_* (pooling.h), not NONE */
  bool normalize;     /* L2-normalise each vector (not for rank scores) */
  int32_t dimensions; /* 0: all; else the first dimensions values (then
                         normalised): Matryoshka */
} nc_embed_opts;

/* The most sequences one batch packs. */
enum { NC_EMBED_MAX_SEQS = 256 };

typedef struct nc_embedder nc_embedder;

/* An embedder for m with batches of up to max_batch_tokens tokens (at
 * least 1, at most 1 << 20): the longest sequence it takes. */
nc_code nc_embedder_create(const nucleus_model *m, int32_t max_batch_tokens,
                           nc_embedder **out, nc_error *err);
void nc_embedder_free(nc_embedder *e);
int32_t nc_embedder_max_tokens(const nc_embedder *e);

/* Checks o against m: a known pooling other than none; rank needs the
 * model's rank head (cls.output); dimensions in [0, the vector's width]. */
nc_code nc_embed_check(const nucleus_model *m, const nc_embed_opts *o,
                       nc_error *err);
/* The width of each vector (o checked): rank's n_cls_out scores, else
 * dimensions or n_embd_out. */
int32_t nc_embed_width(const nucleus_model *m, const nc_embed_opts *o);

/* The vectors of the n sequences tokens[i] (n_tokens[i] tokens each, at
 * least 1 and at most the embedder's max tokens; a refusal names the
 * sequence's index) into out (n * nc_embed_width floats, in order). */
nc_code nc_embedder_run(nc_embedder *e, const int32_t *const *tokens,
                        const int32_t *n_tokens, int32_t n,
                        const nc_embed_opts *o, float *out, nc_error *err);

#endif
