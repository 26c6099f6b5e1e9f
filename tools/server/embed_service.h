/* nucleus serve: an embedding model's worker. One thread over one
 * nucleus_embedder: the HTTP threads queue their inputs and wait; the
 * worker takes every queued request asking for the same vectors (pooling,
 * normalisation, dimensions) and runs their inputs in one call, packed into
 * shared batches (the library keeps each vector the bits it has alone). */
#ifndef NUCLEUS_SERVER_EMBED_SERVICE_H
#define NUCLEUS_SERVER_EMBED_SERVICE_H

#include <stddef.h>
#include <stdint.h>

#include "nucleus.h"

typedef struct embed_service embed_service;

/* A worker over model (max_tokens: nucleus_embedder_create's; 0 the
 * default). NULL after writing why into msg. */
embed_service *embed_service_create(const nucleus_model *model,
                                    int32_t max_tokens, char *msg, size_t cap);
/* Stops the worker (after the queued requests) and frees it. */
void embed_service_free(embed_service *s);
/* The longest input it takes. */
int32_t embed_service_max_tokens(const embed_service *s);
/* The service's model. */
const nucleus_model *embed_service_model(const embed_service *s);
/* Runs n inputs (p validated or not: a refusal comes back in err, naming
 * the request's own input indices) into out (n * nucleus_embed_size
 * floats); blocks until done. Thread-safe. */
nucleus_status embed_service_run(embed_service *s,
                                 const nucleus_embed_input *in, size_t n,
                                 const nucleus_embed_params *p, float *out,
                                 nucleus_error *err);

#endif
