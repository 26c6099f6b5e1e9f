/* tokenizer_split: BPE pre-tokenizers as scanners over code points. */
#include "tokenizer_split.h"

#include <stdlib.h>

#include "base/unicode.h"

void nc_pieces_free(nc_pieces *p) {
  free(p->len);
  p->len = NULL;
  p->n = p->cap = 0;
}

static bool push(nc_pieces *p, size_t len) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 256;
    size_t *l = realloc(p->len, cap * sizeof *l);
    if (!l) return false;
    p->len = l;
    p->cap = cap;
  }
  p->len[p->n++] = len;
  return true;
}

/* A scanner's view of one piece [ini, end): positions outside read as
 * "no code point" (flags 0, cp OUT). IN marks in-range flags, so that
 * flags != 0 means "inside the piece" as llama.cpp's as_uint() does. */
#define OUT 0xFFFFFFFFu
#define IN 0x100u

typedef struct scan {
  const uint32_t *cps;
  size_t ini, end, prev; /* prev: end of the last piece emitted */
  nc_pieces *out;
  bool ok;
} scan;

static inline unsigned fl(const scan *s, size_t pos) {
  return pos >= s->ini && pos < s->end ? nc_unicode_flags(s->cps[pos]) | IN : 0;
}
static inline uint32_t cp_at(const scan *s, size_t pos) {
  return pos >= s->ini && pos < s->end ? s->cps[pos] : OUT;
}
static inline size_t add(scan *s, size_t end) {
  size_t len = end - s->prev;
  if (len > 0 && !push(s->out, len)) s->ok = false;
  s->prev = end;
  return len;
}

#define IS_L(f) ((f)&NC_UF_LETTER)
#define IS_N(f) ((f)&NC_UF_NUMBER)
#define IS_WS(f) ((f)&NC_UF_WHITESPACE)

static inline uint32_t ascii_lower(uint32_t c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's|'t|'re|'ve|'m|'ll|'d (case-insensitive for llama3/qwen2): the length
 * of the contraction at pos, or 0. */
static size_t contraction(const scan *s, size_t pos, bool ci) {
  if (cp_at(s, pos) != '\'' || pos + 1 >= s->end) return 0;
  uint32_t a = cp_at(s, pos + 1);
  if (ci) a = ascii_lower(a);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 < s->end) {
    uint32_t b = cp_at(s, pos + 2);
    if (ci) b = ascii_lower(b);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
        (a == 'l' && b == 'l'))
      return 3;
  }
  return 0;
}

