/* jinja_exec: executing statements (output, if, for, set, macros, call and
 * filter blocks) and calling callables. */
#include <string.h>

#include "jinja_interp.h"

jframe *jframe_new(jinterp *I, jframe *parent) {
  jframe *f = jinja_arena_alloc(I->a, sizeof *f);
  if (!f) return jfail_mem(I), NULL;
  f->parent = parent;
  f->vars = jdict_new(I->a, 4);
  if (!f->vars) return jfail_mem(I), NULL;
  return f;
}

bool jframe_set(jinterp *I, jframe *f, const char *name, size_t len, jv v) {
  if (!jdict_set(I->a, f->vars, jv_str(name, len), v)) return jfail_mem(I);
  return true;
}

static bool write_out(jinterp *I, jv v) {
  if (!jv_write_str(I->out, v) || I->out->over || I->out->oom) {
    if (I->out->oom) return jfail_mem(I);
    return jfail(I, NC_ERR_LIMIT, "output longer than %zu bytes",
                 I->lim.max_output);
  }
  return true;
}

bool jcapture(jinterp *I, const jnode *body, jv *out) {
  jbuf buf, *saved = I->out;
  jbuf_init(&buf, I->lim.max_output);
  I->out = &buf;
  bool ok = jexec(I, body);
  I->out = saved;
  if (!ok) {
    jbuf_free(&buf);
    return false;
  }
  return jv_from_buf(I, &buf, out);
}

/* Captures a set block's or filter block's body, which jinja2 runs in a
 * scope of its own (its assignments do not leak out). */
static bool capture_scoped(jinterp *I, const jnode *body, jv *out) {
  jframe *outer = I->frame, *f = jframe_new(I, outer);
  if (!f) return false;
  I->frame = f;
  bool ok = jcapture(I, body, out);
  I->frame = outer;
  return ok;
}

/* Binds a for/set target (a name or a tuple of names) to v. */
static bool assign(jinterp *I, jframe *f, const jnode *target, jv v) {
  if (target->kind == JN_NAME)
    return jframe_set(I, f, target->name, target->name_len, v);
  jlist *items;
  if (!jv_iterate(I, v, &items)) return false;
  if (items->n != target->n_kids)
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 items->n > target->n_kids
                     ? "too many values to unpack (expected %zu)"
                     : "not enough values to unpack (expected %zu)",
                 target->n_kids);
  for (size_t i = 0; i < target->n_kids; i++)
    if (!jframe_set(I, f, target->kids[i]->name, target->kids[i]->name_len,
                    items->v[i]))
      return false;
  return true;
}

static bool exec_for(jinterp *I, const jnode *n) {
  jv seq;
  jlist *items;
  if (!jeval(I, n->b, &seq) || !jv_iterate(I, seq, &items)) return false;
  jframe *outer = I->frame;
  jframe *f = jframe_new(I, outer);
  if (!f) return false;
  if (n->c) { /* for x in xs if cond: filter first, like jinja2 */
    jlist *kept = jlist_new(I->a, items->n);
    if (!kept) return jfail_mem(I);
    size_t k = 0;
    I->frame = f;
    for (size_t i = 0; i < items->n; i++) {
      jv keep;
      f->vars->n = 0;
      if (!assign(I, f, n->a, items->v[i]) || !jeval(I, n->c, &keep)) {
        I->frame = outer;
        return false;
      }
      if (jv_truthy(keep)) kept->v[k++] = items->v[i];
    }
    I->frame = outer;
    kept->n = k;
    items = kept;
  }
  if (items->n == 0) return n->e ? jexec(I, n->e) : true;
  jloop *loop = jinja_arena_alloc(I->a, sizeof *loop);
  if (!loop) return jfail_mem(I);
  loop->length = (int64_t)items->n;
  jv loopv = {.t = JV_LOOP};
  loopv.u.loop = loop;
  bool ok = true;
  /* jinja2 clears its "run the else block" flag at the end of the body, so
   * an iteration left by break or continue does not count */
  bool completed = false;
  I->frame = f;
  for (size_t i = 0; i < items->n && ok; i++) {
    if (--I->fuel < 0) {
      ok = jfail(I, NC_ERR_LIMIT, "template exceeded %lld evaluation steps",
                 (long long)I->lim.max_steps);
      break;
    }
    loop->index0 = (int64_t)i;
    loop->prev = i ? items->v[i - 1] : jv_undef("there is no previous item");
    loop->next =
        i + 1 < items->n ? items->v[i + 1] : jv_undef("there is no next item");
    f->vars->n = 0; /* each iteration starts from the enclosing scope */
    ok = jframe_set(I, f, "loop", 4, loopv) && assign(I, f, n->a, items->v[i]);
    if (ok) ok = jexec(I, n->d);
    if (ok && I->ctl == 0) completed = true;
    if (I->ctl == JN_BREAK) {
      I->ctl = 0;
      break;
    }
    I->ctl = 0;
  }
  I->frame = outer;
  if (ok && !completed && n->e) ok = jexec(I, n->e);
  return ok;
}

