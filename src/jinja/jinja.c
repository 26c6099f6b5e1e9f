/* jinja: compiling a template once and rendering it with bounded work. */
#include "jinja.h"

#include <stdlib.h>
#include <string.h>

#include "jinja_interp.h"
#include "jinja_json.h"
#include "jinja_parse.h"

#define COMPILE_MEMORY_FACTOR 64
#define COMPILE_MEMORY_MIN (4u << 20)

struct jinja_template {
  jinja_arena *arena;
  jnode *root;
};

jinja_limits jinja_default_limits(void) {
  return (jinja_limits){
      .max_output = 1u << 20,
      .max_memory = 32u << 20,
      .max_steps = 1000000,
      .max_range = 100000,
      .max_repeat = 1u << 20,
  };
}

jinja_render_opts jinja_default_render_opts(void) {
  return (jinja_render_opts){.limits = jinja_default_limits(), .now = 0};
}

nc_code jinja_compile(const char *src, size_t len, jinja_template **out,
                      nc_error *err) {
  *out = NULL;
  if (!src && len) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "no template");
  if (len > (64u << 20))
    return nc_fail(err, NC_ERR_LIMIT, "template of %zu bytes is over 64 MiB",
                   len);
  jinja_template *t = calloc(1, sizeof *t);
  if (!t) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  size_t cap = len * COMPILE_MEMORY_FACTOR;
  if (cap < COMPILE_MEMORY_MIN) cap = COMPILE_MEMORY_MIN;
  t->arena = jinja_arena_new(cap);
  if (!t->arena) {
    free(t);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  }
  jtok *toks;
  size_t n;
  nc_code rc = jinja_lex(t->arena, src ? src : "", len, &toks, &n, err);
  if (rc == NC_OK) rc = jinja_parse(t->arena, toks, n, &t->root, err);
  if (rc != NC_OK) {
    jinja_free(t);
    return rc;
  }
  *out = t;
  return NC_OK;
}

void jinja_free(jinja_template *t) {
  if (!t) return;
  jinja_arena_free(t->arena);
  free(t);
}

nc_code jinja_render(const jinja_template *t, const json_t *vars,
                     const jinja_render_opts *opts, char **out, size_t *out_len,
                     nc_error *err) {
  *out = NULL;
  if (out_len) *out_len = 0;
  jinja_render_opts o = opts ? *opts : jinja_default_render_opts();
  if (vars && !json_is_object(vars))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "template variables must be a JSON object");
  jinterp I = {
      .err = err, .lim = o.limits, .fuel = o.limits.max_steps, .now = o.now};
  I.a = jinja_arena_new(o.limits.max_memory);
  if (!I.a) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  jbuf buf;
  jbuf_init(&buf, o.limits.max_output);
  I.out = &buf;
  nc_code rc = NC_OK;
  I.frame = jframe_new(&I, NULL);
  if (I.frame && vars) {
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)vars, key, val) {
      jv v;
      if (!jinja_value_from_json(I.a, val, &v)) {
        jfail(&I, NC_ERR_LIMIT,
              "template variable '%s' is too large or nested too deeply", key);
        break;
      }
      if (!jframe_set(&I, I.frame, key, strlen(key), v)) break;
    }
  }
  if (!I.failed) jexec(&I, t->root);
  if (I.failed) {
    rc = I.code != NC_OK ? I.code : NC_ERR_INTERNAL;
    jbuf_free(&buf);
  } else {
    *out = buf.p ? buf.p : calloc(1, 1);
    if (!*out)
      rc = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    else if (out_len)
      *out_len = buf.n;
  }
  jinja_arena_free(I.a);
  return rc;
}
