/* gguf: the reader. Parses and validates the header, the metadata, the
 * tensor table and the data section bounds; every number read from the file
 * is checked before it sizes an allocation or an access. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_internal.h"
#include "quant.h"

/* Smallest possible encodings, used to bound counts by the bytes left. */
#define MIN_KV_BYTES 14     /* key len 8 + 1 key byte + type 4 + 1 value byte */
#define MIN_TENSOR_BYTES 33 /* name 8+1, n_dims 4, one dim 8, type 4, off 8 */

typedef struct reader {
  const uint8_t *base;
  size_t size;
  size_t pos;
  nc_error *err;
  char ctx[160]; /* what is being read, for messages: "key 'x'" */
} reader;

/* Sets the context that prefixes messages ("" for none). */
static void set_ctx(reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_ctx(reader *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->ctx, sizeof r->ctx, fmt, ap);
  va_end(ap);
}

/* Fails with "gguf: <ctx>: <message>". */
static nc_code fail(reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static nc_code fail(reader *r, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return nc_fail(r->err, NC_ERR_FORMAT, "gguf: %s%s%s", r->ctx,
                 r->ctx[0] ? ": " : "", what);
}

static size_t remaining(const reader *r) {
  return r->size - r->pos;
}

/* Writes a printable, bounded copy of a name for messages. */
static const char *printable(char *buf, size_t cap, const char *p,
                             uint64_t len) {
  size_t n = 0;
  uint64_t limit = len > 64 ? 64 : len;
  for (uint64_t i = 0; i < limit && n + 1 < cap; i++) {
    unsigned char c = (unsigned char)p[i];
    buf[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  if (len > limit && n + 4 < cap) {
    memcpy(buf + n, "...", 3);
    n += 3;
  }
  buf[n] = '\0';
  return buf;
}

static nc_code truncated(reader *r, size_t need, const char *what) {
  return fail(r,
              "truncated file: %s at offset %zu needs %zu bytes but only %zu "
              "remain (file is %zu bytes)",
              what, r->pos, need, remaining(r), r->size);
}

static nc_code need(reader *r, size_t n, const char *what) {
  return remaining(r) < n ? truncated(r, n, what) : NC_OK;
}

static nc_code read_u32(reader *r, const char *what, uint32_t *out) {
  nc_code c = need(r, 4, what);
  if (c) return c;
  *out = gguf_rd32(r->base + r->pos);
  r->pos += 4;
  return NC_OK;
}

static nc_code read_u64(reader *r, const char *what, uint64_t *out) {
  nc_code c = need(r, 8, what);
  if (c) return c;
  *out = gguf_rd64(r->base + r->pos);
  r->pos += 8;
  return NC_OK;
}

/* A gguf string: u64 length then bytes, bounded by the file. */
static nc_code read_str(reader *r, const char *what, gguf_str *out) {
  size_t at = r->pos;
  uint64_t len;
  nc_code c = read_u64(r, what, &len);
  if (c) return c;
  if (len > remaining(r))
    return fail(r,
                "%s at offset %zu has length %" PRIu64
                ", more than the %zu bytes left in the file",
                what, at, len, remaining(r));
  if (len > GGUF_MAX_STRING_BYTES)
    return fail(
        r, "%s at offset %zu has length %" PRIu64 ", above the 1 GiB limit",
        what, at, len);
  out->ptr = (const char *)r->base + r->pos;
  out->len = len;
  r->pos += (size_t)len;
  return NC_OK;
}

static nc_code check_bools(reader *r, const uint8_t *p, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    if (p[i] > 1)
      return fail(r, "bool value %u at offset %zu is not 0 or 1", p[i],
                  (size_t)(p + i - r->base));
  return NC_OK;
}

static nc_code read_array(reader *r, gguf_kv *kv) {
  size_t at = r->pos;
  uint32_t et;
  nc_code c = read_u32(r, "array element type", &et);
  if (c) return c;
  if (et == GGUF_TYPE_ARRAY)
    return fail(r, "array of arrays at offset %zu is not supported", at);
  if (et >= GGUF_TYPE_COUNT)
    return fail(r, "unknown array element type %" PRIu32 " at offset %zu", et,
                at);
  size_t count_at = r->pos;
  uint64_t n;
  c = read_u64(r, "array count", &n);
  if (c) return c;
  kv->arr_type = (gguf_value_type)et;
  kv->arr_count = n;
  kv->val = r->base + r->pos;
  size_t esz = gguf_type_size(kv->arr_type);
  size_t min_el = esz ? esz : 8; /* a string is at least its length field */
  if (n > remaining(r) / min_el)
    return fail(r,
                "array count %" PRIu64 " at offset %zu needs at least %" PRIu64
                " bytes per %s element but only %zu bytes remain",
                n, count_at, (uint64_t)min_el,
                gguf_value_type_name(kv->arr_type), remaining(r));
  if (n > GGUF_MAX_ARRAY_COUNT)
    return fail(r,
                "array count %" PRIu64
                " at offset %zu is above the limit of 2^30 elements",
                n, count_at);
  if (esz) {
    if (kv->arr_type == GGUF_TYPE_BOOL) {
      c = check_bools(r, r->base + r->pos, n);
      if (c) return c;
    }
    r->pos += (size_t)(n * esz);
    return NC_OK;
  }
  /* strings: index each element (bounded: n <= remaining / 8) */
  kv->elems = n ? malloc((size_t)n * sizeof *kv->elems) : NULL;
  if (n && !kv->elems)
    return nc_fail(r->err, NC_ERR_NOMEM,
                   "gguf: %s: out of memory for %" PRIu64 " string elements",
                   r->ctx, n);
  for (uint64_t i = 0; i < n; i++) {
    kv->elems[i] = r->base + r->pos;
    gguf_str s;
    c = read_str(r, "array string element", &s);
    if (c) return c;
  }
  return NC_OK;
}

static nc_code read_value(reader *r, gguf_kv *kv) {
  kv->val = r->base + r->pos;
  if (kv->type == GGUF_TYPE_STRING) {
    gguf_str s;
    return read_str(r, "string value", &s);
  }
  if (kv->type == GGUF_TYPE_ARRAY) return read_array(r, kv);
  size_t sz = gguf_type_size(kv->type);
  nc_code c = need(r, sz, "value");
  if (c) return c;
  if (kv->type == GGUF_TYPE_BOOL) {
    c = check_bools(r, kv->val, 1);
    if (c) return c;
  }
  r->pos += sz;
  return NC_OK;
}

static nc_name_ref kv_name(const void *ctx, int64_t i) {
  const gguf_file *f = ctx;
  return (nc_name_ref){f->kv[i].key.ptr, f->kv[i].key.len};
}

static nc_name_ref tensor_name(const void *ctx, int64_t i) {
  const gguf_file *f = ctx;
  return (nc_name_ref){f->tensors[i].name, strlen(f->tensors[i].name)};
}

/* Makes room for need elements of size elsz in *arr (capacity *cap), by
 * doubling: memory follows what the file holds, not what it claims. */
static nc_code reserve(reader *r, void **arr, size_t *cap, size_t need,
                       size_t elsz, const char *what) {
  if (need <= *cap) return NC_OK;
  size_t n = *cap ? *cap : 16;
  while (n < need) {
    if (n > SIZE_MAX / 2 / elsz)
      return nc_fail(r->err, NC_ERR_NOMEM, "gguf: too many %s", what);
    n *= 2;
  }
  void *p = realloc(*arr, n * elsz);
  if (!p)
    return nc_fail(r->err, NC_ERR_NOMEM, "gguf: out of memory for %zu %s", n,
                   what);
  memset((char *)p + *cap * elsz, 0, (n - *cap) * elsz);
  *arr = p;
  *cap = n;
  return NC_OK;
}

static nc_code read_kvs(reader *r, gguf_file *f, int64_t n_kv) {
  nc_code c = nc_name_index_init(&f->key_index, kv_name, f, r->err);
  size_t cap = 0;
  for (int64_t i = 0; !c && i < n_kv; i++) {
    c = reserve(r, (void **)&f->kv, &cap, (size_t)i + 1, sizeof *f->kv,
                "key-value pairs");
    if (c) return c;
    f->n_kv = i + 1; /* gguf_close frees what this entry allocates */
    gguf_kv *kv = &f->kv[i];
    kv->offset = r->pos;
    set_ctx(r, "key-value pair %" PRId64, i);
    c = read_str(r, "key", &kv->key);
    if (c) return c;
    if (kv->key.len == 0)
      return fail(r, "empty key at offset %" PRIu64, kv->offset);
    char name[80];
    set_ctx(r, "key '%s'",
            printable(name, sizeof name, kv->key.ptr, kv->key.len));
    size_t type_at = r->pos;
    uint32_t t;
    c = read_u32(r, "value type", &t);
    if (c) return c;
    if (t >= GGUF_TYPE_COUNT)
      return fail(r, "unknown value type %" PRIu32 " at offset %zu", t,
                  type_at);
    kv->type = (gguf_value_type)t;
    c = read_value(r, kv);
    if (c) return c;
    int64_t prev;
    c = nc_name_index_add(&f->key_index, i, &prev, r->err);
    if (!c && prev >= 0)
      return fail(r,
                  "duplicate key at offset %" PRIu64
                  " (first at offset %" PRIu64 ")",
                  kv->offset, f->kv[prev].offset);
  }
  set_ctx(r, "%s", "");
  return c;
}

static bool is_pow2(uint64_t x) {
  return x && !(x & (x - 1));
}

static nc_code check_special_keys(reader *r, gguf_file *f) {
  f->alignment = GGUF_DEFAULT_ALIGNMENT;
  int64_t i = nc_name_index_find(&f->key_index, "general.alignment", 17);
  if (i >= 0) {
    const gguf_kv *kv = &f->kv[i];
    set_ctx(r, "key 'general.alignment' at offset %" PRIu64, kv->offset);
    if (kv->type != GGUF_TYPE_UINT32)
      return fail(r, "must be UINT32, not %s", gguf_value_type_name(kv->type));
    uint32_t a = gguf_rd32(kv->val);
    if (!is_pow2(a))
      return fail(r, "alignment %" PRIu32 " is not a non-zero power of two", a);
    f->alignment = a;
  }
  i = nc_name_index_find(&f->key_index, "split.count", 11);
  if (i >= 0) {
    uint64_t n = 0;
    if (!gguf_get_u64(f, "split.count", &n) || n > 1)
      return nc_fail(r->err, NC_ERR_UNSUPPORTED,
                     "gguf: split files are not supported (split.count at "
                     "offset %" PRIu64 " is not 1): merge the parts with "
                     "llama-gguf-split --merge",
                     f->kv[i].offset);
  }
  set_ctx(r, "%s", "");
  return NC_OK;
}

/* a * b into *out; false on u64 overflow. */
static bool mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

static nc_code read_shape(reader *r, gguf_tensor_info *t) {
  nc_code c = read_u32(r, "n_dims", &t->n_dims);
  if (c) return c;
  if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
    return fail(r, "n_dims %" PRIu32 " is not in 1..%d", t->n_dims,
                GGUF_MAX_DIMS);
  for (int j = 0; j < GGUF_MAX_DIMS; j++)
    t->ne[j] = 1;
  uint64_t nelem = 1;
  for (uint32_t j = 0; j < t->n_dims; j++) {
    uint64_t d;
    c = read_u64(r, "dimension", &d);
    if (c) return c;
    /* llama.cpp accepts 0 (an empty tensor) but nothing above INT64_MAX */
    if (d > (uint64_t)INT64_MAX)
      return fail(r, "dimension %" PRIu32 " is %" PRIu64 ", above INT64_MAX", j,
                  d);
    t->ne[j] = (int64_t)d;
    /* one dimension at a time, never a product first (#27203) */
    if (!mul_u64(nelem, d, &nelem) || nelem > (uint64_t)INT64_MAX)
      return fail(r,
                  "the element count overflows int64 at dimension %" PRIu32
                  " (%" PRIu64 ")",
                  j, d);
  }
  return NC_OK;
}

static nc_code read_tensor_info(reader *r, gguf_file *f, int64_t idx,
                                uint64_t *info_at) {
  gguf_tensor_info *t = &f->tensors[idx];
  uint64_t at = r->pos;
  *info_at = at;
  set_ctx(r, "tensor %" PRId64 " (info at offset %" PRIu64 ")", idx, at);
  gguf_str nm;
  nc_code c = read_str(r, "name", &nm);
  if (c) return c;
  if (nm.len == 0) return fail(r, "empty name");
  char pname[80];
  set_ctx(r, "tensor '%s' (info at offset %" PRIu64 ")",
          printable(pname, sizeof pname, nm.ptr, nm.len), at);
  if (nm.len >= GGUF_MAX_NAME)
    return fail(r, "name is %" PRIu64 " bytes, the limit is %d", nm.len,
                GGUF_MAX_NAME - 1);
  if (memchr(nm.ptr, '\0', (size_t)nm.len))
    return fail(r, "name contains a NUL byte");
  memcpy(t->name, nm.ptr, (size_t)nm.len);
  t->name[nm.len] = '\0';

  c = read_shape(r, t);
  if (c) return c;
  c = read_u32(r, "type", &t->type);
  if (c) return c;
  const nc_type_traits *tr = nc_type_traits_of(t->type);
  if (!tr) return fail(r, "unknown ggml type id %" PRIu32, t->type);
  if (tr->block_size <= 0 || tr->type_size == 0)
    return fail(r, "type %s (%" PRIu32 ") has no known block layout", tr->name,
                t->type);
  if (t->ne[0] % tr->block_size != 0)
    return fail(r,
                "ne[0] = %" PRId64
                " is not a multiple of the %s block size %" PRId64,
                t->ne[0], tr->name, tr->block_size);
  /* divide first, then checked multiplications (CVE-2026-33298, #27200) */
  uint64_t nb = (uint64_t)(t->ne[0] / tr->block_size);
  bool ok = mul_u64(nb, tr->type_size, &nb);
  for (int j = 1; ok && j < GGUF_MAX_DIMS; j++)
    ok = mul_u64(nb, (uint64_t)t->ne[j], &nb);
  if (!ok || nb > (uint64_t)INT64_MAX || nb > (uint64_t)SIZE_MAX)
    return fail(r,
                "the byte size of shape [%" PRId64 ", %" PRId64 ", %" PRId64
                ", %" PRId64 "] of type %s overflows",
                t->ne[0], t->ne[1], t->ne[2], t->ne[3], tr->name);
  t->nbytes = nb;
  c = read_u64(r, "data offset", &t->offset);
  if (c) return c;
  if (t->offset % f->alignment != 0)
    return fail(r,
                "data offset %" PRIu64
                " is not a multiple of the alignment %" PRIu32,
                t->offset, f->alignment);
  int64_t prev;
  c = nc_name_index_add(&f->tensor_index, idx, &prev, r->err);
  if (!c && prev >= 0)
    return fail(r, "duplicate tensor name (also tensor %" PRId64 ")", prev);
  return c;
}

/* Data section at the aligned end of the infos; every tensor inside it. */
static nc_code place_data(reader *r, gguf_file *f, const uint64_t *info_at) {
  uint64_t a = f->alignment;
  uint64_t pad = (a - (uint64_t)r->pos % a) % a; /* pos <= size: no wrap */
  f->data_offset = (uint64_t)r->pos + pad;
  for (int64_t i = 0; i < f->n_tensors; i++) {
    gguf_tensor_info *t = &f->tensors[i];
    uint64_t start, end;
    if (__builtin_add_overflow(f->data_offset, t->offset, &start) ||
        __builtin_add_overflow(start, t->nbytes, &end))
      return nc_fail(r->err, NC_ERR_FORMAT,
                     "gguf: tensor '%s' (info at offset %" PRIu64
                     "): data offset %" PRIu64 " + %" PRIu64
                     " bytes overflows past the end of the file (%zu bytes)",
                     t->name, info_at[i], t->offset, t->nbytes, r->size);
    if (end > r->size)
      return nc_fail(r->err, NC_ERR_FORMAT,
                     "gguf: tensor '%s' (info at offset %" PRIu64
                     "): data [%" PRIu64 ", %" PRIu64
                     ") extends past the end of the file (%zu bytes)",
                     t->name, info_at[i], start, end, r->size);
    t->data = r->base + start;
  }
  return NC_OK;
}

static nc_code read_tensors(reader *r, gguf_file *f, int64_t n_tensors) {
  /* bound again now that the metadata has been read */
  if ((uint64_t)n_tensors > remaining(r) / MIN_TENSOR_BYTES)
    return fail(r,
                "tensor_count %" PRId64
                " (at offset 8) cannot fit in the %zu bytes left after the "
                "metadata, at offset %zu",
                n_tensors, remaining(r), r->pos);
  nc_code c = nc_name_index_init(&f->tensor_index, tensor_name, f, r->err);
  uint64_t *info_at = NULL; /* where each info starts, for messages */
  size_t cap = 0, cap_at = 0;
  for (int64_t i = 0; !c && i < n_tensors; i++) {
    c = reserve(r, (void **)&f->tensors, &cap, (size_t)i + 1,
                sizeof *f->tensors, "tensor infos");
    if (!c)
      c = reserve(r, (void **)&info_at, &cap_at, (size_t)i + 1, sizeof *info_at,
                  "tensor infos");
    if (c) break;
    f->n_tensors = i + 1;
    c = read_tensor_info(r, f, i, &info_at[i]);
  }
  set_ctx(r, "%s", "");
  if (!c) c = place_data(r, f, info_at);
  free(info_at);
  return c;
}

static nc_code parse(reader *r, gguf_file *f) {
  if (r->size < 4)
    return nc_fail(r->err, NC_ERR_FORMAT,
                   "gguf: file is %zu bytes, too short for the magic at "
                   "offset 0",
                   r->size);
  if (memcmp(r->base, "GGUF", 4) != 0) {
    char got[8];
    return nc_fail(r->err, NC_ERR_FORMAT,
                   "gguf: bad magic at offset 0: expected \"GGUF\", got "
                   "\"%s\" (%02x %02x %02x %02x)",
                   printable(got, sizeof got, (const char *)r->base, 4),
                   r->base[0], r->base[1], r->base[2], r->base[3]);
  }
  r->pos = 4;
  nc_code c = read_u32(r, "version", &f->version);
  if (c) return c;
  uint32_t v = f->version;
  if (v == 0)
    return nc_fail(r->err, NC_ERR_FORMAT,
                   "gguf: version 0 at offset 4 is invalid");
  if ((v & 0xFFFF) == 0)
    return nc_fail(r->err, NC_ERR_FORMAT,
                   "gguf: version 0x%08" PRIx32
                   " at offset 4 looks byte-swapped: the file has the "
                   "opposite endianness",
                   v);
  if (v == 1)
    return nc_fail(r->err, NC_ERR_FORMAT,
                   "gguf: version 1 at offset 4 is not supported (only 2 "
                   "and 3)");
  if (v > 3)
    return nc_fail(r->err, NC_ERR_FORMAT,
                   "gguf: version %" PRIu32
                   " at offset 4 is newer than supported (2 and 3)",
                   v);
  uint64_t nt, nkv;
  c = read_u64(r, "tensor_count", &nt);
  if (!c) c = read_u64(r, "kv_count", &nkv);
  if (c) return c;
  if (nt > (uint64_t)INT64_MAX || nt > remaining(r) / MIN_TENSOR_BYTES)
    return nc_fail(r->err, NC_ERR_FORMAT,
                   "gguf: tensor_count %" PRIu64
                   " at offset 8 is impossible: the %zu bytes left hold at "
                   "most %zu tensor infos",
                   nt, remaining(r), remaining(r) / MIN_TENSOR_BYTES);
  if (nkv > (uint64_t)INT64_MAX || nkv > remaining(r) / MIN_KV_BYTES)
    return nc_fail(r->err, NC_ERR_FORMAT,
                   "gguf: kv_count %" PRIu64
                   " at offset 16 is impossible: the %zu bytes left hold at "
                   "most %zu key-value pairs",
                   nkv, remaining(r), remaining(r) / MIN_KV_BYTES);
  c = read_kvs(r, f, (int64_t)nkv);
  if (!c) c = check_special_keys(r, f);
  if (!c) c = read_tensors(r, f, (int64_t)nt);
  return c;
}

nc_code gguf_open_memory(const void *data, size_t size, gguf_file **out,
                         nc_error *err) {
  if (!out) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "gguf: out is NULL");
  *out = NULL;
  if (!data && size)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "gguf: data is NULL");
  gguf_file *f = calloc(1, sizeof *f);
  if (!f) return nc_fail(err, NC_ERR_NOMEM, "gguf: out of memory");
  f->base = data;
  f->size = size;
  reader r = {.base = data, .size = size, .pos = 0, .err = err};
  static const uint8_t empty[1];
  if (!r.base) r.base = empty;
  nc_code c = parse(&r, f);
  if (c) {
    gguf_close(f);
    return c;
  }
  *out = f;
  return NC_OK;
}

nc_code gguf_open(const char *path, gguf_file **out, nc_error *err) {
  return gguf_open_load(path, NC_FILE_MMAP, out, err);
}

const nc_mapped_file *gguf_mapped_file(const gguf_file *f) {
  return f ? f->mf : NULL;
}

nc_code gguf_open_load(const char *path, nc_file_load how, gguf_file **out,
                       nc_error *err) {
  if (!out) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "gguf: out is NULL");
  *out = NULL;
  nc_mapped_file *mf;
  nc_code c = nc_mapped_file_open(path, how, &mf, err);
  if (c) return c;
  gguf_file *f;
  c = gguf_open_memory(nc_mapped_file_data(mf), nc_mapped_file_size(mf), &f,
                       err);
  if (c) {
    nc_mapped_file_close(mf);
    nc_error_prefix(err, "%s", path);
    return c;
  }
  f->mf = mf;
  *out = f;
  return NC_OK;
}

