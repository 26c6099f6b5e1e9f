/* The token mask: a depth-first walk of the vocabulary's byte trie from
 * the matcher's state, pruning a whole subtree as soon as its prefix has
 * no live stack. The trie is also laid out flat in depth-first order (a
 * node's subtree is the range up to its end, so a pruned subtree is one
 * jump) and the walk takes each edge's automaton step from the matcher's
 * memo (grammar_memo.h): a table lookup once the edge was seen. */
#include <stdlib.h>
#include <string.h>

#include "grammar_memo.h"

typedef struct tnode {
  uint32_t child, sibling; /* UINT32_MAX: none */
  uint32_t tok;            /* first token ending here, or UINT32_MAX */
  uint8_t byte;
} tnode;

/* A node of the flat trie: its byte, its depth, the first token ending
 * there (NONE: none; MORE set: tok_next holds others). */
typedef struct fnode {
  uint32_t tok;
  uint16_t depth;
  uint8_t byte;
} fnode;
#define MORE 0x80000000u

struct nc_grammar_vocab {
  int32_t n;
  uint8_t *kinds;
  char *bytes;
  size_t *off; /* n + 1 */
  uint32_t *tok_next;
  tnode *nodes;
  uint32_t n_nodes, cap_nodes;
  uint32_t max_len;
  /* The flat trie: node i (0 the root) in depth-first order; its subtree
   * is i + 1 .. end[i] - 1. */
  fnode *flat;
  uint32_t *fend;
  int32_t *ends; /* the END tokens */
  int32_t n_ends;
  int32_t *longs; /* the text tokens longer than NC_GRAMMAR_CANON_DEPTH */
  int32_t n_longs;
};

#define NONE UINT32_MAX
#define PBIT 0x80000000u /* the memo walk: a level inside a character */

static const nc_gstate k_boundary; /* no partial character */
#define MAX_PIECE 4096u

static nc_code add_node(nc_grammar_vocab *gv, uint8_t byte, uint32_t *id) {
  if (gv->n_nodes == gv->cap_nodes) {
    uint32_t cap = gv->cap_nodes ? gv->cap_nodes * 2 : 1024;
    tnode *nn = realloc(gv->nodes, cap * sizeof *nn);
    if (!nn) return NC_ERR_NOMEM;
    gv->nodes = nn;
    gv->cap_nodes = cap;
  }
  gv->nodes[gv->n_nodes] =
      (tnode){.child = NONE, .sibling = NONE, .tok = NONE, .byte = byte};
  *id = gv->n_nodes++;
  return NC_OK;
}

static nc_code insert(nc_grammar_vocab *gv, int32_t t) {
  uint32_t node = 0;
  const uint8_t *s = (const uint8_t *)gv->bytes + gv->off[t];
  size_t len = gv->off[t + 1] - gv->off[t];
  for (size_t i = 0; i < len; i++) {
    uint32_t c = gv->nodes[node].child;
    while (c != NONE && gv->nodes[c].byte != s[i])
      c = gv->nodes[c].sibling;
    if (c == NONE) {
      if (add_node(gv, s[i], &c) != NC_OK) return NC_ERR_NOMEM;
      gv->nodes[c].sibling = gv->nodes[node].child;
      gv->nodes[node].child = c;
    }
    node = c;
  }
  gv->tok_next[t] = gv->nodes[node].tok;
  gv->nodes[node].tok = (uint32_t)t;
  return NC_OK;
}

/* The flat copy of the linked trie: an explicit depth-first walk whose
 * stack holds (node, flat index) pairs; a node's end is set when the walk
 * leaves it, i.e. when the next node at its depth or above is placed. */
