#include "request.h"
#include "engine_images.h"

#include "grammar/grammar.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct nc_event_node {
  nucleus_event ev;
  char *text;
  nucleus_token_logprob *top;
  nucleus_inspect *inspect;
  char *stop_string;
  nc_event_node *next;
};

double nc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void free_node(nc_event_node *n) {
  if (!n) return;
  free(n->text);
  free(n->top);
  free(n->inspect);
  free(n->stop_string);
  free(n);
}

static void free_params(nucleus_request_params *p) {
  if (p->stop) {
    for (size_t i = 0; i < p->n_stop; i++)
      free((char *)p->stop[i]);
    free((char **)p->stop);
  }
  free((int32_t *)p->stop_token_ids);
  free((nucleus_logit_bias *)p->sampling.logit_bias);
  free((int32_t *)p->sampling.allowed_tokens);
  free((int32_t *)p->sampling.banned_tokens);
  free((char *)p->cache_salt);
  free((char *)p->grammar_trigger);
  free((char *)p->reasoning.open);
  free((char *)p->reasoning.close);
  free((char *)p->reasoning.force_close);
  free((int32_t *)p->speculative.prediction);
  nc_grammar_handle_unref(p->grammar);
  p->grammar = NULL;
  nc_images_free((nucleus_image **)p->images, p->n_images);
  p->images = NULL;
  p->n_images = 0;
}

static void *dup_mem(const void *src, size_t n, size_t size, bool *ok) {
  if (!src || n == 0) return NULL;
  void *p = malloc(n * size);
  if (!p) {
    *ok = false;
    return NULL;
  }
  memcpy(p, src, n * size);
  return p;
}

static bool copy_params(nucleus_request_params *dst,
                        const nucleus_request_params *src) {
  bool ok = true;
  *dst = *src;
  dst->stop = NULL;
  dst->cache_salt = NULL;
  if (src->cache_salt && src->cache_salt[0]) {
    dst->cache_salt = strdup(src->cache_salt);
    if (!dst->cache_salt) ok = false;
  }
  nc_grammar_handle_ref(dst->grammar); /* the request's own reference */
  dst->images = NULL;
  dst->n_images = 0;
  if (src->n_images) { /* the request's own copies */
    nucleus_image **imgs = nc_images_copy(src->images, src->n_images);
    if (!imgs) return false;
    dst->images = (const nucleus_image *const *)imgs;
    dst->n_images = src->n_images;
  }
  dst->grammar_trigger = NULL;
  if (src->grammar_trigger && src->grammar_trigger[0]) {
    dst->grammar_trigger = strdup(src->grammar_trigger);
    if (!dst->grammar_trigger) ok = false;
  }
  const char **marks[] = {&dst->reasoning.open, &dst->reasoning.close,
                          &dst->reasoning.force_close};
  for (size_t i = 0; i < 3; i++) {
    const char *m = *marks[i];
    *marks[i] = m ? strdup(m) : NULL;
    if (m && !*marks[i]) ok = false;
  }
  dst->speculative.prediction =
      dup_mem(src->speculative.prediction, src->speculative.n_prediction,
              sizeof(int32_t), &ok);
  dst->stop_token_ids =
      dup_mem(src->stop_token_ids, src->n_stop_token_ids, sizeof(int32_t), &ok);
  nucleus_sampling_params *s = &dst->sampling;
  s->logit_bias = dup_mem(src->sampling.logit_bias, src->sampling.n_logit_bias,
                          sizeof(nucleus_logit_bias), &ok);
  s->allowed_tokens =
      dup_mem(src->sampling.allowed_tokens, src->sampling.n_allowed_tokens,
              sizeof(int32_t), &ok);
  s->banned_tokens =
      dup_mem(src->sampling.banned_tokens, src->sampling.n_banned_tokens,
              sizeof(int32_t), &ok);
  if (src->n_stop) {
    char **stops = calloc(src->n_stop, sizeof *stops);
    dst->stop = (const char *const *)stops;
    if (!stops) return false;
    for (size_t i = 0; i < src->n_stop; i++) {
      stops[i] = strdup(src->stop[i] ? src->stop[i] : "");
      if (!stops[i]) ok = false;
    }
  }
  return ok;
}

