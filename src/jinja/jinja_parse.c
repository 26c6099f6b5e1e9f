/* jinja_parse: recursive-descent parser mirroring jinja2.parser.Parser. */
#include "jinja_parse.h"

#include <stdbool.h>
#include <string.h>

typedef struct parser {
  jinja_arena *a;
  nc_error *err;
  const jtok *t;
  size_t n, pos;
  int depth;
  int loop_depth;
  bool failed;
} parser;

static const jtok *cur(parser *P) {
  return &P->t[P->pos];
}
static const jtok *peek(parser *P, size_t k) {
  size_t i = P->pos + k;
  return &P->t[i < P->n ? i : P->n - 1];
}
static void advance(parser *P) {
  if (P->pos + 1 < P->n) P->pos++;
}

static bool tok_is_op(const jtok *t, const char *op) {
  return t->t == TK_OP && t->n == strlen(op) && memcmp(t->p, op, t->n) == 0;
}
static bool tok_is_name(const jtok *t, const char *name) {
  return t->t == TK_NAME && t->n == strlen(name) &&
         memcmp(t->p, name, t->n) == 0;
}

static const char *tok_desc(const jtok *t, char *buf, size_t cap) {
  switch (t->t) {
  case TK_EOF: return "end of template";
  case TK_DATA: return "template data";
  case TK_VAR_BEGIN: return "'{{'";
  case TK_VAR_END: return "'}}'";
  case TK_BLOCK_BEGIN: return "'{%'";
  case TK_BLOCK_END: return "'%}'";
  case TK_STRING: return "string";
  case TK_INT: return "integer";
  case TK_FLOAT: return "float";
  default:
    snprintf(buf, cap, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p);
    return buf;
  }
}

static jnode *fail_at(parser *P, const char *what) {
  if (!P->failed) {
    char buf[64];
    nc_fail(P->err, NC_ERR_FORMAT, "template line %d: %s (got %s)",
            cur(P)->line, what, tok_desc(cur(P), buf, sizeof buf));
    P->failed = true;
  }
  return NULL;
}

static jnode *fail_msg(parser *P, int code, const char *msg) {
  if (!P->failed) {
    nc_fail(P->err, code, "template line %d: %s", cur(P)->line, msg);
    P->failed = true;
  }
  return NULL;
}

static jnode *node(parser *P, jnode_kind kind) {
  jnode *nd = jinja_arena_alloc(P->a, sizeof *nd);
  if (!nd) return fail_msg(P, NC_ERR_LIMIT, "template too large");
  memset(nd, 0, sizeof *nd);
  nd->kind = kind;
  nd->line = cur(P)->line;
  return nd;
}

static bool push_kid(parser *P, jnode *nd, jnode *kid, size_t *cap) {
  if (nd->n_kids == *cap) {
    size_t nc = *cap ? *cap * 2 : 4;
    jnode **k = jinja_arena_alloc(P->a, nc * sizeof *k);
    if (!k) return fail_msg(P, NC_ERR_LIMIT, "template too large"), false;
    if (nd->n_kids) memcpy(k, nd->kids, nd->n_kids * sizeof *k);
    nd->kids = k;
    *cap = nc;
  }
  nd->kids[nd->n_kids++] = kid;
  return true;
}

static bool push_kw(parser *P, jnode *nd, const char *name, size_t len,
                    jnode *val, size_t *cap) {
  if (nd->n_kw == *cap) {
    size_t nc = *cap ? *cap * 2 : 4;
    const char **names = jinja_arena_alloc(P->a, nc * sizeof *names);
    size_t *lens = jinja_arena_alloc(P->a, nc * sizeof *lens);
    jnode **vals = jinja_arena_alloc(P->a, nc * sizeof *vals);
    if (!names || !lens || !vals)
      return fail_msg(P, NC_ERR_LIMIT, "template too large"), false;
    if (nd->n_kw) {
      memcpy(names, nd->kwnames, nd->n_kw * sizeof *names);
      memcpy(lens, nd->kwlens, nd->n_kw * sizeof *lens);
      memcpy(vals, nd->kwvals, nd->n_kw * sizeof *vals);
    }
    nd->kwnames = names;
    nd->kwlens = lens;
    nd->kwvals = vals;
    *cap = nc;
  }
  nd->kwnames[nd->n_kw] = name;
  nd->kwlens[nd->n_kw] = len;
  nd->kwvals[nd->n_kw] = val;
  nd->n_kw++;
  return true;
}

static bool expect_op(parser *P, const char *op) {
  if (!tok_is_op(cur(P), op)) {
    char msg[48];
    snprintf(msg, sizeof msg, "expected '%s'", op);
    fail_at(P, msg);
    return false;
  }
  advance(P);
  return true;
}