static nc_code flatten(nc_grammar_vocab *gv) {
  size_t n = gv->n_nodes;
  gv->flat = malloc(n * sizeof *gv->flat);
  gv->fend = malloc(n * sizeof *gv->fend);
  uint32_t *stack = malloc(2 * (n + 1) * sizeof *stack);
  uint32_t *open = malloc(((size_t)gv->max_len + 2) * sizeof *open);
  if (!gv->flat || !gv->fend || !stack || !open) {
    free(stack);
    free(open);
    return NC_ERR_NOMEM;
  }
  size_t sp = 0;
  uint32_t at = 0;
  stack[sp++] = 0; /* node */
  stack[sp++] = 0; /* depth */
  while (sp > 0) {
    uint32_t depth = stack[--sp];
    uint32_t node = stack[--sp];
    /* Every open node at this depth or deeper ends here. */
    for (uint32_t d = depth; d <= gv->max_len && at > 0; d++) {
      if (open[d] == NONE) break;
      gv->fend[open[d]] = at;
      open[d] = NONE;
    }
    uint32_t tok = gv->nodes[node].tok;
    if (tok != NONE && gv->tok_next[tok] != NONE) tok |= MORE;
    gv->flat[at] = (fnode){
        .tok = tok, .depth = (uint16_t)depth, .byte = gv->nodes[node].byte};
    open[depth] = at;
    if (depth + 1 <= gv->max_len) open[depth + 1] = NONE;
    at++;
    for (uint32_t c = gv->nodes[node].child; c != NONE;
         c = gv->nodes[c].sibling) {
      stack[sp++] = c;
      stack[sp++] = depth + 1;
    }
  }
  for (uint32_t d = 0; d <= gv->max_len; d++) {
    if (open[d] == NONE) break;
    gv->fend[open[d]] = at;
  }
  free(stack);
  free(open);
  return NC_OK;
}

nc_code nc_grammar_vocab_create(int32_t n, const char *const *pieces,
                                const size_t *lens, const uint8_t *kinds,
                                nc_grammar_vocab **out, nc_error *err) {
  *out = NULL;
  if (n < 0 || n > (1 << 24))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "grammar: vocabulary size %d out of range", (int)n);
  nc_grammar_vocab *gv = calloc(1, sizeof *gv);
  if (!gv) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  gv->n = n;
  size_t total = 0;
  for (int32_t i = 0; i < n; i++)
    if (kinds[i] == NC_GRAMMAR_TOKEN_TEXT)
      total += lens[i] > MAX_PIECE ? 0 : lens[i];
  gv->kinds = malloc((size_t)n + 1);
  gv->bytes = malloc(total + 1);
  gv->off = malloc(((size_t)n + 1) * sizeof *gv->off);
  gv->tok_next = malloc(((size_t)n + 1) * sizeof *gv->tok_next);
  uint32_t root;
  if (!gv->kinds || !gv->bytes || !gv->off || !gv->tok_next ||
      add_node(gv, 0, &root) != NC_OK)
    goto nomem;
  size_t at = 0;
  for (int32_t i = 0; i < n; i++) {
    uint8_t k = kinds[i];
    if (k == NC_GRAMMAR_TOKEN_TEXT && (lens[i] == 0 || lens[i] > MAX_PIECE))
      k = NC_GRAMMAR_TOKEN_NEVER; /* empty pieces never advance */
    if (k > NC_GRAMMAR_TOKEN_END) k = NC_GRAMMAR_TOKEN_NEVER;
    gv->kinds[i] = k;
    gv->off[i] = at;
    if (k == NC_GRAMMAR_TOKEN_TEXT) {
      memcpy(gv->bytes + at, pieces[i], lens[i]);
      at += lens[i];
      if (lens[i] > gv->max_len) gv->max_len = (uint32_t)lens[i];
    }
  }
  gv->off[n] = at;
  for (int32_t i = 0; i < n; i++)
    if (gv->kinds[i] == NC_GRAMMAR_TOKEN_TEXT && insert(gv, i) != NC_OK)
      goto nomem;
  for (int32_t i = 0; i < n; i++)
    if (gv->kinds[i] == NC_GRAMMAR_TOKEN_END) gv->n_ends++;
  gv->ends = malloc(((size_t)gv->n_ends + 1) * sizeof *gv->ends);
  if (!gv->ends || flatten(gv) != NC_OK) goto nomem;
  gv->n_ends = 0;
  for (int32_t i = 0; i < n; i++)
    if (gv->kinds[i] == NC_GRAMMAR_TOKEN_END) gv->ends[gv->n_ends++] = i;
  gv->longs = malloc(((size_t)n + 1) * sizeof *gv->longs);
  if (!gv->longs) goto nomem;
  for (int32_t i = 0; i < n; i++)
    if (gv->kinds[i] == NC_GRAMMAR_TOKEN_TEXT &&
        gv->off[i + 1] - gv->off[i] > NC_GRAMMAR_CANON_DEPTH)
      gv->longs[gv->n_longs++] = i;
  *out = gv;
  return NC_OK;
