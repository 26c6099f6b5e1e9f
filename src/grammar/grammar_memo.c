/* Interned automaton states and memoized transitions (grammar_memo.h). */
#include <stdlib.h>
#include <string.h>

#include "grammar_memo.h"

#define TABLE_CAP (2 * NC_GMEMO_MAX_STATES) /* a power of two */

void nc_gmemo_free(nc_gmemo *mm) {
  for (uint32_t i = 0; i < mm->cap_states; i++)
    nc_gstacks_free(&mm->states[i].s.st);
  free(mm->states);
  free(mm->trans);
  free(mm->plain);
  free(mm->table);
  free(mm->cps);
  free(mm->masks);
  memset(mm, 0, sizeof *mm);
}

nc_code nc_gmemo_init(nc_gmemo *mm, size_t n_words) {
  memset(mm, 0, sizeof *mm);
  for (uint32_t i = 0; i < NC_GMEMO_MASKS; i++)
    mm->mask_of[i] = NC_GMEMO_NONE;
  mm->n_words = n_words;
  mm->masks =
      malloc(NC_GMEMO_MASKS * (n_words ? n_words : 1) * sizeof *mm->masks);
  return mm->masks ? NC_OK : NC_ERR_NOMEM;
}

const uint64_t *nc_gmemo_mask(const nc_gmemo *mm, uint32_t id) {
  for (uint32_t i = 0; i < NC_GMEMO_MASKS; i++)
    if (mm->mask_of[i] == id) return mm->masks + i * mm->n_words;
  return NULL;
}

void nc_gmemo_keep_mask(nc_gmemo *mm, uint32_t id, const uint64_t *mask) {
  uint32_t k = mm->mask_turn;
  mm->mask_turn = (k + 1) % NC_GMEMO_MASKS;
  mm->mask_of[k] = id;
  memcpy(mm->masks + k * mm->n_words, mask, mm->n_words * sizeof *mask);
}

void nc_gmemo_flush(nc_gmemo *mm) {
  /* The stacks' buffers go too: a slot keeps the largest state it held,
   * and the cap counts the words of live states only. */
  for (uint32_t i = 0; i < mm->n_states; i++)
    nc_gstacks_free(&mm->states[i].s.st);
  mm->n_states = 0;
  mm->words = 0;
  if (mm->table) memset(mm->table, 0xFF, TABLE_CAP * sizeof *mm->table);
  if (mm->cps) memset(mm->cps, 0xFF, NC_GMEMO_CP_CAP * sizeof *mm->cps);
  mm->n_cps = 0;
  for (uint32_t i = 0; i < NC_GMEMO_MASKS; i++)
    mm->mask_of[i] = NC_GMEMO_NONE;
}

static uint64_t hash_stacks(const nc_gstacks *st) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint32_t i = 0; i < st->count; i++)
    h = (h ^ st->hash[i]) * 0x100000001B3ull;
  return (h ^ st->count) * 0x9E3779B97F4A7C15ull;
}

static bool same_stacks(const nc_gstacks *a, const nc_gstacks *b) {
  return a->count == b->count && a->n == b->n &&
         memcmp(a->data, b->data, a->n * sizeof *a->data) == 0;
}

static nc_code ready(nc_gmemo *mm) {
  if (!mm->table) {
    mm->table = malloc(TABLE_CAP * sizeof *mm->table);
    if (!mm->table) return NC_ERR_NOMEM;
    memset(mm->table, 0xFF, TABLE_CAP * sizeof *mm->table);
  }
  if (!mm->cps) {
    mm->cps = malloc(NC_GMEMO_CP_CAP * sizeof *mm->cps);
    if (!mm->cps) return NC_ERR_NOMEM;
    memset(mm->cps, 0xFF, NC_GMEMO_CP_CAP * sizeof *mm->cps);
  }
  return NC_OK;
}

