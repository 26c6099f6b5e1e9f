/* tokenizer_strtab: the interned-string table and the merge-rank map. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"

uint64_t nc_str_hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a final mix */
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ull;
  }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return h;
}

int32_t nc_strtab_find(const nc_strtab *t, const char *s, size_t n) {
  if (!t->n_slots) return -1;
  size_t mask = t->n_slots - 1;
  for (size_t i = nc_str_hash(s, n) & mask;; i = (i + 1) & mask) {
    int32_t id = t->slots[i];
    if (id < 0) return -1;
    if (t->len[id] == n && memcmp(t->bytes + t->off[id], s, n) == 0) return id;
  }
}

static bool rehash(nc_strtab *t, size_t n_slots) {
  int32_t *slots = malloc(n_slots * sizeof *slots);
  if (!slots) return false;
  memset(slots, 0xff, n_slots * sizeof *slots);
  size_t mask = n_slots - 1;
  for (int32_t id = 0; id < t->n; id++) {
    size_t i = nc_str_hash(t->bytes + t->off[id], t->len[id]) & mask;
    while (slots[i] >= 0)
      i = (i + 1) & mask;
    slots[i] = id;
  }
  free(t->slots);
  t->slots = slots;
  t->n_slots = n_slots;
  return true;
}

/* Adds s (which must not be present yet); returns its id or -1 (no
 * memory, or the table would pass 2^31 strings / 4 GiB of text). */
int32_t nc_strtab_add(nc_strtab *t, const char *s, size_t n) {
  if (t->n >= INT32_MAX - 1 || n > UINT32_MAX || t->n_bytes + n > UINT32_MAX)
    return -1;
  if (t->n == t->cap) {
    int32_t cap = t->cap ? t->cap * 2 : 1024;
    uint32_t *off = realloc(t->off, (size_t)cap * sizeof *off);
    if (!off) return -1;
    t->off = off;
    uint32_t *len = realloc(t->len, (size_t)cap * sizeof *len);
    if (!len) return -1;
    t->len = len;
    t->cap = cap;
  }
  if (t->n_bytes + n > t->cap_bytes) {
    size_t cap = t->cap_bytes ? t->cap_bytes : 4096;
    while (cap < t->n_bytes + n)
      cap *= 2;
    char *b = realloc(t->bytes, cap);
    if (!b) return -1;
    t->bytes = b;
    t->cap_bytes = cap;
  }
  if (n) memcpy(t->bytes + t->n_bytes, s, n);
  int32_t id = t->n++;
  t->off[id] = (uint32_t)t->n_bytes;
  t->len[id] = (uint32_t)n;
  t->n_bytes += n;
  if ((size_t)t->n * 2 > t->n_slots) {
    size_t want = t->n_slots ? t->n_slots * 2 : 2048;
    while ((size_t)t->n * 2 > want)
      want *= 2;
    if (!rehash(t, want)) {
      t->n--;
      t->n_bytes -= n;
      return -1;
    }
  } else {
    size_t mask = t->n_slots - 1;
    size_t i = nc_str_hash(s, n) & mask;
    while (t->slots[i] >= 0)
      i = (i + 1) & mask;
    t->slots[i] = id;
  }
  return id;
}

void nc_strtab_free(nc_strtab *t) {
  free(t->bytes);
  free(t->off);
  free(t->len);
  free(t->slots);
  memset(t, 0, sizeof *t);
}

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  x ^= x >> 33;
  return x;
}

bool nc_merge_find(const nc_vocab *v, int32_t a, int32_t b, int32_t *rank,
                   int32_t *result) {
  if (!v->n_merge_slots || a < 0 || b < 0) return false;
  uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
  size_t mask = v->n_merge_slots - 1;
  for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
    const nc_merge_slot *s = &v->merges[i];
    if (s->key == UINT64_MAX) return false;
    if (s->key == key) {
      *rank = s->rank;
      *result = s->result;
      return true;
    }
  }
}

/* Inserts unless present (the first rank of a repeated pair wins, as with
 * std::map::emplace). The table must have room (sized by the caller). */
void nc_merge_insert(nc_vocab *v, int32_t a, int32_t b, int32_t rank,
                     int32_t result) {
  uint64_t key = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
  size_t mask = v->n_merge_slots - 1;
  for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
    nc_merge_slot *s = &v->merges[i];
    if (s->key == key) return;
    if (s->key == UINT64_MAX) {
      s->key = key;
      s->rank = rank;
      s->result = result;
      return;
    }
  }
}