nc_code nc_request_create(uint64_t id, const int32_t *prompt, size_t n_prompt,
                          const nucleus_request_params *params, uint64_t seed,
                          int32_t *image_at, int32_t *image_rows,
                          nucleus_request **out, nc_error *err) {
  *out = NULL;
  nucleus_request *r = calloc(1, sizeof *r);
  if (!r) {
    free(image_at);
    free(image_rows);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  r->image_at = image_at;
  r->image_rows = image_rows;
  r->id = id;
  r->seed = seed;
  r->t_submit_ms = nc_now_ms();
  r->n_prompt = (int32_t)n_prompt;
  r->prompt = malloc((n_prompt ? n_prompt : 1) * sizeof *r->prompt);
  bool ok = r->prompt && copy_params(&r->params, params);
  if (!ok) {
    free_params(&r->params);
    free(r->prompt);
    free(r->image_at);
    free(r->image_rows);
    free(r);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  if (n_prompt) memcpy(r->prompt, prompt, n_prompt * sizeof *prompt);
  r->params.sampling.has_seed = true;
  r->params.sampling.seed = seed;
  atomic_init(&r->cancelled, false);
  atomic_init(&r->refs, 2);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  *out = r;
  return NC_OK;
}

void nc_request_unref(nucleus_request *r) {
  if (!r || atomic_fetch_sub(&r->refs, 1) != 1) return;
  nc_event_node *n = r->head;
  while (n) {
    nc_event_node *next = n->next;
    free_node(n);
    n = next;
  }
  free_node(r->current);
  free_params(&r->params);
  free(r->prompt);
  free(r->image_at);
  free(r->image_rows);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
}

void nc_request_push_event(nucleus_request *r, const nucleus_event *ev) {
  nc_event_node *n = calloc(1, sizeof *n);
  if (!n) return;
  n->ev = *ev;
  if (ev->text_len) {
    n->text = malloc(ev->text_len + 1);
    if (n->text) {
      memcpy(n->text, ev->text, ev->text_len);
      n->text[ev->text_len] = '\0';
    }
  }
  n->ev.text = n->text ? n->text : "";
  n->ev.text_len = n->text ? ev->text_len : 0;
  if (ev->n_top_logprobs > 0) {
    n->top = dup_mem(ev->top_logprobs, (size_t)ev->n_top_logprobs,
                     sizeof *n->top, &(bool){true});
  }
  n->ev.top_logprobs = n->top;
  n->ev.n_top_logprobs = n->top ? ev->n_top_logprobs : 0;
  if (ev->inspect)
    n->inspect = dup_mem(ev->inspect, 1, sizeof *n->inspect, &(bool){true});
  n->ev.inspect = n->inspect;
  if (ev->stop_string) n->stop_string = strdup(ev->stop_string);
  n->ev.stop_string = n->stop_string;
  pthread_mutex_lock(&r->mu);
  if (r->tail)
    r->tail->next = n;
  else
    r->head = n;
  r->tail = n;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

nucleus_status nucleus_request_next_event(nucleus_request *r, nucleus_event *ev,
                                          int timeout_ms) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  if (timeout_ms > 0) {
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock(&r->mu);
  while (!r->head) {
    if (timeout_ms == 0) break;
    if (timeout_ms < 0) {
      pthread_cond_wait(&r->cv, &r->mu);
    } else if (pthread_cond_timedwait(&r->cv, &r->mu, &deadline) == ETIMEDOUT) {
      break;
    }
  }
  nc_event_node *n = r->head;
  if (n) {
    r->head = n->next;
    if (!r->head) r->tail = NULL;
  }
  pthread_mutex_unlock(&r->mu);
  if (!n) return NUCLEUS_ERR_TIMEOUT;
  free_node(r->current);
  r->current = n;
  *ev = n->ev;
  return NUCLEUS_OK;
}

void nucleus_request_cancel(nucleus_request *r) {
  if (r) atomic_store(&r->cancelled, true);
}

void nucleus_request_free(nucleus_request *r) {
  if (!r) return;
  nucleus_request_cancel(r);
  nc_request_unref(r);
}
