/* reasoning: the families' thinking markers found in the real templates
 * (tests/data/templates), the prompt that opens the block, and replies
 * split into reasoning and answer (<think>, Gemma 4's thought channel,
 * harmony's analysis; a block opened by the prompt; a block never closed;
 * --reasoning-format none) with calls read after the block, and the
 * streaming contract: every prefix of every reply, scanned as a stream,
 * decides a prefix of the final reasoning and content (markers and their
 * partial bytes never leak), and the whole equals the final scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chat/reasoning.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return s;
}

static void test_family_of_template(void **state) {
  (void)state;
  static const struct {
    const char *file;
    nc_reasoning_format want;
  } T[] = {
      {"qwen3", NC_REASONING_THINK},
      {"qwen3.5", NC_REASONING_THINK},
      {"smollm3", NC_REASONING_THINK},
      {"deepseek-r1-distill", NC_REASONING_THINK},
      {"gpt-oss", NC_REASONING_HARMONY},
      {"gemma4", NC_REASONING_GEMMA4},
      {"smollm2", NC_REASONING_NONE},
      {"gemma3", NC_REASONING_NONE},
      {"llama3.3", NC_REASONING_NONE},
      {"qwen2.5", NC_REASONING_NONE},
  };
  for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
    const char *root = getenv("NUCLEUS_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/templates/%s.jinja",
             root ? root : ".", T[i].file);
    size_t len = 0;
    char *src = slurp(path, &len);
    if (!src) fail_msg("cannot read %s (set NUCLEUS_ROOT)", path);
    nc_reasoning_format got = nc_reasoning_format_of_template(src, len);
    if (got != T[i].want)
      fail_msg("%s: %s, want %s", T[i].file, nc_reasoning_format_name(got),
               nc_reasoning_format_name(T[i].want));
    free(src);
  }
  assert_int_equal(nc_reasoning_format_of_template(NULL, 0), NC_REASONING_NONE);
}

static void test_prompt_opens(void **state) {
  (void)state;
  static const char *const open[] = {
      "<|im_start|>assistant\n<think>\n",
      "<｜Assistant｜><think>\n",
      "<|im_start|>assistant\n<think>",
  };
  static const char *const shut[] = {
      "<|im_start|>assistant\n",
      "<|im_start|>assistant\n<think>\n\n</think>\n\n",
      "<｜Assistant｜><think>\n</think>",
      "",
  };
  for (size_t i = 0; i < sizeof open / sizeof open[0]; i++)
    assert_true(nc_reasoning_prompt_opens(NC_REASONING_THINK, open[i],
                                          strlen(open[i])));
  for (size_t i = 0; i < sizeof shut / sizeof shut[0]; i++)
    assert_false(nc_reasoning_prompt_opens(NC_REASONING_THINK, shut[i],
                                           strlen(shut[i])));
  const char *g = "<|turn>model\n<|channel>thought\n";
  assert_true(nc_reasoning_prompt_opens(NC_REASONING_GEMMA4, g, strlen(g)));
  g = "<|turn>model\n<|channel>thought\n<channel|>";
  assert_false(nc_reasoning_prompt_opens(NC_REASONING_GEMMA4, g, strlen(g)));
  assert_false(
      nc_reasoning_prompt_opens(NC_REASONING_NONE, open[0], strlen(open[0])));
}

typedef struct {
  const char *what;
  nc_reply_format fmt;
  const char *reply;
  const char *reasoning, *content;
  const char *call_name; /* NULL: no call */
} rcase;

#define THINK(calls, inside)                                                   \
  { NC_TOOL_FORMAT_HERMES, calls, NC_REASONING_THINK, inside }
#define GEMMA4                                                                 \
  { NC_TOOL_FORMAT_GEMMA4, true, NC_REASONING_GEMMA4, false }

