/* tool_call: each family's call syntax parsed from recorded replies (written
 * from each family's documentation and chat template), malformed and
 * unclosed calls kept as content, and the streaming contract: every prefix
 * decides a prefix of the final content and calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chat/tool_call.h"

typedef struct {
  const char *name, *arguments, *id;
} want_call;

typedef struct {
  const char *what;
  nc_tool_format f;
  const char *reply;
  const char *content;
  want_call calls[4];
} tcase;

#define R1_CALLS_BEGIN                                                         \
  "<\xef\xbd\x9ctool\xe2\x96\x81"                                              \
  "calls\xe2\x96\x81"                                                          \
  "begin\xef\xbd\x9c>"
#define R1_CALLS_END                                                           \
  "<\xef\xbd\x9ctool\xe2\x96\x81"                                              \
  "calls\xe2\x96\x81"                                                          \
  "end\xef\xbd\x9c>"
#define R1_CALL_BEGIN                                                          \
  "<\xef\xbd\x9ctool\xe2\x96\x81"                                              \
  "call\xe2\x96\x81"                                                           \
  "begin\xef\xbd\x9c>"
#define R1_CALL_END                                                            \
  "<\xef\xbd\x9ctool\xe2\x96\x81"                                              \
  "call\xe2\x96\x81"                                                           \
  "end\xef\xbd\x9c>"
#define R1_SEP                                                                 \
  "<\xef\xbd\x9ctool\xe2\x96\x81"                                              \
  "sep\xef\xbd\x9c>"

static const tcase CASES[] = {
    {"hermes single",
     NC_TOOL_FORMAT_HERMES,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
     "\"Paris\"}}\n</tool_call>",
     "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}}},
    {"hermes text before, two calls",
     NC_TOOL_FORMAT_HERMES,
     "Let me check both.\n<tool_call>\n{\"name\": \"get_weather\", "
     "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n"
     "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\", \"h24\": "
     "true}}\n</tool_call>",
     "Let me check both.\n\n",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL},
      {"get_time", "{\"tz\":\"CET\",\"h24\":true}", NULL}}},
    {"hermes arguments as a string",
     NC_TOOL_FORMAT_HERMES,
     "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}"
     "</tool_call>",
     "",
     {{"f", "{\"x\":1}", NULL}}},
    {"hermes braces and tags inside strings",
     NC_TOOL_FORMAT_HERMES,
     "<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"a } ] "
     "{ \\\" q\"}}</tool_call>",
     "",
     {{"echo", "{\"text\":\"a } ] { \\\" q\"}", NULL}}},
    {"hermes bad JSON is content",
     NC_TOOL_FORMAT_HERMES,
     "<tool_call>{\"name\": \"f\", \"arguments\": {x}}</tool_call> done",
     "<tool_call>{\"name\": \"f\", \"arguments\": {x}}</tool_call> done",
     {{0}}},
    {"hermes no name is content",
     NC_TOOL_FORMAT_HERMES,
     "<tool_call>{\"arguments\": {}}</tool_call>",
     "<tool_call>{\"arguments\": {}}</tool_call>",
     {{0}}},
    {"hermes unclosed is content",
     NC_TOOL_FORMAT_HERMES,
     "Sure. <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
     "Sure. <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
     {{0}}},
    {"hermes whole call then unclosed",
     NC_TOOL_FORMAT_HERMES,
     "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"
     "<tool_call>{\"name\": \"g\"",
     "<tool_call>{\"name\": \"g\"",
     {{"f", "{}", NULL}}},
    {"hermes no arguments",
     NC_TOOL_FORMAT_HERMES,
     "<tool_call>{\"name\": \"now\"}</tool_call>",
     "",
     {{"now", "{}", NULL}}},
    {"generic plain text",
     NC_TOOL_FORMAT_GENERIC,
     "The answer is 4. <tool_ (not a call)",
     "The answer is 4. <tool_ (not a call)",
     {{0}}},
    {"generic call",
     NC_TOOL_FORMAT_GENERIC,
     "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": "
     "3}}</tool_call>",
     "",
     {{"add", "{\"a\":2,\"b\":3}", NULL}}},
    {"llama3 bare JSON",
     NC_TOOL_FORMAT_LLAMA3,
     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
     "",
     {{"get_weather", "{\"city\":\"Oslo\"}", NULL}}},
    {"llama3 two calls with ;",
     NC_TOOL_FORMAT_LLAMA3,
     "  {\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", "
     "\"parameters\": {\"k\": [1, 2]}}",
     "  ",
     {{"a", "{}", NULL}, {"b", "{\"k\":[1,2]}", NULL}}},
    {"llama3 python_tag",
     NC_TOOL_FORMAT_LLAMA3,
     "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": "
     "\"nucleus\"}}",
     "",
     {{"search", "{\"q\":\"nucleus\"}", NULL}}},
    {"llama3 JSON that is not a call",
     NC_TOOL_FORMAT_LLAMA3,
     "{\"answer\": 42}",
     "{\"answer\": 42}",
     {{0}}},
    {"llama3 text first is content",
     NC_TOOL_FORMAT_LLAMA3,
     "I think {\"name\": \"a\", \"parameters\": {}}",
     "I think {\"name\": \"a\", \"parameters\": {}}",
     {{0}}},
    {"mistral nemo",
     NC_TOOL_FORMAT_MISTRAL,
     "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": "
     "\"Rome\"}, \"id\": \"abcDEF123\"}, {\"name\": \"get_time\", "
     "\"arguments\": {}}]",
     "",
     {{"get_weather", "{\"city\":\"Rome\"}", "abcDEF123"},
      {"get_time", "{}", NULL}}},
    {"mistral nemo not an array",
     NC_TOOL_FORMAT_MISTRAL,
     "[TOOL_CALLS] oops",
     "[TOOL_CALLS] oops",
     {{0}}},
    {"mistral small 3.2",
     NC_TOOL_FORMAT_MISTRAL_ARGS,
     "Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Lima\"}"
     "[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{\"tz\": \"PET\"}",
     "Checking.",
     {{"get_weather", "{\"city\":\"Lima\"}", NULL},
      {"get_time", "{\"tz\":\"PET\"}", "a1b2c3d4e"}}},
    {"granite",
     NC_TOOL_FORMAT_GRANITE,
     "<|tool_call|>[{\"name\": \"lookup\", \"arguments\": {\"id\": 7}}]",
     "",
     {{"lookup", "{\"id\":7}", NULL}}},
    {"deepseek r1",
     NC_TOOL_FORMAT_DEEPSEEK_R1,
     "<think>\nneed weather\n</think>\n\n" R1_CALLS_BEGIN R1_CALL_BEGIN
     "function" R1_SEP
     "get_weather\n```json\n{\"city\": \"Kyiv\"}\n```" R1_CALL_END
     "\n" R1_CALL_BEGIN "function" R1_SEP "get_time\n```json\n"
     "{}\n```" R1_CALL_END R1_CALLS_END,
     "<think>\nneed weather\n</think>\n\n",
     {{"get_weather", "{\"city\":\"Kyiv\"}", NULL}, {"get_time", "{}", NULL}}},
    /* Gemma 4, as its template renders calls (format_argument, keys bare,
     * strings between <|"|> marks) */
    {"gemma4 two calls",
     NC_TOOL_FORMAT_GEMMA4,
     "Let me look.<|tool_call>call:get_weather{city:<|\"|>Paris, "
     "France<|\"|>,unit:<|\"|>celsius<|\"|>}<tool_call|><|tool_call>call:"
     "search{limit:3,opts:{deep:true,tags:[<|\"|>a<|\"|>,2.5,null]},"
     "query:<|\"|>{\"x\": 1}<|\"|>}<tool_call|>",
     "Let me look.",
     {{"get_weather", "{\"city\":\"Paris, France\",\"unit\":\"celsius\"}",
       NULL},
      {"search",
       "{\"limit\":3,\"opts\":{\"deep\":true,\"tags\":[\"a\",2.5,null]},"
       "\"query\":\"{\\\"x\\\": 1}\"}",
       NULL}}},
    {"gemma4 reals as written, not as jansson's 17 digits",
     NC_TOOL_FORMAT_GEMMA4,
     "<|tool_call>call:f{x:0.1,y:5e-3,z:-2.0,w:1e300,n:7}<tool_call|>",
     "",
     {{"f", "{\"x\":0.1,\"y\":0.005,\"z\":-2.0,\"w\":1e+300,\"n\":7}", NULL}}},
    {"gemma4 no arguments",
     NC_TOOL_FORMAT_GEMMA4,
     "<|tool_call>call:now{}<tool_call|>",
     "",
     {{"now", "{}", NULL}}},
    {"gemma4 malformed: a bare word, an unclosed string",
     NC_TOOL_FORMAT_GEMMA4,
     "<|tool_call>call:f{a:Paris}<tool_call|>"
     "<|tool_call>call:g{a:<|\"|>x}<tool_call|>",
     "<|tool_call>call:f{a:Paris}<tool_call|>"
     "<|tool_call>call:g{a:<|\"|>x}<tool_call|>",
     {{0}}},
};

