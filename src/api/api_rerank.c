/* Public API: a reranker's input for a (query, document) pair
 * (nucleus_rerank_tokens), as llama-server's format_prompt_rerank builds
 * it. */
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "model/model.h"
#include "nucleus.h"
#include "tokenizer/vocab.h"

/* The longest query or document taken (bytes). */
#define MAX_TEXT (1u << 24)

/* template with every {query} and {document} replaced (malloc'd). */
static char *fill_template(const char *t, size_t tlen, const char *q,
                           size_t qlen, const char *d, size_t dlen,
                           size_t *len_out) {
  static const char QK[] = "{query}", DK[] = "{document}";
  const size_t qk = sizeof QK - 1, dk = sizeof DK - 1;
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++) {
    char *out = pass ? malloc(n + 1) : NULL;
    if (pass && !out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < tlen;) {
      const char *s = NULL;
      size_t slen = 0, skip = 1;
      if (tlen - i >= qk && memcmp(t + i, QK, qk) == 0) {
        s = q, slen = qlen, skip = qk;
      } else if (tlen - i >= dk && memcmp(t + i, DK, dk) == 0) {
        s = d, slen = dlen, skip = dk;
      } else {
        s = t + i, slen = 1;
      }
      if (out) memcpy(out + o, s, slen);
      o += slen;
      i += skip;
    }
    if (out) {
      out[o] = '\0';
      *len_out = o;
      return out;
    }
    n = o;
  }
  return NULL;
}

static nc_code push(int32_t **ids, size_t *n, size_t *cap, const int32_t *src,
                    size_t k, nc_error *err) {
  if (*n + k > *cap) {
    size_t c = (*n + k) * 2;
    int32_t *p = realloc(*ids, c * sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "rerank: out of memory");
    *ids = p;
    *cap = c;
  }
  memcpy(*ids + *n, src, k * sizeof *src);
  *n += k;
  return NC_OK;
}

nucleus_status nucleus_rerank_tokens(const nucleus_model *model,
                                     const char *query, size_t qlen,
                                     const char *doc, size_t dlen,
                                     int32_t **ids_out, size_t *n_out,
                                     nucleus_error *err) {
  if (!ids_out || !n_out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "rerank: the output pointers are NULL");
  *ids_out = NULL;
  *n_out = 0;
  if (!model || (!query && qlen) || (!doc && dlen))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "rerank: model, query and document are required");
  if (qlen > MAX_TEXT || dlen > MAX_TEXT)
    return nc_fail(err, NC_ERR_LIMIT,
                   "rerank: query of %zu bytes, document of %zu: at most %u "
                   "each",
                   qlen, dlen, MAX_TEXT);
  if (!query) query = "";
  if (!doc) doc = "";
  const nc_vocab *v = nc_model_vocab(model);
  gguf_str t;
  if (gguf_get_str(nc_model_gguf(model), "tokenizer.chat_template.rerank",
                   &t)) {
    size_t len = 0;
    char *text = fill_template(t.ptr, t.len, query, qlen, doc, dlen, &len);
    if (!text) return nc_fail(err, NC_ERR_NOMEM, "rerank: out of memory");
    nc_code rc = nc_tokenize(v, text, len, false, true, ids_out, n_out, err);
    free(text);
    return rc;
  }
  /* BOS query EOS SEP document EOS, each as the vocabulary adds it (EOS:
   * SEP where the vocabulary has no EOS) */
  int32_t *q = NULL, *d = NULL, *ids = NULL;
  size_t nq = 0, nd = 0, n = 0, cap = 0;
  nc_code rc = nc_tokenize(v, query, qlen, false, false, &q, &nq, err);
  if (!rc) rc = nc_tokenize(v, doc, dlen, false, false, &d, &nd, err);
  const int32_t bos = nc_vocab_bos(v), sep = nc_vocab_sep(v);
  const int32_t eos = nc_vocab_eos(v) >= 0 ? nc_vocab_eos(v) : sep;
  const bool add_eos = nc_vocab_add_eos(v) && eos >= 0;
  if (!rc && nc_vocab_add_bos(v) && bos >= 0)
    rc = push(&ids, &n, &cap, &bos, 1, err);
  if (!rc) rc = push(&ids, &n, &cap, q, nq, err);
  if (!rc && add_eos) rc = push(&ids, &n, &cap, &eos, 1, err);
  if (!rc && nc_vocab_add_sep(v)) rc = push(&ids, &n, &cap, &sep, 1, err);
  if (!rc) rc = push(&ids, &n, &cap, d, nd, err);
  if (!rc && add_eos) rc = push(&ids, &n, &cap, &eos, 1, err);
  free(q);
  free(d);
  if (rc) {
    free(ids);
    return rc;
  }
  *ids_out = ids;
  *n_out = n;
  return NC_OK;
}
