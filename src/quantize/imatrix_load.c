/* imatrix_load: llama-imatrix's two file forms, normalised as llama-quantize
 * normalises them (tools/quantize: sums / count per expert, an expert never
 * seen weighted 1; legacy sums / ncall). */
#include "imatrix_load.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/quant.h"

/* Bounds on what a file may claim (a legacy file's counts are not
 * checked against its size before they are read). */
enum { MAX_ENTRIES = 1 << 20, MAX_NAME = 4096 };
#define MAX_VALUES ((int64_t)1 << 30)

static int by_name(const void *a, const void *b) {
  return strcmp(((const nc_imatrix_entry *)a)->name,
                ((const nc_imatrix_entry *)b)->name);
}

/* By name, then by order read (seq). */
static int by_name_seq(const void *a, const void *b) {
  const nc_imatrix_entry *x = a, *y = b;
  const int c = strcmp(x->name, y->name);
  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

void nc_imatrix_free(nc_imatrix *m) {
  if (!m) return;
  for (int64_t i = 0; i < m->n_entries; i++) {
    free(m->entries[i].name);
    free(m->entries[i].values);
  }
  free(m->entries);
  free(m->dataset);
  memset(m, 0, sizeof *m);
}

const nc_imatrix_entry *nc_imatrix_find(const nc_imatrix *m, const char *name) {
  if (!m || !m->n_entries) return NULL;
  const nc_imatrix_entry key = {(char *)name, NULL, 0, 0};
  return bsearch(&key, m->entries, (size_t)m->n_entries, sizeof key, by_name);
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

/* Sorts the entries, keeps the last read of each name (as a map
 * assignment does) and checks every value. */
static nc_code finish(const char *path, nc_imatrix *m, nc_error *err) {
  qsort(m->entries, (size_t)m->n_entries, sizeof *m->entries, by_name_seq);
  int64_t k = 0;
  for (int64_t i = 0; i < m->n_entries; i++) {
    nc_imatrix_entry *e = &m->entries[i];
    if (i + 1 < m->n_entries && strcmp(e->name, e[1].name) == 0) {
      free(e->name);
      free(e->values);
      continue;
    }
    m->entries[k++] = *e;
  }
  m->n_entries = k;
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < m->entries[i].n; j++)
      if (!isfinite(m->entries[i].values[j]))
        return nc_fail(err, NC_ERR_FORMAT,
                       "importance matrix '%s': entry '%s' holds a value that "
                       "is not finite (%g at %lld)",
                       path, m->entries[i].name, m->entries[i].values[j],
                       (long long)j);
  return NC_OK;
}

static nc_code add_entry(nc_imatrix *m, int64_t *cap, const char *name,
                         size_t name_len, int64_t n, nc_error *err) {
  if (m->n_entries == *cap) {
    const int64_t nc = *cap ? *cap * 2 : 64;
    nc_imatrix_entry *e = realloc(m->entries, (size_t)nc * sizeof *e);
    if (!e) return nc_fail(err, NC_ERR_NOMEM, "out of memory for entries");
    m->entries = e;
    *cap = nc;
  }
  nc_imatrix_entry *e = &m->entries[m->n_entries];
  e->name = dup_n(name, name_len);
  e->values = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  e->n = n;
  e->seq = m->n_entries;
  if (!e->name || !e->values) {
    free(e->name);
    free(e->values);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory for %lld values",
                   (long long)n);
  }
  m->n_entries++;
  return NC_OK;
}

static bool ends_with(const char *s, const char *suffix, size_t *stem) {
  const size_t n = strlen(s), k = strlen(suffix);
  if (n <= k || strcmp(s + n - k, suffix) != 0) return false;
  *stem = n - k;
  return true;
}

static int64_t n_elements(const gguf_tensor_info *t) {
  int64_t n = 1;
  for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
    n *= t->ne[d];
  return n;
}

