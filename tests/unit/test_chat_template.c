/* Unit tests of chat-template rendering: every family's golden
 * conversations (tests/data/templates/<family>.golden.json, rendered by
 * Python's jinja2 configured like transformers' apply_chat_template via
 * scripts/gen_template_golden.py) must render byte-identically, or fail
 * where the template raises. Plus the input validation of the API. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chat/chat_template.h"
#include "chat/chat_template_builtin.h"

static const char *const FAMILIES[] = {
    "smollm2",
    "qwen2.5",
    "qwen3",
    "llama3.2",
    "llama3.3",
    "gemma2",
    "gemma3",
    "mistral-nemo",
    "mistral-small-3.2",
    "phi3.5",
    "gpt-oss",
    "hermes3",
    "deepseek-r1-distill",
    "granite3.3",
    "smollm3",
    "gemma4",
    "qwen3.5",
};
#define N_FAMILIES (sizeof FAMILIES / sizeof FAMILIES[0])

static char *repo_path(const char *rel) {
  const char *root = getenv("NUCLEUS_ROOT");
  size_t n = (root ? strlen(root) : 1) + strlen(rel) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", root ? root : ".", rel);
  return p;
}

static char *read_file(const char *rel, size_t *len) {
  char *path = repo_path(rel);
  FILE *f = fopen(path, "rb");
  free(path);
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  *len = fread(buf, 1, (size_t)n, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

typedef struct tally {
  size_t rendered, refused, bad;
} tally;

/* The conversation named name in conversations.json. */
static json_t *find_conversation(json_t *convs, const char *name) {
  size_t i;
  json_t *c;
  json_array_foreach(convs, i, c) {
    if (!strcmp(json_string_value(json_object_get(c, "name")), name)) return c;
  }
  return NULL;
}

/* The golden cases of family, rendered by its template, or by builtin
 * (not NULL: the built-in template that stands in for it). */
static void run_family(json_t *convs, const char *family,
                       const nc_builtin_template *builtin, tally *t) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/data/templates/%s.golden.json", family);
  char *path = repo_path(rel);
  json_error_t je;
  json_t *g = json_load_file(path, 0, &je);
  if (!g) fprintf(stderr, "cannot load %s: %s\n", path, je.text);
  free(path);
  assert_non_null(g);
  snprintf(rel, sizeof rel, "tests/data/templates/%s",
           json_string_value(json_object_get(g, "template")));
  size_t tlen = 0;
  char *src = builtin ? strdup(builtin->text) : read_file(rel, &tlen);
  assert_non_null(src);
  if (builtin) tlen = strlen(src);
  nc_chat_template *tmpl;
  nc_error err = {0};
  assert_int_equal(nc_chat_template_compile(src, tlen, &tmpl, &err), NC_OK);
  json_t *cases = json_object_get(g, "cases");
  assert_true(json_array_size(cases) >= 10);
  size_t i;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "conversation"));
    json_t *conv = find_conversation(convs, name);
    assert_non_null(conv);
    char *messages = json_dumps(json_object_get(conv, "messages"), 0);
    json_t *tools_j = json_object_get(conv, "tools");
    char *tools = json_is_null(tools_j) ? NULL : json_dumps(tools_j, 0);
    json_t *kw_j = json_object_get(conv, "kwargs");
    char *kwargs = json_object_size(kw_j) ? json_dumps(kw_j, 0) : NULL;
    nc_chat_args a = {
        .messages_json = messages,
        .tools_json = tools,
        .kwargs_json = kwargs,
        .add_generation_prompt =
            json_is_true(json_object_get(c, "add_generation_prompt")),
        .bos_token = json_string_value(json_object_get(g, "bos_token")),
        .eos_token = json_string_value(json_object_get(g, "eos_token")),
        .now = json_integer_value(json_object_get(g, "now")),
    };
    char *out = NULL;
    size_t n = 0;
    nc_code rc = nc_chat_template_apply(tmpl, &a, &out, &n, &err);
    json_t *want = json_object_get(c, "expected");
    if (want) {
      t->rendered++;
      if (rc != NC_OK || n != json_string_length(want) ||
          memcmp(out, json_string_value(want), n) != 0) {
        fprintf(stderr, "%s %s: rc %d (%s)\n  want '%s'\n  got  '%s'\n", family,
                name, rc, err.message, json_string_value(want), out ? out : "");
        t->bad++;
      }
    } else {
      t->refused++;
      if (rc == NC_OK || !strstr(err.message, "chat template: template line")) {
        fprintf(stderr, "%s %s: expected a failure like '%s', got '%s'\n",
                family, name, json_string_value(json_object_get(c, "error")),
                rc == NC_OK ? out : err.message);
        t->bad++;
      }
    }
    free(out);
    free(messages);
    free(tools);
    free(kwargs);
  }
  nc_chat_template_free(tmpl);
  free(src);
  json_decref(g);
}

static void test_family_goldens(void **state) {
  (void)state;
  tally t = {0};
  char *path = repo_path("tests/data/templates/conversations.json");
  json_error_t je;
  json_t *convs = json_load_file(path, 0, &je);
  free(path);
  assert_true(json_is_array(convs));
  for (size_t f = 0; f < N_FAMILIES; f++)
    run_family(convs, FAMILIES[f], NULL, &t);
  json_decref(convs);
  fprintf(stderr,
          "%zu families: %zu conversations rendered identically, "
          "%zu refused as jinja2 does\n",
          N_FAMILIES, t.rendered, t.refused);
  assert_int_equal(t.bad, 0);
  assert_true(t.rendered >= 10 * N_FAMILIES);
}

