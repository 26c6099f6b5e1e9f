/* uniqueItems' mask filter and searches (grammar_unique.h). A token that
 * closes a repeated item is dropped; so is one after which the open item
 * (or the item a ',' asks for) has no completion outside the recorded
 * items. That is decided by a depth-first search over the automaton's
 * bytes: for a string, only while the decoded text so far begins some
 * recorded item (past that every completion is new, and the automaton
 * keeps one: its stacks can all finish); for a number, over the numbers
 * of at most NUM_LIMIT characters, each checked by value. The searches
 * charge the call's budget like any step. */
#include <stdlib.h>
#include <string.h>

#include "grammar_unique.h"

#define STR_LIMIT 1024u /* bytes a string search goes into an item */
#define NUM_LIMIT 40u   /* characters of a number */

typedef struct srch {
  const nc_grammar *g;
  nc_gwork *w;
  nc_guniq *u;
  nc_guniq_set set;
  bool alone;          /* the grammar is one item (counting) */
  nc_guniq_rec *found; /* counting: the values found */
  uint32_t need, limit;
  nc_error *err;
} srch;

static const char k_num[] = "1234567890.eE-+";

static nc_code room_q(nc_guniq *u, size_t n) {
  if (n <= u->qcap) return NC_OK;
  size_t cap = u->qcap ? u->qcap * 2 : 256;
  while (cap < n)
    cap *= 2;
  uint8_t *q = realloc(u->q, cap);
  if (!q) return NC_ERR_NOMEM;
  u->q = q;
  u->qcap = cap;
  return NC_OK;
}

static nc_code room_lv(nc_guniq *u, uint32_t n) {
  if (n <= u->n_lv) return NC_OK;
  nc_gstate *l = realloc(u->lv, n * sizeof *l);
  if (!l) return NC_ERR_NOMEM;
  memset(l + u->n_lv, 0, (n - u->n_lv) * sizeof *l);
  u->lv = l;
  u->n_lv = n;
  return NC_OK;
}

/* Whether q[0..n) (canonical) is recorded, or found. */
static bool seen(const srch *S, const uint8_t *q, size_t n) {
  if (nc_guniq_set_has(&S->set, q, n, NULL, 0)) return true;
  if (!S->found) return false;
  nc_guniq_set f = {S->found, NULL};
  return nc_guniq_set_has(&f, q, n, NULL, 0);
}

/* A new value v: counting adds it (done when need are found); else done. */
static nc_code hit(srch *S, const uint8_t *v, size_t n, bool *done);

static nc_code step(srch *S, const nc_gstate *in, uint8_t b, nc_gstate *out,
                    bool *ok) {
  return nc_gstate_step(S->g, in, b, out, S->w, ok, S->err);
}

/* The item ends after st: alone, st accepts; in an array, ',' or ']'
 * follows. */
static nc_code ends(srch *S, const nc_gstate *st, nc_gstate *tmp, bool *yes) {
  if (S->alone) {
    *yes = nc_gstate_accepting(st);
    return NC_OK;
  }
  nc_code rc = step(S, st, ',', tmp, yes);
  if (rc == NC_OK && !*yes) rc = step(S, st, ']', tmp, yes);
  return rc;
}

/* A string item from st (inside its quotes, decoder dec, canonical text
 * u->q[0..qn)) at depth d. */