static nc_code load_gguf(const char *path, nc_imatrix *m, nc_error *err) {
  gguf_file *f = NULL;
  nc_code c = gguf_open(path, &f, err);
  if (c) return c;
  uint64_t chunks = 0, chunk_size = 0;
  gguf_value_type et;
  uint64_t n_sets = 0;
  const bool has_sets = gguf_get_arr(f, "imatrix.datasets", &et, &n_sets);
  if (!has_sets || !gguf_get_u64(f, "imatrix.chunk_count", &chunks) ||
      !gguf_get_u64(f, "imatrix.chunk_size", &chunk_size)) {
    gguf_close(f);
    return nc_fail(err, NC_ERR_FORMAT,
                   "importance matrix '%s' lacks its metadata "
                   "(imatrix.datasets, imatrix.chunk_count, "
                   "imatrix.chunk_size)",
                   path);
  }
  gguf_str s;
  if (et == GGUF_TYPE_STRING && n_sets > 0 &&
      gguf_get_arr_str(f, "imatrix.datasets", 0, &s)) {
    m->dataset = dup_n(s.ptr, (size_t)s.len);
    if (!m->dataset) c = nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  m->chunks = chunks > INT32_MAX ? INT32_MAX : (int32_t)chunks;
  const int64_t nt = gguf_tensor_count(f);
  int64_t cap = 0;
  for (int64_t i = 0; i < nt && !c; i++) {
    const gguf_tensor_info *sums = gguf_tensor_at(f, i);
    size_t stem;
    if (ends_with(sums->name, ".counts", &stem)) {
      char want[GGUF_MAX_NAME + 16];
      snprintf(want, sizeof want, "%.*s.in_sum2", (int)stem, sums->name);
      if (!gguf_find_tensor(f, want))
        c = nc_fail(err, NC_ERR_FORMAT,
                    "importance matrix '%s': counts without sums for '%.*s'",
                    path, (int)stem, sums->name);
      continue;
    }
    if (!ends_with(sums->name, ".in_sum2", &stem)) continue;
    char cname[GGUF_MAX_NAME + 16];
    snprintf(cname, sizeof cname, "%.*s.counts", (int)stem, sums->name);
    const gguf_tensor_info *counts = gguf_find_tensor(f, cname);
    if (!counts) {
      c = nc_fail(err, NC_ERR_FORMAT,
                  "importance matrix '%s': sums without counts for '%.*s'",
                  path, (int)stem, sums->name);
      break;
    }
    if (sums->type != NC_TYPE_F32 || counts->type != NC_TYPE_F32) {
      c = nc_fail(err, NC_ERR_FORMAT,
                  "importance matrix '%s': the sums and counts of '%.*s' "
                  "must be F32",
                  path, (int)stem, sums->name);
      break;
    }
    const int64_t nval = n_elements(sums), ncount = n_elements(counts);
    if (ncount < 1 || nval % ncount != 0 || nval > MAX_VALUES) {
      c = nc_fail(err, NC_ERR_FORMAT,
                  "importance matrix '%s': '%.*s' has %lld sums for %lld "
                  "counts (not a multiple)",
                  path, (int)stem, sums->name, (long long)nval,
                  (long long)ncount);
      break;
    }
    c = add_entry(m, &cap, sums->name, stem, nval, err);
    if (c) break;
    float *v = m->entries[m->n_entries - 1].values;
    const float *sv = sums->data, *cv = counts->data;
    const int64_t ne0 = nval / ncount;
    for (int64_t j = 0; j < ncount; j++) {
      const float count = (float)lroundf(cv[j]);
      for (int64_t k = 0; k < ne0; k++)
        v[j * ne0 + k] = count > 0.0f ? sv[j * ne0 + k] / count : 1.0f;
    }
  }
  if (!c && m->n_entries == 0)
    c = nc_fail(err, NC_ERR_FORMAT, "importance matrix '%s' holds no entries",
                path);
  gguf_close(f);
  return c;
}

static bool read_i32(FILE *fp, int32_t *v) {
  return fread(v, sizeof *v, 1, fp) == 1;
}

/* Bytes left in fp from where it is. */
static int64_t bytes_left(FILE *fp, int64_t size) {
  const long pos = ftell(fp);
  return pos < 0 ? 0 : size - (int64_t)pos;
}

static nc_code load_legacy(const char *path, FILE *fp, nc_imatrix *m,
                           nc_error *err) {
  int64_t size = 0;
  if (fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
  rewind(fp);
  int32_t n_entries;
  if (!read_i32(fp, &n_entries) || n_entries < 1 || n_entries > MAX_ENTRIES)
    return nc_fail(err, NC_ERR_FORMAT,
                   "importance matrix '%s' is neither GGUF nor llama-imatrix's "
                   "legacy form (entry count not in [1, %d])",
                   path, MAX_ENTRIES);
  int64_t cap = 0;
  char *name = malloc(MAX_NAME + 1);
  if (!name) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  nc_code c = NC_OK;
  for (int32_t i = 0; i < n_entries && !c; i++) {
    int32_t len, ncall, nval;
    if (!read_i32(fp, &len) || len < 1 || len > MAX_NAME ||
        fread(name, 1, (size_t)len, fp) != (size_t)len ||
        !read_i32(fp, &ncall) || !read_i32(fp, &nval) || nval < 1 ||
        nval > MAX_VALUES || (int64_t)nval * 4 > bytes_left(fp, size)) {
      c = nc_fail(err, NC_ERR_FORMAT,
                  "importance matrix '%s': entry %d is cut or malformed", path,
                  i + 1);
      break;
    }
    c = add_entry(m, &cap, name, (size_t)len, nval, err);
    if (c) break;
    float *v = m->entries[m->n_entries - 1].values;
    if (fread(v, sizeof *v, (size_t)nval, fp) != (size_t)nval) {
      c = nc_fail(err, NC_ERR_FORMAT,
                  "importance matrix '%s': entry %d's %d values are cut", path,
                  i + 1, nval);
      break;
    }
    if (ncall > 0)
      for (int32_t k = 0; k < nval; k++)
        v[k] /= (float)ncall;
  }
  int32_t calls, dlen;
  if (!c && read_i32(fp, &calls)) {
    m->chunks = calls;
    if (read_i32(fp, &dlen) && dlen > 0 && dlen <= MAX_NAME &&
        fread(name, 1, (size_t)dlen, fp) == (size_t)dlen) {
      m->dataset = dup_n(name, strnlen(name, (size_t)dlen));
      if (!m->dataset) c = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
  }
  free(name);
  return c;
}

nc_code nc_imatrix_load(const char *path, nc_imatrix *out, nc_error *err) {
  memset(out, 0, sizeof *out);
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return nc_fail(err, NC_ERR_IO, "cannot open importance matrix '%s': %s",
                   path, strerror(errno));
  char magic[4] = {0};
  const bool gguf =
      fread(magic, 1, 4, fp) == 4 && memcmp(magic, "GGUF", 4) == 0;
  nc_code c;
  if (gguf) {
    fclose(fp);
    c = load_gguf(path, out, err);
  } else {
    rewind(fp);
    c = load_legacy(path, fp, out, err);
    fclose(fp);
  }
  if (!c) c = finish(path, out, err);
  if (c) nc_imatrix_free(out);
  return c;
}
