/* jinja: a sandboxed interpreter for the Jinja2 subset that chat templates
 * use, behaving like jinja2's ImmutableSandboxedEnvironment with
 * trim_blocks, lstrip_blocks and loopcontrols (the HF transformers setup).
 *
 * There is no file, environment or Python object access. Every render is
 * bounded: steps, output bytes, memory, nesting and macro recursion. A
 * template that fails gets an error naming its line, never a crash.
 *
 * Compile once, render many: a jinja_template is immutable after compiling
 * and may be rendered from several threads at once.
 *
 * Supported: {{ }} {% %} {# #} with jinja2's whitespace control, raw;
 * if/elif/else, for (tuple targets, "if" filter, else, loop.*, break,
 * continue), set (names, tuples, ns.attr, set blocks with filters), macros
 * with defaults and keyword arguments, call blocks (caller), filter blocks,
 * with, generation (transformers' tag, rendered in place); literals, Python
 * operators and precedence, slices, attribute/item lookup with jinja2's
 * fallbacks, Undefined, Markup from safe/escape; jinja2's common filters and
 * tests, str/dict/list methods, % and str.format formatting, range,
 * namespace, dict, raise_exception, strftime_now; map/select/... return
 * one-shot generators like jinja2.
 * Not supported (an error, never a crash): include/import/extends, recursive
 * loops, *args and **kwargs, macro varargs, filters batch/slice/groupby/
 * truncate/wordwrap/center/urlize/striptags/xmlattr/pprint/random. */
#ifndef NC_JINJA_H
#define NC_JINJA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct jinja_template jinja_template;

typedef struct jinja_limits {
  size_t max_output; /* bytes of rendered text */
  size_t max_memory; /* bytes of values alive during one render */
  int64_t max_steps; /* evaluation steps ("fuel") */
  int64_t max_range; /* elements of one range() */
  size_t max_repeat; /* bytes of one string/list repetition */
} jinja_limits;

/* 1 MiB output, 32 MiB memory, 1,000,000 steps, range 100,000, 1 MiB. */
jinja_limits jinja_default_limits(void);

typedef struct jinja_render_opts {
  jinja_limits limits;
  int64_t now; /* strftime_now's clock: 0 = the current local time, else
                  seconds since the epoch shown in UTC (for tests) */
} jinja_render_opts;

jinja_render_opts jinja_default_render_opts(void);

/* Parses template text (any bytes; need not be NUL-terminated). */
nc_code jinja_compile(const char *src, size_t len, jinja_template **out,
                      nc_error *err);
void jinja_free(jinja_template *t);

/* Renders with the members of the JSON object vars as template variables
 * (JSON null becomes None). *out is malloc'd and NUL-terminated; the caller
 * frees it. Fails with NC_ERR_LIMIT for an exceeded limit, NC_ERR_FORMAT or
 * NC_ERR_INVALID_ARGUMENT for a template error or raise_exception(). */
nc_code jinja_render(const jinja_template *t, const json_t *vars,
                     const jinja_render_opts *opts, char **out, size_t *out_len,
                     nc_error *err);

#endif
