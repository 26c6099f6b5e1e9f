/* nucleus serve: the load gauges routers and endpoint pickers read
 * (tools/server/load_gauges.c): fractions, the /get_load shape, and the
 * names of both sets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "load_gauges.h"

static load_view busy(void) {
  nucleus_engine_stats s;
  memset(&s, 0, sizeof s);
  s.queued = 3;
  s.running = 2;
  s.kv_blocks_used = 256;
  s.kv_blocks_free = 768;
  s.prefix_cache_queried_tokens_total = 0;
  s.prefix_cache_hit_tokens_total = 0;
  return load_view_of(&s, 16);
}

static void test_fractions(void **state) {
  (void)state;
  load_view v = busy();
  assert_true(load_kv_usage(&v) == 0.25);
  assert_true(load_prefix_hit_rate(&v) == 0.0); /* none looked up yet */
  v.prefix_queries = -1;
  assert_true(load_prefix_hit_rate(&v) < 0); /* no count kept */
  v.prefix_queries = 0;
  assert_true(load_prefix_hit_rate(&v) == 0.0);
  v.prefix_queries = 400;
  v.prefix_hits = 100;
  assert_true(load_prefix_hit_rate(&v) == 0.25);
  v.prefix_hits = 900; /* never above 1 */
  assert_true(load_prefix_hit_rate(&v) == 1.0);
  load_view empty = {.kv_block_tokens = 16};
  assert_true(load_kv_usage(&empty) == 0.0);
}

static void test_get_load_shape(void **state) {
  (void)state;
  load_view v = busy();
  json_t *j = load_get_load_json(&v);
  assert_non_null(j);
  assert_true(json_is_array(j));
  assert_int_equal(json_array_size(j), 1);
  json_t *o = json_array_get(j, 0);
  assert_int_equal(json_integer_value(json_object_get(o, "dp_rank")), 0);
  assert_int_equal(json_integer_value(json_object_get(o, "num_reqs")), 5);
  assert_int_equal(json_integer_value(json_object_get(o, "num_waiting_reqs")),
                   3);
  assert_int_equal(json_integer_value(json_object_get(o, "num_tokens")),
                   256 * 16);
  json_decref(j);
}

static void test_names(void **state) {
  (void)state;
  load_view v = busy();
  char *plain = load_gauges_render(&v, METRICS_NAMES_NUCLEUS, "m", 7);
  assert_non_null(plain);
  assert_non_null(strstr(plain, "\nnucleus_kv_cache_usage_ratio 0.25\n"));
  assert_null(strstr(plain, "vllm:"));
  assert_non_null(strstr(plain, "\nnucleus_prefix_cache_hit_rate 0\n"));
  free(plain);
  v.prefix_queries = -1; /* not counted: not shown */
  plain = load_gauges_render(&v, METRICS_NAMES_LLMD, "m", 7);
  assert_non_null(plain);
  assert_null(strstr(plain, "prefix_cache"));
  free(plain);
  v.prefix_queries = 10;
  v.prefix_hits = 5;
  char *llmd = load_gauges_render(&v, METRICS_NAMES_LLMD, "a\"b\\c\nd", 7);
  assert_non_null(llmd);
  assert_non_null(strstr(llmd, "\nnucleus_prefix_cache_hit_rate 0.5\n"));
  const char *label = "{model_name=\"a\\\"b\\\\c\\nd\"}";
  char want[160];
  snprintf(want, sizeof want, "\nvllm:num_requests_waiting%s 3\n", label);
  assert_non_null(strstr(llmd, want));
  snprintf(want, sizeof want, "\nvllm:num_requests_running%s 2\n", label);
  assert_non_null(strstr(llmd, want));
  snprintf(want, sizeof want, "\nvllm:kv_cache_usage_perc%s 0.25\n", label);
  assert_non_null(strstr(llmd, want));
  snprintf(want, sizeof want, "\nvllm:gpu_cache_usage_perc%s 0.25\n", label);
  assert_non_null(strstr(llmd, want));
  assert_non_null(
      strstr(llmd, "block_size=\"16\",num_gpu_blocks=\"1024\"} 1\n"));
  assert_non_null(strstr(llmd, "waiting_lora_adapters=\"\"} 7\n"));
  snprintf(want, sizeof want, "\nvllm:prefix_cache_hits_total%s 5\n", label);
  assert_non_null(strstr(llmd, want));
  snprintf(want, sizeof want, "\nvllm:prefix_cache_queries_total%s 10\n",
           label);
  assert_non_null(strstr(llmd, want));
  /* Every series has a TYPE line before it. */
  assert_non_null(strstr(llmd, "# TYPE vllm:num_requests_waiting gauge\n"));
  assert_non_null(
      strstr(llmd, "# TYPE vllm:prefix_cache_hits_total counter\n"));
  free(llmd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fractions),
      cmocka_unit_test(test_get_load_shape),
      cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
