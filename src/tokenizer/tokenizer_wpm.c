/* tokenizer_wpm: WordPiece tokenization of one raw fragment (the BERT
 * family), as Hugging Face tokenizers' BertNormalizer, BertPreTokenizer and
 * WordPiece model do it:
 *
 * - normalize each code point (tables generated from the package,
 *   tokenizer_wpm.h): drop controls, private use, U+0000 and U+FFFD
 *   (invalid UTF-8 decodes to U+FFFD), whitespace to a space, a space
 *   either side of a CJK ideograph, then (strip_accents) its canonical
 *   decomposition without the nonspacing marks, then (lowercase) its
 *   lowercase form;
 * - split the normalized text at whitespace and around each punctuation
 *   character;
 * - each word longer than NC_WPM_MAX_WORD_CHARS code points is [UNK];
 *   else the longest vocabulary piece from its start, then the longest
 *   continuation piece ("##x") from where that ended, and so on; a word
 *   with a position no piece matches is [UNK] as a whole.
 *
 * The vocabulary is llama.cpp's phantom-space form (scripts/convert_hf.py):
 * a word-initial piece x is stored as "\u2581x", a continuation "##x" as
 * "x". One deliberate difference from Hugging Face: the canonical
 * reordering of NFD is not done (it only moves combining marks, and the
 * nonspacing ones are dropped anyway).
 *
 * llama.cpp's own WordPiece (llm_tokenizer_wpm) differs from Hugging
 * Face's on some text: it maps a precomposed character to the first code
 * point of its decomposition (so a Hangul syllable keeps only its leading
 * consonant), drops spacing marks (Mc) too and has no word length limit.
 * We follow Hugging Face, the tokenizer the models were trained with. */
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "tokenizer_impl.h"
#include "tokenizer_wpm.h"

#define NC_WPM_MAX_WORD_CHARS 100 /* max_input_chars_per_word */
#define PHANTOM "\xe2\x96\x81"    /* U+2581, the word-initial mark */
#define PHANTOM_LEN 3

/* The word being built: PHANTOM then its UTF-8 bytes, with each code
 * point's byte offset (off[i] for i < n_chars, off[n_chars] the end). */
typedef struct wpm_word {
  char bytes[PHANTOM_LEN + 4 * NC_WPM_MAX_WORD_CHARS];
  uint32_t off[NC_WPM_MAX_WORD_CHARS + 1];
  size_t n_chars; /* may exceed NC_WPM_MAX_WORD_CHARS: then only counted */
} wpm_word;

typedef struct wpm_state {
  const nc_vocab *v;
  nc_ids *out;
  wpm_word w;
} wpm_state;

static int cmp_cp(const void *key, const void *entry) {
  uint32_t a = *(const uint32_t *)key, b = *(const uint32_t *)entry;
  return (a > b) - (a < b);
}

/* The word's pieces (or [UNK]) onto the output; the word starts again. */
static void flush(wpm_state *s) {
  wpm_word *w = &s->w;
  size_t n = w->n_chars;
  w->n_chars = 0;
  if (n == 0) return;
  const nc_vocab *v = s->v;
  if (n > NC_WPM_MAX_WORD_CHARS) {
    nc_ids_push(s->out, v->unk);
    return;
  }
  size_t mark = s->out->n;
  size_t start = 0;
  while (start < n) {
    size_t from = start == 0 ? 0 : w->off[start];
    size_t end = n;
    while (end > start && w->off[end] - from > v->max_token_len)
      end--;
    int32_t id = -1;
    for (; end > start; end--) {
      id = nc_vocab_token_id(v, w->bytes + from, w->off[end] - from);
      if (id >= 0) break;
    }
    if (id < 0) {
      s->out->n = mark; /* no piece here: the whole word is unknown */
      nc_ids_push(s->out, v->unk);
      return;
    }
    nc_ids_push(s->out, id);
    start = end;
  }
}

/* One normalized code point into the pre-tokenizer. */
static void pre_tokenize(wpm_state *s, uint32_t cp) {
  uint8_t f = nc_wpm_flags(cp);
  if (f & NC_WPF_SPLIT) {
    flush(s);
    return;
  }
  if (f & NC_WPF_PUNCT) flush(s);
  wpm_word *w = &s->w;
  if (w->n_chars < NC_WPM_MAX_WORD_CHARS) {
    if (w->n_chars == 0) w->off[0] = PHANTOM_LEN;
    size_t at = w->off[w->n_chars];
    at += (size_t)nc_utf8_encode(cp, w->bytes + at);
    w->off[w->n_chars + 1] = (uint32_t)at;
  }
  w->n_chars++;
  if (f & NC_WPF_PUNCT) flush(s);
}

static void lowercase_into(wpm_state *s, uint32_t cp) {
  if (s->v->wpm_lowercase && (nc_wpm_flags(cp) & NC_WPF_LOWER)) {
    const uint32_t *e = bsearch(&cp, nc_wpm_lower_map, nc_wpm_lower_map_len,
                                sizeof nc_wpm_lower_map[0], cmp_cp);
    if (e) {
      for (int i = 1; i < 3 && e[i]; i++)
        pre_tokenize(s, e[i]);
      return;
    }
  }
  pre_tokenize(s, cp);
}

/* Hangul syllables: the Unicode decomposition algorithm. */
enum {
  S_BASE = 0xAC00,
  L_BASE = 0x1100,
  V_BASE = 0x1161,
  T_BASE = 0x11A7,
  V_COUNT = 21,
  T_COUNT = 28,
  N_HANGUL = 19 * V_COUNT * T_COUNT
};

static void normalize(wpm_state *s, uint32_t cp) {
  uint8_t f = nc_wpm_flags(cp);
  if (f & NC_WPF_REMOVE) return;
  if (f & NC_WPF_SPACE) {
    flush(s);
    return;
  }
  if (f & NC_WPF_CJK) flush(s);
  if (!s->v->wpm_strip_accents) {
    lowercase_into(s, cp);
  } else if (cp >= S_BASE && cp < S_BASE + N_HANGUL) {
    uint32_t i = cp - S_BASE;
    lowercase_into(s, L_BASE + i / (V_COUNT * T_COUNT));
    lowercase_into(s, V_BASE + (i % (V_COUNT * T_COUNT)) / T_COUNT);
    if (i % T_COUNT) lowercase_into(s, T_BASE + i % T_COUNT);
  } else if (f & NC_WPF_DROP) {
    /* a nonspacing mark: stripped */
  } else if (f & NC_WPF_STRIP) {
    const uint32_t *e = bsearch(&cp, nc_wpm_strip_map, nc_wpm_strip_map_len,
                                sizeof nc_wpm_strip_map[0], cmp_cp);
    if (e) {
      for (int i = 1; i < 4 && e[i]; i++)
        lowercase_into(s, e[i]);
    } else {
      lowercase_into(s, cp);
    }
  } else {
    lowercase_into(s, cp);
  }
  if (f & NC_WPF_CJK) flush(s);
}

bool nc_wpm_fragment(const nc_vocab *v, const char *text, size_t len,
                     nc_ids *out) {
  wpm_state *s = malloc(sizeof *s);
  if (!s) return false;
  s->v = v;
  s->out = out;
  memcpy(s->w.bytes, PHANTOM, PHANTOM_LEN);
  s->w.n_chars = 0;
  for (size_t off = 0; off < len && !out->oom;)
    normalize(s, nc_utf8_decode_lenient(text, len, &off));
  flush(s);
  free(s);
  return true;
}
