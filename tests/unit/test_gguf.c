/* Tests of the GGUF reader: a generated file with every value type through
 * every getter, a table of malformed files (each must fail with the right
 * code, a distinctive message and an offset), every truncation of a valid
 * file, the gguf-py golden file, and the real model. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gguf_writer.h"
#include "test_require.h"

enum {
  T_U8,
  T_I8,
  T_U16,
  T_I16,
  T_U32,
  T_I32,
  T_F32,
  T_BOOL,
  T_STR,
  T_ARR,
  T_U64,
  T_I64,
  T_F64
};

/* ------------------------------------------------------------ helpers */

static gguf_file *open_ok(const gw *b) {
  nc_error err = {0};
  gguf_file *f = NULL;
  nc_code c = gguf_open_memory(b->p, b->len, &f, &err);
  if (c != NC_OK) fail_msg("expected a valid file, got: %s", err.message);
  assert_non_null(f);
  return f;
}

static void expect_fail(const void *p, size_t n, nc_code code,
                        const char *substr) {
  nc_error err = {0};
  gguf_file *f = (gguf_file *)0x1;
  nc_code c = gguf_open_memory(p, n, &f, &err);
  assert_null(f);
  if (c != code || !strstr(err.message, substr) ||
      !strstr(err.message, "offset"))
    fail_msg("expected code %d with \"%s\" and an offset; got code %d: %s",
             code, substr, c, err.message);
  assert_int_equal(err.code, code);
}

/* ------------------------------------------- the valid all-types file */

/* Offsets of the field boundaries of the valid file, for truncation. */
typedef struct marks {
  size_t at[128];
  const char *what[128]; /* expected message substring when cut there */
  int n;
} marks;

static void mark(marks *m, const gw *b, const char *what) {
  if (!m || m->n >= 128) return;
  m->at[m->n] = b->len;
  m->what[m->n] = what;
  m->n++;
}

#define N_KV 19

/* Every value type, a string array, general.alignment, and three tensors
 * (F32 [4, 2], an empty F32 [0, 3], Q8_0 [64]). The last tensor ends at
 * the end of the file, so every strict prefix is invalid. */
static void build_valid(gw *b, uint32_t version, uint32_t alignment) {
  gw_bytes(b, "GGUF", 4);
  gw_u32(b, version);
  gw_u64(b, 3);
  gw_u64(b, N_KV);
  gw_key(b, "t.u8", T_U8);
  gw_u8(b, 200);
  gw_key(b, "t.i8", T_I8);
  gw_u8(b, (uint8_t)-5);
  gw_key(b, "t.u16", T_U16);
  gw_u16(b, 60000);
  gw_key(b, "t.i16", T_I16);
  gw_u16(b, (uint16_t)-30000);
  gw_str(b, "t.u32");
  gw_u32(b, T_U32);
  gw_u32(b, 4000000000u);
  gw_key(b, "t.i32", T_I32);
  gw_u32(b, (uint32_t)-2000000000);
  gw_key(b, "t.f32", T_F32);
  gw_f32(b, 1.5f);
  gw_key(b, "t.bool", T_BOOL);
  gw_u8(b, 1);
  gw_key(b, "t.str", T_STR);
  gw_str(b, "hello \"gguf\"\n");
  gw_key(b, "t.u64", T_U64);
  gw_u64(b, 9223372036854775813ull); /* 2^63 + 5 */
  gw_key(b, "t.i64", T_I64);
  gw_u64(b, (uint64_t)-1099511627776ll); /* -2^40 */
  gw_key(b, "t.f64", T_F64);
  gw_f64(b, 0.1);
  gw_key(b, "t.arr_u32", T_ARR);
  gw_u32(b, T_U32);
  gw_u64(b, 3);
  gw_u32(b, 1);
  gw_u32(b, 2);
  gw_u32(b, 3);
  gw_kv_arr(b, "t.arr_str", T_STR, 3);
  gw_str(b, "a");
  gw_str(b, "bc");
  gw_str(b, "");
  gw_kv_arr(b, "t.arr_f32", T_F32, 2);
  gw_f32(b, 0.5f);
  gw_f32(b, -2.0f);
  gw_kv_arr(b, "t.arr_bool", T_BOOL, 2);
  gw_u8(b, 1);
  gw_u8(b, 0);
  gw_kv_arr(b, "t.arr_i8", T_I8, 1);
  gw_u8(b, (uint8_t)-1);
  gw_kv_arr(b, "t.arr_u64", T_U64, 1);
  gw_u64(b, UINT64_MAX);
  gw_kv_u32(b, "general.alignment", alignment);
  /* tensors */
  gw_str(b, "a");
  gw_u32(b, 2);
  gw_u64(b, 4);
  gw_u64(b, 2);
  gw_u32(b, NC_TYPE_F32);
  gw_u64(b, 0);
  gw_tensor(b, "empty", 2, (uint64_t[]){0, 3}, NC_TYPE_F32, 0);
  size_t q_off = alignment > 32 ? alignment : 32;
  gw_tensor(b, "blk.0.q", 1, (uint64_t[]){64}, NC_TYPE_Q8_0, q_off);
  gw_align(b, alignment);
  gw_fill(b, 32, 1); /* tensor a */
  while (b->len % alignment)
    gw_u8(b, 0);
  gw_fill(b, 68, 9); /* two Q8_0 blocks */
}

