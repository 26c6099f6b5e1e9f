/* kv_cache: the paged pool (no model needed): allocation, all-or-nothing
 * reservation, refcounted sharing, copy-on-write of the partial block only,
 * truncation, that rows land in distinct, stable storage, and the prefix
 * cache: content-addressed full blocks, salts, LRU eviction, cached blocks
 * counted as free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kv_cache.h"

static nc_hparams tiny_hp(void) {
  nc_hparams hp = {0};
  hp.n_layer = 2;
  hp.n_head = 4;
  hp.n_head_kv = 2;
  hp.head_dim = hp.head_dim_v = 8;
  return hp;
}

static nc_kv_cache *make(int64_t blocks, int32_t bt, int32_t seqs) {
  nc_hparams hp = tiny_hp();
  nc_kv_cache *kv = NULL;
  nucleus_error err;
  assert_int_equal(nc_kv_cache_create(&hp, blocks, bt, seqs, &kv, &err), NC_OK);
  return kv;
}

static void fill(nc_kv_cache *kv, int32_t seq, int32_t from, int32_t to,
                 uint16_t tag) {
  for (int32_t l = 0; l < 2; l++)
    for (int32_t p = from; p < to; p++) {
      nc_fp16 *k = nc_kv_k_row(kv, l, seq, p), *v = nc_kv_v_row(kv, l, seq, p);
      assert_non_null(k);
      assert_non_null(v);
      for (int d = 0; d < 16; d++) {
        k[d] = (nc_fp16)(tag + p * 16 + d + l * 7);
        v[d] = (nc_fp16)(tag + p * 16 + d + l * 7 + 1);
      }
    }
  nc_kv_seq_set_len(kv, seq, to);
}

static void check(const nc_kv_cache *kv, int32_t seq, int32_t from, int32_t to,
                  uint16_t tag) {
  for (int32_t l = 0; l < 2; l++)
    for (int32_t p = from; p < to; p++) {
      const nc_fp16 *k = nc_kv_k_row_c(kv, l, seq, p);
      const nc_fp16 *v = nc_kv_v_row_c(kv, l, seq, p);
      for (int d = 0; d < 16; d++) {
        assert_int_equal(k[d], (nc_fp16)(tag + p * 16 + d + l * 7));
        assert_int_equal(v[d], (nc_fp16)(tag + p * 16 + d + l * 7 + 1));
      }
    }
}

static void test_create_errors(void **state) {
  (void)state;
  nc_hparams hp = tiny_hp();
  nc_kv_cache *kv = (nc_kv_cache *)1;
  nucleus_error err;
  assert_int_equal(nc_kv_cache_create(&hp, 0, 16, 1, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_null(kv);
  assert_non_null(strstr(err.message, "blocks"));
  assert_int_equal(nc_kv_cache_create(&hp, 4, 0, 1, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_int_equal(nc_kv_cache_create(&hp, 4, 16, 0, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_int_equal(nc_kv_cache_create(&hp, 1 << 30, 1 << 20, 1, &kv, &err),
                   NC_ERR_LIMIT);
  /* 2 layers x 4 tokens x (16 + 16) halves. */
  assert_int_equal(nc_kv_bytes_per_block(&hp, 4), 2 * 4 * 32 * 2);
}

