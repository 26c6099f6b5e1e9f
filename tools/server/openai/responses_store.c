/* nucleus serve: the bounded LRU store of responses (responses_store.h). */
#include "responses_store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  struct entry *prev, *next; /* prev: more recently used */
  char id[RESPONSES_MAX_ID + 1];
  char *response; /* compact JSON text: the bytes counted */
  char *messages;
  size_t bytes;
} entry;

struct responses_store {
  pthread_mutex_t lock;
  entry *head, *tail; /* head: the most recently used */
  size_t count, bytes;
  size_t max_count, max_bytes;
};

responses_store *responses_store_create(size_t max_count, size_t max_bytes) {
  responses_store *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  pthread_mutex_init(&s->lock, NULL);
  s->max_count = max_count;
  s->max_bytes = max_bytes;
  return s;
}

static void entry_free(entry *e) {
  free(e->response);
  free(e->messages);
  free(e);
}

static void unlink_entry(responses_store *s, entry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    s->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    s->tail = e->prev;
  e->prev = e->next = NULL;
  s->count--;
  s->bytes -= e->bytes;
}

static void push_front(responses_store *s, entry *e) {
  e->prev = NULL;
  e->next = s->head;
  if (s->head) s->head->prev = e;
  s->head = e;
  if (!s->tail) s->tail = e;
  s->count++;
  s->bytes += e->bytes;
}

static entry *find(responses_store *s, const char *id) {
  for (entry *e = s->head; e; e = e->next)
    if (!strcmp(e->id, id)) return e;
  return NULL;
}

void responses_store_destroy(responses_store *s) {
  if (!s) return;
  entry *e = s->head;
  while (e) {
    entry *next = e->next;
    entry_free(e);
    e = next;
  }
  pthread_mutex_destroy(&s->lock);
  free(s);
}

bool responses_store_put(responses_store *s, const char *id,
                         const json_t *response, const json_t *messages) {
  if (!s->max_count || strlen(id) > RESPONSES_MAX_ID) return false;
  entry *e = calloc(1, sizeof *e);
  if (!e) return false;
  snprintf(e->id, sizeof e->id, "%s", id);
  e->response = json_dumps(response, JSON_COMPACT);
  e->messages = json_dumps(messages, JSON_COMPACT);
  if (!e->response || !e->messages) {
    entry_free(e);
    return false;
  }
  e->bytes = sizeof *e + strlen(e->response) + strlen(e->messages);
  if (e->bytes > s->max_bytes) {
    entry_free(e);
    return false;
  }
  pthread_mutex_lock(&s->lock);
  entry *old = find(s, id);
  if (old) {
    unlink_entry(s, old);
    entry_free(old);
  }
  while (s->tail &&
         (s->count + 1 > s->max_count || s->bytes + e->bytes > s->max_bytes)) {
    entry *lru = s->tail;
    unlink_entry(s, lru);
    entry_free(lru);
  }
  push_front(s, e);
  pthread_mutex_unlock(&s->lock);
  return true;
}

static json_t *load(const char *text) {
  return json_loads(text, 0, NULL);
}

bool responses_store_get(responses_store *s, const char *id, json_t **response,
                         json_t **messages) {
  pthread_mutex_lock(&s->lock);
  entry *e = find(s, id);
  if (e) {
    unlink_entry(s, e);
    push_front(s, e);
    if (response) *response = load(e->response);
    if (messages) *messages = load(e->messages);
  }
  pthread_mutex_unlock(&s->lock);
  return e != NULL;
}

bool responses_store_delete(responses_store *s, const char *id) {
  pthread_mutex_lock(&s->lock);
  entry *e = find(s, id);
  if (e) {
    unlink_entry(s, e);
    entry_free(e);
  }
  pthread_mutex_unlock(&s->lock);
  return e != NULL;
}

void responses_store_usage(responses_store *s, size_t *count, size_t *bytes,
                           size_t *max_count, size_t *max_bytes) {
  pthread_mutex_lock(&s->lock);
  *count = s->count;
  *bytes = s->bytes;
  *max_count = s->max_count;
  *max_bytes = s->max_bytes;
  pthread_mutex_unlock(&s->lock);
}