nc_code nc_gmemo_intern(nc_gmemo *mm, const nc_gstate *s, uint32_t *id) {
  nc_code rc = ready(mm);
  if (rc != NC_OK) return rc;
  uint64_t h = hash_stacks(&s->st);
  uint32_t at = (uint32_t)(h >> 32) & (TABLE_CAP - 1);
  for (;; at = (at + 1) & (TABLE_CAP - 1)) {
    uint32_t k = mm->table[at];
    if (k == NC_GMEMO_NONE) break;
    if (mm->states[k].hash == h && same_stacks(&mm->states[k].s.st, &s->st)) {
      *id = k;
      return NC_OK;
    }
  }
  if (mm->n_states >= NC_GMEMO_MAX_STATES ||
      mm->words + s->st.n > NC_GMEMO_MAX_WORDS)
    return NC_ERR_LIMIT;
  if (mm->n_states == mm->cap_states) {
    uint32_t cap = mm->cap_states ? 2 * mm->cap_states : 64;
    if (cap > NC_GMEMO_MAX_STATES) cap = NC_GMEMO_MAX_STATES;
    uint32_t *nt = realloc(mm->trans, (size_t)cap * 256 * sizeof *nt);
    if (!nt) return NC_ERR_NOMEM;
    mm->trans = nt;
    uint32_t *np = realloc(mm->plain, cap * sizeof *np);
    if (!np) return NC_ERR_NOMEM;
    mm->plain = np;
    nc_gmemo_state *ns = realloc(mm->states, cap * sizeof *ns);
    if (!ns) return NC_ERR_NOMEM;
    memset(ns + mm->cap_states, 0, (cap - mm->cap_states) * sizeof *ns);
    mm->states = ns;
    mm->cap_states = cap;
  }
  nc_gmemo_state *e = &mm->states[mm->n_states];
  if (nc_gstate_copy(&e->s, s) != NC_OK) return NC_ERR_NOMEM;
  e->s.cp = e->s.left = e->s.lead = e->s.seen = 0;
  e->hash = h;
  memset(mm->trans + (size_t)mm->n_states * 256, 0xFF, 256 * sizeof *mm->trans);
  mm->plain[mm->n_states] = NC_GMEMO_NONE;
  mm->words += s->st.n;
  mm->table[at] = mm->n_states;
  *id = mm->n_states++;
  return NC_OK;
}

/* Interns a successful step's result (*full when it does not fit). */
static nc_code take(nc_gmemo *mm, const nc_gstate *out, bool ok, uint32_t *to,
                    bool *full, nc_error *err) {
  *to = NC_GMEMO_DEAD;
  if (!ok) return NC_OK;
  nc_code rc = nc_gmemo_intern(mm, out, to);
  if (rc == NC_ERR_LIMIT) {
    *to = NC_GMEMO_NONE;
    *full = true;
    return NC_OK;
  }
  return rc == NC_OK ? NC_OK : nc_fail(err, rc, "grammar: out of memory");
}

nc_code nc_gmemo_next(nc_gmemo *mm, const nc_grammar *g, uint32_t id, uint8_t b,
                      nc_gstate *out, nc_gwork *w, uint32_t *next, bool *full,
                      nc_error *err) {
  *full = false;
  *next = NC_GMEMO_NONE;
  uint32_t *row = mm->trans + (size_t)id * 256;
  if (row[b] != NC_GMEMO_NONE) {
    *next = row[b];
    return NC_OK;
  }
  bool ok;
  nc_code rc = nc_gstate_step(g, &mm->states[id].s, b, out, w, &ok, err);
  if (rc != NC_OK) return rc;
  uint32_t to;
  if (ok && out->left > 0) {
    to = NC_GMEMO_PARTIAL;
  } else {
    rc = take(mm, out, ok, &to, full, err);
    if (rc != NC_OK || *full) return rc;
  }
  mm->trans[(size_t)id * 256 + b] = to; /* interning may have moved it */
  *next = to;
  return NC_OK;
}

/* The characters a plain run takes: plain ASCII and every character past
 * it (nc_gstate_utf8 refuses the surrogates). */
static const uint32_t k_plain[][2] = {
    {0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}, {0x80, 0x10FFFF}};

/* Whether class e holds every code point of [lo, hi]. */
static bool class_covers(const nc_grammar *g, const nc_gelem *e, uint32_t lo,
                         uint32_t hi) {
  const uint32_t *r = g->ranges + 2 * (size_t)e->a;
  if (e->neg) { /* none of its ranges meets [lo, hi] */
    for (uint32_t i = 0; i < e->b; i++)
      if (r[2 * i] <= hi && r[2 * i + 1] >= lo) return false;
    return true;
  }
  for (uint32_t at = lo;;) { /* the ranges, in any order, reach hi */
    uint32_t i = 0;
    while (i < e->b && !(r[2 * i] <= at && r[2 * i + 1] >= at))
      i++;
    if (i == e->b) return false;
    if (r[2 * i + 1] >= hi) return true;
    at = r[2 * i + 1] + 1;
  }
}

