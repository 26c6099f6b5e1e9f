/* tokenizer_impl: the pieces nc_tokenize is built from (internal). */
#ifndef NC_TOKENIZER_IMPL_H
#define NC_TOKENIZER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "tokenizer_internal.h"

/* A growing id array; `oom` latches the first allocation failure. */
typedef struct nc_ids {
  int32_t *p;
  size_t n, cap;
  bool oom;
} nc_ids;

static inline void nc_ids_push(nc_ids *ids, int32_t id) {
  if (ids->n == ids->cap) {
    size_t cap = ids->cap ? ids->cap * 2 : 64;
    int32_t *p = (int32_t *)realloc(ids->p, cap * sizeof *p);
    if (!p) {
      ids->oom = true;
      return;
    }
    ids->p = p;
    ids->cap = cap;
  }
  ids->p[ids->n++] = id;
}

/* Tokenizes one raw fragment (no special tokens inside). */
bool nc_bpe_fragment(const nc_vocab *v, const char *text, size_t len,
                     nc_ids *out);
bool nc_spm_fragment(const nc_vocab *v, const char *text, size_t len,
                     bool space_prefix, nc_ids *out);
bool nc_wpm_fragment(const nc_vocab *v, const char *text, size_t len,
                     nc_ids *out);

#endif