static void test_reserve_and_free(void **state) {
  (void)state;
  nc_kv_cache *kv = make(8, 4, 3);
  nucleus_error err;
  assert_int_equal(nc_kv_blocks_total(kv), 8);
  assert_int_equal(nc_kv_blocks_free(kv), 8);
  const int32_t a = nc_kv_seq_new(kv), b = nc_kv_seq_new(kv);
  assert_true(a >= 0 && b >= 0 && a != b);
  assert_int_equal(nc_kv_blocks_needed(kv, a, 9), 3);
  assert_int_equal(nc_kv_seq_reserve(kv, a, 9, &err), NC_OK);
  assert_int_equal(nc_kv_seq_capacity(kv, a), 12);
  assert_int_equal(nc_kv_seq_len(kv, a), 0);
  assert_int_equal(nc_kv_blocks_used(kv), 3);
  /* Reserving less than what is held is free. */
  assert_int_equal(nc_kv_blocks_needed(kv, a, 5), 0);
  /* All or nothing: b asks for 6 blocks, 5 are free. */
  assert_int_equal(nc_kv_blocks_needed(kv, b, 24), 6);
  assert_int_equal(nc_kv_seq_reserve(kv, b, 24, &err), NC_ERR_BUSY);
  assert_non_null(strstr(err.message, "6 blocks"));
  assert_int_equal(nc_kv_blocks_free(kv), 5);
  assert_int_equal(nc_kv_seq_capacity(kv, b), 0);
  assert_int_equal(nc_kv_seq_reserve(kv, b, 20, &err), NC_OK);
  assert_int_equal(nc_kv_blocks_free(kv), 0);
  fill(kv, a, 0, 9, 100);
  fill(kv, b, 0, 20, 3000);
  check(kv, a, 0, 9, 100);
  check(kv, b, 0, 20, 3000);
  /* Rows past the capacity do not exist. */
  assert_null(nc_kv_k_row(kv, 0, a, 12));
  assert_null(nc_kv_k_row(kv, 2, a, 0));
  assert_null(nc_kv_k_row(kv, 0, 2, 0));
  /* max_seqs */
  assert_true(nc_kv_seq_new(kv) >= 0);
  assert_int_equal(nc_kv_seq_new(kv), -1);
  nc_kv_seq_free(kv, b);
  assert_int_equal(nc_kv_blocks_free(kv), 5);
  assert_int_equal(nc_kv_seq_len(kv, b), 0);
  assert_false(nc_kv_seq_is_live(kv, b));
  assert_int_equal(nc_kv_seq_reserve(kv, b, 1, &err), NC_ERR_INVALID_ARGUMENT);
  nc_kv_seq_free(kv, b); /* twice: ignored */
  assert_int_equal(nc_kv_blocks_free(kv), 5);
  check(kv, a, 0, 9, 100);
  nc_kv_cache_free(kv);
}

static void test_fork_shares_and_copies_partial_block(void **state) {
  (void)state;
  nc_kv_cache *kv = make(10, 4, 4);
  nucleus_error err;
  const int32_t a = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, a, 10, &err), NC_OK);
  fill(kv, a, 0, 10, 7);
  const int32_t c = nc_kv_seq_fork(kv, a);
  assert_true(c >= 0);
  assert_int_equal(nc_kv_seq_len(kv, c), 10);
  assert_int_equal(nc_kv_blocks_used(kv), 3); /* nothing copied */
  assert_int_equal(nc_kv_block_refcount(kv, c, 0), 2);
  check(kv, c, 0, 10, 7);
  /* Writing position 10 touches the shared partial block 2 only. */
  assert_int_equal(nc_kv_blocks_needed(kv, c, 11), 1);
  assert_int_equal(nc_kv_blocks_needed(kv, c, 13), 2);
  assert_int_equal(nc_kv_seq_reserve(kv, c, 13, &err), NC_OK);
  assert_int_equal(nc_kv_blocks_used(kv), 5);
  assert_int_equal(nc_kv_block_refcount(kv, c, 8), 1);
  assert_int_equal(nc_kv_block_refcount(kv, a, 8), 1);
  assert_int_equal(nc_kv_block_refcount(kv, c, 4), 2);
  /* The copy holds the prefix; the child's writes do not reach the parent. */
  check(kv, c, 0, 10, 7);
  fill(kv, c, 10, 13, 900);
  check(kv, a, 0, 10, 7);
  assert_ptr_not_equal(nc_kv_k_row(kv, 0, a, 9), nc_kv_k_row(kv, 0, c, 9));
  assert_ptr_equal(nc_kv_k_row(kv, 0, a, 3), nc_kv_k_row(kv, 0, c, 3));
  /* The parent now owns block 2 alone: writing needs no copy. */
  assert_int_equal(nc_kv_blocks_needed(kv, a, 12), 0);
  /* A fork at a block boundary copies nothing when written. */
  const int32_t d = nc_kv_seq_fork(kv, a);
  nc_kv_seq_truncate(kv, d, 8);
  assert_int_equal(nc_kv_seq_len(kv, d), 8);
  assert_int_equal(nc_kv_blocks_needed(kv, d, 12), 1); /* block 2 shared */
  /* Freeing the parent keeps shared blocks alive for the children. */
  nc_kv_seq_free(kv, a);
  check(kv, c, 0, 10, 7);
  check(kv, d, 0, 8, 7);
  nc_kv_seq_free(kv, c);
  nc_kv_seq_free(kv, d);
  assert_int_equal(nc_kv_blocks_used(kv), 0);
  /* Fork of a dead sequence. */
  assert_int_equal(nc_kv_seq_fork(kv, a), -1);
  nc_kv_cache_free(kv);
}

