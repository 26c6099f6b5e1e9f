/* Unit tests of the Jinja interpreter: feature goldens rendered by Python's
 * jinja2 (tests/data/templates/features.golden.json, written by
 * scripts/gen_template_golden.py), error line numbers, sandbox limits
 * against hostile templates, concurrent renders and a fuzz corpus replay. */
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jinja/jinja.h"

#define NOW 1721980800

static char *repo_path(const char *rel) {
  const char *root = getenv("NUCLEUS_ROOT");
  size_t n = (root ? strlen(root) : 1) + strlen(rel) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", root ? root : ".", rel);
  return p;
}

static json_t *load_json(const char *rel) {
  char *path = repo_path(rel);
  json_error_t je;
  json_t *j = json_load_file(path, 0, &je);
  if (!j) fprintf(stderr, "cannot load %s: %s\n", path, je.text);
  free(path);
  return j;
}

/* Renders tmpl with vars (a JSON object text, or NULL) and default limits. */
static nc_code render(const char *tmpl, const char *vars_json, char **out,
                      nc_error *err) {
  jinja_template *t;
  *out = NULL;
  nc_code rc = jinja_compile(tmpl, strlen(tmpl), &t, err);
  if (rc != NC_OK) return rc;
  json_t *vars = vars_json ? json_loads(vars_json, 0, NULL) : NULL;
  jinja_render_opts o = jinja_default_render_opts();
  o.now = NOW;
  size_t n;
  rc = jinja_render(t, vars, &o, out, &n, err);
  json_decref(vars);
  jinja_free(t);
  return rc;
}

static void expect_render(const char *tmpl, const char *vars,
                          const char *want) {
  char *out;
  nc_error err = {0};
  nc_code rc = render(tmpl, vars, &out, &err);
  if (rc != NC_OK) fprintf(stderr, "render failed: %s\n", err.message);
  assert_int_equal(rc, NC_OK);
  assert_string_equal(out, want);
  free(out);
}

static void expect_error(const char *tmpl, const char *vars, nc_code code,
                         const char *substr) {
  char *out;
  nc_error err = {0};
  nc_code rc = render(tmpl, vars, &out, &err);
  if (rc != code || !strstr(err.message, substr))
    fprintf(stderr, "template %.60s: rc %d, message '%s'\n", tmpl, rc,
            err.message);
  assert_int_equal(rc, code);
  assert_null(out);
  assert_non_null(strstr(err.message, substr));
}

/* Every feature snippet renders byte-identically to jinja2, or fails where
 * jinja2 fails. */
static void test_feature_goldens(void **state) {
  (void)state;
  json_t *g = load_json("tests/data/templates/features.golden.json");
  assert_non_null(g);
  json_t *vars = json_object_get(g, "vars");
  json_t *cases = json_object_get(g, "cases");
  assert_true(json_array_size(cases) >= 100);
  size_t i, bad = 0, n_ok = 0, n_err = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *src = json_string_value(json_object_get(c, "template"));
    json_t *want = json_object_get(c, "expected");
    jinja_template *t = NULL;
    nc_error err = {0};
    char *out = NULL;
    size_t n = 0;
    nc_code rc = jinja_compile(src, strlen(src), &t, &err);
    if (rc == NC_OK) {
      jinja_render_opts o = jinja_default_render_opts();
      o.now = json_integer_value(json_object_get(g, "now"));
      rc = jinja_render(t, vars, &o, &out, &n, &err);
    }
    if (want) {
      if (rc != NC_OK || n != json_string_length(want) ||
          memcmp(out, json_string_value(want), n) != 0) {
        fprintf(stderr, "feature %s: rc %d (%s)\n  want '%s'\n  got  '%s'\n",
                name, rc, err.message, json_string_value(want), out ? out : "");
        bad++;
      }
      n_ok++;
    } else {
      if (rc == NC_OK || !strstr(err.message, "template line")) {
        fprintf(stderr, "feature %s: expected an error like '%s', got '%s'\n",
                name, json_string_value(json_object_get(c, "error")),
                rc == NC_OK ? out : err.message);
        bad++;
      }
      n_err++;
    }
    free(out);
    jinja_free(t);
  }
  fprintf(stderr, "features: %zu rendered, %zu expected errors\n", n_ok, n_err);
  assert_int_equal(bad, 0);
  json_decref(g);
}

