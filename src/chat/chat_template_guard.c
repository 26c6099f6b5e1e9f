/* chat_template_guard: placeholders for special-token text in contents. */
#include "chat_template_guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* U+10FFFD and U+10FFFC (private use, plane 16). */
#define MARK_OPEN "\xF4\x8F\xBF\xBD"
#define MARK_CLOSE "\xF4\x8F\xBF\xBC"
#define MARK_LEN 4
/* An index is at most 20 digits; a placeholder at most this long. */
#define PLACEHOLDER_MAX (2 * MARK_LEN + 20)

static size_t match_at(const nc_chat_guard *g, const char *s, size_t n) {
  if (n >= MARK_LEN &&
      (!memcmp(s, MARK_OPEN, MARK_LEN) || !memcmp(s, MARK_CLOSE, MARK_LEN)))
    return MARK_LEN;
  return g->match ? g->match(g->ctx, s, n) : 0;
}

static bool remember(nc_chat_guard *g, const char *s, size_t n) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 16;
    char **o = realloc(g->orig, cap * sizeof *o);
    if (!o) return false;
    g->orig = o;
    size_t *l = realloc(g->orig_len, cap * sizeof *l);
    if (!l) return false;
    g->orig_len = l;
    g->cap = cap;
  }
  char *copy = malloc(n + 1);
  if (!copy) return false;
  memcpy(copy, s, n);
  copy[n] = '\0';
  g->orig[g->n] = copy;
  g->orig_len[g->n] = n;
  g->n++;
  return true;
}

/* One string, rewritten only when something in it is protected. */
static nc_code wrap_string(nc_chat_guard *g, json_t *str, nc_error *err) {
  const char *s = json_string_value(str);
  size_t n = json_string_length(str), i = 0;
  while (i < n && !match_at(g, s + i, n - i))
    i++;
  if (i == n) return NC_OK;
  size_t count = 0;
  for (size_t j = i; j < n;) {
    size_t m = match_at(g, s + j, n - j);
    count += m > 0;
    j += m ? m : 1;
  }
  char *buf = malloc(n + count * PLACEHOLDER_MAX + 1);
  if (!buf) return nc_fail(err, NC_ERR_NOMEM, "chat template: out of memory");
  memcpy(buf, s, i);
  size_t o = i;
  while (i < n) {
    size_t m = match_at(g, s + i, n - i);
    if (!m) {
      buf[o++] = s[i++];
      continue;
    }
    if (!remember(g, s + i, m)) {
      free(buf);
      return nc_fail(err, NC_ERR_NOMEM, "chat template: out of memory");
    }
    o += (size_t)snprintf(buf + o, PLACEHOLDER_MAX + 1,
                          MARK_OPEN "%zu" MARK_CLOSE, g->n - 1);
    i += m;
  }
  int rc = json_string_setn_nocheck(str, buf, o);
  free(buf);
  return rc ? nc_fail(err, NC_ERR_NOMEM, "chat template: out of memory")
            : NC_OK;
}

nc_code nc_chat_guard_wrap(nc_chat_guard *g, json_t *v, nc_error *err) {
  nc_code rc = NC_OK;
  if (json_is_string(v)) return wrap_string(g, v, err);
  if (json_is_array(v)) {
    size_t i;
    json_t *x;
    json_array_foreach(v, i,
                       x) if ((rc = nc_chat_guard_wrap(g, x, err))) return rc;
  } else if (json_is_object(v)) {
    const char *k;
    json_t *x;
    json_object_foreach(v, k,
                        x) if ((rc = nc_chat_guard_wrap(g, x, err))) return rc;
  }
  return rc;
}

/* Parses a placeholder at s: its index and length, or false. */
static bool placeholder_at(const char *s, size_t n, size_t count, size_t *index,
                           size_t *len) {
  if (n < 2 * MARK_LEN + 1 || memcmp(s, MARK_OPEN, MARK_LEN)) return false;
  size_t i = MARK_LEN, k = 0;
  while (i < n && i < MARK_LEN + 20 && s[i] >= '0' && s[i] <= '9')
    k = k * 10 + (size_t)(s[i++] - '0');
  if (i == MARK_LEN || n - i < MARK_LEN ||
      memcmp(s + i, MARK_CLOSE, MARK_LEN) || k >= count)
    return false;
  *index = k;
  *len = i + MARK_LEN;
  return true;
}

/* One pass over the render: with buf NULL it only measures (*o, *ns). */
static nc_code unwrap_pass(const nc_chat_guard *g, const char *in, size_t n,
                           char *buf, nc_span *sp, size_t *o_out,
                           size_t *ns_out, nc_error *err) {
  size_t o = 0, ns = 0, i = 0;
  while (i < n) {
    size_t k, len;
    if ((unsigned char)in[i] == 0xF4 && g->n &&
        placeholder_at(in + i, n - i, g->n, &k, &len)) {
      if (buf) {
        memcpy(buf + o, g->orig[k], g->orig_len[k]);
        sp[ns] = (nc_span){o, g->orig_len[k]};
      }
      ns++;
      o += g->orig_len[k];
      i += len;
      continue;
    }
    if (n - i >= MARK_LEN && (!memcmp(in + i, MARK_OPEN, MARK_LEN) ||
                              !memcmp(in + i, MARK_CLOSE, MARK_LEN)))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "chat template: the template cut apart special-token "
                     "text of a message; render it with "
                     "parse_special_in_content");
    if (buf) buf[o] = in[i];
    o++;
    i++;
  }
  *o_out = o;
  *ns_out = ns;
  return NC_OK;
}

nc_code nc_chat_guard_unwrap(const nc_chat_guard *g, const char *in, size_t n,
                             char **out, size_t *out_len, nc_span **spans,
                             size_t *n_spans, nc_error *err) {
  *out = NULL;
  *out_len = 0;
  *spans = NULL;
  *n_spans = 0;
  size_t len = 0, ns = 0;
  nc_code rc = unwrap_pass(g, in, n, NULL, NULL, &len, &ns, err);
  if (rc != NC_OK) return rc;
  char *buf = malloc(len + 1);
  nc_span *sp = ns ? malloc(ns * sizeof *sp) : NULL;
  if (!buf || (ns && !sp)) {
    free(buf);
    free(sp);
    return nc_fail(err, NC_ERR_NOMEM, "chat template: out of memory");
  }
  unwrap_pass(g, in, n, buf, sp, &len, &ns, err);
  buf[len] = '\0';
  *out = buf;
  *out_len = len;
  *spans = sp;
  *n_spans = ns;
  return NC_OK;
}

void nc_chat_guard_free(nc_chat_guard *g) {
  for (size_t i = 0; i < g->n; i++)
    free(g->orig[i]);
  free(g->orig);
  free(g->orig_len);
  memset(g, 0, sizeof *g);
}