static nc_code str_dfs(srch *S, const nc_gstate *st, nc_gudec dec, size_t qn,
                       uint32_t d, bool *done) {
  if (d + 2 >= S->limit) return NC_OK;
  nc_gstate *nx = &S->u->lv[d + 1];
  uint8_t out[8];
  bool closed, ok;
  nc_code rc;
  if (dec.esc == 0) { /* the closing quote */
    nc_gudec d2 = dec;
    int n = nc_gudec_byte(&d2, '"', out, &closed);
    if ((rc = room_q(S->u, qn + 8)) != NC_OK) return rc;
    if (n) memcpy(S->u->q + qn, out, (size_t)n);
    if (!seen(S, S->u->q, qn + (size_t)n)) {
      if ((rc = step(S, st, '"', nx, &ok)) != NC_OK) return rc;
      if (ok && S->alone) ok = nc_gstate_accepting(nx);
      if (ok) {
        rc = hit(S, S->u->q, qn + (size_t)n, done);
        if (rc != NC_OK || *done) return rc;
      }
    }
  }
  for (int i = 0; i < 256; i++) {
    /* printable ASCII first, then '\\', then the rest */
    uint8_t b = i < 95 ? (uint8_t)(0x20 + i) : (uint8_t)(i - 95);
    if (i >= 95 && b >= 0x20 && b < 0x7F) continue;
    if (b == '"') continue;
    nc_gudec d2 = dec;
    int n = nc_gudec_byte(&d2, b, out, &closed);
    if (n < 0 || closed) continue;
    if ((rc = step(S, st, b, nx, &ok)) != NC_OK) return rc;
    if (!ok) continue;
    if ((rc = room_q(S->u, qn + 8)) != NC_OK) return rc;
    if (n) memcpy(S->u->q + qn, out, (size_t)n);
    size_t qn2 = qn + (size_t)n;
    if (!S->found && d2.esc == 0 && d2.hi == 0 &&
        !nc_guniq_set_prefix(&S->set, S->u->q, qn2, NULL, 0)) {
      *done = true; /* every completion is new, and one exists */
      return NC_OK;
    }
    rc = str_dfs(S, nx, d2, qn2, d + 1, done);
    if (rc != NC_OK || *done) return rc;
  }
  return NC_OK;
}

/* A number item from st, its text u->q[0..tn) so far ('N' first). */
static nc_code num_dfs(srch *S, const nc_gstate *st, size_t tn, uint32_t d,
                       bool *done) {
  nc_gstate *nx = &S->u->lv[d + 1];
  nc_code rc;
  bool ok;
  if (tn > 1) {
    if ((rc = ends(S, st, nx, &ok)) != NC_OK) return rc;
    uint8_t c[NUM_LIMIT + 64];
    size_t cn = nc_guniq_number_canon((const char *)S->u->q + 1, tn - 1, c);
    if (ok && !seen(S, c, cn)) {
      rc = hit(S, c, cn, done);
      if (rc != NC_OK || *done) return rc;
    }
  }
  if (tn > NUM_LIMIT || d + 2 >= S->limit) return NC_OK;
  for (const char *p = k_num; *p; p++) {
    if ((rc = step(S, st, (uint8_t)*p, nx, &ok)) != NC_OK) return rc;
    if (!ok) continue;
    if ((rc = room_q(S->u, tn + 1)) != NC_OK) return rc;
    S->u->q[tn] = (uint8_t)*p;
    rc = num_dfs(S, nx, tn + 1, d + 1, done);
    if (rc != NC_OK || *done) return rc;
  }
  return NC_OK;
}

/* num_dfs by iterative deepening over the characters added (2, 4, ...
 * NUM_LIMIT): the numbers closest to the text first, so that a text whose
 * longer forms all read back as a recorded double (8112233997422380.1 is
 * 8112233997422380) does not hold the search. */
static nc_code num_search(srch *S, const nc_gstate *st, size_t tn, bool *done) {
  uint32_t limit = S->limit;
  nc_code rc = NC_OK;
  for (uint32_t extra = 2; rc == NC_OK && !*done; extra *= 2) {
    if (extra > NUM_LIMIT) extra = NUM_LIMIT;
    S->limit = extra + 2 < limit ? extra + 2 : limit;
    rc = num_dfs(S, st, tn, 0, done);
    if (extra == NUM_LIMIT || S->limit == limit) break;
  }
  S->limit = limit;
  return rc;
}