nomem:
  nc_grammar_vocab_free(gv);
  return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
}

void nc_grammar_vocab_free(nc_grammar_vocab *gv) {
  if (!gv) return;
  free(gv->kinds);
  free(gv->bytes);
  free(gv->off);
  free(gv->tok_next);
  free(gv->nodes);
  free(gv->flat);
  free(gv->fend);
  free(gv->ends);
  free(gv->longs);
  free(gv);
}

int32_t nc_grammar_vocab_n_tokens(const nc_grammar_vocab *gv) {
  return gv->n;
}

uint8_t nc_grammar_vocab_kind(const nc_grammar_vocab *gv, int32_t id) {
  return id >= 0 && id < gv->n ? gv->kinds[id] : NC_GRAMMAR_TOKEN_NEVER;
}

static nc_code scratch(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                       nc_error *err) {
  if (m->n_levels < gv->max_len + 1) {
    uint32_t *lid = realloc(m->lid, (gv->max_len + 1) * sizeof *lid);
    if (!lid) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    m->lid = lid;
    nc_gstate *l = realloc(m->levels, (gv->max_len + 1) * sizeof *l);
    if (!l) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    memset(l + m->n_levels, 0, (gv->max_len + 1 - m->n_levels) * sizeof *l);
    m->levels = l;
    m->n_levels = gv->max_len + 1;
  }
  /* Each walk entry: node, depth. */
  size_t need = 2 * (size_t)gv->n_nodes;
  if (m->cap_walk < need) {
    uint32_t *w = realloc(m->walk, need * sizeof *w);
    if (!w) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    m->walk = w;
    m->cap_walk = need;
  }
  return NC_OK;
}

nc_code nc_grammar_mask_reference(nc_grammar_matcher *m,
                                  const nc_grammar_vocab *gv, uint64_t *mask,
                                  nc_error *err) {
  memset(mask, 0, (((size_t)gv->n + 63) / 64) * sizeof *mask);
  if (nc_gstate_accepting(&m->cur))
    for (int32_t i = 0; i < gv->n; i++)
      if (gv->kinds[i] == NC_GRAMMAR_TOKEN_END)
        mask[i / 64] |= 1ull << (i % 64);
  nc_code rc = scratch(m, gv, err);
  if (rc != NC_OK) return rc;
  size_t sp = 0;
  for (uint32_t c = gv->nodes[0].child; c != NONE; c = gv->nodes[c].sibling) {
    m->walk[sp++] = c;
    m->walk[sp++] = 1;
  }
  while (sp > 0) {
    uint32_t depth = m->walk[--sp];
    uint32_t node = m->walk[--sp];
    const nc_gstate *from = depth == 1 ? &m->cur : &m->levels[depth - 1];
    bool ok;
    rc = nc_gstate_step(m->g, from, gv->nodes[node].byte, &m->levels[depth],
                        &m->work, &ok, err);
    if (rc != NC_OK) return rc;
    if (!ok) continue;
    for (uint32_t t = gv->nodes[node].tok; t != NONE; t = gv->tok_next[t])
      mask[t / 64] |= 1ull << (t % 64);
    for (uint32_t c = gv->nodes[node].child; c != NONE;
         c = gv->nodes[c].sibling) {
      m->walk[sp++] = c;
      m->walk[sp++] = depth + 1;
    }
  }
  return NC_OK;
}

nc_code nc_grammar_matcher_accept_token(nc_grammar_matcher *m,
                                        const nc_grammar_vocab *gv, int32_t id,
                                        bool *ok, nc_error *err) {
  *ok = false;
  if (id < 0 || id >= gv->n)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "grammar: token %d out of range", (int)id);
  if (gv->kinds[id] == NC_GRAMMAR_TOKEN_END) {
    *ok = nc_gstate_accepting(&m->cur);
    return NC_OK;
  }
  if (gv->kinds[id] != NC_GRAMMAR_TOKEN_TEXT) return NC_OK;
  return nc_grammar_matcher_accept(m, gv->bytes + gv->off[id],
                                   gv->off[id + 1] - gv->off[id], ok, err);
}

