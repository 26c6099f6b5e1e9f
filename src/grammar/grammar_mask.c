/* The token mask: a depth-first walk of the vocabulary's byte trie from
 * the matcher's state, pruning a whole subtree as soon as its prefix has
 * no live stack. The trie is also laid out flat in depth-first order (a
 * node's subtree is the range up to its end, so a pruned subtree is one
 * jump) and the walk takes each edge's automaton step from the matcher's
 * memo (grammar_memo.h): a table lookup once the edge was seen. */
#include <stdlib.h>
#include <string.h>

#include "grammar_memo.h"
#include "grammar_trie.h"
#include "grammar_unique.h"

#define PBIT 0x80000000u /* the memo walk: a level inside a character */

static const nc_gstate k_boundary; /* no partial character */

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

/* The plain walk, charging the budget the call has spent so far. */
static nc_code reference_walk(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                              uint64_t *mask, nc_error *err) {
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

nc_code nc_grammar_mask_reference(nc_grammar_matcher *m,
                                  const nc_grammar_vocab *gv, uint64_t *mask,
                                  nc_error *err) {
  nc_gwork_begin(&m->work, UINT64_MAX); /* tests' yardstick: unbounded */
  nc_code rc = reference_walk(m, gv, mask, err);
  if (rc == NC_OK && m->uniq) rc = nc_guniq_mask(m, gv, mask, err);
  return rc;
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

/* How many plain bytes in a row root takes, each step to one state
 * whatever the byte (nc_gmemo_plain_next), up to the vocabulary's longest
 * plain token: *k (0 when the memo fills up on the way); *dead_after: no
 * plain byte continues the run's last state. */
static nc_code plain_run(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                         uint32_t root, uint32_t *k, bool *dead_after,
                         nc_error *err) {
  *k = 0;
  *dead_after = false;
  for (uint32_t p = root; *k < gv->n_plain;) {
    uint32_t nx;
    bool full;
    nc_code rc = nc_gmemo_plain_next(m->memo, m->g, p, &m->levels[1], &m->work,
                                     &nx, &full, err);
    if (rc != NC_OK) return rc;
    if (full) {
      *k = 0;
      return NC_OK;
    }
    *dead_after = nx == NC_GMEMO_DEAD;
    if (nx >= NC_GMEMO_MIXED) return NC_OK;
    *k = nx == p ? gv->n_plain : *k + 1; /* a loop takes any number */
    p = nx;
  }
  return NC_OK;
}

/* The trie walk from root (an interned state; partial: cur's character)
 * setting the bits of the text tokens. Plain runs: when root takes k plain
 * bytes whatever they are, every plain token of at most k bytes is
 * allowed (the vocabulary's plain_le row k), and a subtree whose path and
 * nodes are plain is not walked when it is at most k deep, or when no
 * plain byte continues after the k-th (pd: the current path's plain
 * prefix; the node before shares the path to this node's parent). */
static nc_code walk(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                    uint32_t root, bool partial, bool longs_only,
                    uint64_t *mask, bool *full, nc_error *err) {
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
  uint32_t k = 0, pd = 0, skips = 0;
  bool dead_after = false;
  if (!partial && !longs_only) {
    nc_code rc = plain_run(m, gv, root, &k, &dead_after, err);
    if (rc != NC_OK) return rc;
    size_t words = ((size_t)gv->n + 63) / 64;
    const uint64_t *row = gv->plain_le + (size_t)k * words;
    for (size_t w = 0; k && w < words; w++)
      mask[w] |= row[w];
  }
  const uint8_t *fplain = gv->fplain;
  const uint32_t *trans = mm->trans;
  for (uint32_t i = 1; i < gv->n_nodes;) {
    const fnode nd = flat[i];
    uint32_t d = nd.depth;
    if (longs_only && !nd.deep) {
      i = fend[i];
      continue;
    }
    if (pd > d - 1) pd = d - 1;
    if (k && pd == d - 1 && fplain[i] && (fplain[i] <= k || dead_after)) {
      i = fend[i]; /* plain_le's tokens, each byte a step of the run */
      skips++;
      continue;
    }
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
    if (pd == d - 1 && NC_GRAMMAR_PLAIN(nd.byte)) pd = d;
    if (nd.tok != NONE && (!longs_only || d > NC_GRAMMAR_CANON_DEPTH)) {
      uint32_t t = nd.tok & ~MORE;
      mask[t / 64] |= 1ull << (t % 64);
      if (nd.tok & MORE)
        for (t = tok_next[t]; t != NONE; t = tok_next[t])
          mask[t / 64] |= 1ull << (t % 64);
    }
    i++;
  }
  mm->plain_skips += skips;
  return NC_OK;
}

/* The mask through the memo. With the grammar's canonical map the walk
 * starts from cur's canonical form, which the tokens of at most
 * NC_GRAMMAR_CANON_DEPTH bytes cannot tell from cur (so its kept mask
 * serves every position of a long bounded repetition); the longer tokens
 * are then walked from cur itself (only the trie's subtrees that hold
 * one). *fallback: the memo could not hold the
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
    rc = walk(m, gv, rid, m->cur.left > 0, false, mask, &full, err);
    if (rc != NC_OK) return rc;
    if (!full && m->cur.left == 0) nc_gmemo_keep_mask(mm, rid, mask);
  }
  if (canon && !full) { /* the long tokens as cur itself takes them */
    for (int32_t i = 0; i < gv->n_longs; i++)
      mask[gv->longs[i] / 64] &= ~(1ull << (gv->longs[i] % 64));
    rc = walk(m, gv, cid, false, true, mask, &full, err);
    if (rc != NC_OK) return rc;
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
  nc_gwork_begin(&m->work, nc_grammar_matcher_budget(m));
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
  if (rc == NC_OK && fallback)
    rc = reference_walk(m, gv, mask, err);
  else if (rc == NC_OK && nc_gstate_accepting(&m->cur))
    for (int32_t i = 0; i < gv->n_ends; i++)
      mask[gv->ends[i] / 64] |= 1ull << (gv->ends[i] % 64);
  if (rc == NC_OK && m->uniq) rc = nc_guniq_mask(m, gv, mask, err);
  return rc;
}
