/* tool_call_harmony: gpt-oss's harmony replies read into reasoning (the
 * analysis channel), content (final, a preamble, text outside messages)
 * and calls (commentary to=functions.NAME, in both header orders), the
 * streaming contract (every prefix decides a prefix of each), and a
 * conversation with reasoning, a tool call and its result rendered by the
 * real template (tests/data/templates/gpt-oss.jinja) and parsed back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chat/chat_template.h"
#include "chat/tool_call.h"

typedef struct {
  const char *what, *reply, *reasoning, *content;
  const char *call_name, *call_args; /* NULL: no call */
} hcase;

static const hcase CASES[] = {
    {"reasoning then the answer",
     "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|>"
     "<|start|>assistant<|channel|>final<|message|>4",
     "User asks 2+2. Easy.", "4", NULL, NULL},
    {"the answer ended by <|return|>",
     "<|channel|>final<|message|>Bonjour !<|return|>", "", "Bonjour !", NULL,
     NULL},
    {"a call as the model writes it",
     "<|channel|>analysis<|message|>Need the weather.<|end|>"
     "<|start|>assistant<|channel|>commentary to=functions.get_weather "
     "<|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
     "Need the weather.", "", "get_weather", "{\"city\":\"Paris\"}"},
    {"a call as the template renders it (recipient first), no end marker",
     " to=functions.get_weather<|channel|>commentary json<|message|>"
     "{\"city\":\"Paris\",\"unit\":\"celsius\"}",
     "", "", "get_weather", "{\"city\":\"Paris\",\"unit\":\"celsius\"}"},
    {"a preamble, then a call",
     "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant"
     "<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
     "{\"query\": \"llamas\"}<|call|>",
     "", "Checking.", "search", "{\"query\":\"llamas\"}"},
    {"a call whose body is not a JSON object is content",
     "<|channel|>commentary to=functions.f <|constrain|>json<|message|>"
     "[1, 2]<|call|>",
     "", "[1, 2]", NULL, NULL},
    {"text outside any message", "Just text, no channel.", "",
     "Just text, no channel.", NULL, NULL},
    {"a '<' that is not a marker", "<|channel|>final<|message|>a < b <| c", "",
     "a < b <| c", NULL, NULL},
};

static void check_final(const hcase *c) {
  nc_error err = {0};
  nc_tool_scan_result r = {0};
  assert_int_equal(nc_tool_scan(NC_TOOL_FORMAT_HARMONY, c->reply,
                                strlen(c->reply), true, &r, &err),
                   NC_OK);
  if (strcmp(r.content, c->content) ||
      strcmp(r.reasoning ? r.reasoning : "", c->reasoning))
    fail_msg("%s: content \"%s\" reasoning \"%s\", want \"%s\" and \"%s\"",
             c->what, r.content, r.reasoning ? r.reasoning : "", c->content,
             c->reasoning);
  assert_int_equal(r.n_calls, c->call_name ? 1 : 0);
  if (c->call_name) {
    assert_string_equal(r.calls[0].name, c->call_name);
    assert_string_equal(r.calls[0].arguments, c->call_args);
  }
  assert_int_equal(r.decided, strlen(c->reply));
  nc_tool_scan_result_clear(&r);
}

static void test_replies(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
    check_final(&CASES[i]);
}

static bool is_prefix(const char *p, size_t n, const char *of, size_t of_n) {
  return n <= of_n && (!n || !memcmp(p, of, n));
}

/* Every prefix scanned as a stream decides a prefix of the final
 * reasoning, content and calls, and no marker text leaks into them. */
static void test_stream_prefixes(void **state) {
  (void)state;
  nc_error err = {0};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    const hcase *c = &CASES[i];
    const size_t len = strlen(c->reply);
    nc_tool_scan_result fin = {0};
    assert_int_equal(
        nc_tool_scan(NC_TOOL_FORMAT_HARMONY, c->reply, len, true, &fin, &err),
        NC_OK);
    size_t last_r = 0, last_c = 0, last_n = 0;
    for (size_t k = 0; k <= len; k++) {
      nc_tool_scan_result r = {0};
      assert_int_equal(
          nc_tool_scan(NC_TOOL_FORMAT_HARMONY, c->reply, k, false, &r, &err),
          NC_OK);
      if (!is_prefix(r.content, r.content_len, fin.content, fin.content_len) ||
          !is_prefix(r.reasoning, r.reasoning_len, fin.reasoning,
                     fin.reasoning_len))
        fail_msg("%s: prefix %zu decided content \"%s\" reasoning \"%s\"",
                 c->what, k, r.content, r.reasoning ? r.reasoning : "");
      assert_true(r.n_calls <= fin.n_calls);
      for (size_t j = 0; j < r.n_calls; j++)
        assert_string_equal(r.calls[j].arguments, fin.calls[j].arguments);
      assert_true(r.reasoning_len >= last_r && r.content_len >= last_c &&
                  r.n_calls >= last_n);
      last_r = r.reasoning_len;
      last_c = r.content_len;
      last_n = r.n_calls;
      nc_tool_scan_result_clear(&r);
    }
    nc_tool_scan_result_clear(&fin);
  }
}