static void test_basic_render(void **state) {
  (void)state;
  expect_render("Hello {{ name }}!", "{\"name\": \"W\\u00f6rld\"}",
                "Hello Wörld!");
  expect_render("", NULL, "");
  expect_render("plain text only", NULL, "plain text only");
  expect_render("{{ x }}", "{\"x\": null}", "None");
  expect_render("{{ x }}|{{ y }}", "{\"x\": [1, 2.5, \"a\"], \"y\": {}}",
                "[1, 2.5, 'a']|{}");
  /* content is data: template syntax inside a variable is not evaluated */
  expect_render("{{ x }}", "{\"x\": \"{{ 7*7 }}\"}", "{{ 7*7 }}");
}

static void test_error_lines(void **state) {
  (void)state;
  expect_error("line 1\n{% if true %}\n{{ 1 + 'a' }}\n{% endif %}", NULL,
               NC_ERR_INVALID_ARGUMENT, "template line 3:");
  expect_error("a\nb\n{% for %}", NULL, NC_ERR_FORMAT, "template line 3:");
  expect_error("a\n\n\n\n{{ raise_exception('roles must alternate') }}", NULL,
               NC_ERR_INVALID_ARGUMENT, "line 5: roles must alternate");
  expect_error("{{ 'unterminated }}", NULL, NC_ERR_FORMAT, "line 1");
  expect_error("{# never closed", NULL, NC_ERR_FORMAT, "comment");
  expect_error("{% raw %} never closed", NULL, NC_ERR_FORMAT, "raw");
  expect_error("{{ x ]}}", NULL, NC_ERR_FORMAT, "unexpected ']'");
  expect_error("{% include 'other.jinja' %}", NULL, NC_ERR_UNSUPPORTED,
               "sandbox");
  expect_error("{% break %}", NULL, NC_ERR_FORMAT, "outside a loop");
  /* found by fuzz_template: a slice among several subscripts */
  expect_error("{{ x[1:2, 3] }}", "{\"x\": [1, 2, 3]}", NC_ERR_FORMAT,
               "only subscript");
  expect_error("{{ messages[0].content }}", "{\"messages\": []}",
               NC_ERR_INVALID_ARGUMENT, "'list object' has no element 0");
}

static char *repeat_str(const char *a, int n, const char *mid, const char *b) {
  size_t la = strlen(a), lb = strlen(b), lm = strlen(mid);
  char *s = malloc(la * (size_t)n + lm + lb * (size_t)n + 1), *p = s;
  for (int i = 0; i < n; i++, p += la)
    memcpy(p, a, la);
  memcpy(p, mid, lm);
  p += lm;
  for (int i = 0; i < n; i++, p += lb)
    memcpy(p, b, lb);
  *p = '\0';
  return s;
}

/* The hostile-template suite of research/reliability.md R-TPL: each fails
 * with a limit error instead of crashing or running away. */
static void test_hostile_templates(void **state) {
  (void)state;
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", NULL,
               NC_ERR_LIMIT, "deeper");
  expect_error("{% macro f(n) %}{{ f(n + 1) }}x{% endmacro %}{{ f(0) }}", NULL,
               NC_ERR_LIMIT, "line 1");
  char *parens = repeat_str("(", 10000, "1", ")");
  char *tmpl = malloc(strlen(parens) + 8);
  sprintf(tmpl, "{{ %s }}", parens);
  expect_error(tmpl, NULL, NC_ERR_LIMIT, "nested");
  free(tmpl);
  free(parens);
  char *nots = repeat_str("not ", 10000, "x", "");
  tmpl = malloc(strlen(nots) + 8);
  sprintf(tmpl, "{{ %s }}", nots);
  expect_error(tmpl, NULL, NC_ERR_LIMIT, "nested");
  free(tmpl);
  free(nots);
  char *ifs = repeat_str("{% if true %}", 2000, "x", "{% endif %}");
  expect_error(ifs, NULL, NC_ERR_LIMIT, "nested");
  free(ifs);
  char *minus = repeat_str("-", 5000, "1", "");
  tmpl = malloc(strlen(minus) + 8);
  sprintf(tmpl, "{{ %s }}", minus);
  expect_error(tmpl, NULL, NC_ERR_LIMIT, "nested");
  free(tmpl);
  free(minus);
  expect_error("{% for a in range(100000) %}{% for b in range(100000) %}"
               "{% for c in range(100000) %}{% endfor %}{% endfor %}"
               "{% endfor %}",
               NULL, NC_ERR_LIMIT, "steps");
  expect_error("{{ 'x' * 1000000000 }}", NULL, NC_ERR_LIMIT, "repetition");
  expect_error("{{ [1] * 1000000000 }}", NULL, NC_ERR_LIMIT, "repetition");
  expect_error("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}"
               "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
               NULL, NC_ERR_LIMIT, "line 1");
  expect_error("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", NULL,
               NC_ERR_LIMIT, "output longer");
  expect_error("{{ range(1000000000) | length }}", NULL, NC_ERR_LIMIT, "range");
  expect_error("{% for i in range(99999) %}{% set l = range(99999) %}"
               "{% endfor %}",
               NULL, NC_ERR_LIMIT, "line 1");
  expect_error("{{ 9223372036854775807 + 1 }}", NULL, NC_ERR_LIMIT, "overflow");
  /* quadratic or big work inside one filter call spends the step budget
   * (found by fuzz_template: these used to run for seconds) */
  expect_error("{{ range(20000) | unique | list | length }}", NULL,
               NC_ERR_LIMIT, "steps");
  expect_error("{% set l = range(90000) | list %}{% for i in range(100) %}"
               "{{ l | sort | length }}{% endfor %}",
               NULL, NC_ERR_LIMIT, "steps");
  expect_error("{% set s = 'x' * 1000000 %}{% for i in range(10000) %}"
               "{{ s | length }}{{ s == s ~ '' }}{% endfor %}",
               NULL, NC_ERR_LIMIT, "steps");
  expect_render("{{ range(2000) | reverse | sort | first }}", NULL, "0");
  /* a namespace holding itself prints without recursing forever */
  char *out;
  nc_error err = {0};
  assert_int_equal(render("{% set ns = namespace() %}{% set ns.me = ns %}"
                          "{{ ns | string | length > 0 }}",
                          NULL, &out, &err),
                   NC_OK);
  assert_string_equal(out, "True");
  free(out);
  expect_error("{% set ns = namespace() %}{% set ns.me = ns %}"
               "{{ ns | tojson }}",
               NULL, NC_ERR_INVALID_ARGUMENT, "not JSON serializable");
}