static void test_valid_every_getter(void **state) {
  (void)state;
  gw b = {0};
  build_valid(&b, 3, 32);
  gguf_file *f = open_ok(&b);
  assert_int_equal(gguf_version(f), 3);
  assert_int_equal(gguf_alignment(f), 32);
  assert_int_equal(gguf_file_size(f), b.len);
  assert_int_equal(gguf_kv_count(f), N_KV);
  assert_int_equal(gguf_data_offset(f) % 32, 0);

  uint64_t u;
  int64_t i;
  double d;
  bool bo;
  gguf_str s;
  assert_true(gguf_get_u64(f, "t.u8", &u));
  assert_int_equal(u, 200);
  assert_true(gguf_get_i64(f, "t.u8", &i));
  assert_int_equal(i, 200);
  assert_false(gguf_get_u64(f, "t.i8", &u)); /* negative into unsigned */
  assert_true(gguf_get_i64(f, "t.i8", &i));
  assert_int_equal(i, -5);
  assert_true(gguf_get_u64(f, "t.u16", &u));
  assert_int_equal(u, 60000);
  assert_true(gguf_get_i64(f, "t.i16", &i));
  assert_int_equal(i, -30000);
  assert_true(gguf_get_u64(f, "t.u32", &u));
  assert_int_equal(u, 4000000000u);
  assert_true(gguf_get_i64(f, "t.i32", &i));
  assert_int_equal(i, -2000000000);
  assert_true(gguf_get_u64(f, "t.u64", &u));
  assert_true(u == 9223372036854775813ull);
  assert_false(gguf_get_i64(f, "t.u64", &i)); /* above INT64_MAX */
  assert_false(gguf_get_f64(f, "t.u64", &d)); /* not exact in a double */
  assert_true(gguf_get_i64(f, "t.i64", &i));
  assert_true(i == -1099511627776ll);
  assert_true(gguf_get_f64(f, "t.i64", &d)); /* exact integer */
  assert_true(d == -1099511627776.0);
  assert_true(gguf_get_f64(f, "t.f32", &d));
  assert_true(d == 1.5);
  assert_false(gguf_get_u64(f, "t.f32", &u)); /* float into integer */
  assert_true(gguf_get_f64(f, "t.f64", &d));
  assert_true(d == 0.1);
  assert_true(gguf_get_f64(f, "t.u32", &d));
  assert_true(d == 4000000000.0);
  assert_true(gguf_get_bool(f, "t.bool", &bo));
  assert_true(bo);
  assert_false(gguf_get_u64(f, "t.bool", &u)); /* a bool is not a number */
  assert_false(gguf_get_bool(f, "t.u8", &bo));
  assert_true(gguf_get_str(f, "t.str", &s));
  assert_int_equal(s.len, 13);
  assert_memory_equal(s.ptr, "hello \"gguf\"\n", 13);
  assert_false(gguf_get_str(f, "t.u8", &s));
  assert_false(gguf_get_u64(f, "t.str", &u));
  assert_false(gguf_get_u64(f, "absent", &u));
  assert_false(gguf_get_str(f, "absent", &s));
  assert_false(gguf_get_u64(f, "t.arr_u32", &u)); /* an array */

  gguf_value_type et;
  uint64_t n;
  assert_true(gguf_get_arr(f, "t.arr_u32", &et, &n));
  assert_int_equal(et, GGUF_TYPE_UINT32);
  assert_int_equal(n, 3);
  for (uint64_t k = 0; k < 3; k++) {
    assert_true(gguf_get_arr_i64(f, "t.arr_u32", k, &i));
    assert_int_equal(i, (int64_t)k + 1);
  }
  assert_false(gguf_get_arr_i64(f, "t.arr_u32", 3, &i)); /* out of range */
  assert_false(gguf_get_arr(f, "t.u32", &et, &n));       /* not an array */
  const char *want[] = {"a", "bc", ""};
  for (uint64_t k = 0; k < 3; k++) {
    assert_true(gguf_get_arr_str(f, "t.arr_str", k, &s));
    assert_int_equal(s.len, strlen(want[k]));
    assert_memory_equal(s.ptr, want[k], s.len);
  }
  assert_false(gguf_get_arr_str(f, "t.arr_str", 3, &s));
  assert_false(gguf_get_arr_str(f, "t.arr_u32", 0, &s));
  assert_false(gguf_get_arr_i64(f, "t.arr_str", 0, &i));
  assert_true(gguf_get_arr_f64(f, "t.arr_f32", 1, &d));
  assert_true(d == -2.0);
  assert_false(gguf_get_arr_i64(f, "t.arr_f32", 0, &i));
  assert_true(gguf_get_arr_i64(f, "t.arr_bool", 0, &i));
  assert_int_equal(i, 1);
  assert_true(gguf_get_arr_i64(f, "t.arr_bool", 1, &i));
  assert_int_equal(i, 0);
  assert_true(gguf_get_arr_i64(f, "t.arr_i8", 0, &i));
  assert_int_equal(i, -1);
  assert_false(gguf_get_arr_i64(f, "t.arr_u64", 0, &i));
  assert_true(gguf_get_arr_f64(f, "t.arr_i8", 0, &d));
  assert_true(d == -1.0);

  /* by index */
  int64_t k = gguf_find_key(f, "t.arr_str");
  assert_true(k >= 0);
  gguf_str key = gguf_kv_key(f, k);
  assert_int_equal(key.len, 9);
  assert_memory_equal(key.ptr, "t.arr_str", 9);
  assert_int_equal(gguf_kv_type(f, k), GGUF_TYPE_ARRAY);
  assert_int_equal(gguf_kv_arr_type(f, k), GGUF_TYPE_STRING);
  assert_int_equal(gguf_kv_arr_count(f, k), 3);
  assert_int_equal(gguf_find_key(f, "t.arr"), -1);
  assert_int_equal(gguf_find_key(f, ""), -1);
  assert_int_equal(gguf_kv_type(f, -1), GGUF_TYPE_COUNT);
  assert_int_equal(gguf_kv_type(f, N_KV), GGUF_TYPE_COUNT);
  assert_null(gguf_kv_key(f, N_KV).ptr);

  /* text forms */
  char buf[256];
  gguf_format_value(f, gguf_find_key(f, "t.str"), buf, sizeof buf);
  assert_string_equal(buf, "\"hello \\\"gguf\\\"\\n\"");
  gguf_format_value(f, gguf_find_key(f, "t.i8"), buf, sizeof buf);
  assert_string_equal(buf, "-5");
  gguf_format_value(f, gguf_find_key(f, "t.u64"), buf, sizeof buf);
  assert_string_equal(buf, "9223372036854775813");
  gguf_format_value(f, gguf_find_key(f, "t.f32"), buf, sizeof buf);
  assert_string_equal(buf, "1.5");
  gguf_format_value(f, gguf_find_key(f, "t.bool"), buf, sizeof buf);
  assert_string_equal(buf, "true");
  gguf_format_value(f, k, buf, sizeof buf);
  assert_string_equal(buf, "[3 x STRING] \"a\", \"bc\", \"\"");
  gguf_format_value(f, gguf_find_key(f, "t.arr_u32"), buf, 8);
  assert_int_equal(strlen(buf), 7); /* cut, NUL-terminated */
  assert_string_equal(gguf_value_type_name(GGUF_TYPE_FLOAT64), "FLOAT64");
  assert_string_equal(gguf_value_type_name(GGUF_TYPE_COUNT), "?");

  /* tensors */
  assert_int_equal(gguf_tensor_count(f), 3);
  assert_null(gguf_tensor_at(f, -1));
  assert_null(gguf_tensor_at(f, 3));
  const gguf_tensor_info *a = gguf_find_tensor(f, "a");
  assert_non_null(a);
  assert_ptr_equal(a, gguf_tensor_at(f, 0));
  assert_int_equal(a->n_dims, 2);
  assert_int_equal(a->ne[0], 4);
  assert_int_equal(a->ne[1], 2);
  assert_int_equal(a->ne[2], 1);
  assert_int_equal(a->ne[3], 1);
  assert_int_equal(a->type, NC_TYPE_F32);
  assert_int_equal(a->nbytes, 32);
  assert_ptr_equal(a->data, b.p + gguf_data_offset(f));
  const gguf_tensor_info *e = gguf_find_tensor(f, "empty");
  assert_non_null(e);
  assert_int_equal(e->ne[0], 0);
  assert_int_equal(e->nbytes, 0);
  const gguf_tensor_info *q = gguf_find_tensor(f, "blk.0.q");
  assert_non_null(q);
  assert_int_equal(q->type, NC_TYPE_Q8_0);
  assert_int_equal(q->nbytes, 68);
  assert_int_equal(q->offset, 32);
  assert_ptr_equal((const uint8_t *)q->data + q->nbytes, b.p + b.len);
  assert_null(gguf_find_tensor(f, "blk.0"));
  assert_null(gguf_find_tensor(f, NULL));
  gguf_close(f);
  gw_free(&b);
}

static void test_valid_v2_and_alignment(void **state) {
  (void)state;
  gw b = {0};
  build_valid(&b, 2, 64);
  gguf_file *f = open_ok(&b);
  assert_int_equal(gguf_version(f), 2);
  assert_int_equal(gguf_alignment(f), 64);
  assert_int_equal(gguf_data_offset(f) % 64, 0);
  const gguf_tensor_info *q = gguf_find_tensor(f, "blk.0.q");
  assert_ptr_equal(q->data, b.p + gguf_data_offset(f) + 64);
  gguf_close(f);
  gw_free(&b);

  /* the smallest valid file: a header with nothing in it */
  gw h = {0};
  gw_header(&h, 3, 0, 0);
  f = open_ok(&h);
  assert_int_equal(gguf_kv_count(f), 0);
  assert_int_equal(gguf_tensor_count(f), 0);
  assert_int_equal(gguf_alignment(f), 32);
  assert_int_equal(gguf_find_key(f, "general.alignment"), -1);
  assert_null(gguf_find_tensor(f, "x"));
  gguf_close(f);
  gw_free(&h);
  gguf_close(NULL);
}

