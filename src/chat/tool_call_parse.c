/* tool_call_parse: the scanner of tool_call.h. Each format's block parser
 * looks at the text from an opener and says: a complete block (its calls,
 * where it ends), a malformed one (content, where it ends), or that it
 * needs more text. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_compact.h"
#include "tool_call.h"

#define NAME_MAX_BYTES 256

typedef enum { BLOCK_MORE, BLOCK_CALLS, BLOCK_CONTENT } block_kind;

typedef struct {
  const char *s;
  size_t len;
  bool final;
  nc_tool_scan_result *out;
  bool oom;
} scan;

/* ---- result building */

static void append_content(scan *sc, const char *p, size_t n) {
  if (!n || sc->oom) return;
  nc_tool_scan_result *r = sc->out;
  char *c = realloc(r->content, r->content_len + n + 1);
  if (!c) {
    sc->oom = true;
    return;
  }
  memcpy(c + r->content_len, p, n);
  r->content_len += n;
  c[r->content_len] = '\0';
  r->content = c;
}

static char *dup_n(const char *p, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, p, n);
    d[n] = '\0';
  }
  return d;
}

static void call_clear(nc_tool_call *c) {
  free(c->name);
  free(c->arguments);
  free(c->id);
  memset(c, 0, sizeof *c);
}

/* A block's calls, collected before the block is known to be whole. */
typedef struct {
  nc_tool_call *v;
  size_t n, cap;
  bool oom;
} calls;

static void calls_clear(calls *c) {
  for (size_t i = 0; i < c->n; i++)
    call_clear(&c->v[i]);
  free(c->v);
  memset(c, 0, sizeof *c);
}

static bool calls_push(calls *c, nc_tool_call call) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 4;
    nc_tool_call *v = realloc(c->v, cap * sizeof *v);
    if (!v) {
      call_clear(&call);
      c->oom = true;
      return false;
    }
    c->v = v;
    c->cap = cap;
  }
  c->v[c->n++] = call;
  return true;
}

static void commit_calls(scan *sc, calls *c) {
  nc_tool_scan_result *r = sc->out;
  if (c->oom) sc->oom = true;
  if (!c->n || sc->oom) {
    calls_clear(c);
    return;
  }
  nc_tool_call *v = realloc(r->calls, (r->n_calls + c->n) * sizeof *v);
  if (!v) {
    sc->oom = true;
    calls_clear(c);
    return;
  }
  memcpy(v + r->n_calls, c->v, c->n * sizeof *v);
  r->calls = v;
  r->n_calls += c->n;
  free(c->v);
  memset(c, 0, sizeof *c);
}

/* ---- text helpers */

static bool starts(const char *p, size_t n, const char *lit) {
  size_t l = strlen(lit);
  return n >= l && !memcmp(p, lit, l);
}

/* p[0, n) is a proper prefix of lit. */
static bool may_become(const char *p, size_t n, const char *lit) {
  return n < strlen(lit) && !memcmp(p, lit, n);
}

