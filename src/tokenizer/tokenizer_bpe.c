/* tokenizer_bpe: byte-level BPE over one raw fragment (llama.cpp's
 * llm_tokenizer_bpe_session): pre-tokenize, byte-encode each word, merge
 * the lowest-ranked adjacent pair first (leftmost on ties). */
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "tokenizer_impl.h"
#include "tokenizer_split.h"

typedef struct sym {
  int32_t sid; /* string id of the symbol's (byte-encoded) text, or -1 */
  int32_t prev, next;
  uint32_t n; /* bytes of the word it covers (from its own index, where
               * it started as one byte); 0: merged away */
} sym;

/* A queued pair: (rank << 32) | left symbol, so that the smallest key is
 * the lowest rank, leftmost on ties (llama.cpp's order). Whether it is
 * still current is checked when it is popped: the pair at `left` must still
 * merge with this rank (a rank names one (left, right) text pair, and
 * symbol texts only grow, so this equals llama.cpp's text comparison). */
typedef uint64_t bigram;

/* For long words, a bucket queue: one small heap of left indices per rank
 * and a two-level bitmap of the non-empty ranks. It pops in exactly the
 * binary heap's order (lowest rank, then leftmost) but touches little
 * memory per operation, so time grows about linearly with the word. */
typedef struct rank_bucket {
  uint32_t *left; /* min-heap */
  uint32_t n, cap;
} rank_bucket;

typedef struct rank_queue {
  rank_bucket *b; /* [n_ranks] */
  uint64_t *bits, *top;
  size_t n_ranks, n_words, n_top;
} rank_queue;

#define LONG_WORD 4096

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
  rank_queue rq; /* long words */
  bool long_word;
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

static void sift_down(bigram *h, size_t n, size_t i) {
  bigram x = h[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && h[c + 1] < h[c]) c++;
    if (h[c] >= x) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = x;
}

static void heap_push(bpe_work *w, bigram b) {
  if (!grow((void **)&w->heap, &w->cap_heap, w->n_heap + 1, sizeof b)) {
    w->oom = true;
    return;
  }
  size_t i = w->n_heap++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (w->heap[p] <= b) break;
    w->heap[i] = w->heap[p];
    i = p;
  }
  w->heap[i] = b;
}

static bigram heap_pop(bpe_work *w) {
  bigram top = w->heap[0];
  w->heap[0] = w->heap[--w->n_heap];
  if (w->n_heap) sift_down(w->heap, w->n_heap, 0);
  return top;
}

static bool rq_init(rank_queue *q, size_t n_ranks) {
  if (q->b) return true;
  q->n_ranks = n_ranks ? n_ranks : 1;
  q->n_words = (q->n_ranks + 63) / 64;
  q->n_top = (q->n_words + 63) / 64;
  q->b = calloc(q->n_ranks, sizeof *q->b);
  q->bits = calloc(q->n_words, sizeof *q->bits);
  q->top = calloc(q->n_top, sizeof *q->top);
  return q->b && q->bits && q->top;
}

static void rq_free(rank_queue *q) {
  if (q->b)
    for (size_t i = 0; i < q->n_ranks; i++)
      free(q->b[i].left);
  free(q->b);
  free(q->bits);
  free(q->top);
}

static bool rq_push(rank_queue *q, uint32_t rank, uint32_t left) {
  rank_bucket *b = &q->b[rank];
  if (b->n == b->cap) {
    uint32_t cap = b->cap ? b->cap * 2 : 8;
    uint32_t *p = realloc(b->left, (size_t)cap * sizeof *p);
    if (!p) return false;
    b->left = p;
    b->cap = cap;
  }
  uint32_t i = b->n++;
  while (i > 0) {
    uint32_t par = (i - 1) / 2;
    if (b->left[par] <= left) break;
    b->left[i] = b->left[par];
    i = par;
  }
  b->left[i] = left;
  q->bits[rank / 64] |= 1ull << (rank % 64);
  q->top[rank / 4096] |= 1ull << (rank / 64 % 64);
  return true;
}