static void test_truncate(void **state) {
  (void)state;
  nc_kv_cache *kv = make(6, 4, 2);
  nucleus_error err;
  const int32_t a = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, a, 16, &err), NC_OK);
  fill(kv, a, 0, 16, 1);
  nc_kv_seq_truncate(kv, a, 5);
  assert_int_equal(nc_kv_seq_len(kv, a), 5);
  assert_int_equal(nc_kv_seq_capacity(kv, a), 8);
  assert_int_equal(nc_kv_blocks_used(kv), 2);
  check(kv, a, 0, 5, 1);
  nc_kv_seq_truncate(kv, a, 0);
  assert_int_equal(nc_kv_blocks_used(kv), 0);
  nc_kv_seq_truncate(kv, a, -3); /* ignored */
  nc_kv_seq_set_len(kv, a, 1);   /* beyond capacity: ignored */
  assert_int_equal(nc_kv_seq_len(kv, a), 0);
  nc_kv_cache_free(kv);
}

/* Writes tokens' K/V (tag) into a new sequence and indexes its blocks. */
static int32_t written_seq(nc_kv_cache *kv, const int32_t *tokens, int32_t n,
                           uint64_t salt, uint16_t tag) {
  int32_t s = nc_kv_seq_new(kv);
  assert_true(s >= 0);
  assert_int_equal(nc_kv_seq_attach_prefix(kv, s, salt, tokens, n), 0);
  assert_int_equal(nc_kv_seq_reserve(kv, s, n, NULL), NC_OK);
  fill(kv, s, 0, n, tag);
  nc_kv_seq_publish(kv, s, tokens, n);
  return s;
}

