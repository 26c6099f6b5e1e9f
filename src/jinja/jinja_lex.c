/* jinja_lex: the tokenizer (see jinja_lex.h for the rules it follows). */
#include "jinja_lex.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_utf8.h"

#define MAX_BALANCE 256

typedef struct lexer {
  jinja_arena *a;
  nc_error *err;
  const char *s; /* normalised source */
  size_t n, pos;
  int line;
  bool line_starting;
  jtok *toks;
  size_t nt, cap;
} lexer;

static nc_code lex_fail(lexer *L, const char *msg) {
  return nc_fail(L->err, NC_ERR_FORMAT, "template line %d: %s", L->line, msg);
}

static bool push(lexer *L, jtok t) {
  if (L->nt == L->cap) {
    size_t cap = L->cap ? L->cap * 2 : 256;
    jtok *p = realloc(L->toks, cap * sizeof *p);
    if (!p) return false;
    L->toks = p;
    L->cap = cap;
  }
  L->toks[L->nt++] = t;
  return true;
}

static void count_lines(lexer *L, const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] == '\n') L->line++;
}

/* Length of s[0..n) without trailing Python whitespace. */
static size_t rstrip_len(const char *s, size_t n) {
  size_t end = n;
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && ((unsigned char)s[start] & 0xC0) == 0x80 &&
           end - start < 4)
      start--;
    size_t adv;
    uint32_t cp = ju_decode(s + start, end - start, &adv);
    if (start + adv != end) cp = (unsigned char)s[end - 1], start = end - 1;
    if (!ju_isspace(cp)) break;
    end = start;
  }
  return end;
}

static bool all_space(const char *s, size_t n) {
  size_t i = 0, adv;
  if (n == 0) return false; /* jinja2 matches \s+ : needs one char */
  while (i < n) {
    if (!ju_isspace(ju_decode(s + i, n - i, &adv))) return false;
    i += adv;
  }
  return true;
}

/* Applies jinja2's OptionalLStrip to text before a tag and emits it. */
static bool emit_text(lexer *L, const char *text, size_t n, char sign,
                      bool is_var) {
  int line = L->line;
  count_lines(L, text, n);
  if (sign == '-') {
    n = rstrip_len(text, n);
  } else if (sign != '+' && !is_var) {
    size_t l_pos = 0;
    for (size_t i = n; i > 0; i--)
      if (text[i - 1] == '\n') {
        l_pos = i;
        break;
      }
    if ((l_pos > 0 || L->line_starting) && all_space(text + l_pos, n - l_pos))
      n = l_pos;
  }
  if (n == 0) return true;
  return push(L, (jtok){.t = TK_DATA, .line = line, .p = text, .n = n});
}

/* Skips whitespace after a "-" tag end; notes whether it ended a line. */
static void skip_ws_after(lexer *L) {
  size_t adv;
  while (L->pos < L->n) {
    uint32_t cp = ju_decode(L->s + L->pos, L->n - L->pos, &adv);
    if (!ju_isspace(cp)) break;
    if (cp == '\n') L->line++;
    L->pos += adv;
    L->line_starting = cp == '\n';
  }
}

static bool starts(const lexer *L, size_t at, const char *lit) {
  size_t k = strlen(lit);
  return at + k <= L->n && memcmp(L->s + at, lit, k) == 0;
}

