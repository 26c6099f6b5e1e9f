/* gguf_index: a hash index from names to entry numbers, used by the GGUF
 * reader for duplicate detection and O(1) lookup of keys and tensor names.
 * The index stores only numbers; the names live with the caller, who hands
 * a function that returns the name of entry i. */
#ifndef NC_GGUF_INDEX_H
#define NC_GGUF_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct nc_name_ref {
  const char *ptr;
  uint64_t len;
} nc_name_ref;

typedef nc_name_ref (*nc_name_of_fn)(const void *ctx, int64_t i);

typedef struct nc_name_index {
  int64_t *slots; /* entry + 1; 0 = empty */
  uint64_t mask;
  uint64_t count;
  nc_name_of_fn name_of;
  const void *ctx;
} nc_name_index;

/* An empty index; it grows as entries are added. */
nc_code nc_name_index_init(nc_name_index *ix, nc_name_of_fn name_of,
                           const void *ctx, nc_error *err);
void nc_name_index_free(nc_name_index *ix);

/* Adds entry i under its name: *prev = -1 when added, or the entry that
 * already holds that name (and then nothing is added). NC_ERR_NOMEM when
 * the index cannot grow. */
nc_code nc_name_index_add(nc_name_index *ix, int64_t i, int64_t *prev,
                          nc_error *err);
/* The entry named name, or -1. */
int64_t nc_name_index_find(const nc_name_index *ix, const char *name,
                           uint64_t len);

#endif
