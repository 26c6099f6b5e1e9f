/* The pushdown automaton's step (see grammar_state.h): stacks whose top
 * class holds the character advance past it, then every stack is expanded
 * until its top is a class (or it is empty), through a work list; stacks
 * another one dominates (a lower step of the same bounded repetitions,
 * nc_grammar.dom_key) are dropped. Every step charges the call's budget. */
#include <stdlib.h>
#include <string.h>

#include "grammar_state.h"

void nc_gstacks_free(nc_gstacks *s) {
  free(s->data);
  free(s->off);
  free(s->hash);
  memset(s, 0, sizeof *s);
}

void nc_gstacks_clear(nc_gstacks *s) {
  s->n = 0;
  s->count = 0;
}

void nc_gwork_free(nc_gwork *w) {
  nc_gstacks_free(&w->pending);
  free(w->tmp);
  free(w->shape);
  free(w->dead);
  w->tmp = NULL;
  w->shape = NULL;
  w->dead = NULL;
  w->cap_dom = 0;
}

void nc_gwork_begin(nc_gwork *w, uint64_t budget) {
  w->spent = 0;
  w->budget = budget;
}

nc_code nc_gwork_charge(nc_gwork *w, uint64_t units, nc_error *err) {
  uint64_t before = w->spent;
  w->spent += units;
  if (w->spent > w->budget)
    return nc_fail(err, NC_ERR_LIMIT,
                   "grammar: one token took more than %llu units of work (the "
                   "per-token budget; the grammar is too ambiguous here)",
                   (unsigned long long)w->budget);
  if (w->cancel && (before >> 12) != (w->spent >> 12) &&
      atomic_load_explicit(w->cancel, memory_order_relaxed))
    return nc_fail(err, NC_ERR_CANCELLED, "grammar: cancelled");
  return NC_OK;
}

static uint64_t hash_stack(const uint32_t *s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s[0];
  for (uint32_t i = 1; i <= s[0]; i++)
    h = (h ^ s[i]) * 0x100000001B3ull;
  return h;
}

/* Appends stack s (s[0] = length). */
static nc_code push(nc_gstacks *st, const uint32_t *s, uint64_t h) {
  size_t need = (size_t)s[0] + 1;
  if (st->n + need > st->cap) {
    size_t cap = st->cap ? st->cap : 64;
    while (cap < st->n + need)
      cap *= 2;
    uint32_t *d = realloc(st->data, cap * sizeof *d);
    if (!d) return NC_ERR_NOMEM;
    st->data = d;
    st->cap = cap;
  }
  if (st->count == st->cap_off) {
    uint32_t cap = st->cap_off ? st->cap_off * 2 : 16;
    uint32_t *o = realloc(st->off, cap * sizeof *o);
    if (!o) return NC_ERR_NOMEM;
    st->off = o;
    uint64_t *hh = realloc(st->hash, cap * sizeof *hh);
    if (!hh) return NC_ERR_NOMEM;
    st->hash = hh;
    st->cap_off = cap;
  }
  st->off[st->count] = (uint32_t)st->n;
  st->hash[st->count] = h;
  st->count++;
  memcpy(st->data + st->n, s, need * sizeof *s);
  st->n += need;
  return NC_OK;
}

static nc_code push_unique(nc_gstacks *st, const uint32_t *s) {
  uint64_t h = hash_stack(s);
  for (uint32_t i = 0; i < st->count; i++) {
    if (st->hash[i] != h) continue;
    const uint32_t *t = st->data + st->off[i];
    if (t[0] == s[0] && memcmp(t + 1, s + 1, s[0] * sizeof *s) == 0)
      return NC_OK;
  }
  if (st->count >= NC_GRAMMAR_MAX_STACKS) return NC_ERR_LIMIT;
  return push(st, s, h);
}

nc_code nc_gstate_copy(nc_gstate *dst, const nc_gstate *src) {
  nc_gstacks_clear(&dst->st);
  for (uint32_t i = 0; i < src->st.count; i++) {
    nc_code rc = push(&dst->st, src->st.data + src->st.off[i], src->st.hash[i]);
    if (rc != NC_OK) return rc;
  }
  dst->cp = src->cp;
  dst->left = src->left;
  dst->lead = src->lead;
  dst->seen = src->seen;
  return NC_OK;
}

