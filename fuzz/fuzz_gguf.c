/* libFuzzer target for the GGUF reader: parse any bytes; when they parse,
 * walk every key through every getter and check every tensor's data lies
 * inside the input (a violation traps). Build: make fuzz-gguf. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"

static void check(int ok) {
  if (!ok) __builtin_trap();
}

static void walk_key(const gguf_file *f, int64_t i) {
  gguf_str k = gguf_kv_key(f, i);
  check(k.ptr != NULL && k.len > 0);
  char key[256];
  if (k.len >= sizeof key || memchr(k.ptr, '\0', k.len)) return;
  memcpy(key, k.ptr, k.len);
  key[k.len] = '\0';
  check(gguf_find_key(f, key) == i);
  uint64_t u;
  int64_t s;
  double d;
  bool b;
  gguf_str str;
  (void)gguf_get_u64(f, key, &u);
  (void)gguf_get_i64(f, key, &s);
  (void)gguf_get_f64(f, key, &d);
  (void)gguf_get_bool(f, key, &b);
  if (gguf_get_str(f, key, &str)) check(gguf_kv_type(f, i) == GGUF_TYPE_STRING);
  gguf_value_type et;
  uint64_t n;
  if (gguf_get_arr(f, key, &et, &n)) {
    check(n == gguf_kv_arr_count(f, i) && et == gguf_kv_arr_type(f, i));
    uint64_t idx[3] = {0, n / 2, n ? n - 1 : 0};
    for (int j = 0; j < 3; j++) {
      if (gguf_get_arr_str(f, key, idx[j], &str))
        check(et == GGUF_TYPE_STRING && idx[j] < n);
      (void)gguf_get_arr_i64(f, key, idx[j], &s);
      (void)gguf_get_arr_f64(f, key, idx[j], &d);
    }
    check(!gguf_get_arr_str(f, key, n, &str));
  }
  char buf[200];
  gguf_format_value(f, i, buf, sizeof buf);
  check(strlen(buf) < sizeof buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* an exact-size copy, so ASan sees any read past the end */
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  if (size) memcpy(copy, data, size);
  gguf_file *f = NULL;
  nc_error err = {0};
  if (gguf_open_memory(copy, size, &f, &err) == NC_OK) {
    for (int64_t i = 0; i < gguf_kv_count(f); i++)
      walk_key(f, i);
    for (int64_t i = 0; i < gguf_tensor_count(f); i++) {
      const gguf_tensor_info *t = gguf_tensor_at(f, i);
      check(gguf_find_tensor(f, t->name) == t);
      const uint8_t *p = t->data;
      check(p >= copy && (size_t)(p - copy) <= size &&
            t->nbytes <= size - (size_t)(p - copy));
      check(t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS);
      volatile uint8_t sink = 0;
      if (t->nbytes) sink ^= p[0] ^ p[t->nbytes - 1];
      (void)sink;
    }
    gguf_close(f);
  } else {
    check(err.message[0] != '\0' && err.code != NC_OK);
  }
  free(copy);
  return 0;
}