static bool expect_type(parser *P, jtok_type t, const char *what) {
  if (cur(P)->t != t) {
    fail_at(P, what);
    return false;
  }
  advance(P);
  return true;
}

static bool enter(parser *P) {
  if (++P->depth > JINJA_MAX_PARSE_DEPTH) {
    fail_msg(P, NC_ERR_LIMIT, "template nested too deeply (limit 256)");
    return false;
  }
  return true;
}

static jnode *parse_expression(parser *P, bool with_condexpr);
static jnode *parse_unary(parser *P, bool with_filter);
static jnode *parse_primary(parser *P);
static jnode *parse_postfix(parser *P, jnode *nd);
static jnode *parse_filter_chain(parser *P, jnode *nd, bool start_inline);

/* parse_tuple: a, b, c -> JN_TUPLE; a -> a. */
static jnode *parse_tuple(parser *P, bool simplified, bool with_condexpr,
                          const char *extra_end, bool explicit_parens) {
  jnode *tuple = node(P, JN_TUPLE);
  if (!tuple) return NULL;
  size_t cap = 0;
  bool is_tuple = false;
  for (;;) {
    if (tuple->n_kids && !expect_op(P, ",")) return NULL;
    const jtok *t = cur(P);
    if (t->t == TK_VAR_END || t->t == TK_BLOCK_END || tok_is_op(t, ")") ||
        (extra_end && tok_is_name(t, extra_end)))
      break;
    jnode *e =
        simplified ? parse_primary(P) : parse_expression(P, with_condexpr);
    if (!e || !push_kid(P, tuple, e, &cap)) return NULL;
    if (tok_is_op(cur(P), ","))
      is_tuple = true;
    else
      break;
  }
  if (!is_tuple) {
    if (tuple->n_kids) return tuple->kids[0];
    if (!explicit_parens) return fail_at(P, "expected an expression");
  }
  return tuple;
}

static jnode *parse_list(parser *P) {
  jnode *nd = node(P, JN_LIST);
  size_t cap = 0;
  if (!nd || !expect_op(P, "[")) return NULL;
  while (!tok_is_op(cur(P), "]")) {
    if (nd->n_kids && !expect_op(P, ",")) return NULL;
    if (tok_is_op(cur(P), "]")) break;
    jnode *e = parse_expression(P, true);
    if (!e || !push_kid(P, nd, e, &cap)) return NULL;
  }
  return expect_op(P, "]") ? nd : NULL;
}

static jnode *parse_dict(parser *P) {
  jnode *nd = node(P, JN_DICT);
  size_t cap = 0;
  if (!nd || !expect_op(P, "{")) return NULL;
  while (!tok_is_op(cur(P), "}")) {
    if (nd->n_kids && !expect_op(P, ",")) return NULL;
    if (tok_is_op(cur(P), "}")) break;
    jnode *k = parse_expression(P, true);
    if (!k || !expect_op(P, ":")) return NULL;
    jnode *v = parse_expression(P, true);
    if (!v || !push_kid(P, nd, k, &cap) || !push_kid(P, nd, v, &cap))
      return NULL;
  }
  return expect_op(P, "}") ? nd : NULL;
}

static jnode *literal(parser *P, jv v) {
  jnode *nd = node(P, JN_LIT);
  if (nd) nd->value = v;
  return nd;
}

static jnode *parse_primary(parser *P) {
  if (!enter(P)) return NULL;
  const jtok *t = cur(P);
  jnode *nd = NULL;
  if (t->t == TK_NAME) {
    if (tok_is_name(t, "true") || tok_is_name(t, "True"))
      nd = literal(P, jv_bool(true));
    else if (tok_is_name(t, "false") || tok_is_name(t, "False"))
      nd = literal(P, jv_bool(false));
    else if (tok_is_name(t, "none") || tok_is_name(t, "None"))
      nd = literal(P, jv_none());
    else if ((nd = node(P, JN_NAME))) {
      nd->name = t->p;
      nd->name_len = t->n;
    }
    advance(P);
  } else if (t->t == TK_STRING) {
    /* adjacent string literals concatenate */
    size_t total = 0, k = 0;
    while (peek(P, k)->t == TK_STRING)
      total += peek(P, k++)->n;
    char *s = jinja_arena_alloc(P->a, total + 1);
    if (!s) return fail_msg(P, NC_ERR_LIMIT, "template too large");
    size_t o = 0;
    while (cur(P)->t == TK_STRING) {
      memcpy(s + o, cur(P)->p, cur(P)->n);
      o += cur(P)->n;
      advance(P);
    }
    nd = literal(P, jv_str(s, o));
  } else if (t->t == TK_INT) {
    nd = literal(P, jv_int(t->i));
    advance(P);
  } else if (t->t == TK_FLOAT) {
    nd = literal(P, jv_float(t->f));
    advance(P);
  } else if (tok_is_op(t, "(")) {
    advance(P);
    nd = parse_tuple(P, false, true, NULL, true);
    if (nd && !expect_op(P, ")")) nd = NULL;
  } else if (tok_is_op(t, "[")) {
    nd = parse_list(P);
  } else if (tok_is_op(t, "{")) {
    nd = parse_dict(P);
  } else {
    nd = fail_at(P, "unexpected token in expression");
  }
  P->depth--;
  return nd;
}