/* The element stack entry e stands for when comparing shapes. */
static uint32_t dom_key(const nc_grammar *g, uint32_t e) {
  uint32_t k = g->dom_key[e];
  return k == UINT32_MAX ? e : k;
}

/* Whether stack a matches a subset of what stack b matches: the same
 * length, and every entry the same or a step of the same chain no higher
 * than b's. */
static bool dominated(const nc_grammar *g, const uint32_t *a,
                      const uint32_t *b) {
  if (a[0] != b[0]) return false;
  for (uint32_t i = 1; i <= a[0]; i++) {
    if (a[i] == b[i]) continue;
    uint32_t ka = g->dom_key[a[i]];
    if (ka == UINT32_MAX || ka != g->dom_key[b[i]] ||
        g->dom_level[a[i]] > g->dom_level[b[i]])
      return false;
  }
  return true;
}

/* A stack's shape: its hash with chain steps read as their chain, and
 * the sum of its steps' levels (a stack dominates only stacks of a lower
 * sum). */
struct nc_gshape {
  uint64_t hash, levels;
  uint32_t index;
};

static int by_shape(const void *x, const void *y) {
  const struct nc_gshape *a = x, *b = y;
  if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
  if (a->levels != b->levels) return a->levels > b->levels ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* Drops from st every stack another one dominates (the others keep their
 * order). Stacks are compared only within one shape, each with the ones
 * of its shape kept so far (highest levels first: usually one). */
static nc_code drop_dominated(const nc_grammar *g, nc_gstacks *st, nc_gwork *w,
                              nc_error *err) {
  if (!g->dom_key || st->count < 2) return NC_OK;
  if (w->cap_dom < st->count) {
    uint32_t cap = st->count < 64 ? 64 : st->count;
    struct nc_gshape *sh = realloc(w->shape, cap * sizeof *sh);
    if (!sh) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    w->shape = sh;
    uint8_t *dead = realloc(w->dead, cap);
    if (!dead) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    w->dead = dead;
    w->cap_dom = cap;
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < st->count; i++) {
    const uint32_t *s = st->data + st->off[i];
    bool chain = false;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s[0], levels = 0;
    for (uint32_t j = 1; j <= s[0]; j++) {
      if (g->dom_key[s[j]] != UINT32_MAX) {
        chain = true;
        levels += g->dom_level[s[j]];
      }
      h = (h ^ dom_key(g, s[j])) * 0x100000001B3ull;
    }
    w->dead[i] = 0;
    if (chain) w->shape[n++] = (struct nc_gshape){h, levels, i};
  }
  nc_code rc = nc_gwork_charge(w, st->count, err);
  if (rc != NC_OK || n < 2) return rc;
  qsort(w->shape, n, sizeof *w->shape, by_shape);
  bool any = false;
  for (uint32_t lo = 0, hi; lo < n; lo = hi) {
    for (hi = lo + 1; hi < n && w->shape[hi].hash == w->shape[lo].hash; hi++)
      ;
    uint32_t kept = 0; /* the survivors so far: shape[lo .. lo + kept) */
    for (uint32_t a = lo; a < hi; a++) {
      const uint32_t *sa = st->data + st->off[w->shape[a].index];
      if ((rc = nc_gwork_charge(w, 1 + kept, err)) != NC_OK) return rc;
      bool dom = false;
      for (uint32_t b = lo; b < lo + kept && !dom; b++)
        dom = dominated(g, sa, st->data + st->off[w->shape[b].index]);
      if (dom) {
        w->dead[w->shape[a].index] = 1;
        any = true;
      } else {
        w->shape[lo + kept++] = w->shape[a];
      }
    }
  }
  if (!any) return NC_OK;
  uint32_t kept = 0; /* compact what survives, in order */
  size_t at = 0;
  for (uint32_t i = 0; i < st->count; i++) {
    if (w->dead[i]) continue;
    const uint32_t *s = st->data + st->off[i];
    size_t len = (size_t)s[0] + 1;
    memmove(st->data + at, s, len * sizeof *s);
    st->off[kept] = (uint32_t)at;
    st->hash[kept] = st->hash[i];
    kept++;
    at += len;
  }
  st->count = kept;
  st->n = at;
  return NC_OK;
}

static nc_code limit(nc_error *err, const char *what) {
  return nc_fail(err, NC_ERR_LIMIT, "grammar: too many %s in one step", what);
}

/* push_unique into a step's result: when out is full, the stacks another
 * one dominates make room first. Sets err. */
static nc_code push_out(const nc_grammar *g, nc_gstacks *out, const uint32_t *s,
                        nc_gwork *w, nc_error *err) {
  nc_code rc = push_unique(out, s);
  if (rc == NC_ERR_LIMIT && g->dom_key) {
    if ((rc = drop_dominated(g, out, w, err)) != NC_OK) return rc;
    rc = push_unique(out, s);
  }
  if (rc == NC_ERR_LIMIT) return limit(err, "parse stacks");
  if (rc != NC_OK) return nc_fail(err, rc, "grammar: out of memory");
  return NC_OK;
}

/* Expands every stack on w->pending into out. */
static nc_code expand(const nc_grammar *g, nc_gstacks *out, nc_gwork *w,
                      nc_error *err) {
  uint32_t work = 0;
  uint32_t *tmp = w->tmp;
  nc_gstacks *pend = &w->pending;
  nc_code rc = NC_OK;
  while (pend->count > 0) {
    if (++work > NC_GRAMMAR_MAX_WORK) return limit(err, "expansions");
    /* push_unique looks at every stack out holds */
    if ((rc = nc_gwork_charge(w, 1 + out->count / 32, err)) != NC_OK) return rc;
    const uint32_t *s = pend->data + pend->off[pend->count - 1];
    uint32_t len = s[0];
    memcpy(tmp, s, ((size_t)len + 1) * sizeof *tmp);
    pend->count--;
    pend->n = pend->off[pend->count];
    if (len == 0) {
      rc = push_out(g, out, tmp, w, err);
    } else {
      uint32_t top = tmp[len];
      const nc_gelem *e = &g->elems[top];
      if (e->kind == NC_GE_END) {
        tmp[0] = len - 1;
        if (push(pend, tmp, 0) != NC_OK)
          return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
      } else if (e->kind == NC_GE_CLASS) {
        rc = push_out(g, out, tmp, w, err);
      } else {
        const nc_grule *r = &g->rules[e->a];
        uint32_t base = len - 1;
        if (g->elems[top + 1].kind != NC_GE_END) tmp[++base] = top + 1;
        if (base + 1 > NC_GRAMMAR_MAX_DEPTH)
          return limit(err, "nested rules (stack depth)");
        tmp[0] = base + 1;
        for (uint32_t k = r->n_alts; k-- > 0;) {
          tmp[base + 1] = g->alts[r->first_alt + k];
          if (push(pend, tmp, 0) != NC_OK)
            return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
        }
      }
    }
    if (rc != NC_OK) return rc;
  }
  return drop_dominated(g, out, w, err);
}

static nc_code work_ready(nc_gwork *w, nc_error *err) {
  if (!w->tmp) {
    w->tmp = malloc((NC_GRAMMAR_MAX_DEPTH + 2) * sizeof *w->tmp);
    if (!w->tmp) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  }
  nc_gstacks_clear(&w->pending);
  return NC_OK;
}

nc_code nc_gstate_init(const nc_grammar *g, nc_gstate *s, nc_gwork *w,
                       nc_error *err) {
  nc_code rc = work_ready(w, err);
  if (rc != NC_OK) return rc;
  nc_gstacks_clear(&s->st);
  s->cp = s->left = s->lead = s->seen = 0;
  const nc_grule *r = &g->rules[g->root];
  for (uint32_t k = r->n_alts; k-- > 0;) {
    uint32_t one[2] = {1, g->alts[r->first_alt + k]};
    if (push(&w->pending, one, 0) != NC_OK)
      return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  }
  return expand(g, &s->st, w, err);
}

/* The code points a partial character can still become. */
static void partial_range(const nc_gstate *s, uint32_t *lo, uint32_t *hi) {
  unsigned bits = 6u * s->left;
  uint32_t l = s->cp << bits, h = l | ((1u << bits) - 1);
  uint32_t total = (uint32_t)s->seen + s->left;
  uint32_t min = total == 2 ? 0x80 : total == 3 ? 0x800 : 0x10000;
  if (l < min) l = min;
  if (h > 0x10FFFF) h = 0x10FFFF;
  if (l <= 0xD7FF && h >= 0xD800 && h <= 0xDFFF) h = 0xD7FF;
  *lo = l;
  *hi = h;
}

/* The UTF-8 decoder's step; false for a byte no valid text has here. */
bool nc_gstate_utf8(const nc_gstate *in, uint8_t b, nc_gstate *out) {
  if (in->left == 0) {
    out->lead = b;
    out->seen = 1;
    if (b < 0x80) {
      out->cp = b;
      out->left = 0;
    } else if (b >= 0xC2 && b <= 0xDF) {
      out->cp = b & 0x1F;
      out->left = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      out->cp = b & 0x0F;
      out->left = 2;
    } else if (b >= 0xF0 && b <= 0xF4) {
      out->cp = b & 0x07;
      out->left = 3;
    } else {
      return false;
    }
    return true;
  }
  if ((b & 0xC0) != 0x80) return false;
  if (in->seen == 1) {
    uint8_t l = in->lead;
    if ((l == 0xE0 && b < 0xA0) || (l == 0xED && b > 0x9F) ||
        (l == 0xF0 && b < 0x90) || (l == 0xF4 && b > 0x8F))
      return false;
  }
  out->lead = in->lead;
  out->seen = (uint8_t)(in->seen + 1);
  out->cp = (in->cp << 6) | (b & 0x3F);
  out->left = (uint8_t)(in->left - 1);
  return true;
}

nc_code nc_gstate_step(const nc_grammar *g, const nc_gstate *in, uint8_t b,
                       nc_gstate *out, nc_gwork *w, bool *ok, nc_error *err) {
  *ok = false;
  nc_gstacks_clear(&out->st);
  if (!nc_gstate_utf8(in, b, out)) return NC_OK;
  nc_code rc = work_ready(w, err);
  if (rc != NC_OK) return rc;
  if ((rc = nc_gwork_charge(w, 1 + in->st.count, err)) != NC_OK) return rc;
  if (out->left > 0) { /* keep the stacks that can take the character */
    uint32_t lo, hi;
    partial_range(out, &lo, &hi);
    for (uint32_t i = 0; i < in->st.count; i++) {
      const uint32_t *s = in->st.data + in->st.off[i];
      if (s[0] == 0 || !nc_grammar_class_meets(g, &g->elems[s[s[0]]], lo, hi))
        continue;
      if (push(&out->st, s, in->st.hash[i]) != NC_OK)
        return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    }
    *ok = out->st.count > 0;
    return NC_OK;
  }
  uint32_t c = out->cp;
  for (uint32_t i = 0; i < in->st.count; i++) {
    const uint32_t *s = in->st.data + in->st.off[i];
    if (s[0] == 0 || !nc_grammar_class_has(g, &g->elems[s[s[0]]], c)) continue;
    memcpy(w->tmp, s, ((size_t)s[0] + 1) * sizeof *s);
    w->tmp[s[0]]++; /* past the class */
    if (push(&w->pending, w->tmp, 0) != NC_OK)
      return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  }
  if ((rc = expand(g, &out->st, w, err)) != NC_OK) return rc;
  *ok = out->st.count > 0;
  return NC_OK;
}

bool nc_gstate_accepting(const nc_gstate *s) {
  if (s->left) return false;
  for (uint32_t i = 0; i < s->st.count; i++)
    if (s->st.data[s->st.off[i]] == 0) return true;
  return false;
}

bool nc_gstate_complete(const nc_gstate *s) {
  if (s->left) return false;
  for (uint32_t i = 0; i < s->st.count; i++)
    if (s->st.data[s->st.off[i]] != 0) return false;
  return s->st.count > 0;
}

nc_code nc_gstate_map(const nc_gstate *in, const uint32_t *map, nc_gstate *out,
                      bool *changed) {
  uint32_t tmp[NC_GRAMMAR_MAX_DEPTH + 1];
  nc_gstacks_clear(&out->st);
  out->cp = in->cp;
  out->left = in->left;
  out->lead = in->lead;
  out->seen = in->seen;
  *changed = false;
  for (uint32_t i = 0; i < in->st.count; i++) {
    const uint32_t *s = in->st.data + in->st.off[i];
    tmp[0] = s[0];
    for (uint32_t j = 1; j <= s[0]; j++) {
      tmp[j] = map[s[j]];
      *changed |= tmp[j] != s[j];
    }
    nc_code rc = push_unique(&out->st, tmp);
    if (rc != NC_OK) return rc;
  }
  return NC_OK;
}
