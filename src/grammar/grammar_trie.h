/* grammar_trie: the vocabulary's byte trie (nc_grammar_vocab), built once
 * per model by grammar_trie.c (linked while building, then laid out flat
 * in depth-first order) and walked by the token mask (grammar_mask.c). */
#ifndef NC_GRAMMAR_TRIE_H
#define NC_GRAMMAR_TRIE_H

#include <stdint.h>

#include "grammar_internal.h"

#define NONE UINT32_MAX

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
  uint8_t deep; /* a token longer than NC_GRAMMAR_CANON_DEPTH ends in the
                   subtree (or here) */
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
  /* Plain runs (NC_GRAMMAR_PLAIN: a JSON string's bytes that need no
   * escape, printable ASCII but '"' and '\\'): fplain[i] is 0 when node
   * i's subtree (i included) holds a byte that is not plain, else the
   * greatest depth in it (255: past NC_GRAMMAR_PLAIN_MAX); plain_le + k * words
   * (k <= n_plain) holds the text tokens of at most k bytes, all plain; n_plain
   * is the longest such token's length, at most NC_GRAMMAR_PLAIN_MAX. */
  uint8_t *fplain;
  uint64_t *plain_le;
  uint32_t n_plain;
  /* The text tokens whose piece holds '[' (has_lb), and '"' or '\\'
   * (has_q): the ones uniqueItems' filter looks at (grammar_unique.h). */
  uint64_t *has_lb, *has_q;
};

#define NC_GRAMMAR_PLAIN_MAX 64u

#endif