/* \s+(?!\S) and \s+: the whitespace tail shared by all scanners. */
static void whitespace_tail(scan *s, size_t *pos) {
  size_t n = 0;
  while (IS_WS(fl(s, *pos + n)))
    n++;
  if (n > 1 && *pos + n < s->end) {
    *pos += n - 1;
    add(s, *pos);
  } else if (n > 0) {
    *pos += n;
    add(s, *pos);
  } else {
    add(s, ++*pos);
  }
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static void scan_gpt2(scan *s) {
  for (size_t pos = s->ini; pos < s->end && s->ok;) {
    uint32_t c = cp_at(s, pos);
    unsigned f = fl(s, pos);
    size_t k = contraction(s, pos, false);
    if (k) {
      pos += add(s, pos + k);
      continue;
    }
    unsigned f2 = c == ' ' ? fl(s, pos + 1) : f;
    if (IS_L(f2)) {
      pos += c == ' ';
      while (IS_L(f2))
        f2 = fl(s, ++pos);
      add(s, pos);
      continue;
    }
    if (IS_N(f2)) {
      pos += c == ' ';
      while (IS_N(f2))
        f2 = fl(s, ++pos);
      add(s, pos);
      continue;
    }
    if (!(f2 & (NC_UF_WHITESPACE | NC_UF_LETTER | NC_UF_NUMBER)) && f2) {
      pos += c == ' ';
      while (!(f2 & (NC_UF_WHITESPACE | NC_UF_LETTER | NC_UF_NUMBER)) && f2)
        f2 = fl(s, ++pos);
      add(s, pos);
      continue;
    }
    whitespace_tail(s, &pos);
  }
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
 * | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * (qwen2: \p{N} instead of \p{N}{1,3}) */
static void scan_llama3(scan *s, size_t max_digits) {
  for (size_t pos = s->ini; pos < s->end && s->ok;) {
    uint32_t c = cp_at(s, pos);
    unsigned f = fl(s, pos);
    size_t k = contraction(s, pos, true);
    if (k) {
      pos += add(s, pos + k);
      continue;
    }
    if (!(c == '\r' || c == '\n' || IS_N(f))) {
      if (IS_L(f) || IS_L(fl(s, pos + 1))) {
        pos++;
        while (IS_L(fl(s, pos)))
          pos++;
        add(s, pos);
        continue;
      }
    }
    if (IS_N(f)) {
      size_t ini = pos;
      while (IS_N(fl(s, pos))) {
        if (++pos - ini >= max_digits) {
          add(s, pos);
          ini = pos;
        }
      }
      add(s, pos);
      continue;
    }
    unsigned f2 = c == ' ' ? fl(s, pos + 1) : f;
    if (!(f2 & (NC_UF_WHITESPACE | NC_UF_LETTER | NC_UF_NUMBER)) && f) {
      pos += c == ' ';
      while (!(f2 & (NC_UF_WHITESPACE | NC_UF_LETTER | NC_UF_NUMBER)) && f2)
        f2 = fl(s, ++pos);
      uint32_t c2 = cp_at(s, pos);
      while (c2 == '\r' || c2 == '\n')
        c2 = cp_at(s, ++pos);
      add(s, pos);
      continue;
    }
    size_t n = 0, last_nl = 0;
    while (IS_WS(fl(s, pos + n))) {
      uint32_t c2 = cp_at(s, pos + n);
      if (c2 == '\r' || c2 == '\n') last_nl = pos + n + 1;
      n++;
    }
    if (last_nl > 0) {
      pos = last_nl;
      add(s, pos);
      continue;
    }
    whitespace_tail(s, &pos);
  }
}

typedef enum stage {
  ST_GPT2,
  ST_LLAMA3,
  ST_QWEN2,
  ST_NUMBER_EACH, /* \p{N} */
  ST_NUMBER_RUNS, /* \p{N}+ */
  ST_PUNCT_RUNS,  /* [\p{P}\$\+<=>\^~\|]+ */
  ST_DIGIT3,      /* [0-9][0-9][0-9] */
} stage;

/* The collapsed-regex classes: ASCII members by table, other code points by
 * category (whitespace first, as llama.cpp collapses it to \v). */
static bool is_number_cls(uint32_t c) {
  if (c < 128) return c >= '0' && c <= '9';
  unsigned f = nc_unicode_flags(c);
  return !IS_WS(f) && IS_N(f);
}

static bool is_punct_cls(uint32_t c) {
  if (c < 128)
    return c > 0x20 && c < 0x7F && c != '`' &&
           !((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
             (c >= 'a' && c <= 'z'));
  unsigned f = nc_unicode_flags(c);
  return !IS_WS(f) && (f & NC_UF_PUNCT);
}

/* A regex stage: every match becomes a piece, text between matches too. */
static void scan_regex(scan *s, stage st) {
  size_t pos = s->ini;
  while (pos < s->end && s->ok) {
    uint32_t c = s->cps[pos];
    size_t mlen = 0;
    switch (st) {
    case ST_NUMBER_EACH: mlen = is_number_cls(c); break;
    case ST_NUMBER_RUNS:
      while (pos + mlen < s->end && is_number_cls(s->cps[pos + mlen]))
        mlen++;
      break;
    case ST_PUNCT_RUNS:
      while (pos + mlen < s->end && is_punct_cls(s->cps[pos + mlen]))
        mlen++;
      break;
    case ST_DIGIT3:
      if (pos + 3 <= s->end) {
        bool d = true;
        for (int i = 0; i < 3; i++)
          d &= s->cps[pos + i] >= '0' && s->cps[pos + i] <= '9';
        if (d) mlen = 3;
      }
      break;
    default: break;
    }
    if (mlen) {
      add(s, pos);
      pos += mlen;
      add(s, pos);
    } else {
      pos++;
    }
  }
  add(s, s->end);
}

static bool run_stage(stage st, const uint32_t *cps, const nc_pieces *in,
                      nc_pieces *out) {
  out->n = 0;
  scan s = {cps, 0, 0, 0, out, true};
  size_t start = 0;
  for (size_t i = 0; i < in->n && s.ok; i++) {
    s.ini = s.prev = start;
    s.end = start + in->len[i];
    start = s.end;
    switch (st) {
    case ST_GPT2: scan_gpt2(&s); break;
    case ST_LLAMA3: scan_llama3(&s, 3); break;
    case ST_QWEN2: scan_llama3(&s, 1); break;
    default: scan_regex(&s, st); break;
    }
  }
  return s.ok;
}

bool nc_pretokenize(nc_pre_type pre, const uint32_t *cps, size_t n,
                    nc_pieces *out, nc_pieces *tmp) {
  static const stage k_default[] = {ST_PUNCT_RUNS, ST_GPT2, ST_NUMBER_RUNS,
                                    ST_DIGIT3};
  static const stage k_digits_gpt2[] = {ST_NUMBER_EACH, ST_GPT2};
  static const stage k_gpt2[] = {ST_GPT2};
  static const stage k_llama3[] = {ST_LLAMA3};
  static const stage k_qwen2[] = {ST_QWEN2};
  const stage *stages;
  size_t n_stages;
  switch (pre) {
  case NC_PRE_GPT2: stages = k_gpt2, n_stages = 1; break;
  case NC_PRE_DIGITS_GPT2: stages = k_digits_gpt2, n_stages = 2; break;
  case NC_PRE_LLAMA3: stages = k_llama3, n_stages = 1; break;
  case NC_PRE_QWEN2: stages = k_qwen2, n_stages = 1; break;
  default: stages = k_default, n_stages = 4; break;
  }
  /* Start from one piece: the whole text. Ping-pong between buffers so the
   * last stage writes into out. */
  nc_pieces *bufs[2] = {n_stages % 2 ? tmp : out, n_stages % 2 ? out : tmp};
  bufs[0]->n = 0;
  if (n && !push(bufs[0], n)) return false;
  if (!n) {
    out->n = 0;
    return true;
  }
  for (size_t i = 0; i < n_stages; i++) {
    if (!run_stage(stages[i], cps, bufs[i % 2], bufs[(i + 1) % 2]))
      return false;
  }
  return true;
}
