/* request: one request's deep-copied parameters and its event queue, shared
 * by the engine thread (producer) and the caller (consumer).
 *
 * Locking lives here and in engine.c's inbox: the event queue has its own
 * mutex and condition variable; the cancel flag is atomic. The request is
 * reference-counted: one reference for the caller (dropped by
 * nucleus_request_free) and one for the engine (dropped when its last
 * event is queued), so either side may finish first. */
#ifndef NC_REQUEST_H
#define NC_REQUEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"

typedef struct nc_event_node nc_event_node;

struct nucleus_request {
  uint64_t id;
  /* Immutable after submit: deep copies owned by the request. */
  nucleus_request_params params;
  int32_t *prompt; /* an image's rows hold their keys (nc_image_row_token) */
  int32_t n_prompt;
  /* the position of each image's first row ([params.n_images], owned) and
   * its row count; the images themselves: params.images, the request's copies
   */
  int32_t *image_at, *image_rows;
  uint64_t seed; /* the seed used: given, or drawn from the OS */
  double t_submit_ms;

  atomic_bool cancelled;
  atomic_int refs;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  nc_event_node *head, *tail;
  nc_event_node *current; /* the event handed to the caller last */
};

/* Copies params (stop strings, biases, token lists, the images:
 * deep copies) and the prompt. image_at, image_rows: NULL without
 * images, else malloc'd arrays of params->n_images the request takes. */
nc_code nc_request_create(uint64_t id, const int32_t *prompt, size_t n_prompt,
                          const nucleus_request_params *params, uint64_t seed,
                          int32_t *image_at, int32_t *image_rows,
                          nucleus_request **out, nc_error *err);
void nc_request_unref(nucleus_request *r);

/* Queues a copy of ev (its text, top logprobs and inspect record are
 * copied). */
void nc_request_push_event(nucleus_request *r, const nucleus_event *ev);

double nc_now_ms(void);

#endif