static void test_prefix_hits_share_blocks(void **state) {
  (void)state;
  nc_kv_cache *kv = make(8, 4, 4);
  const uint64_t salt = nc_kv_salt_hash(NULL, 0);
  const int32_t toks[10] = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  int32_t a = written_seq(kv, toks, 10, salt, 100);
  assert_int_equal(nc_kv_blocks_hashed(kv), 2); /* the two full blocks */
  /* A second sequence with the same 10 tokens reuses both full blocks. */
  int32_t b = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_attach_prefix(kv, b, salt, toks, 10), 8);
  assert_int_equal(nc_kv_seq_len(kv, b), 8);
  assert_int_equal(nc_kv_block_refcount(kv, b, 0), 2);
  assert_int_equal(nc_kv_block_refcount(kv, b, 7), 2);
  check(kv, b, 0, 8, 100);
  /* At least one token is always left to feed: 8 tokens hit 1 block. */
  int32_t c = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_attach_prefix(kv, c, salt, toks, 8), 4);
  /* Another salt, or a different earlier token, hits nothing. */
  int32_t d = nc_kv_seq_new(kv);
  assert_int_equal(
      nc_kv_seq_attach_prefix(kv, d, nc_kv_salt_hash("t", 1), toks, 10), 0);
  nc_kv_seq_free(kv, d);
  d = nc_kv_seq_new(kv);
  int32_t other[10];
  memcpy(other, toks, sizeof other);
  other[1] = 99;
  assert_int_equal(nc_kv_seq_attach_prefix(kv, d, salt, other, 10), 0);
  nc_kv_seq_free(kv, d);
  /* Exclusive blocks: a's partial last block only (the rest is shared). */
  assert_int_equal(nc_kv_blocks_exclusive(kv, &a, 1), 1);
  int32_t ab[2] = {a, b};
  assert_int_equal(nc_kv_blocks_exclusive(kv, ab, 2), 2);
  nc_kv_seq_free(kv, a);
  nc_kv_seq_free(kv, b);
  nc_kv_seq_free(kv, c);
  /* Everything returns; the two named blocks stay cached and count free. */
  assert_int_equal(nc_kv_blocks_free(kv), 8);
  assert_int_equal(nc_kv_blocks_cached(kv), 2);
  int32_t e = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_attach_prefix(kv, e, salt, toks, 10), 8);
  assert_int_equal(nc_kv_blocks_cached(kv), 0);
  check(kv, e, 0, 8, 100);
  nc_kv_seq_free(kv, e);
  nc_kv_cache_free(kv);
}

static void test_prefix_eviction_lru(void **state) {
  (void)state;
  nc_kv_cache *kv = make(4, 4, 4);
  const uint64_t salt = nc_kv_salt_hash(NULL, 0);
  const int32_t x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  int32_t a = written_seq(kv, x, 9, salt, 10); /* 3 blocks, 2 named */
  nc_kv_seq_free(kv, a);
  assert_int_equal(nc_kv_blocks_cached(kv), 2);
  assert_int_equal(nc_kv_blocks_free(kv), 4);
  /* A sequence needing the whole pool evicts the cached blocks: the second
   * block (released first) before the first. */
  int32_t b = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, b, 8, NULL), NC_OK);
  assert_int_equal(nc_kv_evictions(kv), 0); /* 2 free blocks first... */
  assert_int_equal(nc_kv_seq_reserve(kv, b, 9, NULL), NC_OK);
  assert_int_equal(nc_kv_evictions(kv), 1); /* ...then the LRU one */
  int32_t c = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_attach_prefix(kv, c, salt, x, 9), 4);
  nc_kv_seq_free(kv, c);
  assert_int_equal(nc_kv_seq_reserve(kv, b, 16, NULL), NC_OK);
  assert_int_equal(nc_kv_evictions(kv), 2);
  check(kv, b, 0, 0, 0);
  assert_int_equal(nc_kv_blocks_hashed(kv), 0);
  assert_int_equal(nc_kv_blocks_free(kv), 0);
  assert_int_equal(nc_kv_seq_reserve(kv, b, 17, NULL), NC_ERR_BUSY);
  nc_kv_seq_free(kv, b);
  assert_int_equal(nc_kv_blocks_free(kv), 4);
  nc_kv_cache_free(kv);
}

/* Typed caches: row sizes by type, types whose block does not divide the
 * head refused, the F16 views NULL, and a fork's copy-on-write copies the
 * typed bytes of the partial block (the shared prefix stays shared). */