/* Block/comment/raw end at L->pos: "+%}", "-%}\s*" or "%}\n?". */
static bool try_block_end(lexer *L, const char *close) {
  size_t at = L->pos;
  char c = L->s[at];
  if ((c == '+' || c == '-') && starts(L, at + 1, close)) {
    L->pos = at + 3;
    L->line_starting = false;
    if (c == '-') skip_ws_after(L);
    return true;
  }
  if (starts(L, at, close)) {
    L->pos = at + 2;
    L->line_starting = false;
    if (L->pos < L->n && L->s[L->pos] == '\n') { /* trim_blocks */
      L->pos++;
      L->line++;
      L->line_starting = true;
    }
    return true;
  }
  return false;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes a Python string literal body (unicode-escape rules). */
static nc_code lex_string(lexer *L, char quote) {
  size_t start = L->pos + 1, i = start;
  while (i < L->n && L->s[i] != quote) {
    if (L->s[i] == '\\') i++;
    i++;
  }
  if (i >= L->n) return lex_fail(L, "unterminated string literal");
  size_t end = i;
  char *out = jinja_arena_alloc(L->a, end - start + 1);
  if (!out) return lex_fail(L, "template too large");
  size_t o = 0;
  for (i = start; i < end; i++) {
    char c = L->s[i];
    if (c != '\\') {
      out[o++] = c;
      continue;
    }
    char e = L->s[++i];
    int digits = 0;
    switch (e) {
    case '\n': break;
    case '\\': out[o++] = '\\'; break;
    case '\'': out[o++] = '\''; break;
    case '"': out[o++] = '"'; break;
    case 'a': out[o++] = '\a'; break;
    case 'b': out[o++] = '\b'; break;
    case 'f': out[o++] = '\f'; break;
    case 'n': out[o++] = '\n'; break;
    case 'r': out[o++] = '\r'; break;
    case 't': out[o++] = '\t'; break;
    case 'v': out[o++] = '\v'; break;
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    default:
      if (e >= '0' && e <= '7') {
        uint32_t v = 0;
        int k = 0;
        while (k < 3 && i < end && L->s[i] >= '0' && L->s[i] <= '7')
          v = v * 8 + (uint32_t)(L->s[i++] - '0'), k++;
        i--;
        o += ju_encode(v, out + o);
      } else {
        out[o++] = '\\';
        out[o++] = e;
      }
    }
    if (digits) {
      uint32_t v = 0;
      for (int k = 0; k < digits; k++) {
        int h = i + 1 < end ? hexval(L->s[i + 1]) : -1;
        if (h < 0) return lex_fail(L, "truncated \\x, \\u or \\U escape");
        v = v * 16 + (uint32_t)h;
        i++;
      }
      if (v > 0x10FFFF) return lex_fail(L, "illegal Unicode character");
      o += ju_encode(v, out + o); /* <= the 4..10 source bytes it replaces */
    }
  }
  count_lines(L, L->s + L->pos, end + 1 - L->pos);
  L->pos = end + 1;
  return push(L, (jtok){.t = TK_STRING, .line = L->line, .p = out, .n = o})
             ? NC_OK
             : lex_fail(L, "out of memory");
}

static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* (\d+_)*\d+ starting at i; returns the end or i when none. */
static size_t scan_digits(const lexer *L, size_t i) {
  size_t j = i;
  while (j < L->n && is_digit(L->s[j])) {
    while (j < L->n && is_digit(L->s[j]))
      j++;
    if (j + 1 < L->n && L->s[j] == '_' && is_digit(L->s[j + 1])) j++;
  }
  return j;
}

static nc_code lex_number(lexer *L) {
  size_t i = L->pos, j = scan_digits(L, i), end = j;
  bool is_float = false;
  bool after_dot = i > 0 && L->s[i - 1] == '.';
  if (!after_dot) {
    size_t k = j;
    if (k + 1 < L->n && L->s[k] == '.' && is_digit(L->s[k + 1])) {
      k = scan_digits(L, k + 1);
      is_float = true;
      end = k;
    }
    if (k < L->n && (L->s[k] == 'e' || L->s[k] == 'E')) {
      size_t m = k + 1;
      if (m < L->n && (L->s[m] == '+' || L->s[m] == '-')) m++;
      size_t e = scan_digits(L, m);
      if (e > m) {
        is_float = true;
        end = e;
      }
    }
  }
  char buf[128];
  size_t o = 0;
  for (size_t k = i; k < end && o < sizeof buf - 1; k++)
    if (L->s[k] != '_') buf[o++] = L->s[k];
  buf[o] = '\0';
  jtok t = {.line = L->line};
  if (is_float) {
    t.t = TK_FLOAT;
    t.f = strtod(buf, NULL);
  } else {
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE || end - i > 100)
      return lex_fail(L, "integer literal out of range");
    t.t = TK_INT;
    t.i = v;
  }
  L->pos = end;
  return push(L, t) ? NC_OK : lex_fail(L, "out of memory");
}

