/* jinja_arena: chunked bump allocation with a total byte cap. */
#include "jinja_arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK (64 * 1024)
#define ARENA_ALIGN 16

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct jinja_arena {
  chunk *head;
  size_t cap, total;
};

jinja_arena *jinja_arena_new(size_t cap) {
  jinja_arena *a = calloc(1, sizeof *a);
  if (a) a->cap = cap;
  return a;
}

void jinja_arena_free(jinja_arena *a) {
  if (!a) return;
  chunk *c = a->head;
  while (c) {
    chunk *next = c->next;
    free(c);
    c = next;
  }
  free(a);
}

void *jinja_arena_alloc(jinja_arena *a, size_t n) {
  if (n == 0) n = 1;
  if (n > SIZE_MAX - ARENA_ALIGN) return NULL;
  n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (n > a->cap || a->total > a->cap - n) return NULL;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
    c = malloc(sizeof *c + size);
    if (!c) return NULL;
    c->size = size;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  a->total += n;
  return p;
}

char *jinja_arena_strdup(jinja_arena *a, const char *s, size_t n) {
  if (n == SIZE_MAX) return NULL;
  char *p = jinja_arena_alloc(a, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

size_t jinja_arena_used(const jinja_arena *a) {
  return a->total;
}