/* Pops the smallest (rank, left); false when empty. */
static bool rq_pop(rank_queue *q, uint32_t *rank, uint32_t *left) {
  size_t t = 0;
  while (t < q->n_top && !q->top[t])
    t++;
  if (t == q->n_top) return false;
  size_t w = t * 64 + (size_t)__builtin_ctzll(q->top[t]);
  uint32_t r = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(q->bits[w]));
  rank_bucket *b = &q->b[r];
  *rank = r;
  *left = b->left[0];
  uint32_t x = b->left[--b->n], n = b->n, i = 0;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && b->left[c + 1] < b->left[c]) c++;
    if (b->left[c] >= x) break;
    b->left[i] = b->left[c];
    i = c;
  }
  if (n) b->left[i] = x;
  if (!n) {
    q->bits[w] &= ~(1ull << (r % 64));
    if (!q->bits[w]) q->top[t] &= ~(1ull << (w % 64));
  }
  return true;
}

static inline bigram key(int32_t rank, size_t left) {
  return ((uint64_t)(uint32_t)rank << 32) | (uint32_t)left;
}

static void try_pair(const nc_vocab *v, bpe_work *w, int32_t l, int32_t r) {
  if (l < 0 || r < 0) return;
  int32_t rank, result;
  if (!nc_merge_find(v, w->syms[l].sid, w->syms[r].sid, &rank, &result)) return;
  if (w->long_word) {
    if (!rq_push(&w->rq, (uint32_t)rank, (uint32_t)l)) w->oom = true;
  } else {
    heap_push(w, key(rank, (size_t)l));
  }
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
    unsigned char b = (unsigned char)w->word[(size_t)(s - w->syms) + i];
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
    s->n = 1;
  }
  w->long_word = n > LONG_WORD && n < UINT32_MAX;
  if (w->long_word && !rq_init(&w->rq, (size_t)v->n_merges)) {
    w->oom = true;
    return;
  }
  /* Seed the queue with every adjacent pair (heapified in O(n)). */
  if (!w->long_word &&
      !grow((void **)&w->heap, &w->cap_heap, n, sizeof(bigram))) {
    w->oom = true;
    return;
  }
  w->n_heap = 0;
  for (size_t i = 1; i < n && !w->oom; i++) {
    int32_t rank, result;
    if (!nc_merge_find(v, w->syms[i - 1].sid, w->syms[i].sid, &rank, &result))
      continue;
    if (w->long_word)
      w->oom = !rq_push(&w->rq, (uint32_t)rank, (uint32_t)(i - 1));
    else
      w->heap[w->n_heap++] = key(rank, i - 1);
  }
  for (size_t i = w->n_heap / 2; i-- > 0;)
    sift_down(w->heap, w->n_heap, i);
  for (;;) {
    uint32_t qrank, qleft;
    if (w->oom) break;
    if (w->long_word) {
      if (!rq_pop(&w->rq, &qrank, &qleft)) break;
      /* the next pops are most likely the next pairs of this rank (the
       * top of its heap): start fetching their symbols now (words this
       * long miss the cache) */
      const rank_bucket *nb = &w->rq.b[qrank];
      for (uint32_t k = 0; k < nb->n && k < 7; k++)
        __builtin_prefetch(&w->syms[nb->left[k]]);
    } else {
      if (!w->n_heap) break;
      bigram b = heap_pop(w);
      qrank = (uint32_t)(b >> 32);
      qleft = (uint32_t)b;
    }
    int32_t li = (int32_t)qleft, rank, result;
    sym *l = &w->syms[li];
    if (l->n == 0 || l->next < 0) continue;
    sym *r = &w->syms[l->next];
    if (!nc_merge_find(v, l->sid, r->sid, &rank, &result) ||
        (uint32_t)rank != qrank)
      continue; /* stale: the pair changed since it was queued */
    l->n += r->n;
    l->sid = result;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) w->syms[r->next].prev = li;
    try_pair(v, w, l->prev, li);
    try_pair(v, w, li, l->next);
  }
  if (w->oom) return;
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
  rq_free(&w->rq);
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