static void check_final(const tcase *c) {
  nc_tool_scan_result r = {0};
  nc_error err = {0};
  assert_int_equal(
      nc_tool_scan(c->f, c->reply, strlen(c->reply), true, &r, &err), NC_OK);
  if (strcmp(r.content, c->content))
    fail_msg("%s: content \"%s\", want \"%s\"", c->what, r.content, c->content);
  size_t n = 0;
  while (n < 4 && c->calls[n].name)
    n++;
  if (r.n_calls != n)
    fail_msg("%s: %zu calls, want %zu", c->what, r.n_calls, n);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(r.calls[i].name, c->calls[i].name);
    assert_string_equal(r.calls[i].arguments, c->calls[i].arguments);
    if (c->calls[i].id)
      assert_string_equal(r.calls[i].id, c->calls[i].id);
    else
      assert_null(r.calls[i].id);
  }
  assert_int_equal(r.decided, strlen(c->reply));
  nc_tool_scan_result_clear(&r);
}

static void test_families(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
    check_final(&CASES[i]);
}

/* Every prefix, scanned as a stream: decided content is a prefix of the
 * final content, decided calls a prefix of the final calls, and what is
 * decided only grows. */
static void test_stream_prefixes(void **state) {
  (void)state;
  nc_error err = {0};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    const tcase *c = &CASES[i];
    size_t len = strlen(c->reply);
    nc_tool_scan_result fin = {0};
    assert_int_equal(nc_tool_scan(c->f, c->reply, len, true, &fin, &err),
                     NC_OK);
    size_t last_decided = 0, last_calls = 0, last_content = 0;
    for (size_t k = 0; k <= len; k++) {
      nc_tool_scan_result r = {0};
      assert_int_equal(nc_tool_scan(c->f, c->reply, k, false, &r, &err), NC_OK);
      if (r.content_len > fin.content_len ||
          memcmp(r.content, fin.content, r.content_len))
        fail_msg("%s: prefix %zu decided content \"%s\" not a prefix of "
                 "\"%s\"",
                 c->what, k, r.content, fin.content);
      assert_true(r.n_calls <= fin.n_calls);
      for (size_t j = 0; j < r.n_calls; j++) {
        assert_string_equal(r.calls[j].name, fin.calls[j].name);
        assert_string_equal(r.calls[j].arguments, fin.calls[j].arguments);
      }
      assert_true(r.decided >= last_decided);
      assert_true(r.n_calls >= last_calls);
      assert_true(r.content_len >= last_content);
      last_decided = r.decided;
      last_calls = r.n_calls;
      last_content = r.content_len;
      nc_tool_scan_result_clear(&r);
    }
    nc_tool_scan_result_clear(&fin);
  }
}

