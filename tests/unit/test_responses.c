/* nucleus serve: the Responses API's parts that need no model: the bounded
 * LRU store, the translation of a body into the chat job's body (input
 * items, tools, tool_choice, text.format, the fields refused), and the
 * output items and final object read from a chat completion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "openai/responses_output.h"
#include "openai/responses_request.h"
#include "openai/responses_store.h"

static json_t *parse(const char *text) {
  json_t *v = json_loads(text, 0, NULL);
  assert_non_null(v);
  return v;
}

static bool stored(responses_store *s, const char *id) {
  return responses_store_get(s, id, NULL, NULL);
}

static void test_store_evicts_least_recently_used(void **state) {
  (void)state;
  responses_store *s = responses_store_create(2, 1 << 20);
  json_t *resp = parse("{\"id\": \"a\"}");
  json_t *msgs = parse("[{\"role\": \"user\", \"content\": \"hi\"}]");
  assert_true(responses_store_put(s, "resp_a", resp, msgs));
  assert_true(responses_store_put(s, "resp_b", resp, msgs));
  assert_true(stored(s, "resp_a")); /* a is now the most recent */
  assert_true(responses_store_put(s, "resp_c", resp, msgs));
  assert_false(stored(s, "resp_b"));
  assert_true(stored(s, "resp_a"));
  assert_true(stored(s, "resp_c"));
  /* the same id again replaces, it does not evict */
  assert_true(responses_store_put(s, "resp_c", resp, msgs));
  assert_true(stored(s, "resp_a"));
  size_t count, bytes, max_count, max_bytes;
  responses_store_usage(s, &count, &bytes, &max_count, &max_bytes);
  assert_int_equal(count, 2);
  assert_int_equal(max_count, 2);
  assert_int_equal(max_bytes, 1 << 20);
  json_t *got_resp = NULL, *got_msgs = NULL;
  assert_true(responses_store_get(s, "resp_a", &got_resp, &got_msgs));
  assert_true(json_equal(got_resp, resp));
  assert_true(json_equal(got_msgs, msgs));
  json_decref(got_resp);
  json_decref(got_msgs);
  assert_true(responses_store_delete(s, "resp_a"));
  assert_false(responses_store_delete(s, "resp_a"));
  assert_false(stored(s, "resp_a"));
  responses_store_usage(s, &count, &bytes, &max_count, &max_bytes);
  assert_int_equal(count, 1);
  json_decref(resp);
  json_decref(msgs);
  responses_store_destroy(s);
}

static void test_store_byte_limit(void **state) {
  (void)state;
  responses_store *s = responses_store_create(100, 600);
  json_t *small = parse("{\"t\": \"x\"}");
  char big_text[1024];
  memset(big_text, 'y', sizeof big_text - 1);
  big_text[sizeof big_text - 1] = '\0';
  json_t *big = json_pack("{s:s}", "t", big_text);
  json_t *none = json_array();
  assert_false(responses_store_put(s, "resp_big", big, none));
  assert_false(stored(s, "resp_big"));
  /* entries until the bytes are spent: the oldest go */
  char id[32];
  for (int i = 0; i < 20; i++) {
    snprintf(id, sizeof id, "resp_%d", i);
    assert_true(responses_store_put(s, id, small, none));
  }
  size_t count, bytes, max_count, max_bytes;
  responses_store_usage(s, &count, &bytes, &max_count, &max_bytes);
  assert_true(bytes <= 600);
  assert_true(count > 1 && count < 20);
  assert_true(stored(s, "resp_19"));
  assert_false(stored(s, "resp_0"));
  responses_store_destroy(s);
  /* a store of 0 responses keeps none */
  s = responses_store_create(0, 600);
  assert_false(responses_store_put(s, "resp_x", small, none));
  responses_store_destroy(s);
  json_decref(small);
  json_decref(big);
  json_decref(none);
}