static bool exec_set(jinterp *I, const jnode *n) {
  jv v;
  if (n->kind == JN_NSSET) {
    jv ns;
    if (!jeval(I, n->b, &v)) return false;
    bool found = false;
    for (jframe *f = I->frame; f && !found; f = f->parent)
      found = jdict_get_str(f->vars, n->name, n->name_len, &ns);
    if (!found || ns.t != JV_NS)
      return jfail(I, NC_ERR_INVALID_ARGUMENT,
                   "cannot assign attribute on non-namespace object '%.*s'",
                   (int)(n->name_len > 80 ? 80 : n->name_len), n->name);
    if (!jdict_set(I->a, ns.u.d, n->value, v)) return jfail_mem(I);
    return true;
  }
  if (n->kind == JN_SETBLOCK) {
    if (!capture_scoped(I, n->b, &v)) return false;
    if (n->c) {
      const jnode *chain[32];
      size_t k = 0;
      for (const jnode *f = n->c; f && k < 32; f = f->a)
        chain[k++] = f;
      for (size_t i = k; i-- > 0;) {
        jv args[JINJA_MAX_ARGS];
        jkw kw[JINJA_MAX_ARGS];
        const jnode *f = chain[i];
        if (f->n_kids > JINJA_MAX_ARGS || f->n_kw > JINJA_MAX_ARGS)
          return jfail(I, NC_ERR_LIMIT, "too many filter arguments");
        for (size_t j = 0; j < f->n_kids; j++)
          if (!jeval(I, f->kids[j], &args[j])) return false;
        for (size_t j = 0; j < f->n_kw; j++) {
          kw[j].name = f->kwnames[j];
          kw[j].len = f->kwlens[j];
          if (!jeval(I, f->kwvals[j], &kw[j].val)) return false;
        }
        if (!jfilter(I, f->name, f->name_len, v, args, f->n_kids, kw, f->n_kw,
                     &v))
          return false;
      }
    }
    return jframe_set(I, I->frame, n->a->name, n->a->name_len, v);
  }
  return jeval(I, n->b, &v) && assign(I, I->frame, n->a, v);
}

static bool define_macro(jinterp *I, const jnode *n, int kind, jv *out) {
  jfunc *fn = jinja_arena_alloc(I->a, sizeof *fn);
  if (!fn) return jfail_mem(I);
  memset(fn, 0, sizeof *fn);
  fn->kind = kind;
  fn->node = n;
  fn->closure = I->frame;
  out->t = JV_FUNC;
  out->u.fn = fn;
  return true;
}

static bool exec_call_block(jinterp *I, const jnode *n) {
  const jnode *call = n->a;
  jv fn, caller, args[JINJA_MAX_ARGS], res;
  jkw kw[JINJA_MAX_ARGS + 1];
  if (call->n_kids > JINJA_MAX_ARGS || call->n_kw > JINJA_MAX_ARGS)
    return jfail(I, NC_ERR_LIMIT, "too many call arguments");
  if (!jeval(I, call->a, &fn) || !define_macro(I, n, JF_CALLER, &caller))
    return false;
  for (size_t i = 0; i < call->n_kids; i++)
    if (!jeval(I, call->kids[i], &args[i])) return false;
  for (size_t i = 0; i < call->n_kw; i++) {
    kw[i].name = call->kwnames[i];
    kw[i].len = call->kwlens[i];
    if (!jeval(I, call->kwvals[i], &kw[i].val)) return false;
  }
  kw[call->n_kw] = (jkw){.name = "caller", .len = 6, .val = caller};
  return jcall(I, fn, args, call->n_kids, kw, call->n_kw + 1, &res) &&
         write_out(I, res);
}

static bool exec_inner(jinterp *I, const jnode *n) {
  jv v;
  switch (n->kind) {
  case JN_BODY:
    for (size_t i = 0; i < n->n_kids; i++) {
      if (!jexec(I, n->kids[i])) return false;
      if (I->ctl) return true;
    }
    return true;
  case JN_TEXT: return write_out(I, n->value);
  case JN_PRINT: return jeval(I, n->a, &v) && write_out(I, v);
  case JN_IF:
    if (!jeval(I, n->a, &v)) return false;
    if (jv_truthy(v)) return jexec(I, n->b);
    return n->c ? jexec(I, n->c) : true;
  case JN_FOR: return exec_for(I, n);
  case JN_SET:
  case JN_NSSET:
  case JN_SETBLOCK: return exec_set(I, n);
  case JN_MACRO:
    return define_macro(I, n, JF_MACRO, &v) &&
           jframe_set(I, I->frame, n->name, n->name_len, v);
  case JN_CALLBLOCK: return exec_call_block(I, n);
  case JN_FILTERBLOCK: {
    jnode applied;
    jnode lit = {.kind = JN_LIT, .line = n->line};
    if (!capture_scoped(I, n->b, &lit.value)) return false;
    /* the chain's innermost input is NULL: feed it the captured text */
    jnode *chain[32];
    size_t k = 0;
    for (const jnode *f = n->a; f && k < 32; f = f->a) {
      jnode *copy = jinja_arena_alloc(I->a, sizeof *copy);
      if (!copy) return jfail_mem(I);
      *copy = *f;
      chain[k++] = copy;
    }
    for (size_t i = 0; i + 1 < k; i++)
      chain[i]->a = chain[i + 1];
    chain[k - 1]->a = &lit;
    applied = *chain[0];
    return jeval(I, &applied, &v) && write_out(I, v);
  }
  case JN_WITH: {
    jframe *outer = I->frame, *f = jframe_new(I, outer);
    if (!f) return false;
    for (size_t i = 0; i < n->n_kw; i++) {
      if (!jeval(I, n->kwvals[i], &v)) return false;
      if (!jframe_set(I, f, n->kwnames[i], n->kwlens[i], v)) return false;
    }
    I->frame = f;
    bool ok = jexec(I, n->b);
    I->frame = outer;
    return ok;
  }
  case JN_BREAK:
  case JN_CONTINUE: I->ctl = n->kind; return true;
  default: return jeval(I, n, &v);
  }
}