/* A partial opener at the end is held back, then released when it turns
 * out to be text. */
static void test_partial_opener_held(void **state) {
  (void)state;
  nc_error err = {0};
  nc_tool_scan_result r = {0};
  const char *t = "Hello <tool_c";
  assert_int_equal(
      nc_tool_scan(NC_TOOL_FORMAT_HERMES, t, strlen(t), false, &r, &err),
      NC_OK);
  assert_string_equal(r.content, "Hello ");
  const char *u = "Hello <tool_cat>";
  assert_int_equal(
      nc_tool_scan(NC_TOOL_FORMAT_HERMES, u, strlen(u), false, &r, &err),
      NC_OK);
  assert_string_equal(r.content, "Hello <tool_cat>");
  /* llama3: blank so far may still become a call. */
  assert_int_equal(
      nc_tool_scan(NC_TOOL_FORMAT_LLAMA3, "  ", 2, false, &r, &err), NC_OK);
  assert_int_equal(r.content_len, 0);
  assert_int_equal(
      nc_tool_scan(NC_TOOL_FORMAT_LLAMA3, "  Hi", 4, false, &r, &err), NC_OK);
  assert_string_equal(r.content, "  Hi");
  nc_tool_scan_result_clear(&r);
}

static void test_format_of_template(void **state) {
  (void)state;
  static const struct {
    const char *src;
    nc_tool_format f;
  } T[] = {
      {"{{ '<tool_call>' }}", NC_TOOL_FORMAT_HERMES},
      {"<|start_header_id|>ipython<|end_header_id|>", NC_TOOL_FORMAT_LLAMA3},
      {"[TOOL_CALLS] {{ x }}", NC_TOOL_FORMAT_MISTRAL},
      {"[TOOL_CALLS]{{ n }}[ARGS]", NC_TOOL_FORMAT_MISTRAL_ARGS},
      {"<|tool_call|>", NC_TOOL_FORMAT_GRANITE},
      {"{{- '<|tool_call>call:' + name }}", NC_TOOL_FORMAT_GEMMA4},
      {R1_CALLS_BEGIN, NC_TOOL_FORMAT_DEEPSEEK_R1},
      {"<|im_start|>{{ m.content }}", NC_TOOL_FORMAT_GENERIC},
  };
  for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
    assert_int_equal(nc_tool_format_of_template(T[i].src, strlen(T[i].src)),
                     T[i].f);
  assert_int_equal(nc_tool_format_of_template(NULL, 0), NC_TOOL_FORMAT_GENERIC);
}