static void test_input_items_to_messages(void **state) {
  (void)state;
  json_t *input = parse(
      "[{\"role\": \"user\", \"content\": [{\"type\": \"input_text\", "
      "\"text\": \"a\"}, {\"type\": \"input_text\", \"text\": \"b\"}]},"
      " {\"type\": \"reasoning\", \"id\": \"rs_1\", \"summary\": [],"
      "  \"content\": [{\"type\": \"reasoning_text\", \"text\": \"hmm\"}]},"
      " {\"type\": \"message\", \"role\": \"assistant\", \"id\": \"m\","
      "  \"status\": \"completed\", \"content\": [{\"type\": \"output_text\","
      "  \"text\": \"Let me look.\", \"annotations\": []}]},"
      " {\"type\": \"function_call\", \"call_id\": \"call_1\", \"name\": "
      "\"f\", \"arguments\": \"{}\"},"
      " {\"type\": \"function_call_output\", \"call_id\": \"call_1\", "
      "\"output\": \"42\"}]");
  /* a replayed output part's annotations are output data: accepted */
  api_error e;
  image_list no_images = {0}; /* the input has none */
  json_t *msgs = json_array();
  assert_int_equal(responses_input_append(input, msgs, &no_images, &e), 0);
  json_t *want = parse(
      "[{\"role\": \"user\", \"content\": \"a\\nb\"},"
      " {\"role\": \"assistant\", \"content\": \"Let me look.\","
      "  \"reasoning_content\": \"hmm\", \"tool_calls\": [{\"id\": "
      "\"call_1\", \"type\": \"function\", \"function\": {\"name\": \"f\", "
      "\"arguments\": \"{}\"}}]},"
      " {\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"content\": "
      "\"42\"}]");
  assert_true(json_equal(msgs, want));
  json_decref(want);
  json_decref(msgs);
  json_decref(input);
}

static void test_input_errors_name_the_item(void **state) {
  (void)state;
  image_list no_images = {0}; /* the inputs decode none */
  const char *bad[] = {
      "[{\"type\": \"function_call_output\", \"call_id\": \"x\", \"output\": "
      "\"o\"}]",
      "[{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"user\", "
      "\"content\": [{\"type\": \"input_image\", \"image_url\": \"u\"}]}]",
      "[{\"role\": \"user\", \"content\": \"a\"}, {\"type\": "
      "\"item_reference\", \"id\": \"x\"}]",
      "[{\"role\": \"robot\", \"content\": \"a\"}]",
      "[{\"role\": \"user\", \"content\": \"a\", \"name\": \"n\"}]",
      "[{\"type\": \"function_call\", \"call_id\": \"\", \"name\": \"f\", "
      "\"arguments\": \"{}\"}]",
      "[{\"type\": \"reasoning\", \"encrypted_content\": \"zz\"}]",
  };
  const char *param[] = {"input[0]", "input[1]", "input[1]", "input[0]",
                         "input[0]", "input[0]", "input[0]"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *input = parse(bad[i]);
    json_t *msgs = json_array();
    api_error e;
    assert_int_equal(responses_input_append(input, msgs, &no_images, &e), -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.param, param[i]);
    json_decref(msgs);
    json_decref(input);
  }
  /* a string is one user message */
  json_t *input = json_string("hi");
  json_t *msgs = json_array();
  api_error e;
  assert_int_equal(responses_input_append(input, msgs, &no_images, &e), 0);
  json_t *want = parse("[{\"role\": \"user\", \"content\": \"hi\"}]");
  assert_true(json_equal(msgs, want));
  json_decref(want);
  json_decref(msgs);
  json_decref(input);
}

/* A server context with only what the parser reads. */
static server_ctx test_srv(responses_store *store) {
  static const server_config cfg = {.host = "127.0.0.1"};
  server_ctx srv;
  memset(&srv, 0, sizeof srv);
  srv.cfg = &cfg;
  snprintf(srv.model_id, sizeof srv.model_id, "model.gguf");
  srv.defaults = nucleus_request_default_params();
  srv.responses = store;
  return srv;
}