/* Inside [...]: an expression or a slice a:b:c. */
static jnode *parse_subscribed(parser *P) {
  jnode *args[3] = {NULL, NULL, NULL};
  if (tok_is_op(cur(P), ":")) {
    advance(P);
  } else {
    jnode *e = parse_expression(P, true);
    if (!e) return NULL;
    if (!tok_is_op(cur(P), ":")) return e;
    advance(P);
    args[0] = e;
  }
  jnode *sl = node(P, JN_SLICE);
  if (!sl) return NULL;
  if (!tok_is_op(cur(P), ":") && !tok_is_op(cur(P), "]") &&
      !tok_is_op(cur(P), ",")) {
    if (!(args[1] = parse_expression(P, true))) return NULL;
  }
  if (tok_is_op(cur(P), ":")) {
    advance(P);
    if (!tok_is_op(cur(P), "]") && !tok_is_op(cur(P), ",")) {
      if (!(args[2] = parse_expression(P, true))) return NULL;
    }
  }
  sl->b = args[0];
  sl->c = args[1];
  sl->d = args[2];
  return sl;
}

static jnode *parse_call_args(parser *P, jnode *call) {
  size_t cap = 0, kwcap = 0;
  if (!expect_op(P, "(")) return NULL;
  while (!tok_is_op(cur(P), ")")) {
    if ((call->n_kids || call->n_kw) && !expect_op(P, ",")) return NULL;
    if (tok_is_op(cur(P), ")")) break;
    if (tok_is_op(cur(P), "*") || tok_is_op(cur(P), "**"))
      return fail_msg(P, NC_ERR_UNSUPPORTED,
                      "*args and **kwargs in calls are not supported");
    if (cur(P)->t == TK_NAME && tok_is_op(peek(P, 1), "=")) {
      const jtok *name = cur(P);
      advance(P);
      advance(P);
      jnode *v = parse_expression(P, true);
      if (!v || !push_kw(P, call, name->p, name->n, v, &kwcap)) return NULL;
    } else {
      if (call->n_kw)
        return fail_at(P, "positional argument after keyword argument");
      jnode *v = parse_expression(P, true);
      if (!v || !push_kid(P, call, v, &cap)) return NULL;
    }
  }
  return expect_op(P, ")") ? call : NULL;
}

static jnode *parse_postfix(parser *P, jnode *nd) {
  while (nd) {
    const jtok *t = cur(P);
    if (tok_is_op(t, ".")) {
      advance(P);
      const jtok *name = cur(P);
      if (name->t == TK_NAME) {
        jnode *at = node(P, JN_ATTR);
        if (!at) return NULL;
        at->a = nd;
        at->name = name->p;
        at->name_len = name->n;
        advance(P);
        nd = at;
      } else if (name->t == TK_INT) {
        jnode *sub = node(P, JN_SUBSCRIPT);
        if (!sub) return NULL;
        sub->a = nd;
        sub->b = literal(P, jv_int(name->i));
        advance(P);
        nd = sub;
      } else {
        return fail_at(P, "expected a name or number after '.'");
      }
    } else if (tok_is_op(t, "[")) {
      advance(P);
      jnode *idx = node(P, JN_TUPLE);
      size_t cap = 0;
      if (!idx) return NULL;
      while (!tok_is_op(cur(P), "]")) {
        if (idx->n_kids && !expect_op(P, ",")) return NULL;
        jnode *e = parse_subscribed(P);
        if (!e || !push_kid(P, idx, e, &cap)) return NULL;
      }
      if (!expect_op(P, "]")) return NULL;
      if (idx->n_kids == 0) return fail_at(P, "expected a subscript");
      for (size_t k = 0; idx->n_kids > 1 && k < idx->n_kids; k++)
        if (idx->kids[k]->kind == JN_SLICE) /* jinja2 cannot compile it */
          return fail_msg(P, NC_ERR_FORMAT,
                          "a slice must be the only subscript");
      jnode *arg = idx->n_kids == 1 ? idx->kids[0] : idx;
      jnode *sub = node(P, arg->kind == JN_SLICE ? JN_SLICE : JN_SUBSCRIPT);
      if (!sub) return NULL;
      sub->a = nd;
      if (arg->kind == JN_SLICE) {
        sub->b = arg->b;
        sub->c = arg->c;
        sub->d = arg->d;
      } else {
        sub->b = arg;
      }
      nd = sub;
    } else if (tok_is_op(t, "(")) {
      jnode *call = node(P, JN_CALL);
      if (!call) return NULL;
      call->a = nd;
      nd = parse_call_args(P, call);
    } else {
      break;
    }
  }
  return nd;
}