static nc_code hit(srch *S, const uint8_t *v, size_t n, bool *done) {
  if (!S->found) {
    *done = true;
    return NC_OK;
  }
  uint32_t before = S->found->n;
  /* the record's own adder (sorted) through a one-entry set */
  nc_guniq_set f = {S->found, NULL};
  if (!nc_guniq_set_has(&f, v, n, NULL, 0)) {
    uint8_t **pv = realloc(S->found->v, (before + 1) * sizeof *pv);
    if (!pv) return NC_ERR_NOMEM;
    S->found->v = pv;
    uint32_t *pl = realloc(S->found->len, (before + 1) * sizeof *pl);
    if (!pl) return NC_ERR_NOMEM;
    S->found->len = pl;
    uint8_t *c = malloc(n ? n : 1);
    if (!c) return NC_ERR_NOMEM;
    if (n) memcpy(c, v, n);
    /* keep it sorted: insertion */
    uint32_t i = before;
    while (i > 0) {
      size_t m = S->found->len[i - 1] < n ? S->found->len[i - 1] : n;
      int r = m ? memcmp(S->found->v[i - 1], c, m) : 0;
      if (r < 0 || (r == 0 && S->found->len[i - 1] <= n)) break;
      S->found->v[i] = S->found->v[i - 1];
      S->found->len[i] = S->found->len[i - 1];
      i--;
    }
    S->found->v[i] = c;
    S->found->len[i] = (uint32_t)n;
    S->found->n = before + 1;
    S->found->cap = before + 1;
  }
  *done = S->found->n >= S->need;
  return NC_OK;
}

/* An item from its first byte (after '[' or ','), string or number. */
static nc_code item_dfs(srch *S, const nc_gstate *st, bool *done) {
  bool ok;
  nc_code rc = step(S, st, '"', &S->u->lv[1], &ok);
  if (rc != NC_OK) return rc;
  if (ok) {
    S->u->q[0] = 's';
    rc = str_dfs(S, &S->u->lv[1], (nc_gudec){0}, 1, 1, done);
    if (rc != NC_OK || *done) return rc;
  }
  S->u->q[0] = 'N';
  return num_search(S, st, 1, done);
}

nc_code nc_guniq_count(const nc_grammar *g, uint32_t need, uint64_t budget,
                       uint32_t *count, nc_error *err) {
  *count = 0;
  nc_guniq *u;
  if (nc_guniq_create(NULL, &u) != NC_OK)
    return nc_fail(err, NC_ERR_NOMEM, "out of memory");
  nc_gwork w = {0};
  nc_gstate s0 = {0};
  nc_guniq_rec found = {0};
  nc_gwork_begin(&w, budget);
  srch S = {.g = g,
            .w = &w,
            .u = u,
            .alone = true,
            .found = &found,
            .need = need,
            .err = err};
  nc_code rc = nc_gstate_init(g, &s0, &w, err);
  if (rc == NC_OK && (room_q(u, 64) != NC_OK || room_lv(u, STR_LIMIT + 2)))
    rc = nc_fail(err, NC_ERR_NOMEM, "out of memory");
  bool done = need == 0;
  for (uint32_t lim = 4; rc == NC_OK && !done && lim <= 256; lim *= 4) {
    S.limit = lim;
    rc = item_dfs(&S, &s0, &done);
  }
  *count = found.n < need ? found.n : need;
  for (uint32_t i = 0; i < found.n; i++)
    free(found.v[i]);
  free(found.v);
  free(found.len);
  nc_gstacks_free(&s0.st);
  nc_gwork_free(&w);
  nc_guniq_free(u);
  return rc;
}

/* ------------------------------------------------------------------ mask */
/* After a dry run of bytes b[0..n) from cur: whether the open item (or the
 * one a ',' asks for) keeps a completion outside the recorded items. */