/* Many keys and tensors (the name indexes grow), all found by name; a
 * duplicate placed after the growth is still caught. */
static void build_many(gw *b, int n_kv, int n_t, const char *last_key,
                       const char *last_tensor) {
  gw_header(b, 3, (uint64_t)n_t, (uint64_t)n_kv);
  char name[32];
  for (int i = 0; i < n_kv; i++) {
    snprintf(name, sizeof name, "k.%d", i);
    gw_kv_u32(b, i == n_kv - 1 && last_key ? last_key : name, (uint32_t)i);
  }
  for (int i = 0; i < n_t; i++) {
    snprintf(name, sizeof name, "t.%d", i);
    gw_tensor(b, i == n_t - 1 && last_tensor ? last_tensor : name, 1,
              (uint64_t[]){8}, NC_TYPE_F32, (uint64_t)i * 32);
  }
  gw_align(b, 32);
  gw_fill(b, (size_t)n_t * 32, 5);
}

static void test_many_entries(void **state) {
  (void)state;
  gw b = {0};
  build_many(&b, 2000, 600, NULL, NULL);
  gguf_file *f = open_ok(&b);
  assert_int_equal(gguf_kv_count(f), 2000);
  assert_int_equal(gguf_tensor_count(f), 600);
  char name[32];
  for (int i = 0; i < 2000; i++) {
    snprintf(name, sizeof name, "k.%d", i);
    uint64_t u = 0;
    assert_int_equal(gguf_find_key(f, name), i);
    assert_true(gguf_get_u64(f, name, &u));
    assert_int_equal(u, (uint64_t)i);
  }
  for (int i = 0; i < 600; i++) {
    snprintf(name, sizeof name, "t.%d", i);
    const gguf_tensor_info *t = gguf_find_tensor(f, name);
    assert_ptr_equal(t, gguf_tensor_at(f, i));
    assert_ptr_equal(t->data, b.p + gguf_data_offset(f) + (size_t)i * 32);
  }
  assert_int_equal(gguf_find_key(f, "k.2000"), -1);
  assert_null(gguf_find_tensor(f, "t.600"));
  gguf_close(f);
  gw_free(&b);

  build_many(&b, 2000, 600, "k.3", NULL);
  expect_fail(b.p, b.len, NC_ERR_FORMAT, "key 'k.3': duplicate key");
  gw_free(&b);
  build_many(&b, 2000, 600, NULL, "t.17");
  expect_fail(b.p, b.len, NC_ERR_FORMAT, "tensor 't.17' (info at offset");
  expect_fail(b.p, b.len, NC_ERR_FORMAT,
              "duplicate tensor name (also tensor 17)");
  gw_free(&b);
}

/* Every strict prefix of the valid file is refused with an offset. */
static void test_every_prefix(void **state) {
  (void)state;
  gw b = {0};
  build_valid(&b, 3, 32);
  for (size_t n = 0; n < b.len; n++) {
    /* a fresh copy of exactly n bytes so ASan sees reads past the end */
    uint8_t *cut = malloc(n ? n : 1);
    assert_non_null(cut);
    memcpy(cut, b.p, n);
    nc_error err = {0};
    gguf_file *f = NULL;
    nc_code c = gguf_open_memory(cut, n, &f, &err);
    if (c != NC_ERR_FORMAT || f || !strstr(err.message, "offset"))
      fail_msg("prefix of %zu bytes: code %d: %s", n, c, err.message);
    free(cut);
  }
  gw_free(&b);
}

/* A file whose fields are long enough that a cut inside any of them is
 * reported as that field (the count bounds pass): one string kv, one UINT32
 * array, one string array, one tensor. Each mark is a cut point with the
 * message it must produce. */
#define K40 "key.012345678901234567890123456789012345"
#define N60 "blk.0.tensor.01234567890123456789012345678901234567890123456"
static void build_fields(gw *b, marks *m) {
  gw_header(b, 3, 1, 3);
  mark(m, b, "tensor_count 1 at offset 8 is impossible");
  gw_u64(b, strlen(K40));
  mark(m, b, "tensor_count 1 at offset 8 is impossible");
  gw_bytes(b, K40, 30);
  mark(m, b, "kv_count 3 at offset 16 is impossible: the 38 bytes left");
  gw_bytes(b, K40 + 30, 10);
  mark(m, b, "key '" K40 "': truncated file: value type");
  gw_u16(b, T_STR);
  mark(m, b, "truncated file: value type");
  gw_u16(b, 0);
  mark(m, b, "truncated file: string value at offset");
  gw_u32(b, 40);
  mark(m, b, "truncated file: string value at offset");
  gw_u32(b, 0);
  mark(m, b, "string value at offset 76 has length 40, more than the 0");
  gw_bytes(b, K40, 20);
  mark(m, b, "string value at offset 76 has length 40, more than the 20");
  gw_bytes(b, K40 + 20, 20);
  mark(m, b, "key-value pair 1: truncated file: key at offset 124");
  gw_key(b, "arr.u32", T_ARR);
  mark(m, b, "truncated file: array element type");
  gw_u32(b, T_U32);
  mark(m, b, "truncated file: array count");
  gw_u32(b, 12);
  mark(m, b, "truncated file: array count");
  gw_u32(b, 0);
  mark(m, b,
       "key 'arr.u32': array count 12 at offset 147 needs at least 4 "
       "bytes per UINT32 element but only 0 bytes remain");
  for (uint32_t i = 0; i < 6; i++)
    gw_u32(b, i);
  mark(m, b,
       "array count 12 at offset 147 needs at least 4 bytes per "
       "UINT32 element but only 24 bytes remain");
  for (uint32_t i = 6; i < 12; i++)
    gw_u32(b, i);
  gw_kv_arr(b, "arr.str", T_STR, 4);
  mark(m, b, "only 0 bytes remain");
  gw_str(b, K40);
  gw_str(b, K40);
  mark(m, b,
       "key 'arr.str': truncated file: array string element at "
       "offset 330 needs 8 bytes");
  gw_u64(b, 40);
  gw_bytes(b, K40, 4);
  mark(m, b,
       "key 'arr.str': array string element at offset 330 has length "
       "40, more than the 4 bytes");
  gw_bytes(b, K40 + 4, 36);
  gw_str(b, K40);
  mark(m, b, "tensor_count 1 (at offset 8) cannot fit in the 0 bytes");
  gw_u64(b, strlen(N60));
  mark(m, b, "tensor_count 1 (at offset 8) cannot fit in the 8 bytes");
  gw_bytes(b, N60, 30);
  mark(m, b,
       "tensor 0 (info at offset 426): name at offset 426 has length "
       "60, more than the 30 bytes");
  gw_bytes(b, N60 + 30, 30);
  mark(m, b,
       "tensor '" N60 "' (info at offset 426): truncated file: "
       "n_dims");
  gw_u32(b, 2);
  mark(m, b, "truncated file: dimension at offset 498");
  gw_u64(b, 8);
  mark(m, b, "truncated file: dimension at offset 506");
  gw_u32(b, 1);
  mark(m, b,
       "truncated file: dimension at offset 506 needs 8 bytes but "
       "only 4");
  gw_u32(b, 0);
  mark(m, b, "truncated file: type at offset 514");
  gw_u32(b, NC_TYPE_F32);
  mark(m, b, "truncated file: data offset at offset 518");
  gw_u64(b, 0);
  mark(m, b, "data [544, 576) extends past the end of the file (526 bytes)");
  gw_align(b, 32);
  mark(m, b, "data [544, 576) extends past the end of the file (544 bytes)");
  gw_fill(b, 16, 0);
  mark(m, b, "data [544, 576) extends past the end of the file (560 bytes)");
  gw_fill(b, 16, 0);
}

