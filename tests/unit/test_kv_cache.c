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

#include "kv/kv_cache.h"
#include "model/model.h"

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
  assert_int_equal(
      nc_kv_cache_create(nc_hp_kv_shape(&hp), blocks, bt, seqs, &kv, &err),
      NC_OK);
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
  assert_int_equal(nc_kv_cache_create(nc_hp_kv_shape(&hp), 0, 16, 1, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_null(kv);
  assert_non_null(strstr(err.message, "blocks"));
  assert_int_equal(nc_kv_cache_create(nc_hp_kv_shape(&hp), 4, 0, 1, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_int_equal(nc_kv_cache_create(nc_hp_kv_shape(&hp), 4, 16, 0, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_int_equal(
      nc_kv_cache_create(nc_hp_kv_shape(&hp), 1 << 30, 1 << 20, 1, &kv, &err),
      NC_ERR_LIMIT);
  /* 2 layers x 4 tokens x (16 + 16) halves. */
  assert_int_equal(nc_kv_bytes_per_block(nc_hp_kv_shape(&hp), 4),
                   2 * 4 * 32 * 2);
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
  /* The same tokens written again by another sequence (a cold run beside
   * a's): its blocks stay private, the names keep a's blocks */
  d = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, d, 10, NULL), NC_OK);
  fill(kv, d, 0, 10, 300);
  nc_kv_seq_publish(kv, d, toks, 10);
  assert_int_equal(nc_kv_blocks_hashed(kv), 2);
  nc_kv_seq_free(kv, d); /* its blocks return to the free list */
  assert_int_equal(nc_kv_blocks_cached(kv), 0);
  /* Exclusive blocks: a's partial last block only (the rest is shared). */
  assert_int_equal(nc_kv_blocks_exclusive(kv, &a, 1), 1);
  int32_t ab[2] = {a, b};
  assert_int_equal(nc_kv_blocks_exclusive(kv, ab, 2), 2);
  nc_kv_seq_free(kv, a);
  nc_kv_seq_free(kv, b);
  nc_kv_seq_free(kv, c);
  /* Everything returns; the named blocks stay cached and count free. */
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

/* ---- sliding windows: 3 layers, the last two local, window 20, blocks of
 * 4 (the attention's aligned unit is then 16 positions) */

static const bool k_swa[3] = {false, true, true};

static nc_kv_cache *make_swa(int64_t blocks, int32_t seqs) {
  nc_hparams hp = tiny_hp();
  hp.n_layer = 3;
  hp.n_swa = 20;
  nc_kv_cache *kv = NULL;
  nucleus_error err;
  assert_int_equal(nc_kv_cache_create_swa(nc_hp_kv_shape(&hp), NC_KV_TYPES_F16,
                                          k_swa, blocks, 4, seqs, 16, &kv,
                                          &err),
                   NC_OK);
  assert_int_equal(nc_kv_n_groups(kv), 2);
  return kv;
}

static nc_fp16 tag_of(uint16_t tag, int32_t p, int d, int32_t l, int kv1) {
  return (nc_fp16)(tag + p * 16 + d + l * 7 + kv1);
}

/* Writes [from, to) of all 3 layers (the caller reserved them). */
static void fill3(nc_kv_cache *kv, int32_t seq, int32_t from, int32_t to,
                  uint16_t tag) {
  for (int32_t l = 0; l < 3; l++)
    for (int32_t p = from; p < to; p++) {
      nc_fp16 *k = nc_kv_k_row(kv, l, seq, p), *v = nc_kv_v_row(kv, l, seq, p);
      assert_non_null(k);
      assert_non_null(v);
      for (int d = 0; d < 16; d++) {
        k[d] = tag_of(tag, p, d, l, 0);
        v[d] = tag_of(tag, p, d, l, 1);
      }
    }
  nc_kv_seq_set_len(kv, seq, to);
}

/* Layer l's rows [from, to) hold tag's values. */
static void check3(const nc_kv_cache *kv, int32_t l, int32_t seq, int32_t from,
                   int32_t to, uint16_t tag) {
  for (int32_t p = from; p < to; p++) {
    const nc_fp16 *k = nc_kv_k_row_c(kv, l, seq, p);
    const nc_fp16 *v = nc_kv_v_row_c(kv, l, seq, p);
    assert_non_null(k);
    assert_non_null(v);
    for (int d = 0; d < 16; d++) {
      assert_int_equal(k[d], tag_of(tag, p, d, l, 0));
      assert_int_equal(v[d], tag_of(tag, p, d, l, 1));
    }
  }
}

static void grow(nc_kv_cache *kv, int32_t seq, int32_t to, int32_t step,
                 uint16_t tag) {
  nucleus_error err;
  for (int32_t len = nc_kv_seq_len(kv, seq); len < to;) {
    const int32_t end = len + step < to ? len + step : to;
    assert_int_equal(nc_kv_seq_reserve(kv, seq, end, &err), NC_OK);
    fill3(kv, seq, len, end, tag);
    len = end;
  }
}

static void test_swa_releases_out_of_window(void **state) {
  (void)state;
  nc_kv_cache *kv = make_swa(64, 3);
  /* the bound: 3 sequences x (ceil((20 + 16) / 4) + 3) + one step + 1 */
  assert_int_equal(nc_kv_group_blocks_total(kv, 1), 3 * 12 + 4 + 1);
  const int32_t a = nc_kv_seq_new(kv);
  grow(kv, a, 40, 8, 100);
  /* the next query (40) sees 21..40: kept from 16, the unit holding 21 */
  assert_int_equal(nc_kv_seq_window_start(kv, a), 16);
  assert_null(nc_kv_k_row_c(kv, 1, a, 15));
  assert_null(nc_kv_v_row_c(kv, 2, a, 0));
  check3(kv, 0, a, 0, 40, 100); /* the global layer keeps everything */
  check3(kv, 1, a, 16, 40, 100);
  check3(kv, 2, a, 16, 40, 100);
  assert_int_equal(nc_kv_blocks_used(kv), 10);
  assert_int_equal(nc_kv_group_blocks_used(kv, 1), 6);
  /* global 10 blocks x 1 layer + SWA 6 x 2, 4 positions x 32 halves */
  assert_int_equal(nc_kv_bytes_used(kv), (10 + 12) * 4 * 32 * 2);

  /* a fork shares both groups; its write copies the partial block */
  grow(kv, a, 42, 2, 100);
  const int32_t b = nc_kv_seq_fork(kv, a);
  assert_int_equal(nc_kv_seq_window_start(kv, b), 16);
  nucleus_error err;
  assert_int_equal(nc_kv_seq_reserve(kv, b, 43, &err), NC_OK);
  fill3(kv, b, 42, 43, 100);
  check3(kv, 1, a, 16, 42, 100);
  check3(kv, 1, b, 16, 43, 100);
  assert_int_equal(nc_kv_group_blocks_used(kv, 1), 8); /* 4..10, + b's 10 */

  /* truncation keeps a window still held, else cuts to 0 */
  nc_kv_seq_truncate(kv, a, 38); /* sees 19..38: from 16, held */
  assert_int_equal(nc_kv_seq_len(kv, a), 38);
  check3(kv, 2, a, 16, 38, 100);
  nc_kv_seq_truncate(kv, b, 30); /* sees 11..30: 0..15 are gone */
  assert_int_equal(nc_kv_seq_len(kv, b), 0);
  assert_int_equal(nc_kv_seq_capacity(kv, b), 0);
  grow(kv, b, 30, 30, 200); /* recomputed from 0 */
  check3(kv, 1, b, 0, 30, 200);

  nc_kv_seq_free(kv, a);
  nc_kv_seq_free(kv, b);
  assert_int_equal(nc_kv_blocks_used(kv), 0);
  assert_int_equal(nc_kv_group_blocks_used(kv, 1), 0);
  nc_kv_cache_free(kv);
}

/* The SWA group's storage starts at one sequence's window and grows as
 * more are taken, keeping what the blocks hold. */
static void test_swa_storage_grows(void **state) {
  (void)state;
  nc_kv_cache *kv = make_swa(512, 8);
  const size_t first = nc_kv_bytes_total(kv);
  int32_t s[8];
  for (int i = 0; i < 8; i++) {
    s[i] = nc_kv_seq_new(kv);
    grow(kv, s[i], 200, 16, (uint16_t)(1000 * (i + 1)));
  }
  assert_true(nc_kv_bytes_total(kv) > first);
  for (int i = 0; i < 8; i++) {
    const int32_t ws = nc_kv_seq_window_start(kv, s[i]);
    assert_true(ws > 0 && 200 - ws < 20 + 16);
    check3(kv, 0, s[i], 0, 200, (uint16_t)(1000 * (i + 1)));
    check3(kv, 1, s[i], ws, 200, (uint16_t)(1000 * (i + 1)));
    check3(kv, 2, s[i], ws, 200, (uint16_t)(1000 * (i + 1)));
  }
  assert_true(nc_kv_group_blocks_used(kv, 1) <= 8 * 12);
  nc_kv_cache_free(kv);
}

/* One long sequence whose blocks join the prefix cache as they fill (the
 * engine publishes every step): its released window blocks stay cached,
 * yet the pool reuses them before it gives the group more storage, so the
 * SWA storage stays the first window's however long the sequence grows. */
static void test_swa_storage_stays_one_window(void **state) {
  (void)state;
  nc_kv_cache *kv = make_swa(512, 8);
  const size_t first = nc_kv_bytes_total(kv);
  const int32_t a = nc_kv_seq_new(kv);
  int32_t t[1000];
  for (int32_t i = 0; i < 1000; i++)
    t[i] = 7 + i % 13;
  nucleus_error err;
  for (int32_t len = 0; len < 1000; len += 8) {
    assert_int_equal(nc_kv_seq_reserve(kv, a, len + 8, &err), NC_OK);
    fill3(kv, a, len, len + 8, 300);
    nc_kv_seq_publish(kv, a, t, len + 8);
  }
  assert_int_equal(nc_kv_bytes_total(kv), first);
  const int32_t ws = nc_kv_seq_window_start(kv, a);
  check3(kv, 0, a, 0, 1000, 300);
  check3(kv, 1, a, ws, 1000, 300);
  check3(kv, 2, a, ws, 1000, 300);
  nc_kv_cache_free(kv);
}

/* A hit is cut back to an end whose window's SWA blocks are all cached. */
static void test_swa_prefix_hit_cut_back(void **state) {
  (void)state;
  nc_kv_cache *kv = make_swa(64, 3);
  int32_t t[64];
  for (int i = 0; i < 64; i++)
    t[i] = 500 + i;
  const int32_t a = nc_kv_seq_new(kv);
  /* 0..16, published with its SWA blocks held; then 16..64 in one step:
   * the SWA blocks 4..7 leave the window before they are published */
  grow(kv, a, 16, 16, 7);
  nc_kv_seq_publish(kv, a, t, 16);
  grow(kv, a, 64, 48, 7);
  nc_kv_seq_publish(kv, a, t, 64);
  nc_kv_seq_free(kv, a);
  int64_t idle = 0;
  const uint64_t root = nc_kv_salt_hash(NULL, 0);
  /* the whole run: its window (32..63) is cached */
  assert_int_equal(nc_kv_prefix_peek(kv, root, t, 64, &idle), 60);
  /* 48 positions: the window of 48 needs 16..47, 16..31 are gone; so do
   * 44, 40, 36; 32 needs 0..31: cut back to 16 (needs 0..15) */
  int32_t u[49];
  memcpy(u, t, sizeof(int32_t) * 48);
  u[48] = 1;
  assert_int_equal(nc_kv_prefix_peek(kv, root, u, 49, &idle), 16);
  assert_int_equal(idle, 4);
  const int32_t b = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_attach_prefix(kv, b, root, u, 49), 16);
  for (int32_t l = 0; l < 3; l++)
    check3(kv, l, b, 0, 16, 7);
  grow(kv, b, 49, 33, 7); /* the rest recomputed, as a cold run writes it */
  check3(kv, 0, b, 0, 49, 7);
  nc_kv_seq_free(kv, b);
  /* the 64-token run: SWA from 32 on */
  const int32_t c = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_attach_prefix(kv, c, root, t, 64), 60);
  assert_int_equal(nc_kv_seq_window_start(kv, c), 32);
  check3(kv, 0, c, 0, 60, 7);
  check3(kv, 1, c, 32, 60, 7);
  nc_kv_seq_free(kv, c);
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
  assert_int_equal(
      nc_kv_cache_create_typed(nc_hp_kv_shape(&hp), q, 4, 4, 2, &kv, &err),
      NC_OK);
  assert_int_equal(nc_kv_k_row_bytes(kv, 0),
                   2 * 2 * 34); /* 2 heads x 2 blocks */
  assert_int_equal(nc_kv_v_row_bytes(kv, 0), 2 * 2 * 18);
  assert_int_equal(nc_kv_bytes_per_position(nc_hp_kv_shape(&hp), q),
                   2 * (136 + 72));
  assert_int_equal(nc_kv_rot_k(kv, 0), 64);
  assert_int_equal(nc_kv_rot_v(kv, 0), 64);
  const int32_t a = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, a, 6, &err), NC_OK);
  assert_null(nc_kv_k_row(kv, 0, a, 0)); /* not F16 */
  for (int32_t p = 0; p < 6; p++) {
    memset(nc_kv_k_data(kv, 1, a, p), 0x40 + p, nc_kv_k_row_bytes(kv, 0));
    memset(nc_kv_v_data(kv, 1, a, p), 0x60 + p, nc_kv_v_row_bytes(kv, 0));
  }
  nc_kv_seq_set_len(kv, a, 6);
  const int32_t c = nc_kv_seq_fork(kv, a);
  assert_int_equal(nc_kv_seq_reserve(kv, c, 7, &err), NC_OK);
  assert_ptr_equal(nc_kv_k_data(kv, 1, a, 0), nc_kv_k_data(kv, 1, c, 0));
  assert_ptr_not_equal(nc_kv_k_data(kv, 1, a, 5), nc_kv_k_data(kv, 1, c, 5));
  assert_memory_equal(nc_kv_k_data(kv, 1, a, 5), nc_kv_k_data(kv, 1, c, 5),
                      nc_kv_k_row_bytes(kv, 0));
  assert_memory_equal(nc_kv_v_data(kv, 1, a, 4), nc_kv_v_data(kv, 1, c, 4),
                      nc_kv_v_row_bytes(kv, 0));
  nc_kv_cache_free(kv);
  /* BF16 is not rotated; F16 views of a BF16 half are NULL */
  const nc_kv_types b = {NC_TYPE_BF16, NC_TYPE_F16};
  assert_int_equal(
      nc_kv_cache_create_typed(nc_hp_kv_shape(&hp), b, 2, 4, 1, &kv, &err),
      NC_OK);
  assert_int_equal(nc_kv_rot_k(kv, 0), 0);
  const int32_t s = nc_kv_seq_new(kv);
  assert_int_equal(nc_kv_seq_reserve(kv, s, 1, &err), NC_OK);
  assert_null(nc_kv_k_row(kv, 0, s, 0));
  assert_non_null(nc_kv_v_row(kv, 0, s, 0));
  nc_kv_cache_free(kv);
  /* head 8: no Q8_0 block fits; Q4_1 is not a cache type */
  hp.head_dim = hp.head_dim_v = 8;
  assert_int_equal(
      nc_kv_cache_create_typed(nc_hp_kv_shape(&hp), q, 2, 4, 1, &kv, &err),
      NC_ERR_INVALID_ARGUMENT);
  hp.head_dim = hp.head_dim_v = 64;
  const nc_kv_types bad = {NC_TYPE_Q4_1, NC_TYPE_F16};
  assert_int_equal(
      nc_kv_cache_create_typed(nc_hp_kv_shape(&hp), bad, 2, 4, 1, &kv, &err),
      NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "Q4_1"));
  /* Gemma 3's head of 256: K in one piece of 256, V in pieces of 64 */
  assert_int_equal(nc_kv_rotation(NC_TYPE_Q8_0, 256, true), 256);
  assert_int_equal(nc_kv_rotation(NC_TYPE_Q8_0, 256, false), 64);
  assert_int_equal(nc_kv_rotation(NC_TYPE_Q4_0, 192, true), 64);
  assert_int_equal(nc_kv_rotation(NC_TYPE_Q4_0, 96, true), 0);
  assert_int_equal(nc_kv_rotation(NC_TYPE_BF16, 256, true), 0);
}

