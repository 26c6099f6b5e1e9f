/* sampler: one completion's sampling settings and history. */
#include <stdlib.h>
#include <string.h>

#include "sampler_internal.h"

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Sorted unique copy of ids (NULL when n == 0). */
static nc_code copy_id_set(const int32_t *ids, size_t n, int32_t **out,
                           size_t *n_out) {
  *out = NULL, *n_out = 0;
  if (n == 0) return NC_OK;
  int32_t *c = malloc(n * sizeof *c);
  if (!c) return NC_ERR_NOMEM;
  memcpy(c, ids, n * sizeof *c);
  qsort(c, n, sizeof *c, cmp_i32);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || c[u - 1] != c[i]) c[u++] = c[i];
  *out = c, *n_out = u;
  return NC_OK;
}

static bool penalties_active(const nucleus_sampling_params *p) {
  return p->repetition_penalty != 1.0f || p->presence_penalty != 0.0f ||
         p->frequency_penalty != 0.0f;
}

static void point_params_at_copies(nc_sampler *s) {
  s->p.logit_bias = s->bias;
  s->p.n_logit_bias = s->n_bias;
  s->p.allowed_tokens = s->has_allowed ? s->allowed : NULL;
  s->p.n_allowed_tokens = s->n_allowed;
  s->p.banned_tokens = s->banned;
  s->p.n_banned_tokens = s->n_banned;
}

nc_code nc_sampler_create(const nucleus_sampling_params *p, int32_t n_vocab,
                          uint64_t seed, uint64_t stream, nc_sampler **out,
                          nc_error *err) {
  *out = NULL;
  nc_code rc = nc_sampling_validate(p, n_vocab, err);
  if (rc) return rc;
  nc_sampler *s = calloc(1, sizeof *s);
  if (!s) return nc_fail(err, NC_ERR_NOMEM, "sampler: out of memory");
  s->p = *p;
  s->n_vocab = n_vocab;
  s->seed = seed, s->stream = stream;
  s->track = penalties_active(p);
  if (p->n_logit_bias > 0) {
    s->bias = malloc(p->n_logit_bias * sizeof *s->bias);
    if (!s->bias) goto nomem;
    /* (each in range: nc_sampling_validate above) */
    memcpy(s->bias, p->logit_bias, p->n_logit_bias * sizeof *s->bias);
    s->n_bias = p->n_logit_bias;
  }
  s->has_allowed = p->allowed_tokens != NULL;
  if (copy_id_set(p->allowed_tokens, p->n_allowed_tokens, &s->allowed,
                  &s->n_allowed) ||
      copy_id_set(p->banned_tokens, p->n_banned_tokens, &s->banned,
                  &s->n_banned))
    goto nomem;
  point_params_at_copies(s);
  *out = s;
  return NC_OK;
nomem:
  nc_sampler_free(s);
  return nc_fail(err, NC_ERR_NOMEM, "sampler: out of memory");
}

void nc_sampler_free(nc_sampler *s) {
  if (!s) return;
  free(s->bias);
  free(s->allowed);
  free(s->banned);
  free(s->seen);
  free(s->slots);
  free(s);
}

static void *dup_mem(const void *src, size_t bytes, bool *fail) {
  if (!src || bytes == 0) return NULL;
  void *d = malloc(bytes);
  if (!d) {
    *fail = true;
    return NULL;
  }
  memcpy(d, src, bytes);
  return d;
}

