/* tokenizer_internal: the nc_vocab layout shared by vocab.c, the tokenizer
 * files and the detokenizer. Nothing outside the tokenizer module includes
 * this. */
#ifndef NC_TOKENIZER_INTERNAL_H
#define NC_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vocab.h"

/* Strings are "interned": ids 0..n_tokens-1 are the tokens themselves,
 * higher ids are merge operands/results that are not tokens. */
typedef struct nc_strtab {
  char *bytes; /* all strings, back to back */
  size_t n_bytes, cap_bytes;
  uint32_t *off; /* per string */
  uint32_t *len;
  int32_t n, cap;
  int32_t *slots; /* open addressing: string id or -1 */
  size_t n_slots; /* power of two */
} nc_strtab;

typedef struct nc_merge_slot {
  uint64_t key; /* (left << 32) | right; UINT64_MAX when empty */
  int32_t rank;
  int32_t result; /* string id of left+right */
} nc_merge_slot;

/* A byte trie over the special-token texts (for finding which occur). */
typedef struct nc_trie_node {
  int32_t first_child, next_sibling;
  int32_t token; /* index into special[] of the token ending here, or -1 */
  uint8_t byte;
} nc_trie_node;

struct nc_vocab {
  nc_vocab_type type;
  nc_pre_type pre;
  int32_t n_tokens;
  uint32_t max_token_len; /* longest token text, in bytes */
  nc_strtab strs;
  float *scores;
  uint32_t *attr;
  uint8_t *eog;

  nc_merge_slot *merges;
  size_t n_merge_slots;
  int32_t n_merges; /* ranks are 0..n_merges-1 */

  int32_t bos, eos, eot, eom, unk, sep, pad, mask;
  int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
  bool add_bos, add_eos, add_space_prefix, clean_spaces, ignore_merges;
  /* WordPiece's normalizer (tokenizer.ggml.normalizer.*) */
  bool wpm_lowercase, wpm_strip_accents;
  /* a SEP between the two texts of a pair (llama.cpp's add_sep: a rerank
   * prompt) */
  bool add_sep;

  /* Special tokens (control, user-defined, unknown), longest text first. */
  int32_t *special;
  int32_t n_special;
  nc_trie_node *trie;
  int32_t n_trie, cap_trie;

  /* token_to_piece(special = true) for every token. */
  char *piece_bytes;
  uint32_t *piece_off, *piece_len;

  /* GPT-2 byte map as UTF-8: byte b -> gpt2_utf8[b] (gpt2_len[b] bytes). */
  char gpt2_utf8[256][2];
  uint8_t gpt2_len[256];
  /* String id of the GPT-2 char standing for each byte, or -1. */
  int32_t gpt2_sid[256];
  /* String ids of the single-byte strings (BPE fallback), or -1. */
  int32_t byte_str[256];
  /* SPM byte fallback: the token for each byte, or -1. */
  int32_t byte_token[256];
};

uint64_t nc_str_hash(const char *s, size_t n);
/* String id of s, or -1. */
int32_t nc_strtab_find(const nc_strtab *t, const char *s, size_t n);
static inline int32_t nc_vocab_token_id(const nc_vocab *v, const char *s,
                                        size_t n) {
  if (n > v->max_token_len) return -1;
  int32_t id = nc_strtab_find(&v->strs, s, n);
  return id < v->n_tokens ? id : -1;
}
/* (rank, result) of merging string ids a and b; false when no merge. */
bool nc_merge_find(const nc_vocab *v, int32_t a, int32_t b, int32_t *rank,
                   int32_t *result);

/* Loading helpers (tokenizer_strtab.c, vocab_pieces.c). */
int32_t nc_strtab_add(nc_strtab *t, const char *s, size_t n);
void nc_strtab_free(nc_strtab *t);
void nc_merge_insert(nc_vocab *v, int32_t a, int32_t b, int32_t rank,
                     int32_t result);
/* Special tokens (tokenizer_special.c): marks EOT/EOM/FIM/EOG by text and
 * builds v->special (longest first) and v->trie. */
void nc_vocab_detect_specials(nc_vocab *v);
nc_code nc_vocab_build_special(nc_vocab *v, nc_error *err);
/* Builds v->piece_* (token_to_piece with special = true for every id;
 * vocab_pieces.c). */
nc_code nc_vocab_build_pieces(nc_vocab *v, nc_error *err);

/* A growing byte buffer; `oom` latches the first allocation failure (the
 * pieces table and the detokenizer build their text with it). */
typedef struct nc_bytes {
  char *p;
  size_t n, cap;
  bool oom;
} nc_bytes;

static inline void nc_bytes_put(nc_bytes *b, const void *s, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n)
      cap *= 2;
    char *p = (char *)realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
}

#endif