/* A typed cache with sliding windows: Q8_0 K and Q4_0 V rows in both
 * groups (3 layers, the last two local, window 20, blocks of 4), the
 * window's release, a fork's copy-on-write of a SWA block's typed bytes
 * and the bytes held computed from the typed rows. */
static void test_swa_typed_rows(void **state) {
  (void)state;
  nc_hparams hp = tiny_hp();
  hp.n_layer = 3;
  hp.n_swa = 20;
  hp.head_dim = hp.head_dim_v = 64;
  const nc_kv_types q = {NC_TYPE_Q8_0, NC_TYPE_Q4_0};
  nc_kv_cache *kv = NULL;
  nucleus_error err;
  assert_int_equal(nc_kv_cache_create_swa(nc_hp_kv_shape(&hp), q, k_swa, 64, 4,
                                          2, 16, &kv, &err),
                   NC_OK);
  assert_int_equal(nc_kv_n_groups(kv), 2);
  const size_t rk = nc_kv_k_row_bytes(kv, 0), rv = nc_kv_v_row_bytes(kv, 0);
  assert_int_equal(rk, 2 * 2 * 34);
  assert_int_equal(rv, 2 * 2 * 18);
  assert_null(nc_kv_k_row(kv, 1, 0, 0)); /* not F16 (and no sequence) */
  const int32_t a = nc_kv_seq_new(kv);
  for (int32_t len = 0; len < 42; len += 6) {
    const int32_t end = len + 6 < 42 ? len + 6 : 42;
    assert_int_equal(nc_kv_seq_reserve(kv, a, end, &err), NC_OK);
    for (int32_t l = 0; l < 3; l++)
      for (int32_t p = len; p < end; p++) {
        memset(nc_kv_k_data(kv, l, a, p), 0x10 + p + 3 * l, rk);
        memset(nc_kv_v_data(kv, l, a, p), 0x80 + p + 5 * l, rv);
      }
    nc_kv_seq_set_len(kv, a, end);
  }
  /* the next query (42) sees 23..42: the SWA layers keep 16.. */
  assert_int_equal(nc_kv_seq_window_start(kv, a), 16);
  assert_null(nc_kv_k_data_c(kv, 1, a, 15));
  assert_non_null(nc_kv_k_data_c(kv, 0, a, 0));
  uint8_t want[512];
  for (int32_t l = 0; l < 3; l++)
    for (int32_t p = l ? 16 : 0; p < 42; p++) {
      memset(want, 0x10 + p + 3 * l, rk);
      assert_memory_equal(nc_kv_k_data_c(kv, l, a, p), want, rk);
      memset(want, 0x80 + p + 5 * l, rv);
      assert_memory_equal(nc_kv_v_data_c(kv, l, a, p), want, rv);
    }
  /* 11 global blocks x 1 layer + 7 SWA blocks (16..43) x 2 layers */
  assert_int_equal(nc_kv_blocks_used(kv), 11);
  assert_int_equal(nc_kv_group_blocks_used(kv, 1), 7);
  assert_int_equal(nc_kv_bytes_used(kv), (11 + 14) * 4 * (rk + rv));
  assert_true(nc_kv_bytes_total(kv) >= nc_kv_bytes_used(kv));
  /* a fork writing into the shared partial block (40..43) copies it */
  const int32_t c = nc_kv_seq_fork(kv, a);
  assert_int_equal(nc_kv_seq_reserve(kv, c, 43, &err), NC_OK);
  assert_ptr_equal(nc_kv_k_data(kv, 2, a, 36), nc_kv_k_data(kv, 2, c, 36));
  assert_ptr_not_equal(nc_kv_k_data(kv, 2, a, 41), nc_kv_k_data(kv, 2, c, 41));
  for (int32_t l = 0; l < 3; l++) {
    assert_memory_equal(nc_kv_k_data(kv, l, a, 41), nc_kv_k_data(kv, l, c, 41),
                        rk);
    assert_memory_equal(nc_kv_v_data(kv, l, a, 40), nc_kv_v_data(kv, l, c, 40),
                        rv);
  }
  nc_kv_seq_free(kv, a);
  nc_kv_seq_free(kv, c);
  assert_int_equal(nc_kv_group_blocks_used(kv, 1), 0);
  nc_kv_cache_free(kv);
  /* a type whose block does not divide the head: refused with windows too */
  hp.head_dim = hp.head_dim_v = 8;
  assert_int_equal(nc_kv_cache_create_swa(nc_hp_kv_shape(&hp), q, k_swa, 64, 4,
                                          2, 16, &kv, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_null(kv);
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
      cmocka_unit_test(test_swa_releases_out_of_window),
      cmocka_unit_test(test_swa_storage_grows),
      cmocka_unit_test(test_swa_storage_stays_one_window),
      cmocka_unit_test(test_swa_prefix_hit_cut_back),
      cmocka_unit_test(test_swa_typed_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
