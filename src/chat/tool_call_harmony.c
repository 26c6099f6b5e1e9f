/* tool_call_harmony: the scanner of tool_call.h for gpt-oss's harmony
 * format. A reply (after the generation prompt's "<|start|>assistant") is a
 * sequence of messages, each a header and a body:
 *
 *   [<|start|>assistant][ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT]
 *   [ <|constrain|>TYPE | TYPE]<|message|>BODY(<|end|> | <|call|> |
 *   <|return|> | the next <|start|> | the end of the reply)
 *
 * The analysis channel's bodies are the reasoning, the final channel's the
 * content, a body addressed to functions.NAME a call (its JSON object the
 * arguments; any other JSON is content), and commentary to nobody (a
 * preamble) content too. Text outside any message (a reply that never
 * opened one) is content. Reasoning and content are decided as they come
 * (but for a tail that may grow into a marker); a call when its body ends. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_compact.h"
#include "tool_call.h"

#define NAME_MAX_BYTES 256

static const char START[] = "<|start|>", CHANNEL[] = "<|channel|>",
                  MESSAGE[] = "<|message|>", END[] = "<|end|>",
                  CALL[] = "<|call|>", RETURN[] = "<|return|>",
                  CONSTRAIN[] = "<|constrain|>";

typedef struct {
  const char *s;
  size_t len;
  bool final;
  nc_tool_scan_result *out;
  bool oom;
} scan;

static void append(scan *sc, char **buf, size_t *blen, const char *p,
                   size_t n) {
  if (!n || sc->oom) return;
  char *c = realloc(*buf, *blen + n + 1);
  if (!c) {
    sc->oom = true;
    return;
  }
  memcpy(c + *blen, p, n);
  *blen += n;
  c[*blen] = '\0';
  *buf = c;
}

static const char *find(const char *s, size_t len, size_t from,
                        const char *lit) {
  if (from > len) return NULL;
  return memmem(s + from, len - from, lit, strlen(lit));
}

static bool starts(const char *p, size_t n, const char *lit) {
  size_t l = strlen(lit);
  return n >= l && !memcmp(p, lit, l);
}

/* The bytes at the end of s[from, len) that may begin a marker: held back
 * while the reply goes on. */
static size_t marker_tail(const char *s, size_t len, size_t from) {
  static const char *const markers[] = {START, CHANNEL, MESSAGE,  END,
                                        CALL,  RETURN,  CONSTRAIN};
  size_t best = 0;
  for (size_t m = 0; m < sizeof markers / sizeof markers[0]; m++) {
    size_t l = strlen(markers[m]);
    for (size_t k = l - 1; k > best; k--)
      if (k <= len - from && !memcmp(s + len - k, markers[m], k)) {
        best = k;
        break;
      }
  }
  return best;
}

/* The first body terminator at or after from: its offset (len: none) and
 * its length (0 for <|start|>, which begins the next message). */
static size_t body_end(const char *s, size_t len, size_t from, size_t *tlen) {
  static const char *const ends[] = {END, CALL, RETURN, START};
  size_t best = len;
  *tlen = 0;
  for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
    const char *hit = find(s, len, from, ends[i]);
    if (hit && (size_t)(hit - s) < best) {
      best = (size_t)(hit - s);
      *tlen = ends[i] == START ? 0 : strlen(ends[i]);
    }
  }
  return best;
}

/* The word after key in the header h[0, n) (up to a blank or '<'). */
static bool header_word(const char *h, size_t n, const char *key,
                        const char **w, size_t *wl) {
  const char *k = memmem(h, n, key, strlen(key));
  if (!k) return false;
  const char *p = k + strlen(key), *e = h + n;
  const char *q = p;
  while (q < e && *q != ' ' && *q != '<' && *q != '\n')
    q++;
  *w = p;
  *wl = (size_t)(q - p);
  return true;
}

static bool valid_name(const char *p, size_t n) {
  if (!n || n > NAME_MAX_BYTES) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] < 0x20 || p[i] == '"' || p[i] == '\\') return false;
  return true;
}

/* A call to name with the JSON object body (false: not one). */
static bool push_call(scan *sc, const char *name, size_t nl, const char *body,
                      size_t bl) {
  json_error_t e;
  json_t *o = json_loadb(body, bl, 0, &e);
  bool ok = json_is_object(o) && valid_name(name, nl);
  if (ok) {
    nc_tool_scan_result *r = sc->out;
    nc_tool_call *v = realloc(r->calls, (r->n_calls + 1) * sizeof *v);
    char *args = nc_json_compact(o), *nm = malloc(nl + 1);
    if (!v || !args || !nm) {
      if (v) r->calls = v;
      free(args);
      free(nm);
      sc->oom = true;
    } else {
      memcpy(nm, name, nl);
      nm[nl] = '\0';
      r->calls = v;
      v[r->n_calls++] = (nc_tool_call){.name = nm, .arguments = args};
    }
  }
  json_decref(o);
  return ok;
}

