/* gguf: reading and validating GGUF files (versions 2 and 3).
 *
 * Every count, length, offset and size read from the file is overflow-checked
 * and bounded by the file's size before it is used. A malformed file is
 * refused with NC_ERR_FORMAT and a message naming what is wrong and at which
 * byte offset. Strings and tensor data point straight into the mapped file.
 */
#ifndef NC_GGUF_H
#define NC_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mapped_file.h"
#include "base/status.h"

typedef enum gguf_value_type {
  GGUF_TYPE_UINT8 = 0,
  GGUF_TYPE_INT8 = 1,
  GGUF_TYPE_UINT16 = 2,
  GGUF_TYPE_INT16 = 3,
  GGUF_TYPE_UINT32 = 4,
  GGUF_TYPE_INT32 = 5,
  GGUF_TYPE_FLOAT32 = 6,
  GGUF_TYPE_BOOL = 7,
  GGUF_TYPE_STRING = 8,
  GGUF_TYPE_ARRAY = 9,
  GGUF_TYPE_UINT64 = 10,
  GGUF_TYPE_INT64 = 11,
  GGUF_TYPE_FLOAT64 = 12,
  GGUF_TYPE_COUNT
} gguf_value_type;

#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NAME 64

typedef struct gguf_file gguf_file;

/* A string inside the file: not NUL-terminated. */
typedef struct gguf_str {
  const char *ptr;
  uint64_t len;
} gguf_str;

typedef struct gguf_tensor_info {
  char name[GGUF_MAX_NAME]; /* NUL-terminated copy */
  uint32_t n_dims;
  int64_t ne[GGUF_MAX_DIMS]; /* ggml order: ne[0] is contiguous; unused = 1 */
  uint32_t type;             /* ggml type id (see quant.h) */
  uint64_t offset;           /* relative to the data section */
  uint64_t nbytes;
  const void *data; /* into the mapped file */
} gguf_tensor_info;

/* Opens and validates a file (mmap: for reading metadata). */
nc_code gguf_open(const char *path, gguf_file **out, nc_error *err);
/* The same with the file mapped or read into memory as how says
 * (mapped_file.h): for a model's weights. */
nc_code gguf_open_load(const char *path, nc_file_load how, gguf_file **out,
                       nc_error *err);
/* The file's memory; NULL for gguf_open_memory's buffer. */
const nc_mapped_file *gguf_mapped_file(const gguf_file *f);
/* Parses a buffer the caller keeps alive (tests, fuzzing). */
nc_code gguf_open_memory(const void *data, size_t size, gguf_file **out,
                         nc_error *err);
void gguf_close(gguf_file *f);

uint32_t gguf_version(const gguf_file *f);
uint32_t gguf_alignment(const gguf_file *f);
size_t gguf_file_size(const gguf_file *f);
uint64_t gguf_data_offset(const gguf_file *f); /* start of tensor data */

/* ---- metadata */
int64_t gguf_kv_count(const gguf_file *f);
int64_t gguf_find_key(const gguf_file *f, const char *key); /* -1: absent */
gguf_str gguf_kv_key(const gguf_file *f, int64_t i);
gguf_value_type gguf_kv_type(const gguf_file *f, int64_t i);
/* For arrays: element type and count. */
gguf_value_type gguf_kv_arr_type(const gguf_file *f, int64_t i);
uint64_t gguf_kv_arr_count(const gguf_file *f, int64_t i);

/* Typed getters by key. They return false when the key is absent or holds a
 * value that does not convert exactly (e.g. a negative int into unsigned). */
bool gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out);
bool gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
bool gguf_get_f64(const gguf_file *f, const char *key, double *out);
bool gguf_get_bool(const gguf_file *f, const char *key, bool *out);
bool gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);

/* Array access by key: false when absent or not an array. */
bool gguf_get_arr(const gguf_file *f, const char *key,
                  gguf_value_type *elem_type, uint64_t *count);
/* Element i of a string array (O(1)). */
bool gguf_get_arr_str(const gguf_file *f, const char *key, uint64_t i,
                      gguf_str *out);
/* Element i of a numeric/bool array, converted. */
bool gguf_get_arr_i64(const gguf_file *f, const char *key, uint64_t i,
                      int64_t *out);
bool gguf_get_arr_f64(const gguf_file *f, const char *key, uint64_t i,
                      double *out);

/* The bytes of metadata entry i as the file holds them (key, type and
 * value), for copying it into another file unchanged. */
void gguf_kv_raw(const gguf_file *f, int64_t i, const void **bytes,
                 size_t *len);

/* Writes a value as text (for `nucleus info`); arrays are abbreviated. */
void gguf_format_value(const gguf_file *f, int64_t i, char *buf, size_t cap);

/* ---- tensors */
int64_t gguf_tensor_count(const gguf_file *f);
const gguf_tensor_info *gguf_tensor_at(const gguf_file *f, int64_t i);
const gguf_tensor_info *gguf_find_tensor(const gguf_file *f, const char *name);

const char *gguf_value_type_name(gguf_value_type t);

#endif