static size_t skip_ws(const char *s, size_t len, size_t i) {
  while (i < len &&
         (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
    i++;
  return i;
}

static const char *find(const char *s, size_t len, size_t from,
                        const char *lit) {
  if (from > len) return NULL;
  return memmem(s + from, len - from, lit, strlen(lit));
}

/* The end (one past) of the JSON object or array starting at s[i]; 0 when
 * the text ends first; SIZE_MAX when s[i] opens neither. Strings and their
 * escapes are skipped; the syntax inside is json_loadb's to judge. */
static size_t json_end(const char *s, size_t len, size_t i) {
  if (i >= len) return 0;
  if (s[i] != '{' && s[i] != '[') return SIZE_MAX;
  size_t depth = 0;
  bool in_str = false;
  for (; i < len; i++) {
    char c = s[i];
    if (in_str) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return 0;
}

/* ---- one call from JSON */

/* arguments: an object (dumped compactly) or a string holding one. */
static char *arguments_text(const json_t *a) {
  if (json_is_object(a)) return nc_json_compact(a);
  if (json_is_string(a)) {
    json_error_t e;
    json_t *o = json_loadb(json_string_value(a), json_string_length(a), 0, &e);
    char *t = json_is_object(o) ? nc_json_compact(o) : NULL;
    json_decref(o);
    return t;
  }
  return NULL;
}

static bool valid_name(const char *p, size_t n) {
  if (!n || n > NAME_MAX_BYTES) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] < 0x20 || p[i] == '"' || p[i] == '\\') return false;
  return true;
}

/* {"name": ..., "arguments"|"parameters": {...}} (+ "id") into c. */
static bool call_from_object(const json_t *o, calls *c) {
  const json_t *name = json_object_get(o, "name");
  const json_t *args = json_object_get(o, "arguments");
  if (!args) args = json_object_get(o, "parameters");
  if (!json_is_string(name) ||
      !valid_name(json_string_value(name), json_string_length(name)))
    return false;
  nc_tool_call call = {0};
  call.arguments = args ? arguments_text(args) : dup_n("{}", 2);
  if (!call.arguments) return false;
  call.name = dup_n(json_string_value(name), json_string_length(name));
  const json_t *id = json_object_get(o, "id");
  if (json_is_string(id) &&
      valid_name(json_string_value(id), json_string_length(id)))
    call.id = dup_n(json_string_value(id), json_string_length(id));
  if (!call.name) {
    call_clear(&call);
    c->oom = true;
    return false;
  }
  return calls_push(c, call);
}

/* A call written as its name, its arguments object (JSON text) and
 * perhaps an id, each apart (mistral-args, deepseek-r1). */
static bool call_from_parts(const char *name, size_t name_len, const char *args,
                            size_t args_len, const char *id, size_t id_len,
                            calls *c) {
  json_error_t e;
  json_t *o = json_loadb(args, args_len, 0, &e);
  bool ok = json_is_object(o) && valid_name(name, name_len);
  if (ok) {
    nc_tool_call call = {.name = dup_n(name, name_len),
                         .arguments = nc_json_compact(o)};
    if (id && valid_name(id, id_len)) call.id = dup_n(id, id_len);
    if (!call.name || !call.arguments) {
      call_clear(&call);
      c->oom = true;
      ok = false;
    } else {
      ok = calls_push(c, call);
    }
  }
  json_decref(o);
  return ok;
}

/* A JSON text s[a, b) holding one call object, or an array of them. */
static bool calls_from_json(const char *s, size_t a, size_t b, bool array,
                            calls *c) {
  json_error_t e;
  json_t *j = json_loadb(s + a, b - a, 0, &e);
  bool ok = false;
  if (array && json_is_array(j) && json_array_size(j)) {
    ok = true;
    size_t i;
    json_t *o;
    json_array_foreach(j, i, o) if (!call_from_object(o, c)) ok = false;
  } else if (!array && json_is_object(j)) {
    ok = call_from_object(j, c);
  }
  json_decref(j);
  return ok;
}

/* ---- the block parsers: from the opener at s[at] (opener bytes olen) */

typedef struct {
  block_kind kind;
  size_t end; /* CALLS / CONTENT: one past the block */
} block;

/* <tool_call> JSON </tool_call> */
static block tagged(scan *sc, size_t at, size_t olen, const char *close,
                    calls *c) {
  const char *e = find(sc->s, sc->len, at + olen, close);
  if (!e) return (block){BLOCK_MORE, 0};
  size_t b = (size_t)(e - sc->s), end = b + strlen(close);
  size_t a = skip_ws(sc->s, b, at + olen);
  while (b > a && strchr(" \n\t\r", sc->s[b - 1]))
    b--;
  if (a < b && calls_from_json(sc->s, a, b, false, c))
    return (block){BLOCK_CALLS, end};
  return (block){BLOCK_CONTENT, end};
}

/* opener, then one JSON array of calls (mistral, granite) */
static block json_array_block(scan *sc, size_t at, size_t olen, calls *c) {
  size_t a = skip_ws(sc->s, sc->len, at + olen);
  size_t end = json_end(sc->s, sc->len, a);
  if (end == 0) return (block){BLOCK_MORE, 0};
  if (end == SIZE_MAX || sc->s[a] != '[') return (block){BLOCK_CONTENT, a};
  if (calls_from_json(sc->s, a, end, true, c)) return (block){BLOCK_CALLS, end};
  return (block){BLOCK_CONTENT, end};
}

/* [TOOL_CALLS]name[CALL_ID]id[ARGS]{...} */
static block mistral_args(scan *sc, size_t at, size_t olen, calls *c) {
  const char *s = sc->s;
  size_t name0 = at + olen;
  const char *args = find(s, sc->len, name0, "[ARGS]");
  if (!args) return (block){BLOCK_MORE, 0};
  size_t name1 = (size_t)(args - s);
  const char *cid = find(s, name1, name0, "[CALL_ID]");
  size_t id0 = 0, id1 = 0;
  if (cid) {
    id0 = (size_t)(cid - s) + strlen("[CALL_ID]");
    id1 = name1;
    name1 = (size_t)(cid - s);
  }
  size_t a = (size_t)(args - s) + strlen("[ARGS]");
  size_t end = json_end(s, sc->len, a);
  if (end == 0) return (block){BLOCK_MORE, 0};
  if (end == SIZE_MAX || s[a] != '{') return (block){BLOCK_CONTENT, a};
  bool ok = call_from_parts(s + name0, name1 - name0, s + a, end - a,
                            cid ? s + id0 : NULL, id1 - id0, c);
  return (block){ok ? BLOCK_CALLS : BLOCK_CONTENT, end};
}

/* Llama 3: JSON calls separated by ';' (after <|python_tag|> or as the
 * whole reply). The block ends where the text after a call is neither ';'
 * nor whitespace, or at the end of a final reply. */
static block llama3(scan *sc, size_t at, size_t olen, calls *c) {
  const char *s = sc->s;
  size_t i = skip_ws(s, sc->len, at + olen);
  for (;;) {
    size_t end = json_end(s, sc->len, i);
    if (end == 0) return (block){BLOCK_MORE, 0};
    if (end == SIZE_MAX || s[i] != '{' || !calls_from_json(s, i, end, false, c))
      return (block){BLOCK_CONTENT, end == 0 || end == SIZE_MAX ? i : end};
    size_t j = skip_ws(s, sc->len, end);
    if (j == sc->len)
      return sc->final ? (block){BLOCK_CALLS, j} : (block){BLOCK_MORE, 0};
    if (s[j] != ';') return (block){BLOCK_CALLS, end};
    i = skip_ws(s, sc->len, j + 1);
    if (i == sc->len)
      return sc->final ? (block){BLOCK_CALLS, j + 1} : (block){BLOCK_MORE, 0};
  }
}

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
#define R1_CALLS_END                                                           \
  "<\xef\xbd\x9ctool\xe2\x96\x81"                                              \
  "calls\xe2\x96\x81"                                                          \
  "end\xef\xbd\x9c>"

/* DeepSeek R1: calls, each type<sep>name\n```json\n{...}\n```<call end>,
 * until <calls end> (or the end of a final reply after a whole call). */
static block deepseek_r1(scan *sc, size_t at, size_t olen, calls *c) {
  const char *s = sc->s;
  size_t i = at + olen;
  for (;;) {
    i = skip_ws(s, sc->len, i);
    if (starts(s + i, sc->len - i, R1_CALLS_END))
      return (block){c->n ? BLOCK_CALLS : BLOCK_CONTENT,
                     i + strlen(R1_CALLS_END)};
    if (i == sc->len)
      return sc->final && c->n ? (block){BLOCK_CALLS, i}
                               : (block){BLOCK_MORE, 0};
    if (!starts(s + i, sc->len - i, R1_CALL_BEGIN)) {
      if (!sc->final && (may_become(s + i, sc->len - i, R1_CALL_BEGIN) ||
                         may_become(s + i, sc->len - i, R1_CALLS_END)))
        return (block){BLOCK_MORE, 0};
      return (block){BLOCK_CONTENT, i};
    }
    const char *end = find(s, sc->len, i, R1_CALL_END);
    if (!end) return (block){BLOCK_MORE, 0};
    size_t e = (size_t)(end - s);
    const char *sep = find(s, e, i, R1_SEP);
    const char *nl = sep ? memchr(sep, '\n', (size_t)(s + e - sep)) : NULL;
    const char *js = nl ? find(s, e, (size_t)(nl - s), "{") : NULL;
    size_t je = js ? json_end(s, e, (size_t)(js - s)) : 0;
    if (!sep || !nl || !js || je == 0 || je == SIZE_MAX)
      return (block){BLOCK_CONTENT, e + strlen(R1_CALL_END)};
    size_t n0 = (size_t)(sep - s) + strlen(R1_SEP), n1 = (size_t)(nl - s);
    bool ok =
        call_from_parts(s + n0, n1 - n0, js, je - (size_t)(js - s), NULL, 0, c);
    if (!ok) return (block){BLOCK_CONTENT, e + strlen(R1_CALL_END)};
    i = e + strlen(R1_CALL_END);
  }
}

/* Gemma 4: call:NAME{arguments in its syntax} up to <tool_call|> */
static block gemma4(scan *sc, size_t at, size_t olen, calls *c) {
  const char *s = sc->s;
  const char *close = find(s, sc->len, at + olen, "<tool_call|>");
  if (!close) return (block){BLOCK_MORE, 0};
  const size_t b = (size_t)(close - s), end = b + strlen("<tool_call|>");
  size_t a = at + olen;
  if (!starts(s + a, b - a, "call:")) return (block){BLOCK_CONTENT, end};
  a += strlen("call:");
  const char *brace = memchr(s + a, '{', b - a);
  if (!brace) return (block){BLOCK_CONTENT, end};
  const size_t n1 = (size_t)(brace - s);
  char *args = nc_gemma4_args_json(brace, b - n1);
  bool ok =
      args && call_from_parts(s + a, n1 - a, args, strlen(args), NULL, 0, c);
  free(args);
  return (block){ok ? BLOCK_CALLS : BLOCK_CONTENT, end};
}

static block parse_block(scan *sc, nc_tool_format f, size_t at, size_t olen,
                         calls *c) {
  switch (f) {
  case NC_TOOL_FORMAT_LLAMA3: return llama3(sc, at, olen, c);
  case NC_TOOL_FORMAT_MISTRAL:
  case NC_TOOL_FORMAT_GRANITE: return json_array_block(sc, at, olen, c);
  case NC_TOOL_FORMAT_MISTRAL_ARGS: return mistral_args(sc, at, olen, c);
  case NC_TOOL_FORMAT_DEEPSEEK_R1: return deepseek_r1(sc, at, olen, c);
  case NC_TOOL_FORMAT_GEMMA4: return gemma4(sc, at, olen, c);
  default: return tagged(sc, at, olen, "</tool_call>", c);
  }
}

/* ---- finding openers */

/* The first opener at or after from: its offset (len when none) and its
 * length. *partial: the bytes at the end that may be the start of one. */
static size_t next_opener(const scan *sc, nc_tool_format f, size_t from,
                          size_t *olen, size_t *partial) {
  const char *const *op = nc_tool_format_openers(f);
  size_t best = sc->len;
  *olen = 0;
  *partial = 0;
  for (; *op; op++) {
    size_t l = strlen(*op);
    if (f == NC_TOOL_FORMAT_LLAMA3 && !strcmp(*op, "{")) {
      /* Only as the first non-blank byte of the reply. */
      size_t i = skip_ws(sc->s, sc->len, 0);
      if (from <= i && i < sc->len && sc->s[i] == '{' && i < best) {
        best = i;
        *olen = 0;
      }
      continue;
    }
    const char *hit = find(sc->s, sc->len, from, *op);
    if (hit && (size_t)(hit - sc->s) < best) {
      best = (size_t)(hit - sc->s);
      *olen = l;
    }
    /* The longest proper prefix of the opener ending the text. */
    for (size_t k = l - 1; k > 0; k--) {
      if (k <= sc->len - from && !memcmp(sc->s + sc->len - k, *op, k)) {
        if (k > *partial) *partial = k;
        break;
      }
    }
  }
  if (f == NC_TOOL_FORMAT_LLAMA3 && from == 0 &&
      skip_ws(sc->s, sc->len, 0) == sc->len && sc->len >= *partial)
    *partial = sc->len; /* all blank so far: a '{' may still come */
  return best;
}

nc_code nc_tool_scan(nc_tool_format f, const char *reply, size_t len,
                     bool final, nc_tool_scan_result *out, nc_error *err) {
  if (f == NC_TOOL_FORMAT_HARMONY)
    return nc_harmony_scan(reply, len, final, false, out, err);
  nc_tool_scan_result_clear(out);
  scan sc = {.s = reply, .len = len, .final = final, .out = out};
  size_t pos = 0;
  while (pos < len && !sc.oom) {
    size_t olen, partial;
    size_t at = next_opener(&sc, f, pos, &olen, &partial);
    if (at == len) {
      size_t keep = final ? 0 : partial;
      if (keep > len - pos) keep = len - pos;
      append_content(&sc, reply + pos, len - pos - keep);
      pos = len - keep;
      break;
    }
    append_content(&sc, reply + pos, at - pos);
    pos = at;
    calls c = {0};
    block b = parse_block(&sc, f, at, olen, &c);
    if (b.kind == BLOCK_MORE) {
      calls_clear(&c);
      if (final) {
        append_content(&sc, reply + at, len - at);
        pos = len;
      }
      break;
    }
    if (b.end <= at) b.end = at + (olen ? olen : 1); /* always progress */
    if (b.kind == BLOCK_CALLS && !c.oom) {
      commit_calls(&sc, &c);
    } else {
      if (c.oom) sc.oom = true;
      calls_clear(&c);
      append_content(&sc, reply + at, b.end - at);
    }
    pos = b.end;
  }
  out->decided = pos;
  if (!out->content && !sc.oom) {
    out->content = calloc(1, 1);
    if (!out->content) sc.oom = true;
  }
  if (sc.oom) {
    nc_tool_scan_result_clear(out);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory parsing tool calls");
  }
  return NC_OK;
}

void nc_tool_scan_result_clear(nc_tool_scan_result *r) {
  for (size_t i = 0; i < r->n_calls; i++)
    call_clear(&r->calls[i]);
  free(r->calls);
  free(r->content);
  free(r->reasoning);
  memset(r, 0, sizeof *r);
}