static const char *const OPS[] = {
    "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
    "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};

/* Tokens inside {{ }} or {% %} up to the matching end. */
static nc_code lex_tag(lexer *L, bool is_block) {
  char balance[MAX_BALANCE];
  int depth = 0;
  for (;;) {
    if (L->pos >= L->n)
      return lex_fail(L, is_block
                             ? "unexpected end of template, expected '%}'"
                             : "unexpected end of template, expected '}}'");
    if (depth == 0) {
      int line = L->line;
      if (is_block ? try_block_end(L, "%}") : false)
        return push(L, (jtok){.t = TK_BLOCK_END, .line = line})
                   ? NC_OK
                   : lex_fail(L, "out of memory");
      if (!is_block) {
        size_t at = L->pos;
        bool dash = L->s[at] == '-' && starts(L, at + 1, "}}");
        if (dash || starts(L, at, "}}")) {
          L->pos = at + (dash ? 3 : 2);
          L->line_starting = false;
          if (dash) skip_ws_after(L);
          return push(L, (jtok){.t = TK_VAR_END, .line = line})
                     ? NC_OK
                     : lex_fail(L, "out of memory");
        }
      }
    }
    char c = L->s[L->pos];
    size_t adv;
    uint32_t cp = ju_decode(L->s + L->pos, L->n - L->pos, &adv);
    if (ju_isspace(cp)) {
      if (c == '\n') L->line++;
      L->line_starting = c == '\n';
      L->pos += adv;
      continue;
    }
    L->line_starting = false;
    nc_code rc;
    if (is_digit(c)) {
      if ((rc = lex_number(L)) != NC_OK) return rc;
      continue;
    }
    if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      size_t j = L->pos;
      while (j < L->n && (L->s[j] == '_' || is_digit(L->s[j]) ||
                          (L->s[j] >= 'a' && L->s[j] <= 'z') ||
                          (L->s[j] >= 'A' && L->s[j] <= 'Z')))
        j++;
      jtok t = {
          .t = TK_NAME, .line = L->line, .p = L->s + L->pos, .n = j - L->pos};
      L->pos = j;
      if (!push(L, t)) return lex_fail(L, "out of memory");
      continue;
    }
    if (c == '\'' || c == '"') {
      if ((rc = lex_string(L, c)) != NC_OK) return rc;
      continue;
    }
    const char *op = NULL;
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
      if (starts(L, L->pos, OPS[k])) {
        op = OPS[k];
        break;
      }
    if (!op) {
      nc_fail(L->err, NC_ERR_FORMAT, "template line %d: unexpected char '%c'",
              L->line, c >= 0x20 && c < 0x7f ? c : '?');
      return NC_ERR_FORMAT;
    }
    if (strchr("([{", op[0]) && op[1] == '\0') {
      if (depth == MAX_BALANCE)
        return nc_fail(L->err, NC_ERR_LIMIT,
                       "template line %d: brackets nested too deep (limit %d)",
                       L->line, MAX_BALANCE);
      balance[depth++] = op[0] == '(' ? ')' : op[0] == '[' ? ']' : '}';
    } else if (strchr(")]}", op[0]) && op[1] == '\0') {
      if (depth == 0 || balance[depth - 1] != op[0]) {
        nc_fail(L->err, NC_ERR_FORMAT, "template line %d: unexpected '%c'",
                L->line, op[0]);
        return NC_ERR_FORMAT;
      }
      depth--;
    }
    jtok t = {.t = TK_OP, .line = L->line, .p = op, .n = strlen(op)};
    L->pos += t.n;
    if (!push(L, t)) return lex_fail(L, "out of memory");
  }
}

static nc_code lex_comment(lexer *L) {
  for (size_t i = L->pos; i < L->n; i++) {
    if ((L->s[i] == '+' || L->s[i] == '-') && starts(L, i + 1, "#}")) {
      count_lines(L, L->s + L->pos, i - L->pos);
      L->pos = i;
      try_block_end(L, "#}");
      return NC_OK;
    }
    if (starts(L, i, "#}")) {
      count_lines(L, L->s + L->pos, i - L->pos);
      L->pos = i;
      try_block_end(L, "#}");
      return NC_OK;
    }
  }
  return lex_fail(L, "missing end of comment tag");
}

/* After {% raw %}: text up to {% endraw %}, verbatim. */
static nc_code lex_raw(lexer *L) {
  for (size_t i = L->pos; i + 1 < L->n; i++) {
    if (L->s[i] != '{' || L->s[i + 1] != '%') continue;
    size_t j = i + 2;
    char sign = 0;
    if (j < L->n && (L->s[j] == '-' || L->s[j] == '+')) sign = L->s[j++];
    while (j < L->n && ju_isspace((unsigned char)L->s[j]))
      j++;
    if (!starts(L, j, "endraw")) continue;
    j += 6;
    while (j < L->n && ju_isspace((unsigned char)L->s[j]))
      j++;
    if (!(starts(L, j, "%}") || starts(L, j, "-%}") || starts(L, j, "+%}")))
      continue;
    if (!emit_text(L, L->s + L->pos, i - L->pos, sign, false))
      return lex_fail(L, "out of memory");
    count_lines(L, L->s + i, j - i);
    L->pos = j;
    try_block_end(L, "%}");
    return NC_OK;
  }
  return lex_fail(L, "missing end of raw directive");
}

