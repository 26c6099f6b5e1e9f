/* jinja_arena: the bump allocator that owns every value of one template
 * compile or render. Nothing is freed on its own: the whole arena goes at
 * once, so values can be shared freely. A byte cap bounds what a hostile
 * template can make us allocate. */
#ifndef NC_JINJA_ARENA_H
#define NC_JINJA_ARENA_H

#include <stddef.h>

typedef struct jinja_arena jinja_arena;

/* cap: the most bytes the arena may hand out in total. NULL on OOM. */
jinja_arena *jinja_arena_new(size_t cap);
void jinja_arena_free(jinja_arena *a);

/* n bytes aligned for any value; NULL when the cap or memory is exhausted. */
void *jinja_arena_alloc(jinja_arena *a, size_t n);
/* A NUL-terminated copy of n bytes. */
char *jinja_arena_strdup(jinja_arena *a, const char *s, size_t n);
size_t jinja_arena_used(const jinja_arena *a);

#endif
