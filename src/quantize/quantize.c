/* quantize: the driver. Reads the input's header (gguf.h), chooses each
 * tensor's type (quantize_recipe.c), writes the header, metadata and tensor
 * table, then each tensor: copied when its type stays, else dequantized to
 * f32 and quantized (quantize_rows.c) a slab of rows at a time, the slabs
 * spread over n_threads threads. */
#include "quantize.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "imatrix_load.h"
#include "quantize_recipe.h"
#include "quantize_rows.h"

enum { MAX_THREADS = 256 };
/* f32 values per slab (64 MiB of floats): memory stays bounded. */
#define SLAB_VALUES ((int64_t)16 << 20)
#define QNT_VERSION 2u /* ggml's GGML_QNT_VERSION */

const char *nc_quantize_type_names(void) {
  return nc_ftype_names();
}

typedef struct out_file {
  FILE *fp;
  const char *path;
  nc_error *err;
  nc_code code;
} out_file;

static void put(out_file *o, const void *p, size_t n) {
  if (o->code || n == 0) return;
  if (fwrite(p, 1, n, o->fp) != n)
    o->code = nc_fail(o->err, NC_ERR_IO, "cannot write '%s': %s", o->path,
                      strerror(errno));
}

static void put_u32(out_file *o, uint32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (uint8_t)(v >> 8 * i);
  put(o, b, 4);
}

static void put_u64(out_file *o, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(v >> 8 * i);
  put(o, b, 8);
}

static void put_str(out_file *o, const char *s) {
  put_u64(o, strlen(s));
  put(o, s, strlen(s));
}

static void put_zeros(out_file *o, size_t n) {
  static const uint8_t z[64] = {0};
  while (n > 0 && !o->code) {
    const size_t k = n < sizeof z ? n : sizeof z;
    put(o, z, k);
    n -= k;
  }
}

static uint64_t pad_to(uint64_t n, uint64_t align) {
  return (n + align - 1) / align * align;
}

/* ggml_n_dims: the dimensions up to the last one above 1 (at least 1). */
static uint32_t n_dims_of(const gguf_tensor_info *t) {
  uint32_t n = 1;
  for (uint32_t d = 1; d < GGUF_MAX_DIMS; d++)
    if (t->ne[d] > 1) n = d + 1;
  return n;
}

static bool key_is(gguf_str k, const char *s) {
  return k.len == strlen(s) && memcmp(k.ptr, s, k.len) == 0;
}

static bool is_split_key(gguf_str k) {
  return key_is(k, "split.no") || key_is(k, "split.count") ||
         key_is(k, "split.tensors.count");
}

/* The keys llama-quantize sets with an importance matrix (as overrides,
 * in this order; a value string cut at 127 bytes). */
typedef struct imatrix_keys {
  const char *file, *dataset; /* dataset: NULL when the matrix names none */
  uint32_t entries, chunks;   /* chunks: 0, not written */
} imatrix_keys;

static bool is_set_key(gguf_str k, const imatrix_keys *ik) {
  if (key_is(k, "general.quantization_version") ||
      key_is(k, "general.file_type"))
    return true;
  if (!ik) return false;
  return key_is(k, "quantize.imatrix.file") ||
         (ik->dataset && key_is(k, "quantize.imatrix.dataset")) ||
         key_is(k, "quantize.imatrix.entries_count") ||
         (ik->chunks > 0 && key_is(k, "quantize.imatrix.chunks_count"));
}

static void put_kv_u32(out_file *o, const char *key, uint32_t v) {
  put_str(o, key);
  put_u32(o, GGUF_TYPE_UINT32);
  put_u32(o, v);
}

static void put_kv_str127(out_file *o, const char *key, const char *v) {
  char cut[128];
  snprintf(cut, sizeof cut, "%s", v);
  put_str(o, key);
  put_u32(o, GGUF_TYPE_STRING);
  put_str(o, cut);
}

/* The metadata: every entry copied in order but the split keys (one file
 * out) and the keys it sets (the two quantization keys, and with an
 * importance matrix the quantize.imatrix ones): removed and added at the
 * end, as llama.cpp's gguf_set_val does. */
