/* nucleus_print_gguf_info: the metadata and tensor table of a GGUF file, as
 * text (`nucleus info`). Reads only the header; no weights are touched. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"

/* A key with non-printable bytes replaced, cut to fit buf. */
static const char *printable_key(gguf_str k, char *buf, size_t cap) {
  size_t n = 0;
  for (uint64_t i = 0; i < k.len && n + 4 < cap; i++) {
    unsigned char c = (unsigned char)k.ptr[i];
    buf[n++] = (c > 0x20 && c < 0x7f) ? (char)c : '?';
  }
  if (k.len > n && n + 4 >= cap) memcpy(buf + n, "...", 3), n += 3;
  buf[n] = '\0';
  return buf;
}

static void type_text(const gguf_file *f, int64_t i, char *buf, size_t cap) {
  gguf_value_type t = gguf_kv_type(f, i);
  if (t == GGUF_TYPE_ARRAY)
    snprintf(buf, cap, "ARRAY[%s]",
             gguf_value_type_name(gguf_kv_arr_type(f, i)));
  else
    snprintf(buf, cap, "%s", gguf_value_type_name(t));
}

static void shape_text(const gguf_tensor_info *t, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? ", " : "",
                          t->ne[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

static void print_metadata(const gguf_file *f, FILE *out) {
  int64_t n = gguf_kv_count(f);
  fprintf(out, "\nmetadata: %" PRId64 " key-value pairs\n", n);
  fprintf(out, "  %-44s %-14s %s\n", "key", "type", "value");
  for (int64_t i = 0; i < n; i++) {
    char key[128], type[32], value[512];
    printable_key(gguf_kv_key(f, i), key, sizeof key);
    type_text(f, i, type, sizeof type);
    gguf_format_value(f, i, value, sizeof value);
    fprintf(out, "  %-44s %-14s %s\n", key, type, value);
  }
}

static void print_tensors(const gguf_file *f, FILE *out) {
  int64_t n = gguf_tensor_count(f);
  uint64_t total = 0, elems = 0;
  uint64_t per_type[NC_TYPE_COUNT] = {0};
  for (int64_t i = 0; i < n; i++) {
    const gguf_tensor_info *t = gguf_tensor_at(f, i);
    total += t->nbytes; /* each inside the file: no overflow */
    uint64_t e = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++)
      e *= (uint64_t)t->ne[d];
    elems += e; /* each count fits int64 and the sum is at most n * it */
    if (t->type < NC_TYPE_COUNT) per_type[t->type]++;
  }
  fprintf(out,
          "\ntensors: %" PRId64 " (%" PRIu64 " elements, %" PRIu64
          " bytes of data):",
          n, elems, total);
  for (uint32_t ty = 0; ty < NC_TYPE_COUNT; ty++)
    if (per_type[ty])
      fprintf(out, " %s %" PRIu64, nc_type_name(ty), per_type[ty]);
  fprintf(out, "\n  %5s  %-40s %-7s %-22s %12s %12s\n", "#", "name", "type",
          "shape", "offset", "bytes");
  for (int64_t i = 0; i < n; i++) {
    const gguf_tensor_info *t = gguf_tensor_at(f, i);
    char shape[128];
    shape_text(t, shape, sizeof shape);
    fprintf(out,
            "  %5" PRId64 "  %-40s %-7s %-22s %12" PRIu64 " %12" PRIu64 "\n", i,
            t->name, nc_type_name(t->type), shape, t->offset, t->nbytes);
  }
}

nucleus_status nucleus_print_gguf_info(const char *path, FILE *out,
                                       nucleus_error *err) {
  if (!path || !out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "nucleus_print_gguf_info: path and out must not be NULL");
  gguf_file *f;
  nc_code c = gguf_open(path, &f, err);
  if (c) return c;
  fprintf(out, "file: %s (%zu bytes)\n", path, gguf_file_size(f));
  fprintf(out,
          "gguf: version %" PRIu32 ", alignment %" PRIu32
          ", tensor data at offset %" PRIu64 "\n",
          gguf_version(f), gguf_alignment(f), gguf_data_offset(f));
  print_metadata(f, out);
  print_tensors(f, out);
  gguf_close(f);
  if (ferror(out))
    return nc_fail(err, NC_ERR_IO, "cannot write the info of '%s'", path);
  return NC_OK;
}
