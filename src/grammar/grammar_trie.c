/* The vocabulary's byte trie (grammar_trie.h). */
#include <stdlib.h>
#include <string.h>

#include "grammar_trie.h"

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
  /* deep: from the last node back, each node's children come later. */
  for (uint32_t i = at; i-- > 0;) {
    fnode *f = &gv->flat[i];
    f->deep = f->tok != NONE && f->depth > NC_GRAMMAR_CANON_DEPTH;
    for (uint32_t j = i + 1; j < gv->fend[i] && !f->deep; j = gv->fend[j])
      f->deep = gv->flat[j].deep;
  }
  return NC_OK;
}

/* The plain runs' index (grammar_trie.h): fplain from the last node back
 * (a node's children come after it), plain_le from the first node on (the
 * walk's path so far is plain up to depth pd: the node before shares the
 * path to this node's parent). */
static nc_code plain_runs(nc_grammar_vocab *gv) {
  uint32_t n = gv->n_nodes;
  gv->fplain = calloc(n, 1);
  if (!gv->fplain) return NC_ERR_NOMEM;
  for (uint32_t i = n; i-- > 1;) {
    const fnode *f = &gv->flat[i];
    if (!NC_GRAMMAR_PLAIN(f->byte)) continue;
    uint8_t deepest = f->depth > NC_GRAMMAR_PLAIN_MAX ? 255 : (uint8_t)f->depth;
    for (uint32_t j = i + 1; j < gv->fend[i] && deepest; j = gv->fend[j])
      deepest = gv->fplain[j] > deepest ? gv->fplain[j]
                : gv->fplain[j]         ? deepest
                                        : 0;
    gv->fplain[i] = deepest;
  }
  uint32_t pd = 0;
  for (uint32_t i = 1; i < n; i++) {
    uint32_t d = gv->flat[i].depth;
    if (pd > d - 1) pd = d - 1;
    if (pd == d - 1 && NC_GRAMMAR_PLAIN(gv->flat[i].byte) &&
        d <= NC_GRAMMAR_PLAIN_MAX) {
      pd = d;
      if (gv->flat[i].tok != NONE && d > gv->n_plain) gv->n_plain = d;
    }
  }
  size_t words = ((size_t)gv->n + 63) / 64;
  gv->plain_le = calloc((gv->n_plain + 1) * words, sizeof *gv->plain_le);
  if (!gv->plain_le) return NC_ERR_NOMEM;
  pd = 0;
  for (uint32_t i = 1; i < n; i++) {
    uint32_t d = gv->flat[i].depth;
    if (pd > d - 1) pd = d - 1;
    if (pd != d - 1 || !NC_GRAMMAR_PLAIN(gv->flat[i].byte) || d > gv->n_plain)
      continue;
    pd = d;
    uint64_t *row = gv->plain_le + d * words;
    uint32_t t = gv->flat[i].tok;
    for (t = t == NONE ? NONE : t & ~MORE; t != NONE; t = gv->tok_next[t])
      row[t / 64] |= 1ull << (t % 64);
  }
  for (uint32_t k = 1; k <= gv->n_plain; k++)
    for (size_t w = 0; w < words; w++)
      gv->plain_le[k * words + w] |= gv->plain_le[(k - 1) * words + w];
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
  if (!gv->ends || flatten(gv) != NC_OK || plain_runs(gv) != NC_OK) goto nomem;
  gv->n_ends = 0;
  for (int32_t i = 0; i < n; i++)
    if (gv->kinds[i] == NC_GRAMMAR_TOKEN_END) gv->ends[gv->n_ends++] = i;
  gv->longs = malloc(((size_t)n + 1) * sizeof *gv->longs);
  size_t words = ((size_t)n + 63) / 64;
  gv->has_lb = calloc(words + 1, sizeof *gv->has_lb);
  gv->has_q = calloc(words + 1, sizeof *gv->has_q);
  if (!gv->longs || !gv->has_lb || !gv->has_q) goto nomem;
  for (int32_t i = 0; i < n; i++) {
    const char *p = gv->bytes + gv->off[i];
    size_t len = gv->off[i + 1] - gv->off[i];
    if (gv->kinds[i] != NC_GRAMMAR_TOKEN_TEXT) continue;
    if (memchr(p, '[', len)) gv->has_lb[i / 64] |= 1ull << (i % 64);
    if (memchr(p, '"', len) || memchr(p, '\\', len))
      gv->has_q[i / 64] |= 1ull << (i % 64);
  }
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
  free(gv->fplain);
  free(gv->plain_le);
  free(gv->has_lb);
  free(gv->has_q);
  free(gv);
}

int32_t nc_grammar_vocab_n_tokens(const nc_grammar_vocab *gv) {
  return gv->n;
}

uint8_t nc_grammar_vocab_kind(const nc_grammar_vocab *gv, int32_t id) {
  return id >= 0 && id < gv->n ? gv->kinds[id] : NC_GRAMMAR_TOKEN_NEVER;
}
