#include "gguf_index.h"

#include <stdlib.h>
#include <string.h>

#define MIN_SLOTS 16

static uint64_t hash_name(const char *p, uint64_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (uint64_t i = 0; i < len; i++) {
    h ^= (unsigned char)p[i];
    h *= 1099511628211ull;
  }
  return h;
}

nc_code nc_name_index_init(nc_name_index *ix, nc_name_of_fn name_of,
                           const void *ctx, nc_error *err) {
  memset(ix, 0, sizeof *ix);
  ix->name_of = name_of;
  ix->ctx = ctx;
  ix->slots = calloc(MIN_SLOTS, sizeof *ix->slots);
  if (!ix->slots)
    return nc_fail(err, NC_ERR_NOMEM, "gguf: out of memory for a name index");
  ix->mask = MIN_SLOTS - 1;
  return NC_OK;
}

void nc_name_index_free(nc_name_index *ix) {
  if (!ix) return;
  free(ix->slots);
  ix->slots = NULL;
}

static bool same(nc_name_ref a, const char *p, uint64_t len) {
  return a.len == len && (len == 0 || memcmp(a.ptr, p, len) == 0);
}

/* The slot holding name, or the empty slot where it belongs. */
static uint64_t probe(const nc_name_index *ix, const char *p, uint64_t len) {
  uint64_t s = hash_name(p, len) & ix->mask;
  while (ix->slots[s] && !same(ix->name_of(ix->ctx, ix->slots[s] - 1), p, len))
    s = (s + 1) & ix->mask;
  return s;
}

/* Doubles the table (load factor stays at most 1/2). */
static nc_code grow(nc_name_index *ix, nc_error *err) {
  uint64_t cap = (ix->mask + 1) * 2;
  if (cap > SIZE_MAX / sizeof(int64_t))
    return nc_fail(err, NC_ERR_NOMEM, "gguf: name index too large");
  int64_t *old = ix->slots;
  uint64_t old_cap = ix->mask + 1;
  ix->slots = calloc((size_t)cap, sizeof *ix->slots);
  if (!ix->slots) {
    ix->slots = old;
    return nc_fail(err, NC_ERR_NOMEM,
                   "gguf: out of memory for a name index of %llu slots",
                   (unsigned long long)cap);
  }
  ix->mask = cap - 1;
  for (uint64_t s = 0; s < old_cap; s++)
    if (old[s]) {
      nc_name_ref n = ix->name_of(ix->ctx, old[s] - 1);
      ix->slots[probe(ix, n.ptr, n.len)] = old[s];
    }
  free(old);
  return NC_OK;
}

nc_code nc_name_index_add(nc_name_index *ix, int64_t i, int64_t *prev,
                          nc_error *err) {
  *prev = -1;
  if ((ix->count + 1) * 2 > ix->mask + 1) {
    nc_code c = grow(ix, err);
    if (c) return c;
  }
  nc_name_ref name = ix->name_of(ix->ctx, i);
  uint64_t s = probe(ix, name.ptr, name.len);
  if (ix->slots[s]) {
    *prev = ix->slots[s] - 1;
    return NC_OK;
  }
  ix->slots[s] = i + 1;
  ix->count++;
  return NC_OK;
}

int64_t nc_name_index_find(const nc_name_index *ix, const char *name,
                           uint64_t len) {
  if (!ix->slots || !name) return -1;
  uint64_t s = probe(ix, name, len);
  return ix->slots[s] ? ix->slots[s] - 1 : -1;
}
