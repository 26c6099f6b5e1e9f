/* batch: the orders nc_batch_add_prompt gives each row as llama.cpp would
 * (micro-batches of NC_LLAMA_UBATCH from position 0; flash attention's
 * tiled path from 64 rows, the K-quant matmuls' from 8), and the one order
 * nc_batch_add_reusable gives every row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/batch.h"

static void test_order_ends(void **state) {
  (void)state;
  assert_int_equal(nc_mm_prompt_order_end(0), 0);
  assert_int_equal(nc_mm_prompt_order_end(7), 0); /* one micro-batch of 7 */
  assert_int_equal(nc_mm_prompt_order_end(8), 8);
  assert_int_equal(nc_mm_prompt_order_end(512), 512);
  assert_int_equal(nc_mm_prompt_order_end(519), 512); /* a tail of 7 */
  assert_int_equal(nc_mm_prompt_order_end(520), 520);
  assert_int_equal(nc_flash_prompt_order_end(63), 0);
  assert_int_equal(nc_flash_prompt_order_end(64), 64);
  assert_int_equal(nc_flash_prompt_order_end(575), 512);
  assert_int_equal(nc_flash_prompt_order_end(576), 576);
}

/* Each row's bits: NC_MM_FEW below 8 rows in its micro-batch (generated
 * tokens too), NC_MM_OUT_FEW also for a prompt that wants only its last
 * row's logits; nc_batch_add: none (the tiled order). */
static void test_row_orders(void **state) {
  (void)state;
  nc_batch b;
  nc_error err;
  assert_int_equal(nc_batch_init(&b, 16, &err), NC_OK);
  /* a prompt of 519 tokens: positions 0..511 one micro-batch, 512..518 a
   * tail of 7; 519 generated */
  assert_true(nc_batch_add_prompt(&b, 1, 511, 0, NC_LOGITS_NONE, 519));
  assert_true(nc_batch_add_prompt(&b, 1, 512, 0, NC_LOGITS_NONE, 519));
  assert_true(nc_batch_add_prompt(&b, 1, 518, 0, NC_LOGITS_LAST, 519));
  assert_true(nc_batch_add_prompt(&b, 1, 519, 0, NC_LOGITS_LAST, 519));
  assert_int_equal(b.mm_order[0], NC_MM_OUT_FEW);
  assert_int_equal(b.mm_order[1], NC_MM_FEW | NC_MM_OUT_FEW);
  assert_int_equal(b.mm_order[2], NC_MM_FEW | NC_MM_OUT_FEW);
  assert_int_equal(b.mm_order[3], NC_MM_FEW | NC_MM_OUT_FEW);
  /* flash attention: the tiled order in the 512-row micro-batch, the row
   * order in the tail and for the generated token */
  assert_int_equal(b.prompt_order[0], NC_FLASH_TILED);
  assert_int_equal(b.prompt_order[1], NC_FLASH_ROW);
  assert_int_equal(b.prompt_order[3], NC_FLASH_ROW);
  assert_int_equal(b.want_logits[0] + b.want_logits[1], 0);
  assert_int_equal(b.want_logits[2] + b.want_logits[3], 2);
  /* every row's logits (teacher forcing, perplexity): the micro-batch's
   * rows with logits are all its rows */
  assert_true(nc_batch_add_prompt(&b, 1, 20, 1, NC_LOGITS_ALL, 100));
  assert_true(nc_batch_add_prompt(&b, 1, 3, 2, NC_LOGITS_ALL, 5));
  assert_int_equal(b.mm_order[4], 0);
  assert_int_equal(b.mm_order[5], NC_MM_FEW | NC_MM_OUT_FEW);
  assert_true(nc_batch_add(&b, 1, 200, 3, true));
  assert_int_equal(b.mm_order[6], 0);
  assert_int_equal(b.prompt_order[6], NC_FLASH_ROW);
  assert_int_equal(nc_batch_n_logits(&b), 5);
  nc_batch_free(&b);
}

/* The reuse orders: a long prompt's (flash attention's prompt order, the
 * tiled matmuls) for every row, a short prompt's, a long one's and a
 * generated token's alike, whatever the position; a row with logits as a
 * prompt's last (NC_MM_OUT_FEW, after the last layer's attention only). */
static void test_reusable_rows(void **state) {
  (void)state;
  nc_batch b;
  nc_error err;
  assert_int_equal(nc_batch_init(&b, 8, &err), NC_OK);
  const int32_t pos[] = {0, 5, 63, 64, 518, 519, 4095};
  for (int i = 0; i < 7; i++)
    assert_true(nc_batch_add_reusable(&b, 1, pos[i], i % 2, i % 3 == 0));
  for (int i = 0; i < 7; i++) {
    assert_int_equal(b.prompt_order[i], NC_FLASH_TILED);
    assert_int_equal(b.mm_order[i], NC_MM_OUT_FEW);
    assert_int_equal(b.want_logits[i], i % 3 == 0);
    assert_int_equal(b.pos[i], pos[i]);
  }
  assert_int_equal(nc_batch_n_logits(&b), 3);
  /* the same with flash attention's split order */
  assert_true(nc_batch_add_reusable_split(&b, 1, 7, 0, false));
  assert_int_equal(b.prompt_order[7], NC_FLASH_SPLIT);
  assert_int_equal(b.mm_order[7], NC_MM_OUT_FEW);
  assert_false(nc_batch_add_reusable(&b, 1, 8, 0, false)); /* full */
  assert_false(nc_batch_add_reusable_split(&b, 1, 8, 0, false));
  nc_batch_free(&b);
}

/* M-RoPE positions: a text row's (pos, pos, pos, 0) as llama.cpp's, an
 * image patch's set in place; a row outside the batch refused. */
static void test_rope_pos(void **state) {
  (void)state;
  nc_batch b;
  nc_error err;
  assert_int_equal(nc_batch_init(&b, 4, &err), NC_OK);
  assert_true(nc_batch_add(&b, 1, 9, 0, false));
  assert_true(nc_batch_add_prompt(&b, 2, 10, 0, NC_LOGITS_LAST, 11));
  const int32_t text0[4] = {9, 9, 9, 0}, text1[4] = {10, 10, 10, 0};
  assert_memory_equal(b.rope_pos, text0, sizeof text0);
  assert_memory_equal(b.rope_pos + 4, text1, sizeof text1);
  const int32_t patch[4] = {5, 2, 3, 0};
  assert_true(nc_batch_set_rope_pos(&b, 1, patch));
  assert_memory_equal(b.rope_pos + 4, patch, sizeof patch);
  assert_memory_equal(b.rope_pos, text0, sizeof text0);
  assert_int_equal(b.pos[1], 10); /* its KV place is unchanged */
  assert_false(nc_batch_set_rope_pos(&b, 2, patch));
  assert_false(nc_batch_set_rope_pos(&b, -1, patch));
  nc_batch_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_ends),
      cmocka_unit_test(test_row_orders),
      cmocka_unit_test(test_reusable_rows),
      cmocka_unit_test(test_rope_pos),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