static void test_custom_limits(void **state) {
  (void)state;
  jinja_template *t;
  nc_error err = {0};
  const char *src = "{% for i in range(n) %}ab{% endfor %}";
  assert_int_equal(jinja_compile(src, strlen(src), &t, &err), NC_OK);
  json_t *vars = json_pack("{s:i}", "n", 10);
  jinja_render_opts o = jinja_default_render_opts();
  o.limits.max_output = 20;
  char *out;
  size_t n;
  assert_int_equal(jinja_render(t, vars, &o, &out, &n, &err), NC_OK);
  assert_int_equal(n, 20);
  free(out);
  json_object_set_new(vars, "n", json_integer(11));
  assert_int_equal(jinja_render(t, vars, &o, &out, &n, &err), NC_ERR_LIMIT);
  assert_null(out);
  o = jinja_default_render_opts();
  o.limits.max_steps = 50;
  json_object_set_new(vars, "n", json_integer(1000));
  assert_int_equal(jinja_render(t, vars, &o, &out, &n, &err), NC_ERR_LIMIT);
  assert_non_null(strstr(err.message, "50 evaluation steps"));
  json_decref(vars);
  jinja_free(t);
}

typedef struct worker {
  const jinja_template *t;
  int id;
  int failures;
} worker;

static void *render_worker(void *arg) {
  worker *w = arg;
  for (int k = 0; k < 50; k++) {
    json_t *vars = json_pack("{s:i,s:s}", "id", w->id, "s", "abc");
    char *out;
    size_t n;
    nc_error err;
    char want[64];
    snprintf(want, sizeof want, "%d:ABC:cba", w->id);
    if (jinja_render(w->t, vars, NULL, &out, &n, &err) != NC_OK ||
        strcmp(out, want) != 0)
      w->failures++;
    else
      free(out);
    json_decref(vars);
  }
  return NULL;
}

/* One compiled template rendered from several threads at once. */
static void test_concurrent_renders(void **state) {
  (void)state;
  const char *src = "{{ id }}:{{ s | upper }}:{{ s[::-1] }}";
  jinja_template *t;
  nc_error err;
  assert_int_equal(jinja_compile(src, strlen(src), &t, &err), NC_OK);
  pthread_t th[4];
  worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){t, i, 0};
    pthread_create(&th[i], NULL, render_worker, &w[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(w[i].failures, 0);
  }
  jinja_free(t);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* Replays the committed fuzz corpus through the fuzz harness. */
static void test_fuzz_corpus_replay(void **state) {
  (void)state;
  char *dir = repo_path("fuzz/corpus/template");
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    unsigned char buf[65536];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    n++;
  }
  closedir(d);
  free(dir);
  assert_true(n >= 100);
}

#include "../../fuzz/fuzz_template.c"

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic_render),
      cmocka_unit_test(test_feature_goldens),
      cmocka_unit_test(test_error_lines),
      cmocka_unit_test(test_hostile_templates),
      cmocka_unit_test(test_custom_limits),
      cmocka_unit_test(test_concurrent_renders),
      cmocka_unit_test(test_fuzz_corpus_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
