/* vocab_pieces: every token's piece (token_to_piece with special = true),
 * built once when the vocab loads. */
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "tokenizer_internal.h"

/* llama_decode_text: each code point back to the byte it stands for. */
static void decode_bytelevel(nc_bytes *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  for (size_t off = 0; off < n;) {
    uint32_t cp = nc_utf8_decode_lenient(s, n, &off);
    int byte = nc_gpt2_cp_to_byte(cp);
    if (byte >= 0) {
      char c = (char)byte;
      nc_bytes_put(b, &c, 1);
      continue;
    }
    char u[4];
    int k = nc_utf8_encode(cp, u);
    nc_bytes_put(b, "[UNK_BYTE_0x", 12);
    for (int i = 0; i < k; i++) {
      char h[2] = {hex[(unsigned char)u[i] >> 4], hex[u[i] & 15]};
      nc_bytes_put(b, h, 2);
    }
    nc_bytes_put(b, s, n); /* sic: llama.cpp appends the whole token text */
    nc_bytes_put(b, "]", 1);
  }
}

static void unescape_spaces(nc_bytes *b, const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    if (n - i >= 3 && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
      nc_bytes_put(b, " ", 1);
      i += 3;
    } else {
      nc_bytes_put(b, s + i, 1);
      i++;
    }
  }
}

/* token_to_byte: strtol(text.substr(3, 2), 16). */
static char byte_of(const char *s, size_t n) {
  char hex[3] = {0};
  for (size_t i = 3; i < 5 && i < n; i++)
    hex[i - 3] = s[i];
  return (char)strtol(hex, NULL, 16);
}

static void piece_of(const nc_vocab *v, int32_t id, nc_bytes *b) {
  uint32_t attr = v->attr[id];
  size_t n;
  const char *s = nc_vocab_token_text(v, id, &n);
  if (attr & (NC_TOKEN_ATTR_UNKNOWN | NC_TOKEN_ATTR_CONTROL |
              NC_TOKEN_ATTR_USER_DEFINED)) {
    nc_bytes_put(b, s, n);
  } else if (attr & NC_TOKEN_ATTR_NORMAL) {
    if (v->type == NC_VOCAB_SPM || v->type == NC_VOCAB_WPM)
      unescape_spaces(b, s, n);
    else
      decode_bytelevel(b, s, n);
  } else if (attr & NC_TOKEN_ATTR_BYTE) {
    char c = byte_of(s, n);
    nc_bytes_put(b, &c, 1);
  }
}

nc_code nc_vocab_build_pieces(nc_vocab *v, nc_error *err) {
  nc_bytes b = {0};
  v->piece_off = malloc((size_t)v->n_tokens * sizeof *v->piece_off);
  v->piece_len = malloc((size_t)v->n_tokens * sizeof *v->piece_len);
  if (!v->piece_off || !v->piece_len)
    return nc_fail(err, NC_ERR_NOMEM, "vocab: out of memory (pieces)");
  for (int32_t id = 0; id < v->n_tokens && !b.oom; id++) {
    size_t start = b.n;
    piece_of(v, id, &b);
    if (b.n > UINT32_MAX) {
      free(b.p);
      return nc_fail(err, NC_ERR_LIMIT, "vocab: token texts over 4 GiB");
    }
    v->piece_off[id] = (uint32_t)start;
    v->piece_len[id] = (uint32_t)(b.n - start);
  }
  if (b.oom) {
    free(b.p);
    return nc_fail(err, NC_ERR_NOMEM, "vocab: out of memory (pieces)");
  }
  v->piece_bytes = b.p;
  return NC_OK;
}