/* A (possibly dotted) filter or test name. */
static bool parse_dotted_name(parser *P, jnode *nd) {
  const jtok *t = cur(P);
  if (t->t != TK_NAME) {
    fail_at(P, "expected a filter or test name");
    return false;
  }
  nd->name = t->p;
  nd->name_len = t->n;
  advance(P);
  while (tok_is_op(cur(P), ".") && peek(P, 1)->t == TK_NAME) {
    /* tokens are contiguous in the source only for the simple case: keep the
     * last component, jinja2 itself would look up "a.b" which we lack */
    advance(P);
    nd->name = cur(P)->p;
    nd->name_len = cur(P)->n;
    advance(P);
  }
  return true;
}

static jnode *parse_filter_chain(parser *P, jnode *nd, bool start_inline) {
  while (tok_is_op(cur(P), "|") || start_inline) {
    if (!start_inline) advance(P);
    start_inline = false;
    jnode *f = node(P, JN_FILTER);
    if (!f || !parse_dotted_name(P, f)) return NULL;
    f->a = nd;
    if (tok_is_op(cur(P), "(") && !parse_call_args(P, f)) return NULL;
    nd = f;
  }
  return nd;
}

static jnode *parse_test(parser *P, jnode *nd) {
  advance(P); /* is */
  jnode *t = node(P, JN_TEST);
  if (!t) return NULL;
  if (tok_is_name(cur(P), "not")) {
    advance(P);
    t->op = 1;
  }
  if (!parse_dotted_name(P, t)) return NULL;
  t->a = nd;
  const jtok *c = cur(P);
  if (tok_is_op(c, "(")) {
    if (!parse_call_args(P, t)) return NULL;
  } else if ((c->t == TK_NAME || c->t == TK_STRING || c->t == TK_INT ||
              c->t == TK_FLOAT || tok_is_op(c, "(") || tok_is_op(c, "[") ||
              tok_is_op(c, "{")) &&
             !tok_is_name(c, "else") && !tok_is_name(c, "or") &&
             !tok_is_name(c, "and")) {
    if (tok_is_name(c, "is"))
      return fail_at(P, "you cannot chain multiple tests with is");
    jnode *arg = parse_postfix(P, parse_primary(P));
    size_t cap = 0;
    if (!arg || !push_kid(P, t, arg, &cap)) return NULL;
  }
  return t;
}

static jnode *parse_filter_expr(parser *P, jnode *nd) {
  while (nd) {
    if (tok_is_op(cur(P), "|"))
      nd = parse_filter_chain(P, nd, false);
    else if (tok_is_name(cur(P), "is"))
      nd = parse_test(P, nd);
    else if (tok_is_op(cur(P), "(")) {
      jnode *call = node(P, JN_CALL);
      if (!call) return NULL;
      call->a = nd;
      nd = parse_call_args(P, call);
    } else
      break;
  }
  return nd;
}

static jnode *parse_unary(parser *P, bool with_filter) {
  if (!enter(P)) return NULL;
  jnode *nd;
  if (tok_is_op(cur(P), "-") || tok_is_op(cur(P), "+")) {
    nd = node(P, JN_UNARY);
    if (nd) {
      nd->op = cur(P)->p[0];
      advance(P);
      nd->a = parse_unary(P, false);
      if (!nd->a) nd = NULL;
    }
  } else {
    nd = parse_primary(P);
  }
  nd = parse_postfix(P, nd);
  if (with_filter) nd = parse_filter_expr(P, nd);
  P->depth--;
  return nd;
}

static jnode *binary(parser *P, int op, jnode *l, jnode *r) {
  if (!l || !r) return NULL;
  jnode *nd = node(P, JN_BINARY);
  if (!nd) return NULL;
  nd->op = op;
  nd->a = l;
  nd->b = r;
  nd->line = l->line;
  return nd;
}

