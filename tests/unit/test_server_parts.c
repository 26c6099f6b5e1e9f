/* nucleus serve: the parts that need no model: UTF-8 sanitizing for JSON,
 * the constant-time key compare, metrics text, option parsing, base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/auth.h"
#include "http/base64.h"
#include "http/json_text.h"
#include "metrics.h"
#include "server_config.h"

static void check_base64(const char *in, const char *want, size_t want_n) {
  uint8_t *out = NULL;
  size_t n = 0, bad = 99;
  assert_int_equal(base64_decode(in, strlen(in), &out, &n, &bad), 0);
  assert_int_equal(n, want_n);
  assert_memory_equal(out, want, want_n);
  free(out);
}

static void check_base64_bad(const char *in, size_t want_bad) {
  uint8_t *out = (uint8_t *)0x1;
  size_t n = 7, bad = 99;
  assert_int_equal(base64_decode(in, strlen(in), &out, &n, &bad), -1);
  assert_null(out);
  assert_int_equal(n, 0);
  assert_int_equal(bad, want_bad);
}

static void test_base64_decode(void **state) {
  (void)state;
  /* RFC 4648's vectors, padded and not */
  check_base64("", "", 0);
  check_base64("Zg==", "f", 1);
  check_base64("Zg", "f", 1);
  check_base64("Zm8=", "fo", 2);
  check_base64("Zm8", "fo", 2);
  check_base64("Zm9v", "foo", 3);
  check_base64("Zm9vYmFy", "foobar", 6);
  check_base64("+/+/", "\xfb\xff\xbf", 3);
  check_base64("AAEC/w==", "\x00\x01\x02\xff", 4);
  /* the offset of the first character that is not base64 */
  check_base64_bad("Zm9v YmFy", 4);
  check_base64_bad("Zm9vYmF*", 7);
  check_base64_bad("Zg=A", 2);  /* padding inside */
  check_base64_bad("Zg=", 2);   /* padding of a cut block */
  check_base64_bad("Z===", 1);  /* at most two pads */
  check_base64_bad("Zm9vY", 5); /* 6 bits left: no encoding ends so */
  /* encoding: padded; every length of bytes 0..255 comes back */
  uint8_t all[256];
  for (int i = 0; i < 256; i++)
    all[i] = (uint8_t)(255 - i);
  size_t len = 0;
  char *s = base64_encode((const uint8_t *)"fo", 2, &len);
  assert_string_equal(s, "Zm8=");
  assert_int_equal(len, 4);
  free(s);
  for (size_t n = 0; n <= sizeof all; n++) {
    s = base64_encode(all, n, &len);
    assert_int_equal(len, (n + 2) / 3 * 4);
    uint8_t *back = NULL;
    size_t m = 0, bad = 0;
    assert_int_equal(base64_decode(s, len, &back, &m, &bad), 0);
    assert_int_equal(m, n);
    if (n) assert_memory_equal(back, all, n);
    free(back);
    free(s);
  }
}

static void check_text(const char *in, size_t n, const char *want) {
  json_t *j = json_text(in, n);
  assert_non_null(j);
  assert_int_equal(json_string_length(j), strlen(want));
  assert_memory_equal(json_string_value(j), want, strlen(want));
  json_decref(j);
}