/* Cut at each field boundary and inside fields: each names its field. */
static void test_truncation_names_field(void **state) {
  (void)state;
  gw b = {0};
  marks m = {0};
  build_fields(&b, &m);
  gguf_file *f = open_ok(&b);
  assert_int_equal(gguf_kv_count(f), 3);
  assert_int_equal(gguf_tensor_count(f), 1);
  gguf_close(f);
  assert_true(m.n > 25);
  int bad = 0;
  for (int k = 0; k < m.n; k++) {
    uint8_t *cut = malloc(m.at[k] ? m.at[k] : 1);
    assert_non_null(cut);
    memcpy(cut, b.p, m.at[k]);
    nc_error err = {0};
    gguf_file *g = NULL;
    nc_code c = gguf_open_memory(cut, m.at[k], &g, &err);
    if (c != NC_ERR_FORMAT || g || !strstr(err.message, m.what[k]) ||
        !strstr(err.message, "offset")) {
      print_message("cut at %zu: expected \"%s\", got code %d: %s\n", m.at[k],
                    m.what[k], c, err.message);
      bad++;
    }
    free(cut);
  }
  assert_int_equal(bad, 0);
  gw_free(&b);
}

/* ------------------------------------------------- malformed files */

typedef struct bad_case {
  const char *name;
  void (*build)(gw *b);
  nc_code code;
  const char *substr;
} bad_case;

/* A v3 file with one key-value pair written by kv (no tensors). */
static void one_kv(gw *b, void (*kv)(gw *)) {
  gw_header(b, 3, 0, 1);
  kv(b);
}

/* A v3 file with the given tensor infos (written by ti) and data bytes. */
static void tensors(gw *b, uint64_t n, void (*ti)(gw *), size_t data) {
  gw_header(b, 3, n, 0);
  ti(b);
  gw_align(b, 32);
  gw_fill(b, data, 3);
}

/* header */
static void b_short(gw *b) {
  gw_bytes(b, "GGU", 3);
}
static void b_magic(gw *b) {
  gw_header(b, 3, 0, 0);
  b->p[3] = 'G';
}
static void b_v0(gw *b) {
  gw_header(b, 0, 0, 0);
}
static void b_v1(gw *b) {
  gw_header(b, 1, 0, 0);
}
static void b_v4(gw *b) {
  gw_header(b, 4, 0, 0);
}
static void b_swapped(gw *b) {
  gw_header(b, 0x03000000u, 0, 0);
}
static void b_swapped2(gw *b) {
  gw_header(b, 0x02000000u, 0, 0);
}
static void b_cut_version(gw *b) {
  gw_bytes(b, "GGUF\3\0", 6);
}
static void b_cut_ntensors(gw *b) {
  gw_bytes(b, "GGUF", 4);
  gw_u32(b, 3);
  gw_u32(b, 0);
}
static void b_cut_nkv(gw *b) {
  gw_bytes(b, "GGUF", 4);
  gw_u32(b, 3);
  gw_u64(b, 0);
  gw_u32(b, 0);
}
static void b_nkv_max(gw *b) {
  gw_header(b, 3, 0, UINT64_MAX);
}
static void b_nkv_2_63(gw *b) {
  gw_header(b, 3, 0, 1ull << 63);
}
static void b_nkv_small(gw *b) {
  gw_header(b, 3, 0, 3); /* 3 pairs cannot fit in 20 bytes */
  gw_fill(b, 20, 0);
}
static void b_nt_max(gw *b) {
  gw_header(b, 3, UINT64_MAX, 0);
}
static void b_nt_2_63(gw *b) {
  gw_header(b, 3, 1ull << 63, 0);
}
static void b_nt_after_meta(gw *b) {
  /* 2 tensors fit the header's bound but not after the metadata */
  gw_header(b, 3, 2, 1);
  gw_kv_str(b, "k", "0123456789012345678901234567890123456789");
  gw_tensor(b, "w", 1, (uint64_t[]){1}, NC_TYPE_F32, 0);
}

