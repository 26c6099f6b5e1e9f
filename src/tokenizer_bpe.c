/* tokenizer_bpe: byte-level BPE over one raw fragment (llama.cpp's
 * llm_tokenizer_bpe_session): pre-tokenize, byte-encode each word, merge
 * the lowest-ranked adjacent pair first (leftmost on ties). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "tokenizer_split.h"
#include "unicode.h"

typedef struct sym {
  int32_t sid; /* string id of the symbol's (byte-encoded) text, or -1 */
  int32_t prev, next;
  uint32_t start, n; /* bytes of the word it covers; n = 0: merged away */
} sym;

typedef struct bigram {
  int32_t rank, left, right, result;
  uint32_t size;
} bigram;

typedef struct bpe_work {
  uint32_t *cps;
  size_t n_cps;
  nc_pieces words, tmp;
  char *word; /* one word's UTF-8 bytes */
  char *enc;  /* its byte-encoded text (ignore_merges lookups) */
  size_t cap_word, cap_enc;
  sym *syms;
  size_t cap_syms;
  bigram *heap;
  size_t n_heap, cap_heap;
  bool oom;
} bpe_work;

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 64;
  while (c < need)
    c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

/* a before b: lower rank, then lower left index. */
static inline bool before(const bigram *a, const bigram *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(bpe_work *w, bigram b) {
  if (!grow((void **)&w->heap, &w->cap_heap, w->n_heap + 1, sizeof b)) {
    w->oom = true;
    return;
  }
  size_t i = w->n_heap++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!before(&b, &w->heap[p])) break;
    w->heap[i] = w->heap[p];
    i = p;
  }
  w->heap[i] = b;
}

static bigram heap_pop(bpe_work *w) {
  bigram top = w->heap[0];
  bigram last = w->heap[--w->n_heap];
  size_t i = 0, n = w->n_heap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(&w->heap[c + 1], &w->heap[c])) c++;
    if (!before(&w->heap[c], &last)) break;
    w->heap[i] = w->heap[c];
    i = c;
  }
  if (n) w->heap[i] = last;
  return top;
}

static void try_pair(const nc_vocab *v, bpe_work *w, int32_t l, int32_t r) {
  if (l < 0 || r < 0) return;
  int32_t rank, result;
  if (!nc_merge_find(v, w->syms[l].sid, w->syms[r].sid, &rank, &result)) return;
  bigram b = {rank, l, r, result, w->syms[l].n + w->syms[r].n};
  heap_push(w, b);
}

static void emit_symbol(const nc_vocab *v, const bpe_work *w, const sym *s,
                        nc_ids *out) {
  if (s->sid >= 0 && s->sid < v->n_tokens) {
    nc_ids_push(out, s->sid);
    return;
  }
  /* Not a token: look each byte of its encoded text up as a one-byte
   * token; bytes without one are dropped (as llama.cpp does). */
  for (uint32_t i = 0; i < s->n; i++) {
    unsigned char b = (unsigned char)w->word[s->start + i];
    for (int k = 0; k < v->gpt2_len[b]; k++) {
      int32_t id = v->byte_str[(unsigned char)v->gpt2_utf8[b][k]];
      if (id >= 0 && id < v->n_tokens) nc_ids_push(out, id);
    }
  }
}

static void bpe_word(const nc_vocab *v, bpe_work *w, size_t n, nc_ids *out) {
  if (v->ignore_merges) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      m += v->gpt2_len[(unsigned char)w->word[i]];
    if (!grow((void **)&w->enc, &w->cap_enc, m, 1)) {
      w->oom = true;
      return;
    }
    m = 0;
    for (size_t i = 0; i < n; i++) {
      unsigned char b = (unsigned char)w->word[i];
      memcpy(w->enc + m, v->gpt2_utf8[b], v->gpt2_len[b]);
      m += v->gpt2_len[b];
    }
    int32_t id = nc_vocab_token_id(v, w->enc, m);
    if (id >= 0) {
      nc_ids_push(out, id);
      return;
    }
  }
  if (!grow((void **)&w->syms, &w->cap_syms, n, sizeof(sym))) {
    w->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    sym *s = &w->syms[i];
    s->sid = v->gpt2_sid[(unsigned char)w->word[i]];
    s->prev = (int32_t)i - 1;
    s->next = i + 1 < n ? (int32_t)i + 1 : -1;
    s->start = (uint32_t)i;
    s->n = 1;
  }
  w->n_heap = 0;
  for (size_t i = 1; i < n; i++)
    try_pair(v, w, (int32_t)i - 1, (int32_t)i);
  while (w->n_heap && !w->oom) {
    bigram b = heap_pop(w);
    sym *l = &w->syms[b.left], *r = &w->syms[b.right];
    if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue; /* stale */
    l->n += r->n;
    l->sid = b.result;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) w->syms[r->next].prev = b.left;
    try_pair(v, w, l->prev, b.left);
    try_pair(v, w, b.left, l->next);
  }
  for (int32_t i = 0; i >= 0 && n; i = w->syms[i].next)
    emit_symbol(v, w, &w->syms[i], out);
}

static void work_free(bpe_work *w) {
  free(w->cps);
  nc_pieces_free(&w->words);
  nc_pieces_free(&w->tmp);
  free(w->word);
  free(w->enc);
  free(w->syms);
  free(w->heap);
}

bool nc_bpe_fragment(const nc_vocab *v, const char *text, size_t len,
                     nc_ids *out) {
  bpe_work w = {0};
  w.cps = malloc((len ? len : 1) * sizeof *w.cps);
  if (!w.cps) return false;
  for (size_t off = 0; off < len;)
    w.cps[w.n_cps++] = nc_utf8_decode_lenient(text, len, &off);
  if (!nc_pretokenize(v->pre, w.cps, w.n_cps, &w.words, &w.tmp)) {
    work_free(&w);
    return false;
  }
  size_t at = 0;
  for (size_t i = 0; i < w.words.n && !w.oom && !out->oom; i++) {
    size_t ncp = w.words.len[i];
    if (!grow((void **)&w.word, &w.cap_word, ncp * 4, 1)) {
      w.oom = true;
      break;
    }
    size_t nb = 0;
    for (size_t k = 0; k < ncp; k++)
      nb += (size_t)nc_utf8_encode(w.cps[at + k], w.word + nb);
    at += ncp;
    bpe_word(v, &w, nb, out);
  }
  bool ok = !w.oom;
  work_free(&w);
  return ok;
}
