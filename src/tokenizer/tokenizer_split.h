/* tokenizer_split: the BPE pre-tokenizers ("split into words").
 *
 * Works on code points (decoded with nc_utf8_decode_lenient) and returns
 * word lengths in code points. Each pre-tokenizer family reproduces
 * llama.cpp's unicode_regex_split for it: the hand-written gpt2 and llama3
 * scanners, and the std::regex stages on "collapsed" text (\p{N} and
 * friends), applied in sequence, each one splitting the pieces the previous
 * one produced.
 */
#ifndef NC_TOKENIZER_SPLIT_H
#define NC_TOKENIZER_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vocab.h"

typedef struct nc_pieces {
  size_t *len; /* code points per piece */
  size_t n, cap;
} nc_pieces;

void nc_pieces_free(nc_pieces *p);

/* Splits cps[0..n) into words for pre-tokenizer family pre. `tmp` is
 * scratch reused between calls. Returns false when out of memory. */
bool nc_pretokenize(nc_pre_type pre, const uint32_t *cps, size_t n,
                    nc_pieces *out, nc_pieces *tmp);

#endif