static void test_typed_rows_and_fork(void **state) {
  (void)state;
  nc_hparams hp = tiny_hp();
  hp.head_dim = hp.head_dim_v = 64;
  nucleus_error err;
  nc_kv_cache *kv = NULL;
  const nc_kv_types q = {NC_TYPE_Q8_0, NC_TYPE_Q4_0};
  assert_int_equal(nc_kv_cache_create_typed(&hp, q, 4, 4, 2, &kv, &err), NC_OK);
  assert_int_equal(nc_kv_k_row_bytes(kv), 2 * 2 * 34); /* 2 heads x 2 blocks */
  assert_int_equal(nc_kv_v_row_bytes(kv), 2 * 2 * 18);
  assert_int_equal(nc_kv_bytes_per_position(&hp, q), 2 * (136 + 72));
  assert_int_equal(nc_kv_rot_k(kv), 64);
  assert_int_equal(nc_kv_rot_v(kv), 64);
  const int32_t a = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, a, 6, &err), NC_OK);
  assert_null(nc_kv_k_row(kv, 0, a, 0)); /* not F16 */
  for (int32_t p = 0; p < 6; p++) {
    memset(nc_kv_k_data(kv, 1, a, p), 0x40 + p, nc_kv_k_row_bytes(kv));
    memset(nc_kv_v_data(kv, 1, a, p), 0x60 + p, nc_kv_v_row_bytes(kv));
  }
  nc_kv_seq_set_len(kv, a, 6);
  const int32_t c = nc_kv_seq_fork(kv, a);
  assert_int_equal(nc_kv_seq_reserve(kv, c, 7, &err), NC_OK);
  assert_ptr_equal(nc_kv_k_data(kv, 1, a, 0), nc_kv_k_data(kv, 1, c, 0));
  assert_ptr_not_equal(nc_kv_k_data(kv, 1, a, 5), nc_kv_k_data(kv, 1, c, 5));
  assert_memory_equal(nc_kv_k_data(kv, 1, a, 5), nc_kv_k_data(kv, 1, c, 5),
                      nc_kv_k_row_bytes(kv));
  assert_memory_equal(nc_kv_v_data(kv, 1, a, 4), nc_kv_v_data(kv, 1, c, 4),
                      nc_kv_v_row_bytes(kv));
  nc_kv_cache_free(kv);
  /* BF16 is not rotated; F16 views of a BF16 half are NULL */
  const nc_kv_types b = {NC_TYPE_BF16, NC_TYPE_F16};
  assert_int_equal(nc_kv_cache_create_typed(&hp, b, 2, 4, 1, &kv, &err), NC_OK);
  assert_int_equal(nc_kv_rot_k(kv), 0);
  const int32_t s = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, s, 1, &err), NC_OK);
  assert_null(nc_kv_k_row(kv, 0, s, 0));
  assert_non_null(nc_kv_v_row(kv, 0, s, 0));
  nc_kv_cache_free(kv);
  /* head 8: no Q8_0 block fits; Q4_1 is not a cache type */
  hp.head_dim = hp.head_dim_v = 8;
  assert_int_equal(nc_kv_cache_create_typed(&hp, q, 2, 4, 1, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  hp.head_dim = hp.head_dim_v = 64;
  const nc_kv_types bad = {NC_TYPE_Q4_1, NC_TYPE_F16};
  assert_int_equal(nc_kv_cache_create_typed(&hp, bad, 2, 4, 1, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "Q4_1"));
  /* Gemma 3's head of 256: K in one piece of 256, V in pieces of 64 */
  assert_int_equal(nc_kv_rotation(NC_TYPE_Q8_0, 256, true), 256);
  assert_int_equal(nc_kv_rotation(NC_TYPE_Q8_0, 256, false), 64);
  assert_int_equal(nc_kv_rotation(NC_TYPE_Q4_0, 192, true), 64);
  assert_int_equal(nc_kv_rotation(NC_TYPE_Q4_0, 96, true), 0);
  assert_int_equal(nc_kv_rotation(NC_TYPE_BF16, 256, true), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_errors),
      cmocka_unit_test(test_typed_rows_and_fork),
      cmocka_unit_test(test_reserve_and_free),
      cmocka_unit_test(test_fork_shares_and_copies_partial_block),
      cmocka_unit_test(test_truncate),
      cmocka_unit_test(test_prefix_hits_share_blocks),
      cmocka_unit_test(test_prefix_eviction_lru),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