/* The memo's edges: depth d's state is lid[d], an interned state, or with
 * PBIT that state's stacks and the partial character in levels[d]. The
 * edge from p on byte b at depth d when the transition table does not
 * have it (*nx as the table gave it): *nx the next level's lid or DEAD;
 * *full: the memo could not hold a new state. */
static nc_code slow_edge(nc_grammar_matcher *m, uint32_t p, uint32_t d,
                         uint8_t b, uint32_t *nx, bool *full, nc_error *err) {
  nc_gmemo *mm = m->memo;
  nc_gstate *lv = m->levels;
  nc_code rc = NC_OK;
  *full = false;
  if (p & PBIT)
    rc = nc_gmemo_next_partial(mm, m->g, p & ~PBIT, &lv[d - 1], b, &lv[d],
                               &lv[d], &m->work, nx, full, err);
  else if (*nx == NC_GMEMO_NONE)
    rc = nc_gmemo_next(mm, m->g, p, b, &lv[d], &m->work, nx, full, err);
  if (rc != NC_OK || *full) return rc;
  if (*nx == NC_GMEMO_PARTIAL) {
    if (!(p & PBIT)) nc_gstate_utf8(&k_boundary, b, &lv[d]);
    *nx = (p & ~PBIT) | PBIT; /* the same stacks, a partial character */
  }
  return NC_OK;
}

/* The trie walk from root (an interned state; partial: cur's character)
 * setting the bits of the text tokens. */
static nc_code walk(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                    uint32_t root, bool partial, uint64_t *mask, bool *full,
                    nc_error *err) {
  nc_gmemo *mm = m->memo;
  uint32_t *lid = m->lid;
  nc_gstate *lv = m->levels;
  lv[0].cp = m->cur.cp;
  lv[0].left = m->cur.left;
  lv[0].lead = m->cur.lead;
  lv[0].seen = m->cur.seen;
  lid[0] = partial ? root | PBIT : root;
  const fnode *flat = gv->flat;
  const uint32_t *fend = gv->fend, *tok_next = gv->tok_next;
  const uint32_t *trans = mm->trans;
  for (uint32_t i = 1; i < gv->n_nodes;) {
    const fnode nd = flat[i];
    uint32_t d = nd.depth;
    uint32_t p = lid[d - 1], nx = NC_GMEMO_NONE;
    if (!(p & PBIT)) nx = trans[(size_t)p * 256 + nd.byte];
    if (nx >= NC_GMEMO_PARTIAL) { /* not a state yet: the slow paths */
      nc_code rc = slow_edge(m, p, d, nd.byte, &nx, full, err);
      if (rc != NC_OK || *full) return rc;
      trans = mm->trans; /* a new state may have moved it */
      if (nx == NC_GMEMO_DEAD) {
        i = fend[i];
        continue;
      }
    }
    lid[d] = nx;
    if (nd.tok != NONE) {
      uint32_t t = nd.tok & ~MORE;
      mask[t / 64] |= 1ull << (t % 64);
      if (nd.tok & MORE)
        for (t = tok_next[t]; t != NONE; t = tok_next[t])
          mask[t / 64] |= 1ull << (t % 64);
    }
    i++;
  }
  return NC_OK;
}

/* Whether the len bytes s fit from interned state root (no partial
 * character). */
static nc_code bytes_fit(nc_grammar_matcher *m, uint32_t root, const uint8_t *s,
                         size_t len, bool *ok, bool *full, nc_error *err) {
  *ok = false;
  m->levels[0].left = 0;
  uint32_t p = root;
  for (size_t j = 0; j < len; j++) {
    uint32_t nx = NC_GMEMO_NONE;
    if (!(p & PBIT)) nx = m->memo->trans[(size_t)p * 256 + s[j]];
    if (nx >= NC_GMEMO_PARTIAL) {
      nc_code rc = slow_edge(m, p, (uint32_t)j + 1, s[j], &nx, full, err);
      if (rc != NC_OK || *full) return rc;
      if (nx == NC_GMEMO_DEAD) return NC_OK;
    }
    p = nx;
  }
  *ok = true;
  return NC_OK;
}

