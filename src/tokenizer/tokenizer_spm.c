/* tokenizer_spm: SentencePiece-style tokenization of one raw fragment
 * (llama.cpp's llm_tokenizer_spm_session): spaces become U+2581, then the
 * adjacent pair whose concatenation is the highest-scoring token is merged
 * first (leftmost on ties); leftovers fall back to <0xNN> byte tokens. */
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "tokenizer_impl.h"

typedef struct sym {
  int32_t prev, next;
  uint32_t start, n; /* n = 0: merged away */
} sym;

typedef struct bigram {
  float score;
  int32_t left, right;
  uint32_t size;
} bigram;

typedef struct spm_work {
  char *text;
  size_t len;
  sym *syms;
  bigram *heap;
  size_t n_heap, cap_heap;
  bool oom;
} spm_work;

/* a before b: higher score, then lower left index. */
static inline bool before(const bigram *a, const bigram *b) {
  return a->score > b->score || (!(a->score < b->score) && a->left < b->left);
}

static void heap_push(spm_work *w, bigram b) {
  if (w->n_heap == w->cap_heap) {
    size_t cap = w->cap_heap ? w->cap_heap * 2 : 64;
    bigram *h = realloc(w->heap, cap * sizeof *h);
    if (!h) {
      w->oom = true;
      return;
    }
    w->heap = h;
    w->cap_heap = cap;
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

static bigram heap_pop(spm_work *w) {
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

static void try_pair(const nc_vocab *v, spm_work *w, int32_t l, int32_t r) {
  if (l < 0 || r < 0) return;
  const sym *a = &w->syms[l], *b = &w->syms[r];
  if (a->n + b->n > v->max_token_len) return; /* no token is that long */
  int32_t id = nc_vocab_token_id(v, w->text + a->start, a->n + b->n);
  if (id < 0) return;
  bigram g = {v->scores[id], l, r, a->n + b->n};
  heap_push(w, g);
}

static void emit(const nc_vocab *v, const spm_work *w, const sym *s,
                 nc_ids *out) {
  int32_t id = nc_vocab_token_id(v, w->text + s->start, s->n);
  if (id >= 0) {
    nc_ids_push(out, id);
    return;
  }
  /* Byte fallback. A byte with no token at all (llama.cpp would throw)
   * becomes the unknown token, or is dropped when there is none. */
  for (uint32_t i = 0; i < s->n; i++) {
    int32_t b = v->byte_token[(unsigned char)w->text[s->start + i]];
    if (b < 0) b = v->unk;
    if (b >= 0) nc_ids_push(out, b);
  }
}

bool nc_spm_fragment(const nc_vocab *v, const char *text, size_t len,
                     bool space_prefix, nc_ids *out) {
  spm_work w = {0};
  /* Escape: every ' ' becomes "\xe2\x96\x81" (3 bytes). */
  size_t spaces = space_prefix;
  for (size_t i = 0; i < len; i++)
    spaces += text[i] == ' ';
  w.len = len + space_prefix + spaces * 2;
  w.text = malloc(w.len ? w.len : 1);
  w.syms = malloc((w.len ? w.len : 1) * sizeof *w.syms);
  if (!w.text || !w.syms) {
    free(w.text);
    free(w.syms);
    return false;
  }
  size_t k = 0;
  if (space_prefix) {
    memcpy(w.text, "\xe2\x96\x81", 3);
    k = 3;
  }
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ') {
      memcpy(w.text + k, "\xe2\x96\x81", 3);
      k += 3;
    } else {
      w.text[k++] = text[i];
    }
  }
  /* Symbols: one per UTF-8 sequence by its lead byte, clipped at the end. */
  int32_t n = 0;
  for (size_t off = 0; off < w.len;) {
    size_t l = nc_utf8_seq_len((unsigned char)w.text[off]);
    if (l > w.len - off) l = w.len - off;
    w.syms[n] = (sym){n - 1, -1, (uint32_t)off, (uint32_t)l};
    if (n > 0) w.syms[n - 1].next = n;
    n++;
    off += l;
  }
  for (int32_t i = 1; i < n; i++)
    try_pair(v, &w, i - 1, i);
  while (w.n_heap && !w.oom) {
    bigram g = heap_pop(&w);
    sym *l = &w.syms[g.left], *r = &w.syms[g.right];
    if (l->n == 0 || r->n == 0 || l->n + r->n != g.size) continue;
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) w.syms[r->next].prev = g.left;
    try_pair(v, &w, l->prev, g.left);
    try_pair(v, &w, g.left, l->next);
  }
  for (int32_t i = 0; i >= 0 && n; i = w.syms[i].next)
    emit(v, &w, &w.syms[i], out);
  bool ok = !w.oom;
  free(w.text);
  free(w.syms);
  free(w.heap);
  return ok;
}
