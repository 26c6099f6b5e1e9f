/* nucleus serve's call grammars for the formats that write the name
 * outside the arguments (tool_grammar.h): Gemma 4's forced calls (one per
 * named function, up to one per tool when required and parallel, the
 * arguments in its syntax), and the lazy grammars of tool_choice "auto"
 * for Gemma 4 and harmony: the trigger each starts at, and what they take
 * from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grammar/grammar.h"
#include "grammar_test_util.h"
#include "openai/tool_grammar.h"

static json_t *tools(void) {
  json_error_t err;
  json_t *t = json_loads(
      "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
      "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{"
      "\"type\":\"string\"},\"days\":{\"type\":\"integer\",\"maximum\":7}},"
      "\"required\":[\"city\"],\"additionalProperties\":false}}},"
      "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}]",
      0, &err);
  assert_non_null(t);
  return t;
}

#define PARIS "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
#define NOW "<|tool_call>call:now{}<tool_call|>"

static void test_gemma4_forced(void **state) {
  (void)state;
  json_t *t = tools();
  tool_opts o = {
      .choice = TOOL_CHOICE_REQUIRED, .n_tools = 2, .parallel = true};
  nucleus_grammar *g = NULL;
  api_error e = {0};
  assert_int_equal(tool_grammar_build(t, &o, "gemma4", &g, &e), 0);
  assert_true(takes(g, PARIS));
  assert_true(takes(g, NOW));
  assert_true(takes(g, PARIS NOW));
  assert_true(takes(g, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,"
                       "days:3}<tool_call|>"));
  assert_false(takes(g, PARIS NOW PARIS)); /* one per tool at most */
  assert_false(takes(g, ""));
  assert_false(takes(g, "<|tool_call>call:get_weather{\"city\":\"Paris\"}"
                        "<tool_call|>")); /* JSON */
  assert_false(takes(g, "<|tool_call>call:get_weather{days:3}<tool_call|>"));
  assert_false(takes(g, "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,"
                        "days:8}<tool_call|>"));
  assert_false(takes(g, "<|tool_call>call:other{}<tool_call|>"));
  nucleus_grammar_free(g);

  o.parallel = false;
  assert_int_equal(tool_grammar_build(t, &o, "gemma4", &g, &e), 0);
  assert_true(takes(g, PARIS));
  assert_false(takes(g, PARIS NOW));
  nucleus_grammar_free(g);

  o = (tool_opts){.choice = TOOL_CHOICE_NAMED, .n_tools = 2, .parallel = true};
  strcpy(o.name, "now");
  assert_int_equal(tool_grammar_build(t, &o, "gemma4", &g, &e), 0);
  assert_true(takes(g, NOW));
  assert_false(takes(g, PARIS));
  assert_false(takes(g, NOW NOW));
  nucleus_grammar_free(g);
  json_decref(t);
}

static void test_lazy_triggers(void **state) {
  (void)state;
  json_t *t = tools();
  tool_opts o = {.choice = TOOL_CHOICE_AUTO, .n_tools = 2, .parallel = true};
  nucleus_grammar *g = NULL;
  const char *trigger = NULL;
  tool_grammar_lazy(t, &o, "gemma4", &g, &trigger);
  assert_non_null(g);
  assert_string_equal(trigger, "<|tool_call>");
  assert_true(takes(g, PARIS NOW));
  assert_false(takes(g, "<|tool_call>call:get_weather{city:Paris}"));
  nucleus_grammar_free(g);

  tool_grammar_lazy(t, &o, "harmony", &g, &trigger);
  assert_non_null(g);
  assert_string_equal(trigger, "<|channel|>commentary to=");
  assert_true(takes(g, "<|channel|>commentary to=functions.get_weather "
                       "<|constrain|>json<|message|>{\"city\":\"Paris\"}"));
  assert_false(takes(g, "<|channel|>commentary to=functions.get_weather "
                        "<|constrain|>json<|message|>{\"town\":\"Paris\"}"));
  assert_false(takes(g, "<|channel|>commentary to=functions.search "
                        "<|constrain|>json<|message|>{}"));
  nucleus_grammar_free(g);

  tool_grammar_lazy(t, &o, "llama3", &g, &trigger); /* no fixed opener */
  assert_null(g);
  assert_null(trigger);
  json_decref(t);
}

static void test_gemma4_refuses_patterns(void **state) {
  (void)state;
  json_error_t jerr;
  json_t *t =
      json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"lookup\","
                 "\"parameters\":{\"type\":\"object\",\"properties\":{\"id\":{"
                 "\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}}}}}]",
                 0, &jerr);
  tool_opts o = {.choice = TOOL_CHOICE_REQUIRED, .n_tools = 1};
  nucleus_grammar *g = NULL;
  api_error e = {0};
  assert_int_equal(tool_grammar_build(t, &o, "gemma4", &g, &e), -1);
  assert_null(g);
  assert_int_equal(e.status, 400);
  assert_string_equal(e.param, "tools");
  assert_non_null(strstr(e.message, "'lookup'"));
  assert_non_null(strstr(e.message, "'pattern'"));
  /* the same schema is JSON's to enforce */
  assert_int_equal(tool_grammar_build(t, &o, "harmony", &g, &e), 0);
  assert_true(takes(g, "<|channel|>commentary to=functions.lookup "
                       "<|constrain|>json<|message|>{\"id\":\"abc\"}"));
  assert_false(takes(g, "<|channel|>commentary to=functions.lookup "
                        "<|constrain|>json<|message|>{\"id\":\"A1\"}"));
  nucleus_grammar_free(g);
  json_decref(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemma4_forced),
      cmocka_unit_test(test_lazy_triggers),
      cmocka_unit_test(test_gemma4_refuses_patterns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