/* Gemma 4's built-in template (for files without one) renders every
 * conversation of the Gemma 4 goldens as the model's own template does. */
static void test_builtin_gemma4(void **state) {
  (void)state;
  tally t = {0};
  char *path = repo_path("tests/data/templates/conversations.json");
  json_error_t je;
  json_t *convs = json_load_file(path, 0, &je);
  free(path);
  assert_true(json_is_array(convs));
  const nc_builtin_template *b = nc_chat_template_builtin("gemma4", NULL);
  assert_non_null(b);
  run_family(convs, "gemma4", b, &t);
  json_decref(convs);
  assert_int_equal(t.bad, 0);
  assert_int_equal(t.refused, 0);
  assert_true(t.rendered >= 50);
}

static const char CHATML[] =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>"
    "assistant\n{% endif %}";

static void test_render_one_call(void **state) {
  (void)state;
  char *out;
  size_t n;
  nc_error err = {0};
  assert_int_equal(nc_chat_template_render(
                       CHATML, strlen(CHATML),
                       "[{\"role\":\"user\",\"content\":\"Hi \\u00e9\"}]", NULL,
                       true, "<s>", "</s>", &out, &n, &err),
                   NC_OK);
  assert_string_equal(out, "<|im_start|>user\nHi é<|im_end|>\n"
                           "<|im_start|>assistant\n");
  assert_int_equal(n, strlen(out));
  free(out);
  /* tools, bos/eos and add_generation_prompt reach the template */
  const char *t = "{{ bos_token }}{{ tools | length }}{{ tools[0].name }}"
                  "{{ add_generation_prompt }}{{ eos_token }}{{ documents }}";
  assert_int_equal(nc_chat_template_render(t, strlen(t), "[]",
                                           "[{\"name\":\"f\"}]", false, "<s>",
                                           "</s>", &out, &n, &err),
                   NC_OK);
  assert_string_equal(out, "<s>1fFalse</s>None");
  free(out);
  /* NULL tokens are undefined, NULL tools are None */
  t = "{{ bos_token is defined }}{{ tools is none }}";
  assert_int_equal(nc_chat_template_render(t, strlen(t), "[]", NULL, true, NULL,
                                           NULL, &out, &n, &err),
                   NC_OK);
  assert_string_equal(out, "FalseTrue");
  free(out);
}

static void test_bad_inputs(void **state) {
  (void)state;
  char *out = (char *)1;
  size_t n;
  nc_error err = {0};
  assert_int_equal(nc_chat_template_render(CHATML, strlen(CHATML), "[{", NULL,
                                           true, NULL, NULL, &out, &n, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_null(out);
  assert_non_null(strstr(err.message, "messages is not valid JSON"));
  assert_int_equal(nc_chat_template_render(CHATML, strlen(CHATML), "{}", NULL,
                                           true, NULL, NULL, &out, &n, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "JSON array"));
  assert_int_equal(nc_chat_template_render(CHATML, strlen(CHATML), "[]", "{}",
                                           true, NULL, NULL, &out, &n, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "tools"));
  const char *broken = "{% for m in messages %}";
  assert_int_equal(nc_chat_template_render(broken, strlen(broken), "[]", NULL,
                                           true, NULL, NULL, &out, &n, &err),
                   NC_ERR_FORMAT);
  assert_non_null(strstr(err.message, "chat template: template line 1"));
  nc_chat_template *tmpl;
  assert_int_equal(
      nc_chat_template_compile(CHATML, strlen(CHATML), &tmpl, &err), NC_OK);
  nc_chat_args a = {.messages_json = "[]", .kwargs_json = "[1]"};
  assert_int_equal(nc_chat_template_apply(tmpl, &a, &out, &n, &err),
                   NC_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "kwargs"));
  /* a message without content: the template fails cleanly, no crash */
  a = (nc_chat_args){.messages_json = "[{\"role\":\"user\"}]"};
  assert_int_equal(nc_chat_template_apply(tmpl, &a, &out, &n, &err), NC_OK);
  assert_string_equal(out, "<|im_start|>user\n<|im_end|>\n");
  free(out);
  nc_chat_template_free(tmpl);
}

/* A long conversation renders: limits scale with the input size. */
static void test_long_conversation(void **state) {
  (void)state;
  json_t *msgs = json_array();
  char content[2048];
  memset(content, 'x', sizeof content - 1);
  content[sizeof content - 1] = '\0';
  for (int i = 0; i < 2000; i++)
    json_array_append_new(msgs, json_pack("{s:s,s:s}", "role",
                                          i % 2 ? "assistant" : "user",
                                          "content", content));
  char *mj = json_dumps(msgs, 0);
  char *out;
  size_t n;
  nc_error err = {0};
  nc_code rc = nc_chat_template_render(CHATML, strlen(CHATML), mj, NULL, true,
                                       NULL, NULL, &out, &n, &err);
  if (rc != NC_OK) fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, NC_OK);
  assert_true(n > 3u << 20); /* beyond the 1 MiB base output limit */
  free(out);
  free(mj);
  json_decref(msgs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_family_goldens),
      cmocka_unit_test(test_builtin_gemma4),
      cmocka_unit_test(test_render_one_call),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_long_conversation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
