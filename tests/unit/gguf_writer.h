/* gguf_writer: a tiny in-memory GGUF writer for tests and fuzz seeds. It
 * writes exactly the bytes it is told to, valid or not, so tests can build
 * malformed files field by field. Header-only (static functions). */
#ifndef NC_TEST_GGUF_WRITER_H
#define NC_TEST_GGUF_WRITER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct gw {
  uint8_t *p;
  size_t len, cap;
} gw;

static inline void gw_bytes(gw *b, const void *src, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
      cap *= 2;
    uint8_t *q = realloc(b->p, cap);
    if (!q) abort(); /* test helper: out of memory is fatal */
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->len, src, n);
  b->len += n;
}

static inline void gw_u8(gw *b, uint8_t v) {
  gw_bytes(b, &v, 1);
}
static inline void gw_u16(gw *b, uint16_t v) {
  uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  gw_bytes(b, x, 2);
}
static inline void gw_u32(gw *b, uint32_t v) {
  uint8_t x[4];
  for (int i = 0; i < 4; i++)
    x[i] = (uint8_t)(v >> (8 * i));
  gw_bytes(b, x, 4);
}
static inline void gw_u64(gw *b, uint64_t v) {
  uint8_t x[8];
  for (int i = 0; i < 8; i++)
    x[i] = (uint8_t)(v >> (8 * i));
  gw_bytes(b, x, 8);
}
static inline void gw_f32(gw *b, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  gw_u32(b, u);
}
static inline void gw_f64(gw *b, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  gw_u64(b, u);
}
/* A gguf string: u64 length then the bytes. */
static inline void gw_strn(gw *b, const char *s, size_t n) {
  gw_u64(b, n);
  gw_bytes(b, s, n);
}
static inline void gw_str(gw *b, const char *s) {
  gw_strn(b, s, strlen(s));
}

static inline void gw_header(gw *b, uint32_t version, uint64_t n_tensors,
                             uint64_t n_kv) {
  gw_bytes(b, "GGUF", 4);
  gw_u32(b, version);
  gw_u64(b, n_tensors);
  gw_u64(b, n_kv);
}

/* Key and value type; the caller writes the value. */
static inline void gw_key(gw *b, const char *key, uint32_t type) {
  gw_str(b, key);
  gw_u32(b, type);
}
static inline void gw_kv_u32(gw *b, const char *key, uint32_t v) {
  gw_key(b, key, 4 /* UINT32 */);
  gw_u32(b, v);
}
static inline void gw_kv_str(gw *b, const char *key, const char *v) {
  gw_key(b, key, 8 /* STRING */);
  gw_str(b, v);
}
/* Array header; the caller writes the elements. */
static inline void gw_kv_arr(gw *b, const char *key, uint32_t elem_type,
                             uint64_t n) {
  gw_key(b, key, 9 /* ARRAY */);
  gw_u32(b, elem_type);
  gw_u64(b, n);
}

static inline void gw_tensor(gw *b, const char *name, uint32_t n_dims,
                             const uint64_t *ne, uint32_t type,
                             uint64_t offset) {
  gw_str(b, name);
  gw_u32(b, n_dims);
  for (uint32_t i = 0; i < n_dims; i++)
    gw_u64(b, ne[i]);
  gw_u32(b, type);
  gw_u64(b, offset);
}

/* Zero bytes up to a multiple of a. */
static inline void gw_align(gw *b, size_t a) {
  while (b->len % a)
    gw_u8(b, 0);
}

/* n bytes of a simple pattern. */
static inline void gw_fill(gw *b, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++)
    gw_u8(b, (uint8_t)(seed + i * 7));
}

static inline void gw_free(gw *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

static inline void gw_put_u32(gw *b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; i++)
    b->p[at + i] = (uint8_t)(v >> (8 * i));
}
static inline void gw_put_u64(gw *b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; i++)
    b->p[at + i] = (uint8_t)(v >> (8 * i));
}

#endif