static jnode *parse_pow(parser *P) {
  jnode *l = parse_unary(P, true);
  while (l && tok_is_op(cur(P), "**")) {
    advance(P);
    l = binary(P, 'P', l, parse_unary(P, true));
  }
  return l;
}

static jnode *parse_math2(parser *P) {
  jnode *l = parse_pow(P);
  for (;;) {
    int op = tok_is_op(cur(P), "*")    ? '*'
             : tok_is_op(cur(P), "/")  ? '/'
             : tok_is_op(cur(P), "//") ? 'F'
             : tok_is_op(cur(P), "%")  ? '%'
                                       : 0;
    if (!l || !op) return l;
    advance(P);
    l = binary(P, op, l, parse_pow(P));
  }
}

static jnode *parse_concat(parser *P) {
  jnode *l = parse_math2(P);
  while (l && tok_is_op(cur(P), "~")) {
    advance(P);
    l = binary(P, '~', l, parse_math2(P));
  }
  return l;
}

static jnode *parse_math1(parser *P) {
  jnode *l = parse_concat(P);
  for (;;) {
    int op = tok_is_op(cur(P), "+") ? '+' : tok_is_op(cur(P), "-") ? '-' : 0;
    if (!l || !op) return l;
    advance(P);
    l = binary(P, op, l, parse_concat(P));
  }
}

static int compare_op(parser *P) {
  const jtok *t = cur(P);
  if (tok_is_op(t, "==")) return JC_EQ;
  if (tok_is_op(t, "!=")) return JC_NE;
  if (tok_is_op(t, "<")) return JC_LT;
  if (tok_is_op(t, "<=")) return JC_LE;
  if (tok_is_op(t, ">")) return JC_GT;
  if (tok_is_op(t, ">=")) return JC_GE;
  if (tok_is_name(t, "in")) return JC_IN;
  if (tok_is_name(t, "not") && tok_is_name(peek(P, 1), "in")) return JC_NOTIN;
  return -1;
}

static jnode *parse_compare(parser *P) {
  jnode *first = parse_math1(P);
  if (!first) return NULL;
  int op = compare_op(P);
  if (op < 0) return first;
  jnode *cmp = node(P, JN_COMPARE);
  size_t cap = 0, opcap = 0;
  if (!cmp || !push_kid(P, cmp, first, &cap)) return NULL;
  cmp->line = first->line;
  while ((op = compare_op(P)) >= 0) {
    advance(P);
    if (op == JC_NOTIN) advance(P);
    jnode *r = parse_math1(P);
    if (!r || !push_kid(P, cmp, r, &cap)) return NULL;
    if (cmp->n_kids - 1 > opcap) {
      size_t nc = opcap ? opcap * 2 : 4;
      int *ops = jinja_arena_alloc(P->a, nc * sizeof *ops);
      if (!ops) return fail_msg(P, NC_ERR_LIMIT, "template too large");
      if (opcap) memcpy(ops, cmp->ops, opcap * sizeof *ops);
      cmp->ops = ops;
      opcap = nc;
    }
    cmp->ops[cmp->n_kids - 2] = op;
  }
  return cmp;
}

static jnode *parse_not(parser *P) {
  if (tok_is_name(cur(P), "not")) {
    if (!enter(P)) return NULL;
    jnode *nd = node(P, JN_UNARY);
    advance(P);
    if (nd) {
      nd->op = '!';
      nd->a = parse_not(P);
      if (!nd->a) nd = NULL;
    }
    P->depth--;
    return nd;
  }
  return parse_compare(P);
}

static jnode *parse_and(parser *P) {
  jnode *l = parse_not(P);
  while (l && tok_is_name(cur(P), "and")) {
    advance(P);
    l = binary(P, '&', l, parse_not(P));
  }
  return l;
}

static jnode *parse_or(parser *P) {
  jnode *l = parse_and(P);
  while (l && tok_is_name(cur(P), "or")) {
    advance(P);
    l = binary(P, '|', l, parse_and(P));
  }
  return l;
}

static jnode *parse_condexpr(parser *P) {
  if (!enter(P)) return NULL;
  jnode *e1 = parse_or(P);
  while (e1 && tok_is_name(cur(P), "if")) {
    advance(P);
    jnode *c = node(P, JN_COND);
    if (!c) break;
    c->b = e1;
    c->a = parse_or(P);
    if (!c->a) {
      e1 = NULL;
      break;
    }
    if (tok_is_name(cur(P), "else")) {
      advance(P);
      c->c = parse_condexpr(P);
      if (!c->c) {
        e1 = NULL;
        break;
      }
    }
    e1 = c;
  }
  P->depth--;
  return e1;
}

static jnode *parse_expression(parser *P, bool with_condexpr) {
  return with_condexpr ? parse_condexpr(P) : parse_or(P);
}