static void write_kvs(out_file *o, const gguf_file *f, uint32_t ftype,
                      const imatrix_keys *ik) {
  const int64_t n = gguf_kv_count(f);
  uint64_t kept = 0;
  for (int64_t i = 0; i < n; i++) {
    const gguf_str k = gguf_kv_key(f, i);
    kept += !is_split_key(k) && !is_set_key(k, ik);
  }
  const uint64_t added =
      ik ? 2 + 2 + (ik->dataset != NULL) + (ik->chunks > 0) : 2;
  put_u64(o, kept + added);
  for (int64_t i = 0; i < n; i++) {
    const gguf_str k = gguf_kv_key(f, i);
    if (is_split_key(k) || is_set_key(k, ik)) continue;
    const void *raw;
    size_t len;
    gguf_kv_raw(f, i, &raw, &len);
    put(o, raw, len);
  }
  put_kv_u32(o, "general.quantization_version", QNT_VERSION);
  put_kv_u32(o, "general.file_type", ftype);
  if (!ik) return;
  put_kv_str127(o, "quantize.imatrix.file", ik->file);
  if (ik->dataset) put_kv_str127(o, "quantize.imatrix.dataset", ik->dataset);
  put_kv_u32(o, "quantize.imatrix.entries_count", ik->entries);
  if (ik->chunks > 0)
    put_kv_u32(o, "quantize.imatrix.chunks_count", ik->chunks);
}

static uint64_t n_rows_of(const gguf_tensor_info *t) {
  uint64_t r = 1;
  for (uint32_t d = 1; d < GGUF_MAX_DIMS; d++)
    r *= (uint64_t)t->ne[d];
  return r;
}

static size_t out_size(const nc_recipe_entry *e) {
  return nc_row_size(e->type, e->tensor->ne[0]) * (size_t)n_rows_of(e->tensor);
}

/* One thread's share of a slab: rows [r0, r1). */
typedef struct slab_job {
  const nc_recipe_entry *e;
  const uint8_t *src; /* the slab's first input row */
  uint8_t *dst;       /* its first output row */
  float *f32;         /* scratch, a row at a time */
  int64_t r0, r1;
  int64_t row0; /* the slab's first row in the tensor */
} slab_job;

static void *run_slab(void *arg) {
  const slab_job *j = arg;
  const gguf_tensor_info *t = j->e->tensor;
  const int64_t n = t->ne[0];
  const size_t in_row = nc_row_size((nc_type)t->type, n);
  const size_t out_row = nc_row_size(j->e->type, n);
  for (int64_t r = j->r0; r < j->r1; r++) {
    /* an expert's rows take its slice of the importance matrix */
    const float *qw =
        j->e->imatrix ? j->e->imatrix + (j->row0 + r) / t->ne[1] * n : NULL;
    nc_dequantize_row((nc_type)t->type, j->src + (size_t)r * in_row, j->f32, n);
    nc_quantize_weights(j->e->type, j->f32, j->dst + (size_t)r * out_row, 1, n,
                        qw, j->e->lattice);
  }
  return NULL;
}

static void write_tensor(out_file *o, const nc_recipe_entry *e, int n_threads,
                         uint8_t *buf, float *scratch) {
  const gguf_tensor_info *t = e->tensor;
  if (e->type == (nc_type)t->type) {
    put(o, t->data, (size_t)t->nbytes);
    return;
  }
  const int64_t n = t->ne[0], rows = (int64_t)n_rows_of(t);
  const int64_t slab = SLAB_VALUES / n > 0 ? SLAB_VALUES / n : 1;
  const size_t in_row = nc_row_size((nc_type)t->type, n);
  const size_t out_row = nc_row_size(e->type, n);
  for (int64_t s0 = 0; s0 < rows && !o->code; s0 += slab) {
    const int64_t m = rows - s0 < slab ? rows - s0 : slab;
    slab_job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (int k = 0; k < n_threads; k++) {
      jobs[k] = (slab_job){e,
                           (const uint8_t *)t->data + (size_t)s0 * in_row,
                           buf,
                           scratch + (size_t)k * (size_t)n,
                           m * k / n_threads,
                           m * (k + 1) / n_threads,
                           s0};
      if (k > 0)
        started[k] = pthread_create(&tid[k], NULL, run_slab, &jobs[k]) == 0;
    }
    run_slab(&jobs[0]);
    for (int k = 1; k < n_threads; k++) {
      if (started[k])
        pthread_join(tid[k], NULL);
      else
        run_slab(&jobs[k]); /* no thread: its rows here */
    }
    put(o, buf, (size_t)m * out_row);
  }
}