/* The mask through the memo. With the grammar's canonical map the walk
 * starts from cur's canonical form, which the tokens of at most
 * NC_GRAMMAR_CANON_DEPTH bytes cannot tell from cur (so its kept mask
 * serves every position of a long bounded repetition); the longer tokens
 * are then fed from cur itself. *fallback: the memo could not hold the
 * walk's states (it was flushed; the caller walks without it). */
static nc_code mask_memo(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                         uint64_t *mask, bool *fallback, nc_error *err) {
  *fallback = false;
  nc_gmemo *mm = m->memo;
  if (mm->n_states > NC_GMEMO_MAX_STATES / 2 ||
      mm->words > NC_GMEMO_MAX_WORDS / 2)
    nc_gmemo_flush(mm); /* room for this walk's new states */
  const nc_gstate *root = &m->cur;
  bool canon = false;
  if (m->g->canon && m->cur.left == 0) {
    if (nc_gstate_map(&m->cur, m->g->canon, &m->canon, &canon) != NC_OK)
      return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    if (canon) root = &m->canon;
  }
  uint32_t rid, cid;
  bool full = false;
  nc_code rc = nc_gmemo_intern(mm, root, &rid);
  if (rc == NC_OK && canon) rc = nc_gmemo_intern(mm, &m->cur, &cid);
  if (rc == NC_ERR_LIMIT) {
    nc_gmemo_flush(mm);
    *fallback = true;
    return NC_OK;
  }
  if (rc != NC_OK) return nc_fail(err, rc, "grammar: out of memory");
  size_t words = ((size_t)gv->n + 63) / 64;
  const uint64_t *kept = m->cur.left == 0 ? nc_gmemo_mask(mm, rid) : NULL;
  if (kept) {
    memcpy(mask, kept, words * sizeof *mask);
  } else {
    rc = walk(m, gv, rid, m->cur.left > 0, mask, &full, err);
    if (rc != NC_OK) return rc;
    if (!full && m->cur.left == 0) nc_gmemo_keep_mask(mm, rid, mask);
  }
  for (int32_t i = 0; canon && !full && i < gv->n_longs; i++) {
    int32_t t = gv->longs[i];
    bool ok;
    rc = bytes_fit(m, cid, (const uint8_t *)gv->bytes + gv->off[t],
                   gv->off[t + 1] - gv->off[t], &ok, &full, err);
    if (rc != NC_OK) return rc;
    if (ok)
      mask[t / 64] |= 1ull << (t % 64);
    else
      mask[t / 64] &= ~(1ull << (t % 64));
  }
  if (full) {
    nc_gmemo_flush(mm);
    *fallback = true;
  }
  return NC_OK;
}

nc_code nc_grammar_matcher_mask(nc_grammar_matcher *m,
                                const nc_grammar_vocab *gv, uint64_t *mask,
                                nc_error *err) {
  nc_code rc = scratch(m, gv, err);
  if (rc != NC_OK) return rc;
  size_t words = ((size_t)gv->n + 63) / 64;
  if (m->memo && m->memo->vocab != gv) { /* another vocabulary */
    nc_gmemo_free(m->memo);
    free(m->memo);
    m->memo = NULL;
  }
  if (!m->memo) {
    m->memo = malloc(sizeof *m->memo);
    if (!m->memo || nc_gmemo_init(m->memo, words) != NC_OK) {
      if (m->memo) nc_gmemo_free(m->memo);
      free(m->memo);
      m->memo = NULL;
      return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    }
    m->memo->vocab = gv;
  }
  memset(mask, 0, (((size_t)gv->n + 63) / 64) * sizeof *mask);
  bool fallback;
  rc = mask_memo(m, gv, mask, &fallback, err);
  if (fallback) m->memo->fallbacks++;
  if (rc != NC_OK || fallback)
    return rc != NC_OK ? rc : nc_grammar_mask_reference(m, gv, mask, err);
  if (nc_gstate_accepting(&m->cur))
    for (int32_t i = 0; i < gv->n_ends; i++)
      mask[gv->ends[i] / 64] |= 1ull << (gv->ends[i] % 64);
  return NC_OK;
}