/* The project's template files: each family that renders calls is
 * recognised as its format. */
static void test_project_templates(void **state) {
  (void)state;
  static const struct {
    const char *file;
    nc_tool_format f;
  } T[] = {
      {"qwen2.5.jinja", NC_TOOL_FORMAT_HERMES},
      {"qwen3.jinja", NC_TOOL_FORMAT_HERMES},
      {"hermes3.jinja", NC_TOOL_FORMAT_HERMES},
      {"llama3.2.jinja", NC_TOOL_FORMAT_LLAMA3},
      {"llama3.3.jinja", NC_TOOL_FORMAT_LLAMA3},
      {"mistral-nemo.jinja", NC_TOOL_FORMAT_MISTRAL},
      {"mistral-small-3.2.jinja", NC_TOOL_FORMAT_MISTRAL_ARGS},
      {"granite3.3.jinja", NC_TOOL_FORMAT_GRANITE},
      {"deepseek-r1-distill.jinja", NC_TOOL_FORMAT_DEEPSEEK_R1},
      {"smollm2.jinja", NC_TOOL_FORMAT_GENERIC},
      {"gemma3.jinja", NC_TOOL_FORMAT_GENERIC},
      {"gemma4.jinja", NC_TOOL_FORMAT_GEMMA4},
  };
  const char *root = getenv("NUCLEUS_ROOT");
  char path[1024];
  for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
    snprintf(path, sizeof path, "%s/tests/data/templates/%s", root ? root : ".",
             T[i].file);
    FILE *fp = fopen(path, "rb");
    if (!fp) fail_msg("cannot open %s (set NUCLEUS_ROOT)", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    if (nc_tool_format_of_template(buf, n) != T[i].f)
      fail_msg("%s: format %s, want %s", T[i].file,
               nc_tool_format_name(nc_tool_format_of_template(buf, n)),
               nc_tool_format_name(T[i].f));
  }
}

