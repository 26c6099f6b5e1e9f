/* tokenizer: nc_tokenize. Cuts the text around special tokens the way
 * llama.cpp's tokenizer_st_partition does (longest special text first,
 * every occurrence in every remaining raw fragment), then tokenizes each
 * raw fragment with BPE, SPM or WordPiece and adds BOS/EOS (WordPiece:
 * CLS/SEP). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

#define NC_TOKENIZE_MAX_BYTES ((size_t)1 << 30)

typedef struct frag {
  size_t off, len;
  int32_t token; /* -1: raw text */
} frag;

typedef struct frags {
  frag *p;
  size_t n, cap;
} frags;

static bool frag_push(frags *f, frag x) {
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 16;
    frag *p = realloc(f->p, cap * sizeof *p);
    if (!p) return false;
    f->p = p;
    f->cap = cap;
  }
  f->p[f->n++] = x;
  return true;
}

static bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r'); /* isspace, C locale */
}

/* Marks (in occurs[], by index into v->special) the special tokens that
 * occur anywhere in the text: only those can split a fragment. */
static void find_occurring(const nc_vocab *v, const char *text, size_t len,
                           uint8_t *occurs) {
  const nc_trie_node *t = v->trie;
  for (size_t i = 0; i < len; i++) {
    int32_t node = 0;
    for (size_t j = i; j < len; j++) {
      int32_t ch = t[node].first_child;
      while (ch >= 0 && t[ch].byte != (uint8_t)text[j])
        ch = t[ch].next_sibling;
      if (ch < 0) break;
      node = ch;
      if (t[node].token >= 0) occurs[t[node].token] = 1;
    }
  }
}

/* The ranges of the text where control tokens are not recognised. */
typedef struct guard {
  const nc_span *p;
  size_t n;
} guard;

/* True when [at, at + len) overlaps a span of g (sorted by offset). */
static bool guarded(const guard *g, size_t at, size_t len) {
  size_t lo = 0, hi = g->n;
  while (lo < hi) { /* the first span ending after at */
    size_t mid = lo + (hi - lo) / 2;
    if (g->p[mid].off + g->p[mid].len <= at)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->n && g->p[lo].off < at + len;
}

/* Splits every raw fragment of *in around the occurrences of special token
 * `id` into *out (leftmost first, non-overlapping). Occurrences that
 * overlap g (when given) are left in the raw text. */
static bool split_on(const nc_vocab *v, int32_t id, const char *text,
                     const frags *in, const guard *g, frags *out) {
  size_t tl;
  const char *tt = nc_vocab_token_text(v, id, &tl);
  uint32_t attr = v->attr[id];
  out->n = 0;
  for (size_t i = 0; i < in->n; i++) {
    frag f = in->p[i];
    if (f.token >= 0) {
      if (!frag_push(out, f)) return false;
      continue;
    }
    size_t off = f.off, end = f.off + f.len, from = off;
    for (;;) {
      const char *m =
          end - from >= tl ? memmem(text + from, end - from, tt, tl) : NULL;
      if (m && g && guarded(g, (size_t)(m - text), tl)) {
        from = (size_t)(m - text) + 1;
        continue;
      }
      if (!m) {
        if (end > off && !frag_push(out, (frag){off, end - off, -1}))
          return false;
        break;
      }
      size_t at = (size_t)(m - text);
      size_t left = at - off;
      if (attr & NC_TOKEN_ATTR_LSTRIP)
        while (left > 0 && is_space(text[off + left - 1]))
          left--;
      if (left > 0 && !frag_push(out, (frag){off, left, -1})) return false;
      if (!frag_push(out, (frag){at, tl, id})) return false;
      off = at + tl;
      if (attr & NC_TOKEN_ATTR_RSTRIP)
        while (off < end && is_space(text[off]))
          off++;
      from = off;
      if (off >= end) break;
    }
  }
  return true;
}

static nc_code partition(const nc_vocab *v, const char *text, size_t len,
                         bool parse_special, const guard *g, frags *out,
                         nc_error *err) {
  out->n = 0;
  if (len == 0) return NC_OK;
  if (!frag_push(out, (frag){0, len, -1})) goto oom;
  if (v->n_special == 0) return NC_OK;
  uint8_t *occurs = calloc((size_t)v->n_special, 1);
  if (!occurs) goto oom;
  find_occurring(v, text, len, occurs);
  frags tmp = {0};
  bool ok = true;
  for (int32_t i = 0; i < v->n_special && ok; i++) {
    if (!occurs[i]) continue;
    int32_t id = v->special[i];
    if (!parse_special &&
        (v->attr[id] & (NC_TOKEN_ATTR_CONTROL | NC_TOKEN_ATTR_UNKNOWN)))
      continue; /* user-defined tokens are always matched */
    bool control =
        v->attr[id] & (NC_TOKEN_ATTR_CONTROL | NC_TOKEN_ATTR_UNKNOWN);
    ok = split_on(v, id, text, out, control ? g : NULL, &tmp);
    frags sw = *out;
    *out = tmp;
    tmp = sw;
  }
  free(tmp.p);
  free(occurs);
  if (ok) return NC_OK;
oom:
  return nc_fail(err, NC_ERR_NOMEM, "tokenize: out of memory");
}

static nc_code tokenize(const nc_vocab *v, const char *text, size_t len,
                        bool add_special, bool parse_special, const guard *g,
                        int32_t **ids_out, size_t *n_out, nc_error *err) {
  if (ids_out) *ids_out = NULL;
  if (n_out) *n_out = 0;
  if (!v || !ids_out || !n_out || (!text && len))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "tokenize: NULL vocab, text or output");
  if (len > NC_TOKENIZE_MAX_BYTES)
    return nc_fail(err, NC_ERR_LIMIT,
                   "tokenize: text of %zu bytes is over the limit of %zu", len,
                   NC_TOKENIZE_MAX_BYTES);
  frags fr = {0};
  nc_code rc = partition(v, text, len, parse_special, g, &fr, err);
  if (rc != NC_OK) {
    free(fr.p);
    return rc;
  }
  nc_ids ids = {0};
  bool ok = true;
  if (add_special && v->add_bos) nc_ids_push(&ids, v->bos);
  bool prev_special = true; /* SPM: a space prefix before the first text */
  for (size_t i = 0; i < fr.n && ok && !ids.oom; i++) {
    const frag *f = &fr.p[i];
    if (f->token >= 0) {
      nc_ids_push(&ids, f->token);
      prev_special = true;
    } else if (v->type == NC_VOCAB_WPM) {
      ok = nc_wpm_fragment(v, text + f->off, f->len, &ids);
    } else if (v->type == NC_VOCAB_SPM) {
      ok = nc_spm_fragment(v, text + f->off, f->len,
                           v->add_space_prefix && prev_special, &ids);
      prev_special = false;
    } else {
      ok = nc_bpe_fragment(v, text + f->off, f->len, &ids);
    }
  }
  if (add_special && v->type == NC_VOCAB_WPM)
    nc_ids_push(&ids, v->sep); /* [CLS] ... [SEP], as llama.cpp's WPM */
  else if (add_special && v->add_eos)
    nc_ids_push(&ids, v->eos);
  free(fr.p);
  if (!ok || ids.oom) {
    free(ids.p);
    return nc_fail(err, NC_ERR_NOMEM, "tokenize: out of memory");
  }
  *ids_out = ids.p;
  *n_out = ids.n;
  return NC_OK;
}