nc_code nc_guniq_keeps(nc_grammar_matcher *m, const uint8_t *b, size_t n,
                       bool *ok, nc_error *err) {
  nc_guniq *u = m->uniq;
  const nc_guniq_lex *L = &u->dlex;
  *ok = true;
  if (L->uniq < 0 || (int32_t)L->depth - 1 != L->uniq) return NC_OK;
  nc_guniq_set set = nc_guniq_dry_set(u);
  if (nc_guniq_set_empty(&set)) return NC_OK;
  bool str = L->mode == NC_GU_STR && L->is_item;
  bool num = L->mode == NC_GU_NUM && L->is_item;
  if (!str && !num && !(L->mode == NC_GU_VALUE && L->slot)) return NC_OK;
  const nc_guniq_item *it = &u->ditem;
  if (str && L->dec.esc == 0 && L->dec.hi == 0 &&
      !nc_guniq_set_prefix(&set, it->base, it->base_n, it->loc, it->n))
    return NC_OK;
  /* the automaton after the token */
  const nc_gstate *st = &m->cur;
  nc_gstate *x = &u->ta, *y = &u->tb;
  for (size_t i = 0; i < n; i++) {
    bool fits;
    nc_code rc = nc_gstate_step(m->g, st, b[i], x, &m->work, &fits, err);
    if (rc != NC_OK) return rc;
    if (!fits) return NC_OK; /* the grammar's own mask decides */
    st = x;
    nc_gstate *t = x;
    x = y;
    y = t;
  }
  srch S = {.g = m->g, .w = &m->work, .u = u, .set = set, .err = err};
  size_t qn = it->base_n + it->n;
  if (room_q(u, qn + 64) != NC_OK || room_lv(u, STR_LIMIT + 2) != NC_OK)
    return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  if (it->base_n) memcpy(u->q, it->base, it->base_n);
  if (it->n) memcpy(u->q + it->base_n, it->loc, it->n);
  bool done = false;
  nc_code rc;
  if (str) {
    S.limit = STR_LIMIT;
    rc = str_dfs(&S, st, L->dec, qn, 0, &done);
  } else if (num) {
    S.limit = NUM_LIMIT + 2;
    rc = num_search(&S, st, qn, &done);
  } else {
    S.limit = STR_LIMIT;
    rc = item_dfs(&S, st, &done);
  }
  *ok = done;
  return rc;
}

nc_code nc_guniq_mask(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                      uint64_t *mask, nc_error *err) {
  nc_guniq *u = m->uniq;
  const nc_guniq_lex *L = &u->lex;
  const uint64_t *only = gv->has_lb; /* outside: only '[' may enter one */
  if (L->uniq >= 0) {
    nc_guniq_set s = {&u->rec, NULL};
    bool within = L->mode == NC_GU_STR && L->is_item && L->dec.esc == 0 &&
                  L->dec.hi == 0 &&
                  !nc_guniq_set_prefix(&s, u->item.loc, u->item.n, NULL, 0);
    only = within ? gv->has_q : NULL; /* a new prefix: only '"' can close */
  }
  size_t words = ((size_t)gv->n + 63) / 64;
  for (size_t w = 0; w < words; w++) {
    uint64_t bits = mask[w] & (only ? only[w] : ~0ull);
    while (bits) {
      int32_t t = (int32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
      bits &= bits - 1;
      if (gv->kinds[t] != NC_GRAMMAR_TOKEN_TEXT) continue;
      const uint8_t *p = (const uint8_t *)gv->bytes + gv->off[t];
      size_t n = gv->off[t + 1] - gv->off[t];
      nc_code rc = nc_gwork_charge(&m->work, 1 + n / 4, err);
      if (rc == NC_OK && nc_guniq_dry(u, p, n) != NC_OK)
        rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
      bool ok = !u->dloc.dup;
      if (rc == NC_OK && ok) rc = nc_guniq_keeps(m, p, n, &ok, err);
      if (rc != NC_OK) return rc;
      if (!ok) mask[t / 64] &= ~(1ull << (t % 64));
    }
  }
  return NC_OK;
}