static void test_generic_prompt(void **state) {
  (void)state;
  char *p = nc_tool_generic_prompt(
      "[{\"type\":\"function\",\"function\":{\"name\":\"add\",\"parameters\":"
      "{\"type\":\"object\"}}}]");
  assert_non_null(p);
  assert_non_null(strstr(p, "\"add\""));
  assert_non_null(strstr(p, "<tool_call>"));
  free(p);
  assert_null(nc_tool_generic_prompt("{}"));
  assert_null(nc_tool_generic_prompt("not json"));
  assert_null(nc_tool_generic_prompt(NULL));
}

/* The generic rewrite: tools in the system message, earlier calls written
 * back as <tool_call> lines, consecutive results as one user turn. */
static void test_generic_messages(void **state) {
  (void)state;
  const char *tools =
      "[{\"type\":\"function\",\"function\":{\"name\":\"add\"}}]";
  const char *msgs =
      "[{\"role\":\"user\",\"content\":\"2+3 and 4+5?\"},"
      "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
      "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
      "\"add\",\"arguments\":\"{\\\"a\\\":2,\\\"b\\\":3}\"}},"
      "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":"
      "\"add\",\"arguments\":\"{\\\"a\\\":4,\\\"b\\\":5}\"}}]},"
      "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"5\"},"
      "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"9\"}]";
  char *out = nc_tool_generic_messages(msgs, tools);
  assert_non_null(out);
  /* system first, with the description */
  assert_true(!strncmp(out,
                       "[{\"role\":\"system\",\"content\":\"You can "
                       "call functions.",
                       strlen("[{\"role\":\"system\",\"content\":\"You "
                              "can call functions.")));
  assert_non_null(
      strstr(out, "<tool_call>{\\\"name\\\":\\\"add\\\",\\\"arguments\\\":"
                  "{\\\"a\\\":2,\\\"b\\\":3}}</tool_call>\\n<tool_call>"));
  assert_null(strstr(out, "tool_calls"));
  assert_null(strstr(out, "\"tool\""));
  assert_non_null(strstr(out, "<tool_response>\\n5\\n</tool_response>\\n"
                              "<tool_response>\\n9\\n</tool_response>"));
  free(out);
  assert_null(nc_tool_generic_messages("{}", tools));
  assert_null(nc_tool_generic_messages("[{\"content\":\"x\"}]", tools));
}

/* Gemma 4's template writes a call's arguments key by key: the JSON text
 * of OpenAI's messages becomes an object (text that is no object stays). */
static void test_object_arguments(void **state) {
  (void)state;
  char *out = nc_tool_object_arguments(
      "[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":"
      "\"f\",\"arguments\":\"{\\\"a\\\": 1}\"}},{\"function\":{\"name\":"
      "\"g\",\"arguments\":\"[1]\"}}]}]");
  assert_non_null(out);
  assert_string_equal(out, "[{\"role\":\"assistant\",\"tool_calls\":[{"
                           "\"function\":{\"name\":\"f\",\"arguments\":{"
                           "\"a\":1}}},{\"function\":{\"name\":\"g\","
                           "\"arguments\":\"[1]\"}}]}]");
  free(out);
  assert_null(nc_tool_object_arguments("{\"not\": \"a list\"}"));
  assert_null(nc_tool_object_arguments(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_object_arguments),
      cmocka_unit_test(test_families),
      cmocka_unit_test(test_stream_prefixes),
      cmocka_unit_test(test_partial_opener_held),
      cmocka_unit_test(test_format_of_template),
      cmocka_unit_test(test_project_templates),
      cmocka_unit_test(test_generic_prompt),
      cmocka_unit_test(test_generic_messages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