/* metadata */
static void k_keylen_max(gw *b) {
  gw_header(b, 3, 0, 1);
  gw_u64(b, UINT64_MAX);
  gw_fill(b, 12, 0);
}
static void k_keylen_over(gw *b) {
  gw_header(b, 3, 0, 1);
  gw_u64(b, 100); /* only 20 bytes follow */
  gw_fill(b, 20, 'a');
}
static void kv_empty_key(gw *b) {
  gw_key(b, "", T_U32), gw_u32(b, 1);
}
static void k_empty_key(gw *b) {
  one_kv(b, kv_empty_key);
}
static void kv_type13(gw *b) {
  gw_key(b, "k", 13), gw_u32(b, 0);
}
static void k_type13(gw *b) {
  one_kv(b, kv_type13);
}
static void kv_type_max(gw *b) {
  gw_key(b, "k", UINT32_MAX), gw_u32(b, 0);
}
static void k_type_max(gw *b) {
  one_kv(b, kv_type_max);
}
static void k_cut_value(gw *b) {
  gw_header(b, 3, 0, 1);
  gw_key(b, "key.u64", T_U64);
  gw_u32(b, 1); /* 4 of 8 bytes */
}
static void k_cut_type(gw *b) {
  gw_header(b, 3, 0, 1);
  gw_str(b, "key.x");
  gw_u16(b, 4);
}
static void kv_strlen_max(gw *b) {
  gw_key(b, "s", T_STR);
  gw_u64(b, UINT64_MAX);
  gw_fill(b, 16, 0);
}
static void k_strlen_max(gw *b) {
  one_kv(b, kv_strlen_max);
}
static void kv_strlen_over(gw *b) {
  gw_key(b, "s", T_STR);
  gw_u64(b, 11);
  gw_bytes(b, "0123456789", 10);
}
static void k_strlen_over(gw *b) {
  one_kv(b, kv_strlen_over);
}
static void kv_bool2(gw *b) {
  gw_key(b, "flag", T_BOOL), gw_u8(b, 2);
}
static void k_bool2(gw *b) {
  one_kv(b, kv_bool2);
}
static void kv_arr_arr(gw *b) {
  gw_kv_arr(b, "nested", T_ARR, 1);
  gw_u32(b, T_U32);
  gw_u64(b, 0);
}
static void k_arr_arr(gw *b) {
  one_kv(b, kv_arr_arr);
}
static void kv_arr_type99(gw *b) {
  gw_kv_arr(b, "a", 99, 0);
}
static void k_arr_type99(gw *b) {
  one_kv(b, kv_arr_type99);
}
static void kv_arr_count_max(gw *b) {
  gw_kv_arr(b, "a", T_U32, UINT64_MAX);
  gw_fill(b, 64, 0);
}
static void k_arr_count_max(gw *b) {
  one_kv(b, kv_arr_count_max);
}
static void kv_arr_count_wrap(gw *b) {
  /* 2^61 * 8 wraps to 0 in 64 bits: must not pass as "0 bytes" */
  gw_kv_arr(b, "a", T_U64, 1ull << 61);
  gw_fill(b, 64, 0);
}
static void k_arr_count_wrap(gw *b) {
  one_kv(b, kv_arr_count_wrap);
}
static void kv_arr_count_over(gw *b) {
  gw_kv_arr(b, "a", T_U32, 5); /* 4 elements present */
  gw_fill(b, 16, 0);
}
static void k_arr_count_over(gw *b) {
  one_kv(b, kv_arr_count_over);
}
static void kv_sarr_count_max(gw *b) {
  gw_kv_arr(b, "tokens", T_STR, UINT64_MAX);
  gw_fill(b, 64, 0);
}
static void k_sarr_count_max(gw *b) {
  one_kv(b, kv_sarr_count_max);
}
static void kv_sarr_count_over(gw *b) {
  gw_kv_arr(b, "tokens", T_STR, 3); /* only 16 bytes: at most 2 strings */
  gw_str(b, "");
  gw_str(b, "");
}
static void k_sarr_count_over(gw *b) {
  one_kv(b, kv_sarr_count_over);
}
static void kv_sarr_elem_len(gw *b) {
  gw_kv_arr(b, "tokens", T_STR, 2);
  gw_str(b, "ok");
  gw_u64(b, 1ull << 40);
  gw_fill(b, 8, 0);
}
static void k_sarr_elem_len(gw *b) {
  one_kv(b, kv_sarr_elem_len);
}
static void kv_sarr_cut(gw *b) {
  gw_kv_arr(b, "tokens", T_STR, 3);
  gw_str(b, "a");
  gw_str(b, "b");
  gw_u64(b, 20);
  gw_bytes(b, "cc", 2); /* 2 of 20 bytes, then the file ends */
  gw_u64(b, 0);
}
static void k_sarr_cut(gw *b) {
  one_kv(b, kv_sarr_cut);
}
static void kv_barr_5(gw *b) {
  gw_kv_arr(b, "flags", T_BOOL, 3);
  gw_u8(b, 0);
  gw_u8(b, 1);
  gw_u8(b, 5);
}
static void k_barr_5(gw *b) {
  one_kv(b, kv_barr_5);
}
static void k_dup_key(gw *b) {
  gw_header(b, 3, 0, 3);
  gw_kv_u32(b, "general.x", 1);
  gw_kv_str(b, "general.y", "v");
  gw_kv_u32(b, "general.x", 2);
}
static void kv_align0(gw *b) {
  gw_kv_u32(b, "general.alignment", 0);
}
static void k_align0(gw *b) {
  one_kv(b, kv_align0);
}
static void kv_align48(gw *b) {
  gw_kv_u32(b, "general.alignment", 48);
}
static void k_align48(gw *b) {
  one_kv(b, kv_align48);
}
static void kv_align_i32(gw *b) {
  gw_key(b, "general.alignment", T_I32);
  gw_u32(b, 32);
}
static void k_align_i32(gw *b) {
  one_kv(b, kv_align_i32);
}
static void kv_align_u64(gw *b) {
  gw_key(b, "general.alignment", T_U64);
  gw_u64(b, 32);
}
static void k_align_u64(gw *b) {
  one_kv(b, kv_align_u64);
}
static void kv_split(gw *b) {
  gw_key(b, "split.count", 2 /* UINT16, as gguf-split writes */);
  gw_u16(b, 2);
}
static void k_split(gw *b) {
  one_kv(b, kv_split);
}

/* tensors */
static void ti_empty_name(gw *b) {
  gw_tensor(b, "", 1, (uint64_t[]){8}, NC_TYPE_F32, 0);
}
static void t_empty_name(gw *b) {
  tensors(b, 1, ti_empty_name, 32);
}
static void ti_long_name(gw *b) {
  char name[65];
  memset(name, 'n', 64);
  name[64] = '\0';
  gw_tensor(b, name, 1, (uint64_t[]){8}, NC_TYPE_F32, 0);
}
static void t_long_name(gw *b) {
  tensors(b, 1, ti_long_name, 32);
}
static void ti_nul_name(gw *b) {
  gw_strn(b, "ab\0c", 4);
  gw_u32(b, 1);
  gw_u64(b, 8);
  gw_u32(b, NC_TYPE_F32);
  gw_u64(b, 0);
}
static void t_nul_name(gw *b) {
  tensors(b, 1, ti_nul_name, 32);
}
static void ti_ndims0(gw *b) {
  gw_tensor(b, "w", 0, NULL, NC_TYPE_F32, 0);
  gw_fill(b, 16, 0);
}
static void t_ndims0(gw *b) {
  tensors(b, 1, ti_ndims0, 32);
}
static void ti_ndims5(gw *b) {
  gw_tensor(b, "w", 5, (uint64_t[]){1, 1, 1, 1, 1}, NC_TYPE_F32, 0);
}
static void t_ndims5(gw *b) {
  tensors(b, 1, ti_ndims5, 32);
}
static void ti_dim_neg(gw *b) {
  gw_tensor(b, "w", 2, (uint64_t[]){32, (uint64_t)-1}, NC_TYPE_F32, 0);
}
static void t_dim_neg(gw *b) {
  tensors(b, 1, ti_dim_neg, 32);
}
static void ti_nelem_ovf(gw *b) {
  /* #27203: (INT64_MAX, 2) */
  gw_tensor(b, "w", 2, (uint64_t[]){INT64_MAX, 2}, NC_TYPE_F32, 0);
}
static void t_nelem_ovf(gw *b) {
  tensors(b, 1, ti_nelem_ovf, 32);
}
static void ti_nbytes_ovf(gw *b) {
  /* 2^62 elements fit int64; 2^64 bytes do not fit u64 */
  gw_tensor(b, "w", 2, (uint64_t[]){1ull << 40, 1ull << 22}, NC_TYPE_F32, 0);
}
static void t_nbytes_ovf(gw *b) {
  tensors(b, 1, ti_nbytes_ovf, 32);
}
static void ti_nbytes_i64(gw *b) {
  /* 2^61 F32 elements: 2^63 bytes, above INT64_MAX */
  gw_tensor(b, "w", 1, (uint64_t[]){1ull << 61}, NC_TYPE_F32, 0);
}
static void t_nbytes_i64(gw *b) {
  tensors(b, 1, ti_nbytes_i64, 32);
}
static void ti_q4_huge(gw *b) {
  /* #27200: huge Q4_0 ne[0]; dividing first gives the true (huge) size */
  gw_tensor(b, "w", 1, (uint64_t[]){5100000000000000000ull}, NC_TYPE_Q4_0, 0);
}
static void t_q4_huge(gw *b) {
  tensors(b, 1, ti_q4_huge, 32);
}
static void ti_type99(gw *b) {
  gw_tensor(b, "w", 1, (uint64_t[]){32}, 99, 0);
}
static void t_type99(gw *b) {
  tensors(b, 1, ti_type99, 128);
}
static void ti_type4(gw *b) {
  gw_tensor(b, "w", 1, (uint64_t[]){32}, 4 /* removed Q4_2 */, 0);
}
static void t_type4(gw *b) {
  tensors(b, 1, ti_type4, 128);
}
static void ti_type_neg(gw *b) {
  gw_tensor(b, "w", 1, (uint64_t[]){32}, UINT32_MAX, 0);
}
static void t_type_neg(gw *b) {
  tensors(b, 1, ti_type_neg, 128);
}
static void ti_block(gw *b) {
  gw_tensor(b, "w", 2, (uint64_t[]){33, 1}, NC_TYPE_Q8_0, 0);
}
static void t_block(gw *b) {
  tensors(b, 1, ti_block, 64);
}
static void ti_unaligned(gw *b) {
  gw_tensor(b, "w", 1, (uint64_t[]){4}, NC_TYPE_F32, 8);
}
static void t_unaligned(gw *b) {
  tensors(b, 1, ti_unaligned, 64);
}
static void ti_dup_name(gw *b) {
  gw_tensor(b, "blk.0.w", 1, (uint64_t[]){8}, NC_TYPE_F32, 0);
  gw_tensor(b, "blk.0.w", 1, (uint64_t[]){8}, NC_TYPE_F32, 32);
}
static void t_dup_name(gw *b) {
  tensors(b, 2, ti_dup_name, 64);
}
static void ti_past_end(gw *b) {
  gw_tensor(b, "blk.0.attn_q.weight", 2, (uint64_t[]){32, 4}, NC_TYPE_F32, 0);
}
static void t_past_end(gw *b) {
  tensors(b, 1, ti_past_end, 500);
}
static void ti_second_past_end(gw *b) {
  gw_tensor(b, "a", 1, (uint64_t[]){8}, NC_TYPE_F32, 0);
  gw_tensor(b, "b", 1, (uint64_t[]){8}, NC_TYPE_F32, 32);
}
static void t_second_past_end(gw *b) {
  tensors(b, 2, ti_second_past_end, 40);
}
static void ti_offset_wrap(gw *b) {
  gw_tensor(b, "w", 1, (uint64_t[]){8}, NC_TYPE_F32, UINT64_MAX - 31);
}
static void t_offset_wrap(gw *b) {
  tensors(b, 1, ti_offset_wrap, 32);
}
static void ti_offset_far(gw *b) {
  gw_tensor(b, "w", 1, (uint64_t[]){0}, NC_TYPE_F32, 1ull << 40);
}
static void t_offset_far(gw *b) {
  tensors(b, 1, ti_offset_far, 32);
}
static void ti_cut_dims(gw *b) {
  gw_str(b, "w");
  gw_u32(b, 4);
  gw_u64(b, 8);
  gw_u64(b, 8);
  gw_fill(b, 4, 0);
}
static void t_cut_dims(gw *b) {
  gw_header(b, 3, 1, 0);
  ti_cut_dims(b);
}
static void t_namelen_max(gw *b) {
  gw_header(b, 3, 1, 0);
  gw_u64(b, UINT64_MAX);
  gw_fill(b, 40, 0);
}

