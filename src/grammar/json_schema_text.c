/* json_schema: the GBNF text builder and the errors (first failure wins). */
#include "json_schema_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void js_sb_add(sb *b, const char *s, size_t len) {
  if (b->oom || b->big) return;
  if (len > MAX_GBNF - b->n) {
    b->big = true;
    return;
  }
  if (b->n + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + len + 1)
      cap *= 2;
    char *ns = realloc(b->s, cap);
    if (!ns) {
      b->oom = true;
      return;
    }
    b->s = ns;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, len);
  b->n += len;
  b->s[b->n] = '\0';
}

void js_sb_printf(sb *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    js_sb_add(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  js_sb_add(b, big, (size_t)n);
  free(big);
}

/* A GBNF literal for bytes s. */
void js_sb_lit(sb *b, const char *s, size_t len) {
  js_sb_add(b, "\"", 1);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      js_sb_add(b, e, 2);
    } else if (c < 0x20 || c == 0x7F) {
      js_sb_printf(b, "\\x%02X", c);
    } else {
      js_sb_add(b, (const char *)&c, 1);
    }
  }
  js_sb_add(b, "\"", 1);
}

/* The first failure wins: its code and message are what the caller gets. */
static int vfail(ctx *c, nc_code code, const char *fmt, va_list ap) {
  if (c->code == NC_OK) {
    c->code = code;
    if (c->err) {
      c->err->code = code;
      size_t cap = sizeof c->err->message;
      int n = vsnprintf(c->err->message, cap, fmt, ap);
      /* Where: the schema's JSON pointer, as a URI fragment. */
      if (n >= 0 && (size_t)n < cap)
        snprintf(c->err->message + n, cap - (size_t)n, " (at #%s)", c->ptr);
    }
  }
  return -1;
}

int js_fail(ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, NC_ERR_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return -1;
}

/* A bound on what the schema makes (rules, $refs, the grammar's size). */
int js_fail_limit(ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, NC_ERR_LIMIT, fmt, ap);
  va_end(ap);
  return -1;
}

int js_fail_unsat(ctx *c, const char *fmt, ...) {
  if (c->code == NC_OK) c->unsat = true;
  va_list ap;
  va_start(ap, fmt);
  vfail(c, NC_ERR_INVALID_ARGUMENT, fmt, ap);
  va_end(ap);
  return -1;
}

js_mark js_mark_here(const ctx *c) {
  return (js_mark){.out_n = c->out.n,
                   .notes_n = c->notes.n,
                   .uniq_n = c->uniq.n,
                   .n_rules = c->n_rules,
                   .n_refs = c->n_refs,
                   .n_notes = c->n_notes,
                   .out_big = c->out.big};
}

void js_undo(ctx *c, js_mark m) {
  if (c->out.oom || c->notes.oom) return; /* the compile fails on it */
  c->code = NC_ERR_INVALID_ARGUMENT;      /* what js_retry undoes */
  js_retry(c, m);
}

bool js_recover(ctx *c, js_mark m) {
  return c->unsat && js_retry(c, m);
}

bool js_retry(ctx *c, js_mark m) {
  if (c->code != NC_ERR_INVALID_ARGUMENT || c->out.oom || c->notes.oom)
    return false;
  c->out.n = m.out_n;
  if (c->out.s) c->out.s[m.out_n] = '\0';
  c->out.big = m.out_big;
  c->notes.n = m.notes_n;
  if (c->notes.s) c->notes.s[m.notes_n] = '\0';
  c->uniq.n = m.uniq_n;
  if (c->uniq.s) c->uniq.s[m.uniq_n] = '\0';
  c->n_rules = m.n_rules;
  c->n_refs = m.n_refs;
  c->n_notes = m.n_notes;
  c->code = NC_OK;
  c->unsat = false;
  if (c->err) {
    c->err->code = NC_OK;
    c->err->message[0] = '\0';
  }
  return true;
}

int js_fail_oom(ctx *c) {
  if (c->code == NC_OK)
    c->code = nc_fail(c->err, NC_ERR_NOMEM, "out of memory");
  return -1;
}