nc_code nc_tokenize(const nc_vocab *v, const char *text, size_t len,
                    bool add_special, bool parse_special, int32_t **ids_out,
                    size_t *n_out, nc_error *err) {
  return tokenize(v, text, len, add_special, parse_special, NULL, ids_out,
                  n_out, err);
}

nc_code nc_tokenize_guarded(const nc_vocab *v, const char *text, size_t len,
                            bool add_special, const nc_span *plain,
                            size_t n_plain, int32_t **ids_out, size_t *n_out,
                            nc_error *err) {
  for (size_t i = 0; i < n_plain; i++)
    if (plain[i].off > len || plain[i].len > len - plain[i].off ||
        (i && plain[i].off < plain[i - 1].off + plain[i - 1].len)) {
      if (ids_out) *ids_out = NULL;
      if (n_out) *n_out = 0;
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "tokenize: span %zu is out of order or past the text", i);
    }
  guard g = {plain, n_plain};
  return tokenize(v, text, len, add_special, true, &g, ids_out, n_out, err);
}

size_t nc_vocab_match_control(const nc_vocab *v, const char *s, size_t n) {
  if (!v->trie) return 0;
  const nc_trie_node *t = v->trie;
  int32_t node = 0;
  size_t best = 0;
  for (size_t j = 0; j < n; j++) {
    int32_t ch = t[node].first_child;
    while (ch >= 0 && t[ch].byte != (uint8_t)s[j])
      ch = t[ch].next_sibling;
    if (ch < 0) break;
    node = ch;
    int32_t k = t[node].token;
    if (k >= 0 && (v->attr[v->special[k]] &
                   (NC_TOKEN_ATTR_CONTROL | NC_TOKEN_ATTR_UNKNOWN)))
      best = j + 1;
  }
  return best;
}

nc_code nc_tokenize_chat_prompt(const nc_vocab *v, const char *text, size_t len,
                                const nc_span *plain, size_t n_plain,
                                int32_t **ids_out, size_t *n_out,
                                nc_error *err) {
  nc_code rc = nc_tokenize_guarded(v, text, len, true, plain, n_plain, ids_out,
                                   n_out, err);
  if (rc != NC_OK) return rc;
  /* A template that prints bos_token itself plus the BOS the model asks
   * for would give two: keep one. */
  int32_t *ids = *ids_out;
  if (v->bos >= 0 && *n_out >= 2 && ids[0] == v->bos && ids[1] == v->bos) {
    memmove(ids, ids + 1, (*n_out - 1) * sizeof *ids);
    (*n_out)--;
  }
  return NC_OK;
}