/* ------------------------------------------------------------ statements */

static jnode *parse_body(parser *P, const char *const *ends, size_t n_ends);

static bool expect_block_end(parser *P) {
  return expect_type(P, TK_BLOCK_END, "expected '%}'");
}

/* After a body stopped at an end tag: consume "endX %}". */
static bool end_tag(parser *P, const char *name) {
  if (!tok_is_name(cur(P), name)) {
    char msg[64];
    snprintf(msg, sizeof msg, "expected '%s'", name);
    fail_at(P, msg);
    return false;
  }
  advance(P);
  return expect_block_end(P);
}

static jnode *parse_assign_target(parser *P, const char *extra_end) {
  jnode *t = parse_tuple(P, true, false, extra_end, false);
  if (!t) return NULL;
  if (t->kind == JN_NAME) return t;
  if (t->kind == JN_TUPLE) {
    for (size_t i = 0; i < t->n_kids; i++)
      if (t->kids[i]->kind != JN_NAME)
        return fail_msg(P, NC_ERR_FORMAT, "can't assign to this target");
    return t;
  }
  return fail_msg(P, NC_ERR_FORMAT, "can't assign to this target");
}

static jnode *parse_if(parser *P) {
  jnode *nd = node(P, JN_IF);
  if (!nd) return NULL;
  advance(P); /* if / elif */
  nd->a = parse_tuple(P, false, false, NULL, false);
  if (!nd->a || !expect_block_end(P)) return NULL;
  static const char *const ends[] = {"elif", "else", "endif"};
  nd->b = parse_body(P, ends, 3);
  if (!nd->b) return NULL;
  if (tok_is_name(cur(P), "elif")) {
    jnode *body = node(P, JN_BODY);
    size_t cap = 0;
    if (!body) return NULL;
    jnode *elif = parse_if(P);
    if (!elif || !push_kid(P, body, elif, &cap)) return NULL;
    nd->c = body;
    return nd; /* the nested if consumed endif */
  }
  if (tok_is_name(cur(P), "else")) {
    advance(P);
    if (!expect_block_end(P)) return NULL;
    static const char *const end[] = {"endif"};
    nd->c = parse_body(P, end, 1);
    if (!nd->c) return NULL;
  }
  return end_tag(P, "endif") ? nd : NULL;
}

static jnode *parse_for(parser *P) {
  jnode *nd = node(P, JN_FOR);
  if (!nd) return NULL;
  advance(P);
  nd->a = parse_assign_target(P, "in");
  if (!nd->a) return NULL;
  if (!tok_is_name(cur(P), "in")) return fail_at(P, "expected 'in'");
  advance(P);
  nd->b = parse_tuple(P, false, false, "recursive", false);
  if (!nd->b) return NULL;
  if (tok_is_name(cur(P), "if")) {
    advance(P);
    nd->c = parse_expression(P, true);
    if (!nd->c) return NULL;
  }
  if (tok_is_name(cur(P), "recursive"))
    return fail_msg(P, NC_ERR_UNSUPPORTED, "recursive loops are not supported");
  if (!expect_block_end(P)) return NULL;
  static const char *const ends[] = {"endfor", "else"};
  P->loop_depth++;
  nd->d = parse_body(P, ends, 2);
  P->loop_depth--;
  if (!nd->d) return NULL;
  if (tok_is_name(cur(P), "else")) {
    advance(P);
    if (!expect_block_end(P)) return NULL;
    static const char *const end[] = {"endfor"};
    nd->e = parse_body(P, end, 1);
    if (!nd->e) return NULL;
  }
  return end_tag(P, "endfor") ? nd : NULL;
}

static jnode *parse_set(parser *P) {
  int line = cur(P)->line;
  advance(P);
  jnode *target;
  if (cur(P)->t == TK_NAME && tok_is_op(peek(P, 1), ".") &&
      peek(P, 2)->t == TK_NAME) {
    target = node(P, JN_NSSET);
    if (!target) return NULL;
    target->name = cur(P)->p;
    target->name_len = cur(P)->n;
    target->value = jv_str(peek(P, 2)->p, peek(P, 2)->n);
    advance(P);
    advance(P);
    advance(P);
  } else {
    target = parse_assign_target(P, NULL);
    if (!target) return NULL;
  }
  if (tok_is_op(cur(P), "=")) {
    advance(P);
    jnode *val = parse_tuple(P, false, true, NULL, false);
    if (!val || !expect_block_end(P)) return NULL;
    if (target->kind == JN_NSSET) {
      target->b = val;
      target->line = line;
      return target;
    }
    jnode *nd = node(P, JN_SET);
    if (!nd) return NULL;
    nd->line = line;
    nd->a = target;
    nd->b = val;
    return nd;
  }
  if (target->kind != JN_NAME)
    return fail_msg(P, NC_ERR_UNSUPPORTED,
                    "a set block must assign to a single name");
  jnode *nd = node(P, JN_SETBLOCK);
  if (!nd) return NULL;
  nd->line = line;
  nd->a = target;
  if (tok_is_op(cur(P), "|")) {
    nd->c = parse_filter_chain(P, NULL, false);
    if (!nd->c) return NULL;
  }
  if (!expect_block_end(P)) return NULL;
  static const char *const end[] = {"endset"};
  nd->b = parse_body(P, end, 1);
  if (!nd->b) return NULL;
  return end_tag(P, "endset") ? nd : NULL;
}

