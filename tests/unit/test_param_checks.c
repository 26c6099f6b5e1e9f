/* The boundary checks of the public API: the model-option table (every
 * option parsed and checked by one row, one message per kind of failure,
 * the defaults a --help shows), the engine-option table likewise, and the
 * structured request parameters' checks and setters (stop strings, logit
 * bias, stop token ids, the cache salt, n with beam search). No model
 * needed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "nucleus.h"

static const nucleus_option_info *opt(const char *name) {
  const nucleus_option_info *o = nucleus_model_options_find(name);
  assert_non_null(o);
  return o;
}

/* Sets name from text and expects the failure message exactly. */
static void refused(const char *name, const char *text, const char *msg) {
  nucleus_model_params p = nucleus_model_default_params();
  nucleus_error err = {0};
  assert_int_equal(nucleus_model_params_set(&p, opt(name), text, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, msg);
}

static void table_finds_by_name_flag_and_alias(void **state) {
  (void)state;
  assert_ptr_equal(opt("flash_attn"), opt("--flash-attn"));
  assert_ptr_equal(opt("flash_attn"), opt("-fa"));
  assert_ptr_equal(opt("cache_type_v"), opt("-ctv"));
  assert_null(nucleus_model_options_find("--flash"));
  assert_null(nucleus_model_options_find(NULL));
  assert_null(nucleus_model_options_at(nucleus_model_options_count()));
  /* every row names a field, a flag and a help line */
  for (size_t i = 0; i < nucleus_model_options_count(); i++) {
    const nucleus_option_info *o = nucleus_model_options_at(i);
    assert_non_null(o->name);
    assert_true(o->cli_flag && o->cli_flag[0] == '-');
    assert_true(o->help && o->help[0]);
    assert_true((o->kind == NUCLEUS_OPTION_FLAG) == (o->metavar == NULL));
    if (o->kind == NUCLEUS_OPTION_CHOICE) assert_non_null(o->choices);
  }
}

static void options_parse_into_the_params(void **state) {
  (void)state;
  nucleus_model_params p = nucleus_model_default_params();
  nucleus_error err = {0};
  assert_int_equal(nucleus_model_params_set(&p, opt("-fa"), "off", &err),
                   NUCLEUS_OK);
  assert_int_equal(p.flash_attn, NUCLEUS_FLASH_ATTN_OFF);
  assert_int_equal(nucleus_model_params_set(&p, opt("-ctk"), "q8_0", &err),
                   NUCLEUS_OK);
  assert_int_equal(p.cache_type_k, NUCLEUS_CACHE_Q8_0);
  assert_int_equal(
      nucleus_model_params_set(&p, opt("--load-mode"), "mmap", &err),
      NUCLEUS_OK);
  assert_int_equal(p.load_mode, NUCLEUS_LOAD_MMAP);
  assert_int_equal(
      nucleus_model_params_set(&p, opt("--rope-scaling"), "yarn", &err),
      NUCLEUS_OK);
  assert_string_equal(p.rope_scaling, "yarn");
  assert_int_equal(
      nucleus_model_params_set(&p, opt("--rope-freq-base"), "500000", &err),
      NUCLEUS_OK);
  assert_float_equal(p.rope_freq_base, 500000.0f, 0);
  assert_int_equal(nucleus_model_params_set(&p, opt("-t"), "3", &err),
                   NUCLEUS_OK);
  assert_int_equal(p.n_threads, 3);
  assert_int_equal(
      nucleus_model_params_set(&p, opt("--reference-kernels"), NULL, &err),
      NUCLEUS_OK);
  assert_true(p.reference_kernels);
  assert_int_equal(nucleus_model_params_validate(&p, &err), NUCLEUS_OK);
  /* the enum parsers read the same names */
  nucleus_cache_type t;
  assert_true(nucleus_cache_type_parse("q4_0", &t));
  assert_int_equal(t, NUCLEUS_CACHE_Q4_0);
  assert_false(nucleus_cache_type_parse("q4_1", &t));
  assert_string_equal(nucleus_cache_type_name(NUCLEUS_CACHE_BF16), "bf16");
  assert_string_equal(nucleus_load_mode_name((nucleus_load_mode)9), "?");
}

static void one_message_per_failure(void **state) {
  (void)state;
  refused("-fa", "maybe", "'flash_attn' must be auto, on or off, got 'maybe'");
  refused("-ctv", "q9",
          "'cache_type_v' must be f16, bf16, q8_0 or q4_0, got 'q9'");
  refused("--rope-scaling", "ntk",
          "'rope_scaling' must be none, linear or yarn, got 'ntk'");
  refused("-t", "2000",
          "'n_threads' must be an integer in [0, 1024], got '2000'");
  refused("-t", "1.5",
          "'n_threads' must be an integer in [0, 1024], got '1.5'");
  refused("--rope-freq-base", "-1",
          "'rope_freq_base' must be a number in [0, 1e+12], got '-1'");
  refused("--rope-scale", "nan",
          "'rope_scale' must be a number in [0, 1e+06], got 'nan'");
  refused("-fa", NULL, "'flash_attn' must be auto, on or off, got nothing");
  /* the same rows check a struct: the library's own boundary */
  nucleus_model_params p = nucleus_model_default_params();
  nucleus_error err = {0};
  p.flash_attn = (nucleus_flash_attn)5;
  assert_int_equal(nucleus_model_params_validate(&p, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "'flash_attn' must be auto, on or off, got 5");
  p = nucleus_model_default_params();
  p.yarn_orig_ctx = -4;
  assert_int_equal(nucleus_model_params_validate(&p, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "'yarn_orig_ctx' must be an integer in [0, 2147483647], "
                      "got -4");
  nucleus_model *m = (nucleus_model *)1;
  assert_int_equal(nucleus_model_load("/nonexistent.gguf", &p, &m, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_null(m);
}

static void defaults_are_the_librarys(void **state) {
  (void)state;
  const nucleus_model_params d = nucleus_model_default_params();
  char buf[48];
  nucleus_model_params_format(&d, opt("-fa"), buf, sizeof buf);
  assert_string_equal(buf, "auto (on)"); /* auto is on, as the load does */
  nucleus_model_params_format(&d, opt("-ctk"), buf, sizeof buf);
  assert_string_equal(buf, "f16");
  nucleus_model_params_format(&d, opt("--rope-scaling"), buf, sizeof buf);
  assert_string_equal(buf, "the file's");
  nucleus_model_params_format(&d, opt("--rope-freq-base"), buf, sizeof buf);
  assert_string_equal(buf, "0 (the file's)");
  nucleus_model_params_format(&d, opt("--load-mode"), buf, sizeof buf);
  assert_string_equal(buf, "auto");
  nucleus_model_params_format(&d, opt("-t"), buf, sizeof buf);
  assert_string_equal(buf, "0 (all cores)");
}

static void stop_strings_one_check(void **state) {
  (void)state;
  nucleus_error err = {0};
  assert_int_equal(nucleus_stop_string_check(0, "ab", 2, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_stop_string_check(2, "", 0, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(
      err.message, "stop[2]: 0 bytes; each stop string must be 1 to 512 bytes");
  assert_int_equal(nucleus_stop_string_check(16, "a", 1, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "stop: at most 16 stop strings are allowed");
  /* the setter: the same messages, and p untouched on failure */
  nucleus_request_params p = nucleus_request_default_params();
  const char *good[] = {"\n", "END"};
  assert_int_equal(nucleus_request_params_set_stop(&p, good, 2, &err),
                   NUCLEUS_OK);
  assert_ptr_equal(p.stop, good);
  assert_int_equal(p.n_stop, 2);
  const char *bad[] = {"x", ""};
  assert_int_equal(nucleus_request_params_set_stop(&p, bad, 2, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(
      err.message, "stop[1]: 0 bytes; each stop string must be 1 to 512 bytes");
  assert_ptr_equal(p.stop, good);
}

static void logit_bias_one_check(void **state) {
  (void)state;
  nucleus_error err = {0};
  nucleus_logit_bias b = {7, -100.0f};
  assert_int_equal(nucleus_logit_bias_check(0, b, 10, &err), NUCLEUS_OK);
  b.token = 10;
  assert_int_equal(nucleus_logit_bias_check(1, b, 10, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "logit_bias[1]: token 10 is not a token "
                                   "id: allowed range [0, 9]");
  assert_int_equal(nucleus_logit_bias_check(1, b, 0, &err), NUCLEUS_OK);
  b = (nucleus_logit_bias){3, 100.5f};
  assert_int_equal(nucleus_logit_bias_check(0, b, 10, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "logit_bias[0] (token 3): bias 100.5 must "
                                   "be a number in [-100, 100]");
  b.bias = NAN;
  assert_int_equal(nucleus_logit_bias_check(0, b, 10, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  b.bias = 1.0f;
  assert_int_equal(
      nucleus_logit_bias_check(NUCLEUS_MAX_LOGIT_BIAS, b, 10, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "logit_bias: at most 1024 entries are allowed");
  nucleus_request_params p = nucleus_request_default_params();
  const nucleus_logit_bias set[2] = {{1, 5.0f}, {2, -5.0f}};
  assert_int_equal(
      nucleus_request_params_set_logit_bias(&p, NULL, set, 2, &err),
      NUCLEUS_OK);
  assert_ptr_equal(p.sampling.logit_bias, set);
  assert_int_equal(p.sampling.n_logit_bias, 2);
}

static void sampling_defaults_are_the_contracts(void **state) {
  (void)state;
  nucleus_sampling_params s = nucleus_sampling_default_params();
  nucleus_request_params r = nucleus_request_default_params();
  for (size_t i = 0; i < nucleus_params_count(); i++) {
    const nucleus_param_info *info = nucleus_params_at(i);
    assert_true(nucleus_params_value(&r, info->name) == info->defaults[0]);
  }
  assert_true(memcmp(&s, &r.sampling, sizeof s) == 0);
}

static const nucleus_option_info *eopt(const char *name) {
  const nucleus_option_info *o = nucleus_engine_options_find(name);
  assert_non_null(o);
  return o;
}

static void engine_refused(const char *name, const char *text,
                           const char *msg) {
  nucleus_engine_params p = nucleus_engine_default_params();
  nucleus_error err = {0};
  assert_int_equal(nucleus_engine_params_set(&p, eopt(name), text, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, msg);
}

static void engine_options_one_table(void **state) {
  (void)state;
  /* both spellings of the context, on every surface */
  assert_ptr_equal(eopt("n_ctx"), eopt("-c"));
  assert_ptr_equal(eopt("n_ctx"), eopt("--ctx-size"));
  assert_ptr_equal(eopt("n_ctx"), eopt("--ctx"));
  assert_string_equal(nucleus_option_other_spelling(eopt("-c")), "--ctx");
  assert_null(nucleus_option_other_spelling(eopt("--parallel")));
  assert_ptr_equal(eopt("max_running"), eopt("-np"));
  assert_null(nucleus_engine_options_find("--flash-attn"));
  assert_null(nucleus_engine_options_at(nucleus_engine_options_count()));
  for (size_t i = 0; i < nucleus_engine_options_count(); i++) {
    const nucleus_option_info *o = nucleus_engine_options_at(i);
    assert_true(o->cli_flag && o->cli_flag[0] == '-');
    assert_true(o->help && o->help[0]);
    assert_true((o->kind == NUCLEUS_OPTION_FLAG) == (o->metavar == NULL));
    /* no flag of both tables */
    assert_null(nucleus_model_options_find(o->cli_flag));
  }
  nucleus_engine_params p = nucleus_engine_default_params();
  nucleus_error err = {0};
  assert_int_equal(nucleus_engine_params_set(&p, eopt("--ctx"), "512", &err),
                   NUCLEUS_OK);
  assert_int_equal(p.n_ctx, 512);
  assert_int_equal(
      nucleus_engine_params_set(&p, eopt("--kv-tokens"), "100000", &err),
      NUCLEUS_OK);
  assert_int_equal(p.kv_cache_tokens, 100000);
  assert_int_equal(
      nucleus_engine_params_set(&p, eopt("--no-prefix-cache"), NULL, &err),
      NUCLEUS_OK);
  assert_true(p.no_prefix_cache);
  assert_int_equal(nucleus_engine_params_validate(NULL, &p, &err), NUCLEUS_OK);
  /* one message per failure */
  engine_refused("-c", "-1",
                 "'n_ctx' must be an integer in [0, 16777216], got '-1'");
  engine_refused("--parallel", "0",
                 "'max_running' must be an integer in [1, 4096], got '0'");
  engine_refused("--batch-tokens", "1.5",
                 "'max_batch_tokens' must be an integer in [1, 65536], got "
                 "'1.5'");
  engine_refused("--swa-full", "maybe",
                 "'swa_full' must be true or false, got 'maybe'");
  /* the speculative verify row cost: 0 (measured) to 4 decode steps */
  assert_int_equal(
      nucleus_engine_params_set(&p, eopt("--spec-row-cost"), "0.25", &err),
      NUCLEUS_OK);
  assert_true(p.spec_row_cost == 0.25f);
  engine_refused("--spec-row-cost", "5",
                 "'spec_row_cost' must be a number in [0, 4], got '5'");
  engine_refused("--spec-row-cost", "nan",
                 "'spec_row_cost' must be a number in [0, 4], got 'nan'");
  /* the decode stall bound: 0 (the default, 2) to 1000 decode steps */
  assert_int_equal(
      nucleus_engine_params_set(&p, eopt("--decode-stall"), "2.5", &err),
      NUCLEUS_OK);
  assert_true(p.decode_stall == 2.5f);
  engine_refused("--decode-stall", "-1",
                 "'decode_stall' must be a number in [0, 1000], got '-1'");
  engine_refused("--decode-stall", "inf",
                 "'decode_stall' must be a number in [0, 1000], got 'inf'");
  engine_refused("--state-snapshots", "-1",
                 "'state_snapshots' must be an integer in [0, 65536], got "
                 "'-1'");
  assert_int_equal(
      nucleus_engine_params_set(&p, eopt("--state-snapshots"), "3", &err),
      NUCLEUS_OK);
  assert_int_equal(p.state_snapshots, 3);
  /* validate: the same messages for a struct set by hand; 0 is the
   * default of the counts */
  p = nucleus_engine_default_params();
  p.max_running = 0;
  assert_int_equal(nucleus_engine_params_validate(NULL, &p, &err), NUCLEUS_OK);
  p.kv_block_tokens = 2000;
  assert_int_equal(nucleus_engine_params_validate(NULL, &p, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "'kv_block_tokens' must be an integer in "
                                   "[1, 1024], got 2000");
  p = nucleus_engine_default_params();
  p.spec_row_cost = -0.5f;
  assert_int_equal(nucleus_engine_params_validate(NULL, &p, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "'spec_row_cost' must be a number in [0, 4], got -0.5");
  p = nucleus_engine_default_params();
  p.kv_cache_tokens = -5;
  assert_int_equal(nucleus_engine_params_validate(NULL, &p, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "'kv_cache_tokens' must be an integer in "
                                   "[0, 1073741824], got -5");
}

static void engine_defaults_are_the_librarys(void **state) {
  (void)state;
  const nucleus_engine_params d = nucleus_engine_default_params();
  char buf[64];
  nucleus_engine_params_format(&d, eopt("-c"), buf, sizeof buf);
  assert_string_equal(buf, "0 (the model's, at most 8192)");
  nucleus_engine_params_format(&d, eopt("--parallel"), buf, sizeof buf);
  assert_string_equal(buf, "64");
  nucleus_engine_params_format(&d, eopt("--batch-tokens"), buf, sizeof buf);
  assert_string_equal(buf, "512");
  nucleus_engine_params_format(&d, eopt("--max-queue"), buf, sizeof buf);
  assert_string_equal(buf, "256");
  nucleus_engine_params_format(&d, eopt("--kv-block-tokens"), buf, sizeof buf);
  assert_string_equal(buf, "16");
  nucleus_engine_params_format(&d, eopt("--swa-full"), buf, sizeof buf);
  assert_string_equal(buf, "off");
}

static void stop_token_ids_one_check(void **state) {
  (void)state;
  nucleus_error err = {0};
  assert_int_equal(nucleus_stop_token_id_check(0, 9, 10, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_stop_token_id_check(3, 10, 10, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "stop_token_ids[3]: token 10 is not a "
                                   "token id: allowed range [0, 9]");
  assert_int_equal(nucleus_stop_token_id_check(0, 10, 0, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_stop_token_id_check(0, -1, 0, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_int_equal(
      nucleus_stop_token_id_check(NUCLEUS_MAX_STOP_TOKEN_IDS, 1, 10, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "stop_token_ids: at most 64 token ids are allowed");
  nucleus_request_params p = nucleus_request_default_params();
  const int32_t ids[2] = {1, 2};
  assert_int_equal(
      nucleus_request_params_set_stop_token_ids(&p, NULL, ids, 2, &err),
      NUCLEUS_OK);
  assert_ptr_equal(p.stop_token_ids, ids);
  assert_int_equal(p.n_stop_token_ids, 2);
  const int32_t bad[1] = {-3};
  assert_int_equal(
      nucleus_request_params_set_stop_token_ids(&p, NULL, bad, 1, &err),
      NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_ptr_equal(p.stop_token_ids, ids);
}

static void cache_salt_and_beam_one_check(void **state) {
  (void)state;
  nucleus_error err = {0};
  char big[300];
  memset(big, 'a', sizeof big);
  assert_int_equal(nucleus_cache_salt_check("tenant", 6, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_cache_salt_check(big, 256, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_cache_salt_check(big, 257, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "cache_salt: 257 bytes; at most 256 are allowed");
  assert_int_equal(nucleus_cache_salt_check("a\0b", 3, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "cache_salt: must not contain NUL bytes");
  assert_int_equal(nucleus_beam_check(4, 1, &err), NUCLEUS_OK); /* no beams */
  assert_int_equal(nucleus_beam_check(2, 2, &err), NUCLEUS_OK);
  assert_int_equal(nucleus_beam_check(3, 2, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message, "'n' (3) must not exceed beam_width (2): "
                                   "beam search returns the best n of its "
                                   "beams");
  /* inspect's top_n and top_logprobs are contract rows */
  nucleus_request_params p = nucleus_request_default_params();
  assert_int_equal(nucleus_params_set(&p, "inspect_top_n", 65, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "'inspect_top_n' must be an integer in [0, 64], got 65");
  assert_int_equal(nucleus_params_set(&p, "top_logprobs", 21, &err),
                   NUCLEUS_ERR_INVALID_ARGUMENT);
  assert_string_equal(err.message,
                      "'top_logprobs' must be an integer in [0, 20], got 21");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(table_finds_by_name_flag_and_alias),
      cmocka_unit_test(options_parse_into_the_params),
      cmocka_unit_test(one_message_per_failure),
      cmocka_unit_test(defaults_are_the_librarys),
      cmocka_unit_test(stop_strings_one_check),
      cmocka_unit_test(logit_bias_one_check),
      cmocka_unit_test(sampling_defaults_are_the_contracts),
      cmocka_unit_test(engine_options_one_table),
      cmocka_unit_test(engine_defaults_are_the_librarys),
      cmocka_unit_test(stop_token_ids_one_check),
      cmocka_unit_test(cache_salt_and_beam_one_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
