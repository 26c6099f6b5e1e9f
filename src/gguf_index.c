#include "gguf_index.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_name(const char *p, uint64_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (uint64_t i = 0; i < len; i++) {
    h ^= (unsigned char)p[i];
    h *= 1099511628211ull;
  }
  return h;
}

nc_code nc_name_index_init(nc_name_index *ix, int64_t n, nc_name_of_fn name_of,
                           const void *ctx, nc_error *err) {
  memset(ix, 0, sizeof *ix);
  ix->name_of = name_of;
  ix->ctx = ctx;
  uint64_t cap = 16;
  /* load factor at most 1/2 */
  while (cap < (uint64_t)(n < 0 ? 0 : n) * 2) {
    if (cap > (SIZE_MAX / sizeof(int64_t)) / 2)
      return nc_fail(err, NC_ERR_NOMEM,
                     "gguf: name index for %lld entries is "
                     "too large",
                     (long long)n);
    cap *= 2;
  }
  ix->slots = calloc(cap, sizeof *ix->slots);
  if (!ix->slots)
    return nc_fail(err, NC_ERR_NOMEM,
                   "gguf: out of memory for a name index of %llu slots",
                   (unsigned long long)cap);
  ix->mask = cap - 1;
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

int64_t nc_name_index_add(nc_name_index *ix, int64_t i) {
  nc_name_ref name = ix->name_of(ix->ctx, i);
  uint64_t s = hash_name(name.ptr, name.len) & ix->mask;
  while (ix->slots[s]) {
    int64_t other = ix->slots[s] - 1;
    if (same(ix->name_of(ix->ctx, other), name.ptr, name.len)) return other;
    s = (s + 1) & ix->mask;
  }
  ix->slots[s] = i + 1;
  return -1;
}

int64_t nc_name_index_find(const nc_name_index *ix, const char *name,
                           uint64_t len) {
  if (!ix->slots || !name) return -1;
  uint64_t s = hash_name(name, len) & ix->mask;
  while (ix->slots[s]) {
    int64_t e = ix->slots[s] - 1;
    if (same(ix->name_of(ix->ctx, e), name, len)) return e;
    s = (s + 1) & ix->mask;
  }
  return -1;
}