static nc_code write_file(out_file *o, const gguf_file *f, const nc_ftype *ft,
                          const nc_recipe_entry *es, int n_threads,
                          const imatrix_keys *ik) {
  const int64_t nt = gguf_tensor_count(f);
  const uint64_t align = gguf_alignment(f);
  put(o, "GGUF", 4);
  put_u32(o, 3);
  put_u64(o, (uint64_t)nt);
  write_kvs(o, f, ft->id, ik);
  uint64_t off = 0, header = 4 + 4 + 8 + 8;
  int64_t max_ne0 = 1;
  size_t max_slab = 0;
  for (int64_t i = 0; i < nt; i++) {
    const gguf_tensor_info *t = es[i].tensor;
    const uint32_t nd = n_dims_of(t);
    put_str(o, t->name);
    put_u32(o, nd);
    for (uint32_t d = 0; d < nd; d++)
      put_u64(o, (uint64_t)t->ne[d]);
    put_u32(o, (uint32_t)es[i].type);
    put_u64(o, off);
    off += pad_to(out_size(&es[i]), align);
    if (t->ne[0] > max_ne0) max_ne0 = t->ne[0];
    const int64_t slab =
        SLAB_VALUES / t->ne[0] > 0 ? SLAB_VALUES / t->ne[0] : 1;
    const int64_t rows = (int64_t)n_rows_of(t);
    const size_t bytes =
        nc_row_size(es[i].type, t->ne[0]) * (size_t)(rows < slab ? rows : slab);
    if (bytes > max_slab) max_slab = bytes;
  }
  if (o->code) return o->code;
  const long pos = ftell(o->fp);
  if (pos < 0)
    return nc_fail(o->err, NC_ERR_IO, "cannot write '%s': %s", o->path,
                   strerror(errno));
  header = (uint64_t)pos;
  put_zeros(o, (size_t)(pad_to(header, align) - header));
  uint8_t *buf = malloc(max_slab ? max_slab : 1);
  float *scratch = malloc(sizeof(float) * (size_t)max_ne0 * (size_t)n_threads);
  if (!buf || !scratch) {
    free(buf);
    free(scratch);
    return nc_fail(o->err, NC_ERR_NOMEM,
                   "out of memory for a quantization slab of %zu bytes",
                   max_slab);
  }
  for (int64_t i = 0; i < nt && !o->code; i++) {
    write_tensor(o, &es[i], n_threads, buf, scratch);
    const size_t sz = out_size(&es[i]);
    put_zeros(o, (size_t)(pad_to(sz, align) - sz));
  }
  free(buf);
  free(scratch);
  return o->code;
}

static bool is_token_embd(const char *name) {
  return strcmp(name, "token_embd.weight") == 0 ||
         strcmp(name, "per_layer_token_embd.weight") == 0;
}

/* Gives each quantized tensor its importance weights, as llama-quantize
 * looks them up: by name, ne0 per expert; a tensor without an entry is
 * quantized without; a size that differs is an error but for the token
 * embeddings (quantized without). */
static nc_code attach_imatrix(const nc_imatrix *m, nc_recipe_entry *es,
                              int64_t nt, const char *path, nc_error *err) {
  for (int64_t i = 0; i < nt; i++) {
    const gguf_tensor_info *t = es[i].tensor;
    if (es[i].type == (nc_type)t->type) continue;
    const nc_imatrix_entry *e = nc_imatrix_find(m, t->name);
    if (!e) continue;
    const int64_t want = t->ne[0] * t->ne[2];
    if (e->n != want) {
      if (is_token_embd(t->name)) continue;
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "importance matrix '%s' has %lld values for '%s', "
                     "which needs %lld (%lld columns x %lld experts)",
                     path, (long long)e->n, t->name, (long long)want,
                     (long long)t->ne[0], (long long)t->ne[2]);
    }
    es[i].imatrix = e->values;
  }
  return NC_OK;
}

static bool is_output(const char *name) {
  return strcmp(name, "output.weight") == 0;
}

/* llama.cpp's refusal of its very-low-bit types without importance
 * weights: every tensor but the token embeddings and the output that
 * becomes one of them needs its matrix entry. */
