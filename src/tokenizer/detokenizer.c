/* detokenizer: pieces, whole-sequence detokenization and the incremental
 * detokenizer. */
#include "detokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "base/unicode_stream.h"
#include "tokenizer_internal.h"

/* ------------------------------------------------------------- pieces */

/* The piece with llama.cpp's `special` switch applied. */
static const char *piece(const nc_vocab *v, int32_t id, bool special,
                         size_t *len) {
  if (!special &&
      (v->attr[id] & (NC_TOKEN_ATTR_UNKNOWN | NC_TOKEN_ATTR_CONTROL))) {
    *len = 0;
    return "";
  }
  *len = v->piece_len[id];
  return v->piece_bytes ? v->piece_bytes + v->piece_off[id] : "";
}

size_t nc_token_to_piece(const nc_vocab *v, int32_t id, bool special, char *out,
                         size_t cap) {
  if (!v || id < 0 || id >= v->n_tokens) return 0;
  size_t n;
  const char *s = piece(v, id, special, &n);
  if (out && cap) memcpy(out, s, n < cap ? n : cap);
  return n;
}

/* ------------------------------------------------------ whole sequence */

/* llama.cpp's clean_spaces passes, in place, with the same quirks. */
static size_t clean_spaces(char *t, size_t total) {
  size_t total1 = total;
  total = total ? 1 : 0;
  for (size_t i = 1; i < total1; i++) {
    char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
      total--;
    t[total++] = x;
  }
  size_t total2 = total;
  total = total ? 1 : 0;
  for (size_t i = 1; i < total2; i++) {
    char x = t[i];
    if (x == '\'' && i + 1 < total2 && t[i - 1] == ' ' && t[i + 1] == ' ') {
      total--;
      t[++i] = '\0';
    }
    t[total++] = x;
  }
  size_t total3 = total;
  total = total ? 1 : 0;
  for (size_t i = 1; i < total3; i++) {
    char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < total3) {
      char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        total--;
      } else if (i + 2 < total3) {
        char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) total--;
      }
    }
    t[total++] = x;
  }
  return total;
}

nc_code nc_detokenize_ex(const nc_vocab *v, const int32_t *ids, size_t n,
                         bool skip_special, bool clean, char **out,
                         size_t *len_out, nc_error *err) {
  if (out) *out = NULL;
  if (len_out) *len_out = 0;
  if (!v || !out || (!ids && n))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "detokenize: NULL vocab, ids or output");
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= v->n_tokens)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "detokenize: token id %d at position %zu is out of "
                     "range [0, %d)",
                     ids[i], i, v->n_tokens);
  bool remove_space = v->add_space_prefix;
  if (skip_special && v->add_bos && n > 0 && ids[0] == v->bos) {
    remove_space = false;
    ids++;
    n--;
  }
  if (skip_special && v->add_eos && n > 0 && ids[n - 1] == v->eos) n--;
  nc_bytes b = {0};
  nc_bytes_put(&b, "", 0);
  for (size_t i = 0; i < n; i++) {
    size_t len;
    const char *s = piece(v, ids[i], !skip_special, &len);
    if (remove_space && len && s[0] == ' ') {
      s++;
      len--;
    }
    remove_space = false;
    nc_bytes_put(&b, s, len);
  }
  if (clean && v->clean_spaces && !b.oom) b.n = clean_spaces(b.p, b.n);
  nc_bytes_put(&b, "", 1); /* NUL */
  if (b.oom) {
    free(b.p);
    return nc_fail(err, NC_ERR_NOMEM, "detokenize: out of memory");
  }
  *out = b.p;
  if (len_out) *len_out = b.n - 1;
  return NC_OK;
}

nc_code nc_detokenize(const nc_vocab *v, const int32_t *ids, size_t n,
                      bool skip_special, char **out, size_t *len_out,
                      nc_error *err) {
  return nc_detokenize_ex(v, ids, n, skip_special, true, out, len_out, err);
}

char *nc_utf8_sanitize(const char *s, size_t n, size_t *len_out) {
  nc_utf8_stream st = {0};
  char *out = malloc(3 * n + 8);
  if (!out) return NULL;
  size_t w = nc_utf8_stream_feed(&st, s, n, out);
  w += nc_utf8_stream_flush(&st, out + w);
  out[w] = '\0';
  if (len_out) *len_out = w;
  return out;
}

/* ---------------------------------------------------------- incremental */

struct nc_detok {
  const nc_vocab *v;
  bool skip_special;
  bool first;        /* no token pushed yet */
  bool remove_space; /* the next piece loses one leading space */
  nc_utf8_stream st;
  char *out;
  size_t cap;
};

nc_detok *nc_detok_create(const nc_vocab *v, bool skip_special) {
  if (!v) return NULL;
  nc_detok *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->v = v;
  d->skip_special = skip_special;
  d->first = true;
  d->remove_space = v->add_space_prefix;
  return d;
}

void nc_detok_free(nc_detok *d) {
  if (!d) return;
  free(d->out);
  free(d);
}

void nc_detok_push(nc_detok *d, int32_t id, const char **text, size_t *len) {
  *text = "";
  *len = 0;
  if (!d || id < 0 || id >= d->v->n_tokens) return;
  const nc_vocab *v = d->v;
  if (d->first && d->skip_special && v->add_bos && id == v->bos) {
    d->first = false;
    d->remove_space = false; /* as nc_detokenize: the space is kept */
    return;
  }
  d->first = false;
  size_t n;
  const char *s = piece(v, id, !d->skip_special, &n);
  if (d->remove_space && n && s[0] == ' ') {
    s++;
    n--;
  }
  d->remove_space = false;
  size_t need = 3 * n + 8;
  if (need > d->cap) {
    char *p = realloc(d->out, need);
    if (!p) return; /* out of memory: release nothing for this token */
    d->out = p;
    d->cap = need;
  }
  *len = nc_utf8_stream_feed(&d->st, s, n, d->out);
  *text = d->out;
}

void nc_detok_flush(nc_detok *d, const char **text, size_t *len) {
  *text = "";
  *len = 0;
  if (!d) return;
  if (d->cap < 8) {
    char *p = realloc(d->out, 8);
    if (!p) return;
    d->out = p;
    d->cap = 8;
  }
  *len = nc_utf8_stream_flush(&d->st, d->out);
  *text = d->out;
}