#define BAD(fn, code, s)                                                       \
  { #fn, fn, code, s }
static const bad_case BAD_CASES[] = {
    BAD(b_short, NC_ERR_FORMAT, "too short for the magic"),
    BAD(b_magic, NC_ERR_FORMAT, "bad magic"),
    BAD(b_v0, NC_ERR_FORMAT, "version 0 "),
    BAD(b_v1, NC_ERR_FORMAT, "version 1 "),
    BAD(b_v4, NC_ERR_FORMAT, "newer than supported"),
    BAD(b_swapped, NC_ERR_FORMAT, "opposite endianness"),
    BAD(b_swapped2, NC_ERR_FORMAT, "opposite endianness"),
    BAD(b_cut_version, NC_ERR_FORMAT, "truncated file: version"),
    BAD(b_cut_ntensors, NC_ERR_FORMAT, "truncated file: tensor_count"),
    BAD(b_cut_nkv, NC_ERR_FORMAT, "truncated file: kv_count"),
    BAD(b_nkv_max, NC_ERR_FORMAT, "kv_count 18446744073709551615"),
    BAD(b_nkv_2_63, NC_ERR_FORMAT, "kv_count 9223372036854775808"),
    BAD(b_nkv_small, NC_ERR_FORMAT, "kv_count 3 at offset 16 is impossible"),
    BAD(b_nt_max, NC_ERR_FORMAT, "tensor_count 18446744073709551615"),
    BAD(b_nt_2_63, NC_ERR_FORMAT, "tensor_count 9223372036854775808"),
    BAD(b_nt_after_meta, NC_ERR_FORMAT, "cannot fit in the"),
    BAD(k_keylen_max, NC_ERR_FORMAT, "key at offset 24 has length 1844"),
    BAD(k_keylen_over, NC_ERR_FORMAT,
        "key at offset 24 has length 100, more than the 20"),
    BAD(k_empty_key, NC_ERR_FORMAT, "empty key at offset 24"),
    BAD(k_type13, NC_ERR_FORMAT, "key 'k': unknown value type 13"),
    BAD(k_type_max, NC_ERR_FORMAT, "unknown value type 4294967295"),
    BAD(k_cut_value, NC_ERR_FORMAT, "key 'key.u64': truncated file: value"),
    BAD(k_cut_type, NC_ERR_FORMAT, "truncated file: value type"),
    BAD(k_strlen_max, NC_ERR_FORMAT, "key 's': string value at offset"),
    BAD(k_strlen_over, NC_ERR_FORMAT, "has length 11, more than the 10"),
    BAD(k_bool2, NC_ERR_FORMAT, "key 'flag': bool value 2"),
    BAD(k_arr_arr, NC_ERR_FORMAT, "key 'nested': array of arrays"),
    BAD(k_arr_type99, NC_ERR_FORMAT, "unknown array element type 99"),
    BAD(k_arr_count_max, NC_ERR_FORMAT, "array count 18446744073709551615"),
    BAD(k_arr_count_wrap, NC_ERR_FORMAT, "array count 2305843009213693952"),
    BAD(k_arr_count_over, NC_ERR_FORMAT, "array count 5 at offset"),
    BAD(k_sarr_count_max, NC_ERR_FORMAT, "per STRING element"),
    BAD(k_sarr_count_over, NC_ERR_FORMAT, "array count 3 at offset"),
    BAD(k_sarr_elem_len, NC_ERR_FORMAT, "array string element at offset"),
    BAD(k_sarr_cut, NC_ERR_FORMAT, "key 'tokens': array string element"),
    BAD(k_barr_5, NC_ERR_FORMAT, "key 'flags': bool value 5"),
    BAD(k_dup_key, NC_ERR_FORMAT, "key 'general.x': duplicate key"),
    BAD(k_align0, NC_ERR_FORMAT, "alignment 0 is not a non-zero power"),
    BAD(k_align48, NC_ERR_FORMAT, "alignment 48 is not a non-zero power"),
    BAD(k_align_i32, NC_ERR_FORMAT, "must be UINT32, not INT32"),
    BAD(k_align_u64, NC_ERR_FORMAT, "must be UINT32, not UINT64"),
    BAD(k_split, NC_ERR_UNSUPPORTED, "split files are not supported"),
    BAD(t_empty_name, NC_ERR_FORMAT, "empty name"),
    BAD(t_long_name, NC_ERR_FORMAT, "name is 64 bytes, the limit is 63"),
    BAD(t_nul_name, NC_ERR_FORMAT, "name contains a NUL byte"),
    BAD(t_namelen_max, NC_ERR_FORMAT, "tensor 0 (info at offset 24): name"),
    BAD(t_ndims0, NC_ERR_FORMAT, "tensor 'w' (info at offset 24): n_dims 0"),
    BAD(t_ndims5, NC_ERR_FORMAT, "n_dims 5 is not in 1..4"),
    BAD(t_dim_neg, NC_ERR_FORMAT, "dimension 1 is 18446744073709551615"),
    BAD(t_nelem_ovf, NC_ERR_FORMAT, "element count overflows"),
    BAD(t_nbytes_ovf, NC_ERR_FORMAT, "byte size of shape"),
    BAD(t_nbytes_i64, NC_ERR_FORMAT, "byte size of shape"),
    BAD(t_q4_huge, NC_ERR_FORMAT, "extends past the end of the file"),
    BAD(t_type99, NC_ERR_FORMAT, "unknown ggml type id 99"),
    BAD(t_type4, NC_ERR_FORMAT, "unknown ggml type id 4"),
    BAD(t_type_neg, NC_ERR_FORMAT, "unknown ggml type id 4294967295"),
    BAD(t_block, NC_ERR_FORMAT, "ne[0] = 33 is not a multiple of the Q8_0"),
    BAD(t_unaligned, NC_ERR_FORMAT, "data offset 8 is not a multiple"),
    BAD(t_dup_name, NC_ERR_FORMAT,
        "tensor 'blk.0.w' (info at offset 63): "
        "duplicate tensor name"),
    BAD(t_past_end, NC_ERR_FORMAT,
        "tensor 'blk.0.attn_q.weight' (info at offset 24): data [96, 608) "
        "extends past the end of the file (596 bytes)"),
    BAD(t_second_past_end, NC_ERR_FORMAT, "tensor 'b' (info"),
    BAD(t_offset_wrap, NC_ERR_FORMAT, "overflows past the end of the file"),
    BAD(t_offset_far, NC_ERR_FORMAT, "extends past the end of the file"),
    BAD(t_cut_dims, NC_ERR_FORMAT, "truncated file: dimension"),
};
#define N_BAD (sizeof BAD_CASES / sizeof BAD_CASES[0])

static void test_bad_case(void **state) {
  const bad_case *bc = *state;
  gw b = {0};
  bc->build(&b);
  /* an exact-size copy so ASan catches any read past the end */
  uint8_t *copy = malloc(b.len ? b.len : 1);
  assert_non_null(copy);
  if (b.len) memcpy(copy, b.p, b.len);
  expect_fail(copy, b.len, bc->code, bc->substr);
  free(copy);
  /* $NC_GGUF_DUMP_DIR: also write the case to a file, for comparing with
   * other readers (scripts/diff_gguf_llama.py) */
  const char *dump = getenv("NC_GGUF_DUMP_DIR");
  if (dump && *dump) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", dump, bc->name);
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(b.p, 1, b.len, out), b.len);
    fclose(out);
  }
  gw_free(&b);
}