static void test_request_to_chat_body(void **state) {
  (void)state;
  responses_store *store = responses_store_create(4, 1 << 20);
  json_t *prev_msgs = parse(
      "[{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"assistant\", "
      "\"content\": \"a\"}]");
  json_t *prev_resp = parse("{}");
  assert_true(responses_store_put(store, "resp_prev", prev_resp, prev_msgs));
  server_ctx srv = test_srv(store);
  json_t *body = parse(
      "{\"model\": \"m\", \"instructions\": \"Be brief.\", \"input\": "
      "\"more\", \"previous_response_id\": \"resp_prev\", "
      "\"max_output_tokens\": 7, \"temperature\": 0.5, \"tools\": "
      "[{\"type\": \"function\", \"name\": \"f\", \"parameters\": {\"type\": "
      "\"object\"}, \"strict\": true}], \"tool_choice\": {\"type\": "
      "\"function\", \"name\": \"f\"}, \"parallel_tool_calls\": false, "
      "\"text\": {\"format\": {\"type\": \"json_schema\", \"name\": \"s\", "
      "\"schema\": {\"type\": \"object\"}, \"strict\": true}}, "
      "\"metadata\": {\"k\": \"v\"}, \"store\": false, \"user\": \"u\"}");
  responses_req r;
  api_error e;
  assert_int_equal(responses_request_parse(&srv, body, &r, &e), 0);
  json_t *want = parse(
      "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
      "{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"assistant\", "
      "\"content\": \"a\"}, {\"role\": \"user\", \"content\": \"more\"}], "
      "\"model\": \"m\", \"temperature\": 0.5, \"max_completion_tokens\": 7, "
      "\"parallel_tool_calls\": false, \"tools\": [{\"type\": \"function\", "
      "\"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
      "\"object\"}, \"strict\": true}}], \"tool_choice\": {\"type\": "
      "\"function\", \"function\": {\"name\": \"f\"}}, \"response_format\": "
      "{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"s\", "
      "\"schema\": {\"type\": \"object\"}, \"strict\": true}}}");
  assert_true(json_equal(r.chat, want));
  /* the conversation a follow-up continues has no instructions */
  assert_int_equal(json_array_size(r.conversation), 3);
  assert_false(r.store);
  assert_false(r.stream);
  assert_memory_equal(r.id, "resp_", 5);
  const json_t *sk = r.skeleton;
  assert_string_equal(json_string_value(json_object_get(sk, "status")),
                      "in_progress");
  assert_string_equal(
      json_string_value(json_object_get(sk, "previous_response_id")),
      "resp_prev");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(sk, "metadata"), "k")),
      "v");
  assert_false(json_is_true(json_object_get(sk, "store")));
  json_decref(want);
  responses_req_free(&r);
  json_decref(body);
  json_decref(prev_msgs);
  json_decref(prev_resp);
  responses_store_destroy(store);
}

static void test_request_refusals_name_the_field(void **state) {
  (void)state;
  responses_store *store = responses_store_create(4, 1 << 20);
  server_ctx srv = test_srv(store);
  const struct {
    const char *body, *param;
  } cases[] = {
      {"{\"input\": \"x\", \"top_k\": 3}", "top_k"},
      {"{}", "input"},
      {"{\"input\": \"x\", \"previous_response_id\": \"resp_gone\"}",
       "previous_response_id"},
      {"{\"input\": \"x\", \"tools\": [{\"type\": \"file_search\"}]}", "tools"},
      {"{\"input\": \"x\", \"tools\": [{\"type\": \"function\", \"name\": "
       "\"f\", \"cache\": 1}]}",
       "tools"},
      {"{\"input\": \"x\", \"tool_choice\": {\"type\": \"mcp\"}}",
       "tool_choice"},
      {"{\"input\": \"x\", \"text\": {\"format\": {\"type\": \"json_object\", "
       "\"extra\": 1}}}",
       "text.format"},
      {"{\"input\": \"x\", \"reasoning\": {\"generate_summary\": \"auto\"}}",
       "reasoning.summary"},
      {"{\"input\": \"x\", \"stream_options\": {\"include_obfuscation\": "
       "true}}",
       "stream_options"},
      {"{\"input\": \"x\", \"instructions\": 5}", "instructions"},
      {"{\"input\": \"x\", \"metadata\": {\"k\": 5}}", "metadata"},
      {"{\"input\": \"x\", \"store\": \"yes\"}", "store"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *body = parse(cases[i].body);
    responses_req r;
    api_error e;
    assert_int_equal(responses_request_parse(&srv, body, &r, &e), -1);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.param, cases[i].param);
    responses_req_free(&r);
    json_decref(body);
  }
  /* a chat error's field is named as the Responses field */
  api_error e;
  api_fail(&e, 400, "max_completion_tokens", "x");
  responses_error_param(&e);
  assert_string_equal(e.param, "max_output_tokens");
  api_fail(&e, 400, "messages", "x");
  responses_error_param(&e);
  assert_string_equal(e.param, "input");
  responses_store_destroy(store);
}