static void test_json_text_sanitizes(void **state) {
  (void)state;
  check_text("hello", 5, "hello");
  check_text("caf\xc3\xa9", 5, "caf\xc3\xa9");
  check_text("\xe2\x82", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"); /* cut sequence */
  check_text("a\xffz", 3, "a\xEF\xBF\xBDz");
  check_text("\xc0\xaf", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"); /* overlong */
  check_text("\xed\xa0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  check_text("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80");
  check_text("", 0, "");
}

static void test_json_finite(void **state) {
  (void)state;
  json_t *j = json_finite(-1.0 / 0.0);
  assert_non_null(j);
  assert_true(json_real_value(j) == -9999.0);
  json_decref(j);
  j = json_finite(-0.25);
  assert_true(json_real_value(j) == -0.25);
  json_decref(j);
}

static void test_auth_equal(void **state) {
  (void)state;
  assert_true(auth_equal("secret", 6, "secret"));
  assert_false(auth_equal("secre", 5, "secret"));
  assert_false(auth_equal("secret1", 7, "secret"));
  assert_false(auth_equal("Secret", 6, "secret"));
  assert_false(auth_equal("", 0, "secret"));
}

static void test_metrics_render(void **state) {
  (void)state;
  metrics *m = metrics_create();
  assert_non_null(m);
  metrics_count_response(m, 200);
  metrics_count_response(m, 200);
  metrics_count_response(m, 400);
  metrics_count_response(m, 9999); /* ignored, no crash */
  metrics_add_tokens(m, 10, 3);
  metrics_observe_ttft(m, 0.2);
  metrics_observe_itl(m, 0.004);
  metrics_observe_itl(m, 100.0);
  nucleus_engine_stats st = {
      .queued = 2, .kv_blocks_used = 5, .kv_blocks_free = 27};
  char *text = metrics_render(m, &st, 1);
  assert_non_null(text);
  assert_non_null(strstr(text, "nucleus_requests_total{status=\"200\"} 2\n"));
  assert_non_null(strstr(text, "nucleus_requests_total{status=\"400\"} 1\n"));
  assert_non_null(strstr(text, "\nnucleus_prompt_tokens_total 10\n"));
  assert_non_null(strstr(text, "\nnucleus_generation_tokens_total 3\n"));
  assert_non_null(strstr(text, "\nnucleus_queue_length 2\n"));
  assert_non_null(strstr(text, "\nnucleus_kv_blocks_used 5\n"));
  assert_non_null(strstr(text, "\nnucleus_kv_blocks_free 27\n"));
  assert_non_null(strstr(
      text, "nucleus_time_to_first_token_seconds_bucket{le=\"0.1\"} 0\n"));
  assert_non_null(strstr(
      text, "nucleus_time_to_first_token_seconds_bucket{le=\"0.25\"} 1\n"));
  assert_non_null(strstr(
      text, "nucleus_inter_token_latency_seconds_bucket{le=\"0.005\"} 1\n"));
  assert_non_null(strstr(
      text, "nucleus_inter_token_latency_seconds_bucket{le=\"2.5\"} 1\n"));
  assert_non_null(strstr(
      text, "nucleus_inter_token_latency_seconds_bucket{le=\"+Inf\"} 2\n"));
  assert_non_null(
      strstr(text, "nucleus_inter_token_latency_seconds_count 2\n"));
  free(text);
  metrics_destroy(m);
}

static void test_config_defaults_and_options(void **state) {
  (void)state;
  server_config cfg;
  char msg[256];
  char *none[] = {"serve"};
  assert_int_equal(server_config_parse(1, none, &cfg, msg, sizeof msg), 0);
  assert_string_equal(cfg.host, "127.0.0.1");
  assert_int_equal(cfg.port, 8080);
  assert_int_equal(cfg.max_body_bytes, 8u * 1024 * 1024);
  assert_false(cfg.model.no_repack);
  char *plain[] = {"serve", "--no-repack", "--port", "9001"};
  assert_int_equal(server_config_parse(4, plain, &cfg, msg, sizeof msg), 0);
  assert_true(cfg.model.no_repack);
  assert_int_equal(cfg.port, 9001);
  char *args[] = {"serve", "-m",          "x.gguf", "--port",
                  "9000",  "--parallel",  "4",      "--api-key",
                  "k",     "--kv-tokens", "4096"};
  assert_int_equal(server_config_parse(11, args, &cfg, msg, sizeof msg), 0);
  assert_string_equal(cfg.model_path, "x.gguf");
  assert_int_equal(cfg.port, 9000);
  assert_int_equal(cfg.engine.max_running, 4);
  assert_string_equal(cfg.api_key, "k");
  assert_int_equal(cfg.engine.kv_cache_tokens, 4096);
  char *bad_port[] = {"serve", "--port", "70000"};
  assert_int_equal(server_config_parse(3, bad_port, &cfg, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "--port"));
  char *missing[] = {"serve", "--port"};
  assert_int_equal(server_config_parse(2, missing, &cfg, msg, sizeof msg), -1);
  char *unknown[] = {"serve", "--frobnicate"};
  assert_int_equal(server_config_parse(2, unknown, &cfg, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "--frobnicate"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_text_sanitizes),
      cmocka_unit_test(test_json_finite),
      cmocka_unit_test(test_auth_equal),
      cmocka_unit_test(test_base64_decode),
      cmocka_unit_test(test_metrics_render),
      cmocka_unit_test(test_config_defaults_and_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