void gguf_close(gguf_file *f) {
  if (!f) return;
  if (f->kv)
    for (int64_t i = 0; i < f->n_kv; i++)
      free(f->kv[i].elems);
  free(f->kv);
  free(f->tensors);
  nc_name_index_free(&f->key_index);
  nc_name_index_free(&f->tensor_index);
  nc_mapped_file_close(f->mf);
  free(f);
}

uint32_t gguf_version(const gguf_file *f) {
  return f ? f->version : 0;
}
uint32_t gguf_alignment(const gguf_file *f) {
  return f ? f->alignment : 0;
}
size_t gguf_file_size(const gguf_file *f) {
  return f ? f->size : 0;
}
uint64_t gguf_data_offset(const gguf_file *f) {
  return f ? f->data_offset : 0;
}

int64_t gguf_tensor_count(const gguf_file *f) {
  return f ? f->n_tensors : 0;
}

const gguf_tensor_info *gguf_tensor_at(const gguf_file *f, int64_t i) {
  if (!f || i < 0 || i >= f->n_tensors) return NULL;
  return &f->tensors[i];
}

const gguf_tensor_info *gguf_find_tensor(const gguf_file *f, const char *name) {
  if (!f || !name) return NULL;
  int64_t i = nc_name_index_find(&f->tensor_index, name, strlen(name));
  return i >= 0 ? &f->tensors[i] : NULL;
}