/* (a, b=default, ...) of a macro or call block. */
static bool parse_signature(parser *P, jnode *nd) {
  size_t cap = 0;
  if (!expect_op(P, "(")) return false;
  while (!tok_is_op(cur(P), ")")) {
    if (nd->n_kw && !expect_op(P, ",")) return false;
    if (cur(P)->t != TK_NAME) {
      fail_at(P, "expected a parameter name");
      return false;
    }
    const jtok *name = cur(P);
    advance(P);
    jnode *def = NULL;
    if (tok_is_op(cur(P), "=")) {
      advance(P);
      if (!(def = parse_expression(P, true))) return false;
    }
    if (!push_kw(P, nd, name->p, name->n, def, &cap)) return false;
  }
  return expect_op(P, ")");
}

static jnode *parse_macro(parser *P) {
  jnode *nd = node(P, JN_MACRO);
  if (!nd) return NULL;
  advance(P);
  if (cur(P)->t != TK_NAME) return fail_at(P, "expected a macro name");
  nd->name = cur(P)->p;
  nd->name_len = cur(P)->n;
  advance(P);
  if (!parse_signature(P, nd) || !expect_block_end(P)) return NULL;
  static const char *const end[] = {"endmacro"};
  int saved = P->loop_depth;
  P->loop_depth = 0;
  nd->b = parse_body(P, end, 1);
  P->loop_depth = saved;
  if (!nd->b) return NULL;
  advance(P);
  if (cur(P)->t == TK_NAME) advance(P); /* {% endmacro name %} */
  return expect_block_end(P) ? nd : NULL;
}

static jnode *parse_call_block(parser *P) {
  jnode *nd = node(P, JN_CALLBLOCK);
  if (!nd) return NULL;
  advance(P);
  if (tok_is_op(cur(P), "(") && !parse_signature(P, nd)) return NULL;
  nd->a = parse_expression(P, true);
  if (!nd->a) return NULL;
  if (nd->a->kind != JN_CALL) return fail_at(P, "expected a call");
  if (!expect_block_end(P)) return NULL;
  static const char *const end[] = {"endcall"};
  nd->b = parse_body(P, end, 1);
  if (!nd->b) return NULL;
  return end_tag(P, "endcall") ? nd : NULL;
}

static jnode *parse_filter_block(parser *P) {
  jnode *nd = node(P, JN_FILTERBLOCK);
  if (!nd) return NULL;
  advance(P);
  nd->a = parse_filter_chain(P, NULL, true);
  if (!nd->a || !expect_block_end(P)) return NULL;
  static const char *const end[] = {"endfilter"};
  nd->b = parse_body(P, end, 1);
  if (!nd->b) return NULL;
  return end_tag(P, "endfilter") ? nd : NULL;
}

static jnode *parse_with(parser *P) {
  jnode *nd = node(P, JN_WITH);
  size_t cap = 0;
  if (!nd) return NULL;
  advance(P);
  while (cur(P)->t != TK_BLOCK_END) {
    if (nd->n_kw && !expect_op(P, ",")) return NULL;
    if (cur(P)->t != TK_NAME) return fail_at(P, "expected a name");
    const jtok *name = cur(P);
    advance(P);
    if (!expect_op(P, "=")) return NULL;
    jnode *v = parse_expression(P, true);
    if (!v || !push_kw(P, nd, name->p, name->n, v, &cap)) return NULL;
  }
  advance(P);
  static const char *const end[] = {"endwith"};
  nd->b = parse_body(P, end, 1);
  if (!nd->b) return NULL;
  return end_tag(P, "endwith") ? nd : NULL;
}