/* ------------------------------------------------ files on disk */

static char *repo_path(const char *rel) {
  const char *root = getenv("NUCLEUS_ROOT");
  size_t n = (root ? strlen(root) : 1) + strlen(rel) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", root ? root : ".", rel);
  return p;
}

static void test_open_errors(void **state) {
  (void)state;
  nc_error err = {0};
  gguf_file *f = (gguf_file *)0x1;
  assert_int_equal(gguf_open("/nonexistent/x.gguf", &f, &err), NC_ERR_IO);
  assert_null(f);
  assert_non_null(strstr(err.message, "/nonexistent/x.gguf"));
  assert_int_equal(gguf_open("/tmp", &f, &err), NC_ERR_IO);
  assert_non_null(strstr(err.message, "not a regular file"));

  char path[] = "/tmp/nc_test_gguf_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(gguf_open(path, &f, &err), NC_ERR_FORMAT); /* empty */
  assert_non_null(strstr(err.message, path));
  assert_non_null(strstr(err.message, "too short"));
  gw b = {0};
  build_valid(&b, 3, 32);
  assert_int_equal(write(fd, b.p, b.len - 1), (ssize_t)(b.len - 1));
  assert_int_equal(gguf_open(path, &f, &err), NC_ERR_FORMAT);
  assert_non_null(strstr(err.message, "extends past the end of the file"));
  assert_int_equal(write(fd, b.p + b.len - 1, 1), 1);
  assert_int_equal(gguf_open(path, &f, &err), NC_OK);
  assert_int_equal(gguf_tensor_count(f), 3);
  const gguf_tensor_info *q = gguf_find_tensor(f, "blk.0.q");
  assert_memory_equal(q->data, b.p + b.len - 68, 68);
  gguf_close(f);
  close(fd);
  unlink(path);
  gw_free(&b);
}

/* The file's bytes in each load mode: mapped, or read into memory (2 MiB
 * aligned from one huge page on, advised for huge pages), the same bytes,
 * read-only; auto reads a file far below half the available memory. */
static void test_open_load_modes(void **state) {
  (void)state;
  nc_error err = {0};
  nc_mapped_file *mf = (nc_mapped_file *)0x1;
  assert_int_equal(
      nc_mapped_file_open("/nonexistent/x", NC_FILE_READ, &mf, &err),
      NC_ERR_IO);
  assert_null(mf);
  assert_int_equal(nc_mapped_file_open("/tmp", (nc_file_load)7, &mf, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "load mode 7"));
  char path[] = "/tmp/nc_test_mapped_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  /* empty: size 0, no data, in every mode */
  for (int how = NC_FILE_AUTO; how <= NC_FILE_MMAP; how++) {
    assert_int_equal(nc_mapped_file_open(path, how, &mf, &err), NC_OK);
    assert_int_equal(nc_mapped_file_size(mf), 0);
    assert_null(nc_mapped_file_data(mf));
    nc_mapped_file_close(mf);
  }
  /* 5 MiB + 123 bytes: 2 whole huge pages, a part of a third */
  const size_t n = (5u << 20) + 123;
  uint8_t *want = malloc(n);
  assert_non_null(want);
  for (size_t i = 0; i < n; i++)
    want[i] = (uint8_t)(i * 2654435761u >> 11);
  assert_int_equal(write(fd, want, n), (ssize_t)n);
  close(fd);
  const nc_file_load expect[] = {NC_FILE_READ, NC_FILE_READ, NC_FILE_MMAP};
  for (int how = NC_FILE_AUTO; how <= NC_FILE_MMAP; how++) {
    assert_int_equal(nc_mapped_file_open(path, how, &mf, &err), NC_OK);
    assert_int_equal(nc_mapped_file_how(mf), expect[how]);
    assert_int_equal(nc_mapped_file_size(mf), n);
    const uint8_t *d = nc_mapped_file_data(mf);
    assert_memory_equal(d, want, n);
    const size_t huge = nc_mapped_file_huge_bytes(mf);
    if (expect[how] == NC_FILE_READ) {
      assert_int_equal((uintptr_t)d % (2u << 20), 0);
      assert_true(huge <= (6u << 20)); /* at most the 3 pages it spans */
      printf("load mode %d: %zu of %zu bytes on 2 MiB pages\n", how, huge, n);
    } else {
      assert_int_equal(huge, 0);
    }
    nc_mapped_file_close(mf);
  }
  /* a small file is read too, page-aligned */
  assert_int_equal(truncate(path, 100), 0);
  assert_int_equal(nc_mapped_file_open(path, NC_FILE_READ, &mf, &err), NC_OK);
  assert_memory_equal(nc_mapped_file_data(mf), want, 100);
  nc_mapped_file_close(mf);
  free(want);
  unlink(path);
}