/* Is there "{%[-+]? raw [-]%}" at pos? Sets *end past it. */
static bool raw_begin(const lexer *L, size_t pos, size_t *end, bool *dash) {
  size_t j = pos + 2;
  if (j < L->n && (L->s[j] == '-' || L->s[j] == '+')) j++;
  while (j < L->n && ju_isspace((unsigned char)L->s[j]))
    j++;
  if (!starts(L, j, "raw")) return false;
  j += 3;
  while (j < L->n && ju_isspace((unsigned char)L->s[j]))
    j++;
  if (starts(L, j, "-%}")) {
    *end = j + 3;
    *dash = true;
    return true;
  }
  if (starts(L, j, "%}")) {
    *end = j + 2;
    *dash = false;
    return true;
  }
  return false;
}

static nc_code lex_root(lexer *L) {
  nc_code rc;
  while (L->pos < L->n) {
    size_t i = L->pos;
    while (i + 1 < L->n &&
           !(L->s[i] == '{' && strchr("{%#", L->s[i + 1]) != NULL))
      i++;
    if (i + 1 >= L->n) { /* the rest is text */
      if (!emit_text(L, L->s + L->pos, L->n - L->pos, '+', true))
        return lex_fail(L, "out of memory");
      L->pos = L->n;
      break;
    }
    char kind = L->s[i + 1];
    char sign = i + 2 < L->n ? L->s[i + 2] : 0;
    if (sign != '-' && sign != '+') sign = 0;
    if (!emit_text(L, L->s + L->pos, i - L->pos, sign, kind == '{'))
      return lex_fail(L, "out of memory");
    size_t raw_end;
    bool raw_dash;
    if (kind == '%' && raw_begin(L, i, &raw_end, &raw_dash)) {
      count_lines(L, L->s + i, raw_end - i);
      L->pos = raw_end;
      L->line_starting = false;
      if (raw_dash) skip_ws_after(L);
      if ((rc = lex_raw(L)) != NC_OK) return rc;
      continue;
    }
    L->pos = i + 2 + (sign ? 1 : 0);
    L->line_starting = false;
    if (kind == '#') {
      if ((rc = lex_comment(L)) != NC_OK) return rc;
      continue;
    }
    jtok t = {.t = kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN,
              .line = L->line};
    if (!push(L, t)) return lex_fail(L, "out of memory");
    if ((rc = lex_tag(L, kind == '%')) != NC_OK) return rc;
  }
  return push(L, (jtok){.t = TK_EOF, .line = L->line})
             ? NC_OK
             : lex_fail(L, "out of memory");
}

/* Newlines to \n, one trailing newline dropped (keep_trailing_newline off). */
static char *normalise(jinja_arena *a, const char *src, size_t len,
                       size_t *out_len) {
  char *s = jinja_arena_alloc(a, len + 1);
  if (!s) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (src[i] == '\r') {
      s[o++] = '\n';
      if (i + 1 < len && src[i + 1] == '\n') i++;
    } else {
      s[o++] = src[i];
    }
  }
  if (o > 0 && s[o - 1] == '\n') o--;
  s[o] = '\0';
  *out_len = o;
  return s;
}

nc_code jinja_lex(jinja_arena *a, const char *src, size_t len, jtok **toks,
                  size_t *n_toks, nc_error *err) {
  lexer L = {.a = a, .err = err, .line = 1, .line_starting = true};
  L.s = normalise(a, src, len, &L.n);
  if (!L.s) return nc_fail(err, NC_ERR_LIMIT, "template too large");
  nc_code rc = lex_root(&L);
  if (rc == NC_OK) {
    *toks = jinja_arena_alloc(a, L.nt * sizeof(jtok));
    if (!*toks)
      rc = nc_fail(err, NC_ERR_LIMIT, "template too large");
    else {
      memcpy(*toks, L.toks, L.nt * sizeof(jtok));
      *n_toks = L.nt;
    }
  }
  free(L.toks);
  return rc;
}