/* A state takes every plain character to one state exactly when each of
 * its stacks waits for a class that holds all of them or none (the step
 * keeps the same stacks, and expands them alike, whatever the character):
 * the state 'a' leads to, when some class holds them. */
nc_code nc_gmemo_plain_next(nc_gmemo *mm, const nc_grammar *g, uint32_t id,
                            nc_gstate *out, nc_gwork *w, uint32_t *next,
                            bool *full, nc_error *err) {
  *full = false;
  *next = mm->plain[id];
  if (*next != NC_GMEMO_NONE) return NC_OK;
  const nc_gstacks *st = &mm->states[id].s.st;
  bool any = false, mixed = false;
  for (uint32_t i = 0; i < st->count && !mixed; i++) {
    const uint32_t *s = st->data + st->off[i];
    if (s[0] == 0) continue; /* accepted so far */
    const nc_gelem *e = &g->elems[s[s[0]]];
    if (e->kind != NC_GE_CLASS) {
      mixed = true;
      break;
    }
    size_t covered = 0, met = 0;
    for (size_t r = 0; r < sizeof k_plain / sizeof k_plain[0]; r++) {
      covered += class_covers(g, e, k_plain[r][0], k_plain[r][1]);
      met += nc_grammar_class_meets(g, e, k_plain[r][0], k_plain[r][1]);
    }
    any |= covered > 0;
    mixed = met > 0 && covered < sizeof k_plain / sizeof k_plain[0];
  }
  uint32_t to = mixed ? NC_GMEMO_MIXED : NC_GMEMO_DEAD;
  if (any && !mixed) {
    nc_code rc = nc_gmemo_next(mm, g, id, 'a', out, w, &to, full, err);
    if (rc != NC_OK || *full) return rc;
  }
  mm->plain[id] = *next = to;
  return NC_OK;
}

static uint32_t cp_slot(uint32_t id, uint32_t cp) {
  uint64_t h = ((uint64_t)id << 21 | cp) * 0x9E3779B97F4A7C15ull;
  return (uint32_t)(h >> 40) & (NC_GMEMO_CP_CAP - 1);
}

nc_code nc_gmemo_next_partial(nc_gmemo *mm, const nc_grammar *g, uint32_t id,
                              const nc_gstate *p, uint8_t b, nc_gstate *q,
                              nc_gstate *out, nc_gwork *w, uint32_t *next,
                              bool *full, nc_error *err) {
  *full = false;
  *next = NC_GMEMO_DEAD;
  uint32_t run; /* first: out is q's storage in the trie walk */
  nc_code rc = nc_gmemo_plain_next(mm, g, id, out, w, &run, full, err);
  if (rc != NC_OK || *full) return rc;
  if (!nc_gstate_utf8(p, b, q)) return NC_OK;
  if (run < NC_GMEMO_MIXED) { /* every character past ASCII leads there */
    *next = q->left > 0 ? NC_GMEMO_PARTIAL : run;
    return NC_OK;
  }
  uint32_t at = cp_slot(id, q->cp);
  if (q->left == 0) {
    for (;; at = (at + 1) & (NC_GMEMO_CP_CAP - 1)) {
      const nc_gmemo_cp *c = &mm->cps[at];
      if (c->from == NC_GMEMO_NONE) break;
      if (c->from == id && c->cp == q->cp) {
        *next = c->to;
        return NC_OK;
      }
    }
  }
  /* The stacks of state id, read as holding p's partial character (the
   * filters of p's earlier bytes are implied by the later ones). */
  nc_gstate in = mm->states[id].s;
  in.cp = p->cp;
  in.left = p->left;
  in.lead = p->lead;
  in.seen = p->seen;
  bool ok;
  rc = nc_gstate_step(g, &in, b, out, w, &ok, err);
  if (rc != NC_OK) return rc;
  if (q->left > 0) {
    *next = ok ? NC_GMEMO_PARTIAL : NC_GMEMO_DEAD;
    return NC_OK;
  }
  uint32_t to;
  rc = take(mm, out, ok, &to, full, err);
  if (rc != NC_OK || *full) return rc;
  if (mm->n_cps < NC_GMEMO_CP_CAP / 2) {
    mm->cps[at] = (nc_gmemo_cp){.from = id, .cp = q->cp, .to = to};
    mm->n_cps++;
  }
  *next = to;
  return NC_OK;
}