nc_code nc_sampler_clone(const nc_sampler *s, uint64_t new_stream,
                         nc_sampler **out, nc_error *err) {
  *out = NULL;
  nc_sampler *c = calloc(1, sizeof *c);
  if (!c) return nc_fail(err, NC_ERR_NOMEM, "sampler clone: out of memory");
  *c = *s;
  bool fail = false;
  c->bias = dup_mem(s->bias, s->n_bias * sizeof *s->bias, &fail);
  c->allowed = dup_mem(s->allowed, s->n_allowed * sizeof *s->allowed, &fail);
  c->banned = dup_mem(s->banned, s->n_banned * sizeof *s->banned, &fail);
  c->seen = dup_mem(s->seen, (size_t)s->cap_seen * sizeof *s->seen, &fail);
  c->slots = dup_mem(s->slots, (size_t)s->n_slots * sizeof *s->slots, &fail);
  if (fail) {
    nc_sampler_free(c);
    return nc_fail(err, NC_ERR_NOMEM, "sampler clone: out of memory");
  }
  c->stream = new_stream;
  point_params_at_copies(c);
  *out = c;
  return NC_OK;
}

static uint32_t slot_of(int32_t token, uint32_t n_slots) {
  uint32_t h = (uint32_t)token * 0x9E3779B1u;
  return (h ^ (h >> 15)) & (n_slots - 1);
}

static int32_t find_seen(const nc_sampler *s, int32_t token) {
  if (s->n_slots == 0) return -1;
  for (uint32_t i = slot_of(token, s->n_slots);;
       i = (i + 1) & (s->n_slots - 1)) {
    int32_t e = s->slots[i];
    if (e < 0 || s->seen[e].token == token) return e;
  }
}

static bool grow_index(nc_sampler *s) {
  uint32_t n = s->n_slots ? s->n_slots * 2 : 64;
  int32_t *slots = malloc(n * sizeof *slots);
  if (!slots) return false;
  memset(slots, 0xff, n * sizeof *slots); /* -1 */
  for (int32_t e = 0; e < s->n_seen; e++) {
    uint32_t i = slot_of(s->seen[e].token, n);
    while (slots[i] >= 0)
      i = (i + 1) & (n - 1);
    slots[i] = e;
  }
  free(s->slots);
  s->slots = slots, s->n_slots = n;
  return true;
}

/* The entry of token, created when missing (NULL when out of memory). */
static nc_seen *touch(nc_sampler *s, int32_t token) {
  int32_t e = find_seen(s, token);
  if (e >= 0) return &s->seen[e];
  if ((uint32_t)(s->n_seen + 1) * 2 > s->n_slots && !grow_index(s)) return NULL;
  if (s->n_seen == s->cap_seen) {
    int32_t cap = s->cap_seen ? s->cap_seen * 2 : 32;
    nc_seen *seen = realloc(s->seen, (size_t)cap * sizeof *seen);
    if (!seen) return NULL;
    s->seen = seen, s->cap_seen = cap;
  }
  e = s->n_seen++;
  s->seen[e] = (nc_seen){token, 0};
  uint32_t i = slot_of(token, s->n_slots);
  while (s->slots[i] >= 0)
    i = (i + 1) & (s->n_slots - 1);
  s->slots[i] = e;
  return &s->seen[e];
}

void nc_sampler_accept_prompt(nc_sampler *s, const int32_t *ids, size_t n) {
  if (!s || !s->track || s->p.repetition_penalty == 1.0f) return;
  for (size_t i = 0; i < n; i++)
    if (ids[i] >= 0 && ids[i] < s->n_vocab) touch(s, ids[i]);
}

void nc_sampler_accept(nc_sampler *s, int32_t id) {
  if (!s) return;
  s->step++;
  if (!s->track || id < 0 || id >= s->n_vocab) return;
  nc_seen *e = touch(s, id);
  if (e) e->count++;
}

uint64_t nc_sampler_step(const nc_sampler *s) {
  return s->step;
}
uint64_t nc_sampler_seed(const nc_sampler *s) {
  return s->seed;
}
uint64_t nc_sampler_stream(const nc_sampler *s) {
  return s->stream;
}

int32_t nc_sampler_count(const nc_sampler *s, int32_t id) {
  int32_t e = find_seen(s, id);
  return e < 0 ? -1 : s->seen[e].count;
}
