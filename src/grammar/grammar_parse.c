/* GBNF text to rule tables (see grammar.h for the syntax). Groups and
 * repetitions become generated rules, as llama.cpp does: x* is
 * R ::= x R | "", x{m,n} is m copies of x then n-m nested optionals; a
 * repeated x that can match "" is repeated as x without "" (not left
 * recursion: (a*)* is a*). */
#include <stdlib.h>
#include <string.h>

#include "grammar_parse.h"
#include "grammar_unique.h"

nc_code nc_gparse_fail_at(parser *p, size_t pos, nc_code code, const char *msg,
                          const char *arg, size_t arg_len) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < p->n; i++) {
    if (p->s[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  if (arg_len > 64) arg_len = 64;
  return nc_fail(p->err, code, "grammar: line %zu column %zu: %s%s%.*s%s", line,
                 col, msg, arg ? " '" : "", (int)arg_len, arg ? arg : "",
                 arg ? "'" : "");
}

static nc_code syntax(parser *p, const char *msg) {
  return nc_gparse_fail_at(p, p->pos, NC_ERR_INVALID_ARGUMENT, msg, NULL, 0);
}

nc_code nc_gparse_push(parser *p, nc_gvec *v, nc_gelem e) {
  if (p->n_elems >= NC_GRAMMAR_MAX_ELEMS)
    return nc_gparse_fail_at(p, p->pos, NC_ERR_LIMIT,
                             "grammar too large (elements)", NULL, 0);
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 8;
    nc_gelem *nv = realloc(v->v, cap * sizeof *nv);
    if (!nv) return nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
    v->v = nv;
    v->cap = cap;
  }
  v->v[v->n++] = e;
  p->n_elems++;
  return NC_OK;
}

nc_code nc_gparse_range(parser *p, uint32_t lo, uint32_t hi) {
  if (p->n_ranges + 2 > 2 * (size_t)NC_GRAMMAR_MAX_ELEMS)
    return nc_gparse_fail_at(p, p->pos, NC_ERR_LIMIT,
                             "grammar too large (ranges)", NULL, 0);
  if (p->n_ranges + 2 > p->cap_ranges) {
    size_t cap = p->cap_ranges ? p->cap_ranges * 2 : 64;
    uint32_t *nr = realloc(p->ranges, cap * sizeof *nr);
    if (!nr) return nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
    p->ranges = nr;
    p->cap_ranges = cap;
  }
  p->ranges[p->n_ranges++] = lo;
  p->ranges[p->n_ranges++] = hi;
  return NC_OK;
}

nc_code nc_gparse_new_rule(parser *p, const char *name, size_t len,
                           uint32_t *id) {
  if (p->n_rules >= NC_GRAMMAR_MAX_RULES)
    return nc_gparse_fail_at(p, p->pos, NC_ERR_LIMIT,
                             "grammar too large (rules)", NULL, 0);
  if (p->n_rules == p->cap_rules) {
    uint32_t cap = p->cap_rules ? p->cap_rules * 2 : 16;
    brule *nr = realloc(p->rules, cap * sizeof *nr);
    if (!nr) return nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
    p->rules = nr;
    p->cap_rules = cap;
  }
  p->rules[p->n_rules] = (brule){.name = name,
                                 .name_len = len,
                                 .defined = name == NULL,
                                 .ref_pos = p->pos};
  *id = p->n_rules++;
  return NC_OK;
}

static nc_code named_rule(parser *p, const char *name, size_t len,
                          uint32_t *id) {
  for (uint32_t i = 0; i < p->n_rules; i++) {
    if (p->rules[i].name && p->rules[i].name_len == len &&
        memcmp(p->rules[i].name, name, len) == 0) {
      *id = i;
      return NC_OK;
    }
  }
  return nc_gparse_new_rule(p, name, len, id);
}

static bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static void skip_space(parser *p, bool newline_ok) {
  while (p->pos < p->n) {
    char c = p->s[p->pos];
    if (c == ' ' || c == '\t') {
      p->pos++;
    } else if (c == '#') {
      while (p->pos < p->n && p->s[p->pos] != '\n')
        p->pos++;
    } else if (newline_ok && (c == '\n' || c == '\r')) {
      p->pos++;
    } else {
      return;
    }
  }
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* One UTF-8 character from the text; invalid UTF-8 is a syntax error. */
static nc_code decode_utf8(parser *p, uint32_t *cp) {
  const unsigned char *s = (const unsigned char *)p->s + p->pos;
  size_t left = p->n - p->pos;
  unsigned n;
  uint32_t c = s[0], min;
  if (c < 0x80) {
    n = 1;
    min = 0;
  } else if ((c & 0xE0) == 0xC0) {
    n = 2;
    c &= 0x1F;
    min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    c &= 0x0F;
    min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    c &= 0x07;
    min = 0x10000;
  } else {
    return syntax(p, "invalid UTF-8");
  }
  if (n > left) return syntax(p, "invalid UTF-8");
  for (unsigned i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return syntax(p, "invalid UTF-8");
    c = (c << 6) | (s[i] & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
    return syntax(p, "invalid UTF-8");
  p->pos += n;
  *cp = c;
  return NC_OK;
}

/* One character of a literal or class, escapes included. */
static nc_code parse_char(parser *p, uint32_t *cp) {
  if (p->pos >= p->n) return syntax(p, "unexpected end of input");
  if (p->s[p->pos] != '\\') return decode_utf8(p, cp);
  if (p->pos + 1 >= p->n)
    return syntax(p, "unexpected end of input after '\\'");
  char e = p->s[p->pos + 1];
  unsigned digits = 0;
  switch (e) {
  case 'n': *cp = '\n'; break;
  case 'r': *cp = '\r'; break;
  case 't': *cp = '\t'; break;
  case '\\':
  case '"':
  case '[':
  case ']':
  case '-':
  case '^':
  case '/': *cp = (unsigned char)e; break;
  case 'x': digits = 2; break;
  case 'u': digits = 4; break;
  case 'U': digits = 8; break;
  default: return syntax(p, "unknown escape");
  }
  p->pos += 2;
  if (!digits) return NC_OK;
  uint32_t v = 0;
  for (unsigned i = 0; i < digits; i++) {
    int h = p->pos < p->n ? hexval(p->s[p->pos]) : -1;
    if (h < 0) return syntax(p, "expected a hex digit");
    v = (v << 4) | (uint32_t)h;
    p->pos++;
  }
  if (v > 0x10FFFF) return syntax(p, "code point above U+10FFFF");
  if (v >= 0xD800 && v <= 0xDFFF) return syntax(p, "surrogate code point");
  *cp = v;
  return NC_OK;
}

static nc_code parse_literal(parser *p, nc_gvec *out) {
  p->pos++; /* '"' */
  for (;;) {
    if (p->pos >= p->n || p->s[p->pos] == '\n')
      return syntax(p, "unterminated string literal");
    if (p->s[p->pos] == '"') {
      p->pos++;
      return NC_OK;
    }
    uint32_t c;
    nc_code rc = parse_char(p, &c);
    if (rc == NC_OK) rc = nc_gparse_range(p, c, c);
    if (rc == NC_OK)
      rc = nc_gparse_push(p, out,
                          (nc_gelem){.kind = NC_GE_CLASS,
                                     .a = (uint32_t)(p->n_ranges / 2 - 1),
                                     .b = 1});
    if (rc != NC_OK) return rc;
  }
}

static nc_code parse_class(parser *p, nc_gvec *out) {
  p->pos++; /* '[' */
  nc_gelem e = {.kind = NC_GE_CLASS, .a = (uint32_t)(p->n_ranges / 2)};
  if (p->pos < p->n && p->s[p->pos] == '^') {
    e.neg = 1;
    p->pos++;
  }
  for (;;) {
    if (p->pos >= p->n || p->s[p->pos] == '\n')
      return syntax(p, "unterminated character class");
    if (p->s[p->pos] == ']') {
      p->pos++;
      break;
    }
    uint32_t lo, hi;
    nc_code rc = parse_char(p, &lo);
    if (rc != NC_OK) return rc;
    hi = lo;
    if (p->pos + 1 < p->n && p->s[p->pos] == '-' && p->s[p->pos + 1] != ']') {
      p->pos++;
      size_t at = p->pos;
      if ((rc = parse_char(p, &hi)) != NC_OK) return rc;
      if (hi < lo)
        return nc_gparse_fail_at(p, at, NC_ERR_INVALID_ARGUMENT,
                                 "character range out of order", NULL, 0);
    }
    if ((rc = nc_gparse_range(p, lo, hi)) != NC_OK) return rc;
    e.b++;
  }
  return nc_gparse_push(p, out, e);
}

static nc_code parse_alternates(parser *p, nc_gvec *out, bool nested);

/* The term out[start..] repeated {min, max} (max UINT32_MAX: unbounded). */
static nc_code repeat(parser *p, nc_gvec *out, size_t start, uint32_t min,
                      uint32_t max) {
  size_t len = out->n - start;
  if (len == 0) return NC_OK; /* "" repeated is "" */
  nc_gelem term = out->v[start];
  nc_code rc;
  if (len > 1) { /* a literal of several characters: one rule for it */
    uint32_t id;
    if ((rc = nc_gparse_new_rule(p, NULL, 0, &id)) != NC_OK) return rc;
    nc_gvec *body = &p->rules[id].body;
    for (size_t i = start; i < out->n; i++)
      if ((rc = nc_gparse_push(p, body, out->v[i])) != NC_OK) return rc;
    term = (nc_gelem){.kind = NC_GE_REF, .a = id};
  }
  p->n_elems -= len;
  out->n = start;
  for (uint32_t i = 0; i < min; i++)
    if ((rc = nc_gparse_push(p, out, term)) != NC_OK) return rc;
  if (max == min) return NC_OK;
  uint32_t id;
  if (max == UINT32_MAX) { /* R ::= term R | "" */
    if ((rc = nc_gparse_new_rule(p, NULL, 0, &id)) != NC_OK) return rc;
    p->rules[id].repeats = true;
    nc_gvec *body = &p->rules[id].body;
    if ((rc = nc_gparse_push(p, body, term)) != NC_OK ||
        (rc = nc_gparse_push(
             p, body, (nc_gelem){.kind = NC_GE_REF, .a = id})) != NC_OK ||
        (rc = nc_gparse_push(p, body, (nc_gelem){.kind = NC_GE_ALT})) != NC_OK)
      return rc;
    return nc_gparse_push(p, out, (nc_gelem){.kind = NC_GE_REF, .a = id});
  }
  /* R1 ::= term | "", Rk ::= term R(k-1) | "": one chain per term, shared
   * by every x{m,n} of that term (Rk does not depend on n), so twenty
   * strings of maxLength 1024 cost 1,024 rules, not 20,480. */
  nc_gchain *c = NULL;
  for (uint32_t i = 0; i < p->n_chains && !c; i++)
    if (nc_gparse_elem_equal(p, &p->chains[i].term, &term)) c = &p->chains[i];
  if (!c) {
    if (p->n_chains == p->cap_chains) {
      uint32_t cap = p->cap_chains ? 2 * p->cap_chains : 8;
      nc_gchain *nc = realloc(p->chains, cap * sizeof *nc);
      if (!nc) return nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
      p->chains = nc;
      p->cap_chains = cap;
    }
    c = &p->chains[p->n_chains++];
    *c = (nc_gchain){.term = term};
  }
  uint32_t need = max - min;
  if (c->n < need) {
    uint32_t *steps = realloc(c->steps, need * sizeof *steps);
    if (!steps) return nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
    c->steps = steps;
  }
  for (; c->n < need; c->n++) {
    if ((rc = nc_gparse_new_rule(p, NULL, 0, &id)) != NC_OK) return rc;
    p->rules[id].repeats = true;
    nc_gvec *body = &p->rules[id].body;
    if ((rc = nc_gparse_push(p, body, term)) != NC_OK) return rc;
    if (c->n > 0 &&
        (rc = nc_gparse_push(
             p, body,
             (nc_gelem){.kind = NC_GE_REF, .a = c->steps[c->n - 1]})) != NC_OK)
      return rc;
    if ((rc = nc_gparse_push(p, body, (nc_gelem){.kind = NC_GE_ALT})) != NC_OK)
      return rc;
    c->steps[c->n] = id;
  }
  return nc_gparse_push(p, out,
                        (nc_gelem){.kind = NC_GE_REF, .a = c->steps[need - 1]});
}

static nc_code parse_count(parser *p, uint32_t *v) {
  if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9')
    return syntax(p, "expected a number");
  uint32_t x = 0;
  while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
    x = x * 10 + (uint32_t)(p->s[p->pos] - '0');
    if (x > NC_GRAMMAR_MAX_REPEAT)
      return nc_gparse_fail_at(p, p->pos, NC_ERR_LIMIT,
                               "repetition count too large", NULL, 0);
    p->pos++;
  }
  *v = x;
  return NC_OK;
}

static nc_code parse_braces(parser *p, uint32_t *min, uint32_t *max) {
  p->pos++; /* '{' */
  skip_space(p, true);
  nc_code rc = parse_count(p, min);
  if (rc != NC_OK) return rc;
  skip_space(p, true);
  *max = *min;
  if (p->pos < p->n && p->s[p->pos] == ',') {
    p->pos++;
    skip_space(p, true);
    *max = UINT32_MAX;
    if (p->pos < p->n && p->s[p->pos] != '}') {
      if ((rc = parse_count(p, max)) != NC_OK) return rc;
      skip_space(p, true);
      if (*max < *min) return syntax(p, "repetition {m,n} with n < m");
    }
  }
  if (p->pos >= p->n || p->s[p->pos] != '}') return syntax(p, "expected '}'");
  p->pos++;
  return NC_OK;
}

static nc_code parse_sequence(parser *p, nc_gvec *out, bool nested) {
  size_t term = SIZE_MAX; /* where the last term starts */
  nc_code rc = NC_OK;
  while (p->pos < p->n) {
    char c = p->s[p->pos];
    size_t start = out->n;
    if (c == '"') {
      rc = parse_literal(p, out);
    } else if (c == '[') {
      rc = parse_class(p, out);
    } else if (c == '.') {
      p->pos++;
      rc = nc_gparse_push(p, out,
                          (nc_gelem){.kind = NC_GE_CLASS,
                                     .neg = 1,
                                     .a = (uint32_t)(p->n_ranges / 2)});
    } else if (is_name_char(c)) {
      size_t s = p->pos;
      while (p->pos < p->n && is_name_char(p->s[p->pos]))
        p->pos++;
      uint32_t id;
      size_t keep = p->pos;
      p->pos = s;
      rc = named_rule(p, p->s + s, keep - s, &id);
      p->pos = keep;
      if (rc == NC_OK)
        rc = nc_gparse_push(p, out, (nc_gelem){.kind = NC_GE_REF, .a = id});
    } else if (c == '(') {
      if (++p->depth > NC_GRAMMAR_MAX_NESTING)
        return nc_gparse_fail_at(p, p->pos, NC_ERR_LIMIT,
                                 "groups nested too deeply", NULL, 0);
      p->pos++;
      skip_space(p, true);
      nc_gvec body = {0};
      rc = parse_alternates(p, &body, true);
      if (rc == NC_OK && (p->pos >= p->n || p->s[p->pos] != ')'))
        rc = syntax(p, "expected ')'");
      uint32_t id = 0;
      if (rc == NC_OK) rc = nc_gparse_new_rule(p, NULL, 0, &id);
      if (rc != NC_OK) {
        free(body.v);
        return rc;
      }
      p->rules[id].body = body;
      p->pos++;
      p->depth--;
      rc = nc_gparse_push(p, out, (nc_gelem){.kind = NC_GE_REF, .a = id});
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (term == SIZE_MAX)
        return syntax(p, "repetition without a preceding item");
      uint32_t min = 0, max = UINT32_MAX;
      if (c == '{') {
        rc = parse_braces(p, &min, &max);
      } else {
        p->pos++;
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : UINT32_MAX;
      }
      if (rc == NC_OK) rc = repeat(p, out, term, min, max);
      term = SIZE_MAX;
      start = SIZE_MAX;
    } else {
      break;
    }
    if (rc != NC_OK) return rc;
    if (start != SIZE_MAX) term = start;
    skip_space(p, nested);
  }
  return NC_OK;
}

static nc_code parse_alternates(parser *p, nc_gvec *out, bool nested) {
  nc_code rc = parse_sequence(p, out, nested);
  while (rc == NC_OK && p->pos < p->n && p->s[p->pos] == '|') {
    p->pos++;
    rc = nc_gparse_push(p, out, (nc_gelem){.kind = NC_GE_ALT});
    if (rc == NC_OK) {
      skip_space(p, true);
      rc = parse_sequence(p, out, nested);
    }
  }
  return rc;
}

static nc_code parse_rules(parser *p) {
  skip_space(p, true);
  while (p->pos < p->n) {
    size_t s = p->pos;
    while (p->pos < p->n && is_name_char(p->s[p->pos]))
      p->pos++;
    if (p->pos == s) return syntax(p, "expected a rule name");
    size_t name_end = p->pos;
    skip_space(p, false);
    if (p->n - p->pos < 3 || memcmp(p->s + p->pos, "::=", 3) != 0)
      return syntax(p, "expected '::='");
    uint32_t id;
    nc_code rc = named_rule(p, p->s + s, name_end - s, &id);
    if (rc != NC_OK) return rc;
    if (p->rules[id].defined)
      return nc_gparse_fail_at(p, s, NC_ERR_INVALID_ARGUMENT,
                               "rule defined twice", p->s + s, name_end - s);
    p->rules[id].defined = true;
    p->pos += 3;
    skip_space(p, true);
    nc_gvec body = {0};
    rc = parse_alternates(p, &body, false);
    p->rules[id].body = body;
    if (rc != NC_OK) return rc;
    if (p->pos < p->n && p->s[p->pos] != '\n' && p->s[p->pos] != '\r')
      return syntax(p, "unexpected character");
    skip_space(p, true);
  }
  return NC_OK;
}

/* The parsed bodies as one element table. */
static nc_code flatten(parser *p, nc_grammar *g) {
  size_t n_elems = 0, n_alts = 0;
  for (uint32_t r = 0; r < p->n_rules; r++) {
    n_elems += p->rules[r].body.n + 1;
    n_alts++;
    for (size_t i = 0; i < p->rules[r].body.n; i++)
      n_alts += p->rules[r].body.v[i].kind == NC_GE_ALT;
  }
  g->elems = malloc(n_elems * sizeof *g->elems);
  g->alts = malloc(n_alts * sizeof *g->alts);
  g->rules = malloc(p->n_rules * sizeof *g->rules);
  if (!g->elems || !g->alts || !g->rules)
    return nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
  uint32_t e = 0, a = 0;
  for (uint32_t r = 0; r < p->n_rules; r++) {
    g->rules[r] = (nc_grule){.first_alt = a, .n_alts = 1};
    g->alts[a++] = e;
    for (size_t i = 0; i < p->rules[r].body.n; i++) {
      nc_gelem x = p->rules[r].body.v[i];
      if (x.kind == NC_GE_ALT) {
        g->elems[e++] = (nc_gelem){.kind = NC_GE_END};
        g->alts[a++] = e;
        g->rules[r].n_alts++;
      } else {
        g->elems[e++] = x;
      }
    }
    g->elems[e++] = (nc_gelem){.kind = NC_GE_END};
  }
  g->n_elems = e;
  g->n_alts = a;
  g->n_rules = p->n_rules;
  g->ranges = p->ranges;
  g->n_ranges = (uint32_t)(p->n_ranges / 2);
  p->ranges = NULL;
  return NC_OK;
}

static void parser_free(parser *p) {
  for (uint32_t r = 0; r < p->n_rules; r++)
    free(p->rules[r].body.v);
  free(p->rules);
  free(p->ranges);
  for (uint32_t i = 0; i < p->n_chains; i++)
    free(p->chains[i].steps);
  free(p->chains);
}

nc_code nc_grammar_parse(const char *text, size_t len, const char *root,
                         nc_grammar **out, nc_error *err) {
  *out = NULL;
  if (!text && len)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "grammar: no text");
  if (len > NC_GRAMMAR_MAX_TEXT)
    return nc_fail(err, NC_ERR_LIMIT, "grammar: longer than %u bytes",
                   NC_GRAMMAR_MAX_TEXT);
  if (!root) root = "root";
  parser p = {.s = text ? text : "", .n = len, .err = err};
  nc_grammar *g = calloc(1, sizeof *g);
  if (!g) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  nc_code rc = parse_rules(&p);
  for (uint32_t r = 0; rc == NC_OK && r < p.n_rules; r++)
    if (!p.rules[r].defined)
      rc = nc_gparse_fail_at(&p, p.rules[r].ref_pos, NC_ERR_INVALID_ARGUMENT,
                             "undefined rule", p.rules[r].name,
                             p.rules[r].name_len);
  if (rc == NC_OK) {
    g->root = UINT32_MAX;
    for (uint32_t r = 0; r < p.n_rules; r++)
      if (p.rules[r].name && p.rules[r].name_len == strlen(root) &&
          memcmp(p.rules[r].name, root, p.rules[r].name_len) == 0)
        g->root = r;
    if (g->root == UINT32_MAX)
      rc = nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "grammar: no rule named '%.64s'", root);
  }
  if (rc == NC_OK) rc = nc_gparse_nonempty_repeats(&p);
  if (rc == NC_OK) rc = nc_gparse_factor(&p);
  if (rc == NC_OK) rc = flatten(&p, g);
  if (rc == NC_OK) {
    const char **names = malloc((p.n_rules + 1) * sizeof *names);
    size_t *lens = malloc((p.n_rules + 1) * sizeof *lens);
    if (!names || !lens) {
      rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    } else {
      for (uint32_t r = 0; r < p.n_rules; r++) {
        names[r] = p.rules[r].name ? p.rules[r].name : "(group)";
        lens[r] = p.rules[r].name ? p.rules[r].name_len : 7;
      }
      rc = nc_grammar_check(g, names, lens, err);
      if (rc == NC_OK && nc_grammar_canon_build(g) != NC_OK)
        rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    }
    free(names);
    free(lens);
  }
  parser_free(&p);
  if (rc == NC_OK) rc = nc_guniq_spec_parse(text, len, &g->uniq, err);
  if (rc != NC_OK) {
    nc_grammar_free(g);
    return rc;
  }
  *out = g;
  return NC_OK;
}

void nc_grammar_free(nc_grammar *g) {
  if (!g) return;
  free(g->elems);
  free(g->alts);
  free(g->rules);
  free(g->ranges);
  free(g->canon);
  free(g->dom_key);
  free(g->dom_level);
  nc_guniq_spec_free(g->uniq);
  free(g);
}

uint32_t nc_grammar_n_rules(const nc_grammar *g) {
  return g->n_rules;
}
