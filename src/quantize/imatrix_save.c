/* imatrix_save: llama-imatrix's GGUF layout, written field by field. */
#include "imatrix_save.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

enum { ALIGN = 32 }; /* GGUF's default alignment */

typedef struct wr {
  FILE *fp;
  bool bad;
} wr;

static void put(wr *w, const void *p, size_t n) {
  if (!w->bad && n && fwrite(p, 1, n, w->fp) != n) w->bad = true;
}
static void put_u32(wr *w, uint32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (uint8_t)(v >> 8 * i);
  put(w, b, 4);
}
static void put_u64(wr *w, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(v >> 8 * i);
  put(w, b, 8);
}
static void put_str(wr *w, const char *s) {
  put_u64(w, strlen(s));
  put(w, s, strlen(s));
}
static void put_zeros(wr *w, size_t n) {
  static const uint8_t z[ALIGN] = {0};
  put(w, z, n);
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const nc_imatrix_stat *)a)->name,
                ((const nc_imatrix_stat *)b)->name);
}

/* A tensor's entry in the table: ggml's n_dims (up to the last dim > 1). */
static void put_info(wr *w, const char *name, const char *suffix, int64_t ne0,
                     int64_t ne1, uint64_t off) {
  char full[512];
  snprintf(full, sizeof full, "%s%s", name, suffix);
  put_str(w, full);
  const uint32_t nd = ne1 > 1 ? 2 : 1;
  put_u32(w, nd);
  put_u64(w, (uint64_t)ne0);
  if (nd == 2) put_u64(w, (uint64_t)ne1);
  put_u32(w, 0); /* F32 */
  put_u64(w, off);
}

static uint64_t padded(uint64_t n) {
  return (n + ALIGN - 1) / ALIGN * ALIGN;
}

nc_code nc_imatrix_save(const char *path, const nc_imatrix_stat *stats,
                        int64_t n, const char *const *datasets, int n_datasets,
                        uint32_t chunk_count, uint32_t chunk_size,
                        nc_error *err) {
  nc_imatrix_stat *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
  if (!s) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  memcpy(s, stats, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, by_name);
  wr w = {fopen(path, "wb"), false};
  if (!w.fp) {
    free(s);
    return nc_fail(err, NC_ERR_IO, "cannot create '%s': %s", path,
                   strerror(errno));
  }
  put(&w, "GGUF", 4);
  put_u32(&w, 3);
  put_u64(&w, (uint64_t)(2 * n));
  put_u64(&w, 4);
  put_str(&w, "general.type");
  put_u32(&w, GGUF_TYPE_STRING);
  put_str(&w, "imatrix");
  put_str(&w, "imatrix.datasets");
  put_u32(&w, GGUF_TYPE_ARRAY);
  put_u32(&w, GGUF_TYPE_STRING);
  put_u64(&w, (uint64_t)n_datasets);
  for (int i = 0; i < n_datasets; i++)
    put_str(&w, datasets[i]);
  put_str(&w, "imatrix.chunk_count");
  put_u32(&w, GGUF_TYPE_UINT32);
  put_u32(&w, chunk_count);
  put_str(&w, "imatrix.chunk_size");
  put_u32(&w, GGUF_TYPE_UINT32);
  put_u32(&w, chunk_size);
  uint64_t off = 0;
  for (int64_t i = 0; i < n; i++) {
    put_info(&w, s[i].name, ".in_sum2", s[i].ne0, s[i].n_mat, off);
    off += padded((uint64_t)(s[i].ne0 * s[i].n_mat) * 4);
    put_info(&w, s[i].name, ".counts", 1, s[i].n_mat, off);
    off += padded((uint64_t)s[i].n_mat * 4);
  }
  const long pos = ftell(w.fp);
  if (pos < 0) w.bad = true;
  if (!w.bad) put_zeros(&w, (size_t)(padded((uint64_t)pos) - (uint64_t)pos));
  for (int64_t i = 0; i < n && !w.bad; i++) {
    const size_t nv = (size_t)(s[i].ne0 * s[i].n_mat);
    put(&w, s[i].sums, nv * 4);
    put_zeros(&w, (size_t)(padded(nv * 4) - nv * 4));
    for (int32_t j = 0; j < s[i].n_mat; j++) {
      const float c = (float)s[i].counts[j];
      put(&w, &c, 4);
    }
    const size_t nb = (size_t)s[i].n_mat * 4;
    put_zeros(&w, (size_t)(padded(nb) - nb));
  }
  free(s);
  if (fclose(w.fp) != 0) w.bad = true;
  if (w.bad) {
    remove(path);
    return nc_fail(err, NC_ERR_IO, "cannot write '%s': %s", path,
                   strerror(errno));
  }
  return NC_OK;
}