static char *read_template(size_t *n) {
  const char *root = getenv("NUCLEUS_ROOT");
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/templates/gpt-oss.jinja",
           root ? root : ".");
  FILE *fp = fopen(path, "rb");
  if (!fp) fail_msg("cannot open %s (set NUCLEUS_ROOT)", path);
  char *buf = malloc(1 << 16);
  *n = fread(buf, 1, (1 << 16) - 1, fp);
  buf[*n] = '\0';
  fclose(fp);
  return buf;
}

/* The assistant's reply in a rendered prompt: the text after the last
 * occurrence of after, up to before (NULL: the end). */
static char *between(const char *text, const char *after, const char *before) {
  const char *a = NULL;
  for (const char *p = strstr(text, after); p; p = strstr(p + 1, after))
    a = p;
  assert_non_null(a);
  a += strlen(after);
  const char *b = before ? strstr(a, before) : a + strlen(a);
  assert_non_null(b);
  char *out = malloc((size_t)(b - a) + 1);
  memcpy(out, a, (size_t)(b - a));
  out[b - a] = '\0';
  return out;
}

#define USER "{\"role\":\"user\",\"content\":\"Weather in Paris?\"}"
#define CALL                                                                   \
  "{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"Call "              \
  "get_weather.\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","       \
  "\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":"            \
  "\"Paris\",\"unit\":\"celsius\"}}}]}"
#define RESULT                                                                 \
  "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"21 and clear\"}"
#define FINAL                                                                  \
  "{\"role\":\"assistant\",\"content\":\"It is 21 C.\",\"thinking\":\"The "    \
  "tool says 21.\"}"
#define TOOLS                                                                  \
  "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","            \
  "\"description\":\"The weather.\","                                          \
  "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"    \
  "\"string\"},\"unit\":{\"type\":\"string\"}}}}}]"

/* The template renders the reasoning, the call and the answer into the
 * prompt as the model writes them; the scanner gives them back. */
static void test_render_parse_back(void **state) {
  (void)state;
  size_t tn;
  char *tmpl = read_template(&tn);
  nc_error err = {0};
  char *out = NULL;
  size_t n = 0;
  /* the call turn (its reasoning kept: no final answer follows yet) */
  nc_code rc =
      nc_chat_template_render(tmpl, tn, "[" USER "," CALL "," RESULT "]", TOOLS,
                              true, NULL, NULL, &out, &n, &err);
  if (rc != NC_OK) fail_msg("render: %s", err.message);
  char *reply = between(out, "Weather in Paris?<|end|><|start|>assistant",
                        "<|start|>functions.");
  nc_tool_scan_result r = {0};
  assert_int_equal(nc_tool_scan(NC_TOOL_FORMAT_HARMONY, reply, strlen(reply),
                                true, &r, &err),
                   NC_OK);
  assert_string_equal(r.reasoning, "Call get_weather.");
  assert_int_equal(r.content_len, 0);
  assert_int_equal(r.n_calls, 1);
  assert_string_equal(r.calls[0].name, "get_weather");
  assert_string_equal(r.calls[0].arguments,
                      "{\"city\":\"Paris\",\"unit\":\"celsius\"}");
  nc_tool_scan_result_clear(&r);
  free(reply);
  free(out);
  /* the answer after the result, as a training render writes it */
  assert_int_equal(nc_chat_template_render(
                       tmpl, tn, "[" USER "," CALL "," RESULT "," FINAL "]",
                       TOOLS, false, NULL, NULL, &out, &n, &err),
                   NC_OK);
  /* from the reasoning message the answer begins with */
  const char *an = strstr(out, "<|start|>assistant<|channel|>analysis"
                               "<|message|>The tool says");
  assert_non_null(an);
  reply = strdup(an + strlen("<|start|>assistant"));
  assert_int_equal(nc_tool_scan(NC_TOOL_FORMAT_HARMONY, reply, strlen(reply),
                                true, &r, &err),
                   NC_OK);
  assert_string_equal(r.reasoning, "The tool says 21.");
  assert_string_equal(r.content, "It is 21 C.");
  assert_int_equal(r.n_calls, 0);
  nc_tool_scan_result_clear(&r);
  free(reply);
  free(out);
  free(tmpl);
}

static void test_format_of_template(void **state) {
  (void)state;
  size_t tn;
  char *tmpl = read_template(&tn);
  assert_int_equal(nc_tool_format_of_template(tmpl, tn),
                   NC_TOOL_FORMAT_HARMONY);
  assert_string_equal(nc_tool_format_name(NC_TOOL_FORMAT_HARMONY), "harmony");
  free(tmpl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replies),
      cmocka_unit_test(test_stream_prefixes),
      cmocka_unit_test(test_render_parse_back),
      cmocka_unit_test(test_format_of_template),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