static nc_code check_imatrix_needed(const nc_recipe_entry *es, int64_t nt,
                                    const char *path, nc_error *err) {
  for (int64_t i = 0; i < nt; i++) {
    const gguf_tensor_info *t = es[i].tensor;
    if (es[i].type == (nc_type)t->type || es[i].imatrix ||
        !nc_quantize_needs_imatrix(es[i].type) || is_token_embd(t->name) ||
        is_output(t->name))
      continue;
    if (!path)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "tensor '%s' becomes %s, which needs an importance "
                     "matrix (--imatrix FILE; make one with nucleus imatrix)",
                     t->name, nc_type_name(es[i].type));
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "importance matrix '%s' has no entry for '%s', which "
                   "becomes %s and needs one",
                   path, t->name, nc_type_name(es[i].type));
  }
  return NC_OK;
}

/* The lattice types' search tables, one per codebook the recipe uses,
 * built before the threads start and shared read-only by them. */
typedef struct lattice_set {
  nc_iq_lattice *tab[8];
  int n;
} lattice_set;

static nc_code attach_lattices(lattice_set *ls, nc_recipe_entry *es, int64_t nt,
                               nc_error *err) {
  for (int64_t i = 0; i < nt; i++) {
    const nc_type ty = es[i].type;
    if (ty == (nc_type)es[i].tensor->type || !nc_iq_lattice_needed(ty))
      continue;
    const nc_type key = ty == NC_TYPE_IQ1_M ? NC_TYPE_IQ1_S : ty;
    int k = 0;
    while (k < ls->n && ls->tab[k]->type != key)
      k++;
    if (k == ls->n) {
      const nc_code c = nc_iq_lattice_build(key, &ls->tab[k], err);
      if (c) return c;
      ls->n++;
    }
    es[i].lattice = ls->tab[k];
  }
  return NC_OK;
}

nc_code nc_quantize_file(const char *in_path, const char *out_path,
                         const char *type, int n_threads,
                         const char *imatrix_path, nc_error *err) {
  const nc_ftype *ft = nc_ftype_by_name(type);
  if (!ft)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "unknown quantization type '%s' (allowed: %s)",
                   type ? type : "(null)", nc_ftype_names());
  if (n_threads < 1 || n_threads > MAX_THREADS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "threads %d is outside [1, %d]", n_threads, MAX_THREADS);
  nc_imatrix im = {0};
  if (imatrix_path) {
    const nc_code c = nc_imatrix_load(imatrix_path, &im, err);
    if (c) return c;
  }
  gguf_file *f = NULL;
  nc_code c = gguf_open(in_path, &f, err);
  if (c) {
    nc_imatrix_free(&im);
    return c;
  }
  const int64_t nt = gguf_tensor_count(f);
  nc_recipe_entry *es = calloc(nt > 0 ? (size_t)nt : 1, sizeof *es);
  if (!es) {
    gguf_close(f);
    nc_imatrix_free(&im);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory for %" PRId64 " tensors",
                   nt);
  }
  c = nc_quantize_recipe(f, ft, imatrix_path != NULL, es, err);
  if (!c && imatrix_path) c = attach_imatrix(&im, es, nt, imatrix_path, err);
  if (!c) c = check_imatrix_needed(es, nt, imatrix_path, err);
  lattice_set ls = {0};
  if (!c) c = attach_lattices(&ls, es, nt, err);
  const imatrix_keys ik = {imatrix_path, im.dataset, (uint32_t)im.n_entries,
                           im.chunks > 0 ? (uint32_t)im.chunks : 0};
  if (!c) {
    out_file o = {fopen(out_path, "wb"), out_path, err, NC_OK};
    if (!o.fp) {
      c = nc_fail(err, NC_ERR_IO, "cannot create '%s': %s", out_path,
                  strerror(errno));
    } else {
      c = write_file(&o, f, ft, es, n_threads, imatrix_path ? &ik : NULL);
      if (fclose(o.fp) != 0 && !c)
        c = nc_fail(err, NC_ERR_IO, "cannot write '%s': %s", out_path,
                    strerror(errno));
      if (c) remove(out_path);
    }
  }
  for (int k = 0; k < ls.n; k++)
    nc_iq_lattice_free(ls.tab[k]);
  free(es);
  gguf_close(f);
  nc_imatrix_free(&im);
  return c;
}
