/* gguf_internal: the parsed form of a GGUF file, shared by the reader
 * (gguf.c) and the metadata getters (gguf_get.c). Not for other modules. */
#ifndef NC_GGUF_INTERNAL_H
#define NC_GGUF_INTERNAL_H

#include "base/mapped_file.h"
#include "gguf.h"
#include "gguf_index.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_STRING_BYTES (1ull << 30) /* as llama.cpp */
#define GGUF_MAX_ARRAY_COUNT (1ull << 30)

typedef struct gguf_kv {
  gguf_str key;
  gguf_value_type type;
  gguf_value_type arr_type; /* arrays only */
  uint64_t arr_count;       /* arrays only */
  const uint8_t *val;       /* scalar bytes, string length, first element */
  const uint8_t **elems;    /* string arrays: each element's length field */
  uint64_t offset;          /* file offset of the key (for messages) */
} gguf_kv;

struct gguf_file {
  nc_mapped_file *mf; /* NULL for gguf_open_memory */
  const uint8_t *base;
  size_t size;
  uint32_t version;
  uint32_t alignment;
  uint64_t data_offset;
  int64_t n_kv;
  gguf_kv *kv;
  int64_t n_tensors;
  gguf_tensor_info *tensors;
  nc_name_index key_index;
  nc_name_index tensor_index;
};

/* Little-endian loads (the format is little-endian on every host). */
static inline uint16_t gguf_rd16(const uint8_t *p) {
  return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}
static inline uint32_t gguf_rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static inline uint64_t gguf_rd64(const uint8_t *p) {
  return (uint64_t)gguf_rd32(p) | (uint64_t)gguf_rd32(p + 4) << 32;
}

/* Size in bytes of a fixed-size value type; 0 for STRING, ARRAY, unknown. */
size_t gguf_type_size(gguf_value_type t);

#endif