/* Where a header may begin at s[i]: a marker that opens one, or (at the
 * start of the reply) the recipient of a call. */
static bool header_starts(const scan *sc, size_t i) {
  const char *p = sc->s + i;
  size_t n = sc->len - i;
  return starts(p, n, START) || starts(p, n, CHANNEL) ||
         (i == 0 && starts(p, n, " to="));
}

static bool header_may_start(const scan *sc, size_t i) {
  const char *p = sc->s + i;
  size_t n = sc->len - i;
  return !memcmp(p, START, n < strlen(START) ? n : strlen(START)) ||
         !memcmp(p, CHANNEL, n < strlen(CHANNEL) ? n : strlen(CHANNEL)) ||
         (i == 0 && !memcmp(p, " to=", n < 4 ? n : 4));
}

nc_code nc_harmony_scan(const char *reply, size_t len, bool final,
                        bool reasoning_inline, nc_tool_scan_result *out,
                        nc_error *err) {
  nc_tool_scan_result_clear(out);
  scan sc = {.s = reply, .len = len, .final = final, .out = out};
  nc_tool_scan_result *r = out;
  size_t pos = 0;
  while (pos < len && !sc.oom) {
    if (!header_starts(&sc, pos)) {
      if (!final && header_may_start(&sc, pos)) break; /* a marker begun */
      /* text outside a message: content up to the next header */
      const char *a = find(reply, len, pos + 1, START);
      const char *b = find(reply, len, pos + 1, CHANNEL);
      size_t next = len;
      if (a) next = (size_t)(a - reply);
      if (b && (size_t)(b - reply) < next) next = (size_t)(b - reply);
      size_t keep = next == len && !final ? marker_tail(reply, len, pos) : 0;
      append(&sc, &r->content, &r->content_len, reply + pos, next - pos - keep);
      pos = next - keep;
      if (keep) break;
      continue;
    }
    const char *m = find(reply, len, pos, MESSAGE);
    if (!m) { /* a header not finished */
      if (final) {
        append(&sc, &r->content, &r->content_len, reply + pos, len - pos);
        pos = len;
      }
      break;
    }
    const char *h = reply + pos;
    const size_t hn = (size_t)(m - h);
    const char *ch = NULL, *to = NULL;
    size_t chn = 0, ton = 0;
    header_word(h, hn, CHANNEL, &ch, &chn);
    header_word(h, hn, "to=", &to, &ton);
    const size_t b0 = (size_t)(m - reply) + strlen(MESSAGE);
    size_t tlen;
    const size_t b1 = body_end(reply, len, b0, &tlen);
    const bool is_call =
        to && ton > strlen("functions.") && starts(to, ton, "functions.");
    const bool analysis =
        !reasoning_inline && ch && chn == 8 && !memcmp(ch, "analysis", 8);
    char **dst = analysis ? &r->reasoning : &r->content;
    size_t *dlen = analysis ? &r->reasoning_len : &r->content_len;
    if (b1 == len && !final) { /* the body goes on */
      if (is_call) break;      /* a call is decided when it ends */
      size_t keep = marker_tail(reply, len, b0);
      append(&sc, dst, dlen, reply + b0, len - b0 - keep);
      /* what is decided of a body in progress: its text so far; the next
       * scan starts again at its header and appends the same bytes */
      pos = len - keep;
      break;
    }
    if (is_call) {
      const char *name = to + strlen("functions.");
      if (!push_call(&sc, name, ton - strlen("functions."), reply + b0,
                     b1 - b0))
        append(&sc, &r->content, &r->content_len, reply + b0, b1 - b0);
    } else {
      append(&sc, dst, dlen, reply + b0, b1 - b0);
    }
    pos = b1 + tlen;
  }
  out->decided = pos;
  if (!out->content && !sc.oom) {
    out->content = calloc(1, 1);
    if (!out->content) sc.oom = true;
  }
  if (sc.oom) {
    nc_tool_scan_result_clear(out);
    return nc_fail(err, NC_ERR_NOMEM, "out of memory parsing a harmony reply");
  }
  return NC_OK;
}