/* A file written by gguf-py (scripts/gen_gguf_golden.py). */
static void test_gguf_py_golden(void **state) {
  (void)state;
  char *path = repo_path("tests/data/gguf/gguf_py_all_types.gguf");
  nc_error err = {0};
  gguf_file *f = NULL;
  nc_code c = gguf_open(path, &f, &err);
  free(path);
  if (c) fail_msg("%s", err.message);
  uint64_t u;
  int64_t i;
  double d;
  bool bo;
  gguf_str s;
  assert_true(gguf_get_str(f, "general.architecture", &s));
  assert_int_equal(s.len, 5);
  assert_memory_equal(s.ptr, "llama", 5);
  assert_true(gguf_get_u64(f, "test.u8", &u) && u == 250);
  assert_true(gguf_get_i64(f, "test.i8", &i) && i == -100);
  assert_true(gguf_get_u64(f, "test.u16", &u) && u == 65535);
  assert_true(gguf_get_i64(f, "test.i16", &i) && i == -32768);
  assert_true(gguf_get_u64(f, "test.u32", &u) && u == 4294967295u);
  assert_true(gguf_get_i64(f, "test.i32", &i) && i == INT32_MIN);
  assert_true(gguf_get_u64(f, "test.u64", &u) && u == UINT64_MAX);
  assert_true(gguf_get_i64(f, "test.i64", &i) && i == INT64_MIN);
  assert_true(gguf_get_f64(f, "test.f32", &d) && d == 0.25);
  assert_true(gguf_get_f64(f, "test.f64", &d) && d == -1e300);
  assert_true(gguf_get_bool(f, "test.bool", &bo) && !bo);
  assert_true(gguf_get_str(f, "test.str", &s));
  assert_int_equal(s.len, strlen("héllo wörld"));
  assert_memory_equal(s.ptr, "héllo wörld", s.len);
  gguf_value_type et;
  uint64_t n;
  assert_true(gguf_get_arr(f, "test.arr_str", &et, &n));
  assert_int_equal(et, GGUF_TYPE_STRING);
  assert_int_equal(n, 4);
  assert_true(gguf_get_arr_str(f, "test.arr_str", 3, &s));
  assert_int_equal(s.len, 3);
  assert_memory_equal(s.ptr, "<s>", 3);
  assert_true(gguf_get_arr(f, "test.arr_i32", &et, &n));
  assert_int_equal(et, GGUF_TYPE_INT32);
  assert_int_equal(n, 5);
  assert_true(gguf_get_arr_i64(f, "test.arr_i32", 4, &i) && i == -4);
  assert_true(gguf_get_arr_f64(f, "test.arr_f32", 1, &d) && d == 2.5);
  assert_int_equal(gguf_tensor_count(f), 3);
  const gguf_tensor_info *t = gguf_find_tensor(f, "tok.weight");
  assert_non_null(t);
  assert_int_equal(t->type, NC_TYPE_F32);
  assert_int_equal(t->ne[0], 8);
  assert_int_equal(t->ne[1], 3);
  float v[24];
  memcpy(v, t->data, sizeof v);
  for (int k = 0; k < 24; k++)
    assert_true(v[k] == (float)k * 0.5f);
  t = gguf_find_tensor(f, "q.weight");
  assert_non_null(t);
  assert_int_equal(t->type, NC_TYPE_Q8_0);
  assert_int_equal(t->ne[0], 64);
  assert_int_equal(t->ne[1], 2);
  assert_int_equal(t->nbytes, 4 * 34);
  t = gguf_find_tensor(f, "h.weight");
  assert_non_null(t);
  assert_int_equal(t->type, NC_TYPE_F16);
  assert_int_equal(t->nbytes, 32 * 2);
  gguf_close(f);
}

/* The fuzz seeds (fuzz/corpus/gguf/, written by gguf-py) are valid files. */
static void test_fuzz_seeds_parse(void **state) {
  (void)state;
  char *dir = repo_path("fuzz/corpus/gguf");
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *path = malloc(len);
    snprintf(path, len, "%s/%s", dir, e->d_name);
    nc_error err = {0};
    gguf_file *f = NULL;
    if (gguf_open(path, &f, &err) != NC_OK) fail_msg("%s", err.message);
    assert_true(gguf_kv_count(f) >= 1);
    gguf_close(f);
    free(path);
    n++;
  }
  closedir(d);
  free(dir);
  assert_true(n >= 4);
}

static void test_real_model(void **state) {
  (void)state;
  const char *path = getenv("NUCLEUS_MODEL");
  if (!path || !*path) NC_MODEL_UNAVAILABLE("NUCLEUS_MODEL is not set");
  if (access(path, R_OK) != 0) NC_MODEL_UNAVAILABLE(path);
  nc_error err = {0};
  gguf_file *f = NULL;
  nc_code c = gguf_open(path, &f, &err);
  if (c) fail_msg("%s", err.message);
  assert_int_equal(gguf_version(f), 3);
  assert_int_equal(gguf_tensor_count(f), 272);
  assert_int_equal(gguf_kv_count(f), 33);
  gguf_str s;
  assert_true(gguf_get_str(f, "general.architecture", &s));
  assert_int_equal(s.len, 5);
  assert_memory_equal(s.ptr, "llama", 5);
  uint64_t u;
  assert_true(gguf_get_u64(f, "llama.embedding_length", &u) && u == 576);
  assert_true(gguf_get_u64(f, "llama.block_count", &u) && u == 30);
  assert_true(gguf_get_u64(f, "llama.attention.head_count_kv", &u) && u == 3);
  gguf_value_type et;
  uint64_t n;
  assert_true(gguf_get_arr(f, "tokenizer.ggml.tokens", &et, &n));
  assert_int_equal(et, GGUF_TYPE_STRING);
  assert_int_equal(n, 49152);
  assert_true(gguf_get_arr_str(f, "tokenizer.ggml.tokens", 0, &s));
  assert_int_equal(s.len, 13);
  assert_memory_equal(s.ptr, "<|endoftext|>", 13);
  const gguf_tensor_info *t = gguf_find_tensor(f, "token_embd.weight");
  assert_non_null(t);
  assert_int_equal(t->type, NC_TYPE_Q8_0);
  assert_int_equal(t->n_dims, 2);
  assert_int_equal(t->ne[0], 576);
  assert_int_equal(t->ne[1], 49152);
  const uint8_t *base = NULL;
  size_t size = gguf_file_size(f);
  for (int64_t i = 0; i < gguf_tensor_count(f); i++) {
    const gguf_tensor_info *ti = gguf_tensor_at(f, i);
    const uint8_t *d = ti->data;
    if (!base) base = d - gguf_data_offset(f) - ti->offset;
    assert_ptr_equal(d, base + gguf_data_offset(f) + ti->offset);
    assert_true(ti->offset + gguf_data_offset(f) + ti->nbytes <= size);
    assert_int_equal(ti->offset % gguf_alignment(f), 0);
    assert_int_equal(ti->nbytes, nc_row_size(ti->type, ti->ne[0]) * ti->ne[1] *
                                     ti->ne[2] * ti->ne[3]);
  }
  gguf_close(f);
}

int main(void) {
  static const struct CMUnitTest fixed[] = {
      cmocka_unit_test(test_valid_every_getter),
      cmocka_unit_test(test_valid_v2_and_alignment),
      cmocka_unit_test(test_many_entries),
      cmocka_unit_test(test_every_prefix),
      cmocka_unit_test(test_truncation_names_field),
      cmocka_unit_test(test_open_errors),
      cmocka_unit_test(test_open_load_modes),
      cmocka_unit_test(test_gguf_py_golden),
      cmocka_unit_test(test_fuzz_seeds_parse),
      cmocka_unit_test(test_real_model),
  };
  size_t nf = sizeof fixed / sizeof fixed[0];
  struct CMUnitTest *tests = calloc(nf + N_BAD, sizeof *tests);
  if (!tests) return 1;
  memcpy(tests, fixed, sizeof fixed);
  for (size_t i = 0; i < N_BAD; i++)
    tests[nf + i] = (struct CMUnitTest){BAD_CASES[i].name, test_bad_case, NULL,
                                        NULL, (void *)&BAD_CASES[i]};
  int rc = _cmocka_run_group_tests("gguf", tests, nf + N_BAD, NULL, NULL);
  free(tests);
  return rc;
}