/* Statements whose body renders in place: generation, block, autoescape. */
static jnode *parse_passthrough(parser *P, const char *end_name) {
  advance(P);
  while (cur(P)->t != TK_BLOCK_END && cur(P)->t != TK_EOF)
    advance(P);
  if (!expect_block_end(P)) return NULL;
  const char *const ends[] = {end_name};
  jnode *body = parse_body(P, ends, 1);
  if (!body) return NULL;
  advance(P);
  while (cur(P)->t == TK_NAME)
    advance(P); /* {% endblock name %} */
  return expect_block_end(P) ? body : NULL;
}

static jnode *parse_statement(parser *P) {
  const jtok *t = cur(P);
  if (t->t != TK_NAME) return fail_at(P, "expected a statement name");
  if (tok_is_name(t, "if")) return parse_if(P);
  if (tok_is_name(t, "for")) return parse_for(P);
  if (tok_is_name(t, "set")) return parse_set(P);
  if (tok_is_name(t, "macro")) return parse_macro(P);
  if (tok_is_name(t, "call")) return parse_call_block(P);
  if (tok_is_name(t, "filter")) return parse_filter_block(P);
  if (tok_is_name(t, "with")) return parse_with(P);
  if (tok_is_name(t, "generation"))
    return parse_passthrough(P, "endgeneration");
  if (tok_is_name(t, "block")) return parse_passthrough(P, "endblock");
  if (tok_is_name(t, "autoescape"))
    return parse_passthrough(P, "endautoescape");
  if (tok_is_name(t, "print")) {
    jnode *nd = node(P, JN_PRINT);
    if (!nd) return NULL;
    advance(P);
    nd->a = parse_tuple(P, false, true, NULL, false);
    return nd->a && expect_block_end(P) ? nd : NULL;
  }
  if (tok_is_name(t, "break") || tok_is_name(t, "continue")) {
    if (P->loop_depth == 0)
      return fail_msg(P, NC_ERR_FORMAT, "'break' or 'continue' outside a loop");
    jnode *nd = node(P, tok_is_name(t, "break") ? JN_BREAK : JN_CONTINUE);
    if (!nd) return NULL;
    advance(P);
    return expect_block_end(P) ? nd : NULL;
  }
  if (tok_is_name(t, "include") || tok_is_name(t, "import") ||
      tok_is_name(t, "from") || tok_is_name(t, "extends"))
    return fail_msg(P, NC_ERR_UNSUPPORTED,
                    "templates cannot load other templates (sandbox)");
  char msg[96];
  snprintf(msg, sizeof msg, "unknown tag '%.*s'", (int)(t->n > 40 ? 40 : t->n),
           t->p);
  return fail_msg(P, NC_ERR_FORMAT, msg);
}

/* Statements until EOF (ends == NULL) or a block tag named in ends: stops
 * with the current token on that name. */
static jnode *parse_body(parser *P, const char *const *ends, size_t n_ends) {
  if (!enter(P)) return NULL;
  jnode *body = node(P, JN_BODY);
  size_t cap = 0;
  while (body) {
    const jtok *t = cur(P);
    jnode *st = NULL;
    if (t->t == TK_EOF) {
      if (n_ends) {
        char msg[80];
        snprintf(msg, sizeof msg, "unexpected end of template, expected '%s'",
                 ends[n_ends - 1]);
        body = fail_msg(P, NC_ERR_FORMAT, msg);
      }
      break;
    }
    if (t->t == TK_DATA) {
      st = node(P, JN_TEXT);
      if (st) st->value = jv_str(t->p, t->n);
      advance(P);
    } else if (t->t == TK_VAR_BEGIN) {
      advance(P);
      st = node(P, JN_PRINT);
      if (st && (st->a = parse_tuple(P, false, true, NULL, false)) != NULL) {
        if (!expect_type(P, TK_VAR_END, "expected '}}'")) st = NULL;
      } else {
        st = NULL;
      }
    } else if (t->t == TK_BLOCK_BEGIN) {
      const jtok *name = peek(P, 1);
      bool is_end = false;
      for (size_t i = 0; i < n_ends; i++)
        if (tok_is_name(name, ends[i])) is_end = true;
      advance(P);
      if (is_end) break;
      st = parse_statement(P);
    } else {
      st = fail_at(P, "unexpected token");
    }
    if (!st || !push_kid(P, body, st, &cap)) body = NULL;
  }
  P->depth--;
  return body;
}

nc_code jinja_parse(jinja_arena *a, const jtok *toks, size_t n_toks,
                    jnode **out, nc_error *err) {
  parser P = {.a = a, .err = err, .t = toks, .n = n_toks};
  jnode *body = parse_body(&P, NULL, 0);
  if (!body) {
    if (!P.failed) nc_fail(err, NC_ERR_FORMAT, "template parse failed");
    return err ? err->code : NC_ERR_FORMAT;
  }
  *out = body;
  return NC_OK;
}
