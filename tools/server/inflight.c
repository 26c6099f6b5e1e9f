/* nucleus serve: the in-flight request set (a slot array under a mutex). */
#include "inflight.h"

#include <pthread.h>
#include <stdlib.h>

struct inflight {
  pthread_mutex_t mu;
  nucleus_request **slots;
  size_t cap;
  size_t count;
};

inflight *inflight_create(void) {
  inflight *set = calloc(1, sizeof *set);
  if (!set) return NULL;
  pthread_mutex_init(&set->mu, NULL);
  return set;
}

void inflight_destroy(inflight *set) {
  if (!set) return;
  pthread_mutex_destroy(&set->mu);
  free(set->slots);
  free(set);
}

int inflight_add(inflight *set, nucleus_request *req) {
  pthread_mutex_lock(&set->mu);
  size_t i = 0;
  while (i < set->cap && set->slots[i])
    i++;
  if (i == set->cap) {
    size_t cap = set->cap ? set->cap * 2 : 64;
    nucleus_request **grown = realloc(set->slots, cap * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&set->mu);
      return -1;
    }
    for (size_t j = set->cap; j < cap; j++)
      grown[j] = NULL;
    set->slots = grown;
    set->cap = cap;
  }
  set->slots[i] = req;
  set->count++;
  pthread_mutex_unlock(&set->mu);
  return (int)i;
}

void inflight_remove(inflight *set, int slot) {
  if (slot < 0) return;
  pthread_mutex_lock(&set->mu);
  if ((size_t)slot < set->cap && set->slots[slot]) {
    set->slots[slot] = NULL;
    set->count--;
  }
  pthread_mutex_unlock(&set->mu);
}

size_t inflight_count(inflight *set) {
  pthread_mutex_lock(&set->mu);
  size_t n = set->count;
  pthread_mutex_unlock(&set->mu);
  return n;
}

void inflight_cancel_all(inflight *set) {
  pthread_mutex_lock(&set->mu);
  for (size_t i = 0; i < set->cap; i++)
    if (set->slots[i]) nucleus_request_cancel(set->slots[i]);
  pthread_mutex_unlock(&set->mu);
}