static const rcase CASES[] = {
    {"think, then answer", THINK(false, false),
     "<think>\nThe user greets me.\n</think>\n\nHello!", "The user greets me.",
     "Hello!", NULL},
    {"blanks before the block", THINK(false, false), "\n <think>a b</think>c",
     "a b", "c", NULL},
    {"no block: all answer", THINK(false, false), "Just an answer.", "",
     "Just an answer.", NULL},
    {"a '<' answer is not a block", THINK(false, false), "<b>bold</b>", "",
     "<b>bold</b>", NULL},
    {"the prompt opened the block", THINK(false, true),
     "Let me think.\n</think>\n\nParis.", "Let me think.", "Paris.", NULL},
    {"an empty block", THINK(false, false), "<think>\n\n</think>\n\nHi", "",
     "Hi", NULL},
    {"a block never closed is all reasoning", THINK(false, false),
     "<think>\nstill thinking about", "still thinking about", "", NULL},
    {"a partial close marker inside the thinking", THINK(false, false),
     "<think>a </thi b</think>c", "a </thi b", "c", NULL},
    {"a call after the block", THINK(true, false),
     "<think>Need the weather.</think>\n<tool_call>\n{\"name\": "
     "\"get_weather\","
     " \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "Need the weather.", "", "get_weather"},
    {"a call inside the block is thinking", THINK(true, false),
     "<think><tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"
     "</think>ok",
     "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", "ok", NULL},
    {"none: the block stays in the content",
     {NC_TOOL_FORMAT_HERMES, false, NC_REASONING_NONE, false},
     "<think>x</think>y",
     "",
     "<think>x</think>y",
     NULL},
    {"gemma 4: thought, then a call", GEMMA4,
     "<|channel>thought\nThe user wants weather.<channel|>"
     "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
     "The user wants weather.", "", "get_weather"},
    {"gemma 4: thought, then text", GEMMA4,
     "<|channel>thought\nhmm\n<channel|>Bonjour", "hmm", "Bonjour", NULL},
    {"harmony: analysis to reasoning",
     {NC_TOOL_FORMAT_HARMONY, true, NC_REASONING_HARMONY, false},
     "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant"
     "<|channel|>final<|message|>4",
     "Easy.",
     "4",
     NULL},
    {"harmony, none: analysis to the content",
     {NC_TOOL_FORMAT_HARMONY, true, NC_REASONING_NONE, false},
     "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant"
     "<|channel|>final<|message|>4",
     "",
     "Easy.4",
     NULL},
};

static void check_final(const rcase *c) {
  nc_error err = {0};
  nc_tool_scan_result r = {0};
  assert_int_equal(
      nc_reply_scan(&c->fmt, c->reply, strlen(c->reply), true, &r, &err),
      NC_OK);
  const char *reasoning = r.reasoning ? r.reasoning : "";
  if (strcmp(r.content, c->content) || strcmp(reasoning, c->reasoning))
    fail_msg("%s: reasoning \"%s\" content \"%s\", want \"%s\" and \"%s\"",
             c->what, reasoning, r.content, c->reasoning, c->content);
  assert_int_equal(r.n_calls, c->call_name ? 1 : 0);
  if (c->call_name) assert_string_equal(r.calls[0].name, c->call_name);
  nc_tool_scan_result_clear(&r);
}

static void test_replies(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
    check_final(&CASES[i]);
}

/* s[0, n) is a prefix of full. */
static bool prefix_of(const char *s, size_t n, const char *full) {
  return n <= strlen(full) && !memcmp(s, full, n);
}

/* Every prefix, scanned as not final: its reasoning and content are
 * prefixes of the final ones, and grow only; the calls come in order. */
static void test_stream_prefixes(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    const rcase *c = &CASES[i];
    const size_t len = strlen(c->reply);
    size_t prev_r = 0, prev_c = 0, prev_calls = 0;
    for (size_t n = 0; n <= len; n++) {
      nc_error err = {0};
      nc_tool_scan_result r = {0};
      assert_int_equal(nc_reply_scan(&c->fmt, c->reply, n, false, &r, &err),
                       NC_OK);
      if (!prefix_of(r.reasoning ? r.reasoning : "", r.reasoning_len,
                     c->reasoning) ||
          !prefix_of(r.content, r.content_len, c->content))
        fail_msg("%s, prefix %zu: reasoning \"%s\" content \"%s\" are not "
                 "prefixes of \"%s\" and \"%s\"",
                 c->what, n, r.reasoning ? r.reasoning : "", r.content,
                 c->reasoning, c->content);
      assert_true(r.reasoning_len >= prev_r);
      assert_true(r.content_len >= prev_c);
      assert_true(r.n_calls >= prev_calls);
      prev_r = r.reasoning_len;
      prev_c = r.content_len;
      prev_calls = r.n_calls;
      nc_tool_scan_result_clear(&r);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_family_of_template),
      cmocka_unit_test(test_prompt_opens),
      cmocka_unit_test(test_replies),
      cmocka_unit_test(test_stream_prefixes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
