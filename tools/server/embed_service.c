/* nucleus serve: the embedding worker (embed_service.h). */
#include "embed_service.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct embed_job {
  const nucleus_embed_input *in;
  size_t n;
  nucleus_embed_params p;
  float *out;
  nucleus_status rc;
  nucleus_error err;
  bool done;
  struct embed_job *next;
} embed_job;

struct embed_service {
  const nucleus_model *model;
  nucleus_embedder *e;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t work, finished;
  embed_job *head, *tail;
  bool stop;
};

static bool same_params(const nucleus_embed_params *a,
                        const nucleus_embed_params *b) {
  return a->pooling == b->pooling && a->normalize == b->normalize &&
         a->dimensions == b->dimensions;
}

static void run_alone(embed_service *s, embed_job *j) {
  j->rc = nucleus_embedder_run(s->e, j->in, j->n, &j->p, j->out, &j->err);
}

/* The jobs of one group (the same params) in one call; a refusal is then
 * found per job, each alone, so that its message names its own inputs. */
static void run_group(embed_service *s, embed_job **jobs, size_t k) {
  if (k == 1) {
    run_alone(s, jobs[0]);
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < k; i++)
    n += jobs[i]->n;
  const int32_t w = nucleus_embed_size(s->model, &jobs[0]->p);
  nucleus_embed_input *in = malloc(sizeof *in * (n ? n : 1));
  float *out = w > 0 ? malloc(sizeof(float) * (n ? n : 1) * (size_t)w) : NULL;
  nucleus_error err;
  if (in && out) {
    size_t at = 0;
    for (size_t i = 0; i < k; i++) {
      memcpy(in + at, jobs[i]->in, sizeof *in * jobs[i]->n);
      at += jobs[i]->n;
    }
    if (nucleus_embedder_run(s->e, in, n, &jobs[0]->p, out, &err) ==
        NUCLEUS_OK) {
      at = 0;
      for (size_t i = 0; i < k; i++) {
        memcpy(jobs[i]->out, out + at * (size_t)w,
               sizeof(float) * jobs[i]->n * (size_t)w);
        at += jobs[i]->n;
        jobs[i]->rc = NUCLEUS_OK;
      }
      free(in);
      free(out);
      return;
    }
  }
  free(in);
  free(out);
  for (size_t i = 0; i < k; i++)
    run_alone(s, jobs[i]);
}

enum { MAX_GROUP = 64 };

static void *worker(void *arg) {
  embed_service *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->stop)
      pthread_cond_wait(&s->work, &s->mu);
    if (!s->head) break;
    /* the first job and every queued one with its params */
    embed_job *group[MAX_GROUP];
    size_t k = 0;
    embed_job **link = &s->head;
    while (*link && k < MAX_GROUP) {
      embed_job *j = *link;
      if (k == 0 || same_params(&j->p, &group[0]->p)) {
        group[k++] = j;
        *link = j->next;
      } else {
        link = &j->next;
      }
    }
    s->tail = NULL;
    for (embed_job *j = s->head; j; j = j->next)
      s->tail = j;
    pthread_mutex_unlock(&s->mu);
    run_group(s, group, k);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < k; i++)
      group[i]->done = true;
    pthread_cond_broadcast(&s->finished);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

embed_service *embed_service_create(const nucleus_model *model,
                                    int32_t max_tokens, char *msg, size_t cap) {
  embed_service *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(msg, cap, "out of memory");
    return NULL;
  }
  s->model = model;
  nucleus_error err;
  if (nucleus_embedder_create(model, max_tokens, &s->e, &err) != NUCLEUS_OK) {
    snprintf(msg, cap, "%s", err.message);
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_cond_init(&s->finished, NULL);
  if (pthread_create(&s->thread, NULL, worker, s) != 0) {
    snprintf(msg, cap, "cannot start the embedding thread");
    nucleus_embedder_free(s->e);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->finished);
    free(s);
    return NULL;
  }
  return s;
}

void embed_service_free(embed_service *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  pthread_cond_broadcast(&s->work);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  nucleus_embedder_free(s->e);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->work);
  pthread_cond_destroy(&s->finished);
  free(s);
}

int32_t embed_service_max_tokens(const embed_service *s) {
  return nucleus_embedder_max_tokens(s->e);
}

const nucleus_model *embed_service_model(const embed_service *s) {
  return s->model;
}

nucleus_status embed_service_run(embed_service *s,
                                 const nucleus_embed_input *in, size_t n,
                                 const nucleus_embed_params *p, float *out,
                                 nucleus_error *err) {
  nucleus_status rc = nucleus_embed_params_validate(s->model, p, err);
  if (rc != NUCLEUS_OK) return rc;
  embed_job j = {.in = in, .n = n, .p = *p, .out = out};
  pthread_mutex_lock(&s->mu);
  if (s->tail)
    s->tail->next = &j;
  else
    s->head = &j;
  s->tail = &j;
  pthread_cond_signal(&s->work);
  while (!j.done)
    pthread_cond_wait(&s->finished, &s->mu);
  pthread_mutex_unlock(&s->mu);
  if (j.rc != NUCLEUS_OK && err) *err = j.err;
  return j.rc;
}