int js_fail_big(ctx *c) {
  return js_fail_limit(c, "the schema's grammar would be longer than %u bytes",
                       (unsigned)MAX_GBNF);
}

size_t js_ptr_push(ctx *c, const char *seg) {
  size_t at = c->ptr_len;
  char buf[MAX_POINTER];
  size_t n = 0;
  buf[n++] = '/';
  for (const char *p = seg; *p && n + 3 < sizeof buf; p++) {
    if (*p == '~' || *p == '/') {
      buf[n++] = '~';
      buf[n++] = *p == '~' ? '0' : '1';
    } else {
      buf[n++] = *p;
    }
  }
  if (c->ptr_len + n >= MAX_POINTER) { /* too deep to say: cut */
    n = MAX_POINTER - 1 - c->ptr_len;
  }
  memcpy(c->ptr + c->ptr_len, buf, n);
  c->ptr_len += n;
  c->ptr[c->ptr_len] = '\0';
  return at;
}

size_t js_ptr_push_index(ctx *c, size_t i) {
  char seg[24];
  snprintf(seg, sizeof seg, "%zu", i);
  return js_ptr_push(c, seg);
}

void js_ptr_pop(ctx *c, size_t len) {
  c->ptr_len = len;
  c->ptr[len] = '\0';
}

void js_note(ctx *c, const char *fmt, ...) {
  if (c->n_notes++ >= MAX_NOTES) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* One comment line: no control characters in it. */
  for (char *p = line; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7F) *p = '?';
  js_sb_printf(&c->notes, "# json-schema: %s (at #%.200s)\n", line, c->ptr);
}

json_t *js_own(ctx *c, json_t *v) {
  if (!v || json_array_append_new(c->owned, v)) {
    js_fail_oom(c);
    return NULL;
  }
  return v;
}

int js_new_rule(ctx *c) {
  if (c->n_rules >= MAX_RULES) return js_fail_limit(c, "schema too large");
  if (c->out.big) return js_fail_big(c);
  return c->n_rules++;
}

void js_emit(ctx *c, int id, sb *body) {
  js_sb_printf(&c->out, "r%d ::= %s\n", id, body->s ? body->s : "\"\"");
  if (body->oom) c->out.oom = true;
  if (body->big) c->out.big = true;
  free(body->s);
}

int js_get_count(ctx *c, const json_t *s, const char *key, long long dflt,
                 long long *out) {
  const json_t *v = json_object_get(s, key);
  *out = dflt;
  if (!v) return 0;
  /* 2.0 is an integer to JSON Schema. */
  double d = json_is_number(v) ? json_number_value(v) : -1;
  if (!json_is_number(v) || d < 0 || d != (double)(long long)d)
    return js_fail(c, "'%s' must be an integer of at least 0", key);
  /* A maximum past what the grammar repeats allows all it makes. */
  if (d > MAX_COUNT && !strncmp(key, "max", 3)) d = MAX_COUNT;
  if (d > MAX_COUNT)
    return js_fail(c, "'%s' must be an integer in [0, %d]", key, MAX_COUNT);
  *out = (long long)d;
  return 0;
}

/* x repeated {min, max} (max < 0: unbounded) with separator sep between. */
void js_repeat_sep(sb *b, const char *x, const char *sep, long long min,
                   long long max) {
  if (max == 0) {
    js_sb_add(b, "\"\"", 2);
    return;
  }
  if (min == 0) js_sb_add(b, "( ", 2);
  js_sb_printf(b, "%s ", x);
  if (max < 0 && min > 1)
    js_sb_printf(b, "( %s %s ){%lld,}", sep, x, min - 1);
  else if (max < 0)
    js_sb_printf(b, "( %s %s )*", sep, x);
  else if (max > 1)
    js_sb_printf(b, "( %s %s ){%lld,%lld}", sep, x, min > 0 ? min - 1 : 0,
                 max - 1);
  else if (min > 1)
    js_sb_printf(b, "( %s %s ){%lld}", sep, x, min - 1);
  if (min == 0) js_sb_add(b, " )?", 3);
}