bool jexec(jinterp *I, const jnode *n) {
  if (I->failed) return false;
  if (!n) return jfail(I, NC_ERR_INTERNAL, "missing statement");
  if (--I->fuel < 0)
    return jfail(I, NC_ERR_LIMIT, "template exceeded %lld evaluation steps",
                 (long long)I->lim.max_steps);
  if (++I->depth > JINJA_MAX_EVAL_DEPTH) {
    I->depth--;
    return jfail(I, NC_ERR_LIMIT, "template recursion deeper than %d",
                 JINJA_MAX_EVAL_DEPTH);
  }
  I->line = n->line;
  bool ok = exec_inner(I, n);
  I->depth--;
  return ok;
}

/* Calls a macro or a call block's caller. */
static bool call_macro(jinterp *I, const jfunc *fn, const jv *args,
                       size_t nargs, const jkw *kw, size_t nkw, jv *out) {
  const jnode *m = fn->node;
  if (I->macro_depth >= JINJA_MAX_MACRO_DEPTH)
    return jfail(I, NC_ERR_LIMIT, "macro calls nested deeper than %d",
                 JINJA_MAX_MACRO_DEPTH);
  jframe *f = jframe_new(I, fn->closure);
  if (!f) return false;
  if (nargs > m->n_kw)
    return jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "macro takes at most %zu arguments (%zu given)", m->n_kw,
                 nargs);
  jframe *saved = I->frame;
  I->frame = f;
  bool ok = true;
  for (size_t i = 0; i < m->n_kw && ok; i++) {
    jv v = jv_undef("missing macro argument");
    bool given = false;
    if (i < nargs) {
      v = args[i];
      given = true;
    }
    for (size_t k = 0; k < nkw && !given; k++)
      if (kw[k].len == m->kwlens[i] &&
          memcmp(kw[k].name, m->kwnames[i], kw[k].len) == 0) {
        v = kw[k].val;
        given = true;
      }
    if (!given && m->kwvals[i]) ok = jeval(I, m->kwvals[i], &v);
    if (ok) ok = jframe_set(I, f, m->kwnames[i], m->kwlens[i], v);
  }
  for (size_t k = 0; k < nkw && ok; k++) {
    bool known = false;
    for (size_t i = 0; i < m->n_kw; i++)
      known |= kw[k].len == m->kwlens[i] &&
               memcmp(kw[k].name, m->kwnames[i], kw[k].len) == 0;
    if (!known && kw[k].len == 6 && memcmp(kw[k].name, "caller", 6) == 0)
      ok = jframe_set(I, f, "caller", 6, kw[k].val);
    else if (!known)
      ok = jfail(I, NC_ERR_INVALID_ARGUMENT,
                 "macro got an unexpected keyword argument '%.*s'",
                 (int)(kw[k].len > 60 ? 60 : kw[k].len), kw[k].name);
  }
  int saved_ctl = I->ctl;
  I->macro_depth++;
  if (ok) ok = jcapture(I, m->b, out);
  I->macro_depth--;
  I->ctl = saved_ctl;
  I->frame = saved;
  return ok;
}

bool jcall(jinterp *I, jv fnv, const jv *args, size_t nargs, const jkw *kw,
           size_t nkw, jv *out) {
  if (fnv.t == JV_UNDEF) return jfail_undef(I, fnv);
  if (fnv.t != JV_FUNC)
    return jfail(I, NC_ERR_INVALID_ARGUMENT, "'%s' object is not callable",
                 jv_type_name(fnv));
  const jfunc *fn = fnv.u.fn;
  switch (fn->kind) {
  case JF_GLOBAL: return jglobal_call(I, fn, args, nargs, kw, nkw, out);
  case JF_METHOD: return jmethod_call(I, fn, args, nargs, kw, nkw, out);
  case JF_CYCLE:
    if (nargs == 0)
      return jfail(I, NC_ERR_INVALID_ARGUMENT, "no items for cycling given");
    *out = args[fn->self.u.loop->index0 % (int64_t)nargs];
    return true;
  default: return call_macro(I, fn, args, nargs, kw, nkw, out);
  }
}