static void test_output_items_and_final(void **state) {
  (void)state;
  json_t *msg = parse(
      "{\"role\": \"assistant\", \"content\": \"Looking.\", "
      "\"reasoning_content\": \"think\", \"tool_calls\": [{\"id\": \"call_9\", "
      "\"type\": \"function\", \"function\": {\"name\": \"f\", "
      "\"arguments\": \"{\\\"a\\\":1}\"}}]}");
  json_t *items = responses_output_items(msg, "abc");
  assert_int_equal(json_array_size(items), 3);
  const char *types[] = {"reasoning", "message", "function_call"};
  const char *ids[] = {"rs_abc_0", "msg_abc_1", "fc_abc_2"};
  for (size_t i = 0; i < 3; i++) {
    json_t *it = json_array_get(items, i);
    assert_string_equal(json_string_value(json_object_get(it, "type")),
                        types[i]);
    assert_string_equal(json_string_value(json_object_get(it, "id")), ids[i]);
  }
  json_t *call = json_array_get(items, 2);
  assert_string_equal(json_string_value(json_object_get(call, "call_id")),
                      "call_9");
  assert_string_equal(json_string_value(json_object_get(call, "arguments")),
                      "{\"a\":1}");
  json_t *chat =
      parse("{\"choices\": [{\"finish_reason\": \"length\"}], \"usage\": "
            "{\"prompt_tokens\": 10, \"completion_tokens\": 5, "
            "\"prompt_tokens_details\": {\"cached_tokens\": 8}, "
            "\"completion_tokens_details\": {\"reasoning_tokens\": 2}}}");
  json_t *skeleton = parse("{\"id\": \"resp_abc\", \"status\": \"x\"}");
  json_t *final = responses_final(skeleton, items, chat);
  assert_string_equal(json_string_value(json_object_get(final, "status")),
                      "incomplete");
  json_t *want_usage = parse(
      "{\"input_tokens\": 10, \"input_tokens_details\": {\"cached_tokens\": "
      "8}, \"output_tokens\": 5, \"output_tokens_details\": "
      "{\"reasoning_tokens\": 2}, \"total_tokens\": 15}");
  assert_true(json_equal(json_object_get(final, "usage"), want_usage));
  assert_int_equal(json_array_size(json_object_get(final, "output")), 3);
  /* calls without text: no message item; nothing at all: an empty one */
  json_object_set_new(msg, "content", json_null());
  json_object_del(msg, "reasoning_content");
  json_t *only_call = responses_output_items(msg, "abc");
  assert_int_equal(json_array_size(only_call), 1);
  json_t *empty = parse("{\"role\": \"assistant\", \"content\": \"\"}");
  json_t *one = responses_output_items(empty, "abc");
  assert_int_equal(json_array_size(one), 1);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(one, 0), "type")),
      "message");
  json_decref(one);
  json_decref(empty);
  json_decref(only_call);
  json_decref(want_usage);
  json_decref(final);
  json_decref(skeleton);
  json_decref(chat);
  json_decref(msg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_store_evicts_least_recently_used),
      cmocka_unit_test(test_store_byte_limit),
      cmocka_unit_test(test_input_items_to_messages),
      cmocka_unit_test(test_input_errors_name_the_item),
      cmocka_unit_test(test_request_to_chat_body),
      cmocka_unit_test(test_request_refusals_name_the_field),
      cmocka_unit_test(test_output_items_and_final),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
