/* vocab: loading the token table from GGUF metadata (llama.cpp rules). */
#include "vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "tokenizer_internal.h"

#define KEY(k) "tokenizer.ggml." k

typedef struct pre_entry {
  const char *name;
  nc_pre_type pre;
  bool clean_spaces, ignore_merges, add_bos;
} pre_entry;

/* The pre-tokenizer names llama.cpp knows, for the families we implement. */
static const pre_entry k_pre[] = {
    {"default", NC_PRE_DEFAULT, true, false, false},
    {"llama3", NC_PRE_LLAMA3, true, true, true},
    {"llama-v3", NC_PRE_LLAMA3, true, true, true},
    {"llama-bpe", NC_PRE_LLAMA3, true, true, true},
    {"falcon3", NC_PRE_LLAMA3, true, true, true},
    {"falcon-h1", NC_PRE_LLAMA3, true, true, true},
    {"pixtral", NC_PRE_LLAMA3, true, true, true},
    {"midm-2.0", NC_PRE_LLAMA3, true, true, true},
    {"lfm2", NC_PRE_LLAMA3, true, true, true},
    {"starcoder", NC_PRE_DIGITS_GPT2, true, false, false},
    {"refact", NC_PRE_DIGITS_GPT2, true, false, false},
    {"command-r", NC_PRE_DIGITS_GPT2, false, false, false},
    {"smollm", NC_PRE_DIGITS_GPT2, false, false, false},
    {"codeshell", NC_PRE_DIGITS_GPT2, true, false, false},
    {"exaone", NC_PRE_DIGITS_GPT2, true, false, false},
    {"minerva-7b", NC_PRE_DIGITS_GPT2, true, false, false},
    {"gpt-2", NC_PRE_GPT2, true, false, false},
    {"phi-2", NC_PRE_GPT2, true, false, false},
    {"jina-es", NC_PRE_GPT2, true, false, false},
    {"jina-de", NC_PRE_GPT2, true, false, false},
    {"gigachat", NC_PRE_GPT2, true, false, false},
    {"jina-v2-es", NC_PRE_GPT2, true, false, false},
    {"jina-v2-de", NC_PRE_GPT2, true, false, false},
    {"a.x-4.0", NC_PRE_GPT2, true, false, false},
    {"mellum", NC_PRE_GPT2, true, false, false},
    {"modern-bert", NC_PRE_GPT2, true, false, false},
    {"exaone4", NC_PRE_GPT2, true, false, false},
    {"mpt", NC_PRE_GPT2, true, false, false},
    {"olmo", NC_PRE_GPT2, true, false, false},
    {"jais", NC_PRE_GPT2, true, false, false},
    {"trillion", NC_PRE_GPT2, false, false, false},
    {"granite-docling", NC_PRE_GPT2, false, false, false},
    {"jina-v1-en", NC_PRE_GPT2, true, false, false},
    {"jina-v2-code", NC_PRE_GPT2, true, false, false},
    {"roberta-bpe", NC_PRE_GPT2, true, false, false},
    {"qwen2", NC_PRE_QWEN2, false, false, false},
    {"deepseek-r1-qwen", NC_PRE_QWEN2, false, false, false},
    {"kormo", NC_PRE_QWEN2, false, false, false},
    {"f2llmv2", NC_PRE_QWEN2, false, false, false},
    {"megrez", NC_PRE_QWEN2, true, false, false},
    {"stablelm2", NC_PRE_QWEN2, true, false, false},
    {"hunyuan", NC_PRE_QWEN2, false, false, false},
    {"solar-open", NC_PRE_QWEN2, false, false, false},
};

void nc_vocab_free(nc_vocab *v) {
  if (!v) return;
  nc_strtab_free(&v->strs);
  free(v->scores);
  free(v->attr);
  free(v->eog);
  free(v->merges);
  free(v->special);
  free(v->trie);
  free(v->piece_bytes);
  free(v->piece_off);
  free(v->piece_len);
  free(v);
}

static nc_code oom(nc_error *err, const char *what) {
  return nc_fail(err, NC_ERR_NOMEM, "vocab: out of memory (%s)", what);
}

/* Checks that key, when present, is an array of n elements of an allowed
 * type. Returns false (and fails err) otherwise; *present says if it is. */
static bool check_array(const gguf_file *f, const char *key, uint64_t n,
                        const gguf_value_type *types, int n_types,
                        bool *present, nc_error *err) {
  gguf_value_type t;
  uint64_t count;
  *present = false;
  if (gguf_find_key(f, key) < 0) return true;
  if (!gguf_get_arr(f, key, &t, &count)) {
    nc_fail(err, NC_ERR_FORMAT, "vocab: %s is not an array", key);
    return false;
  }
  bool ok = false;
  for (int i = 0; i < n_types; i++)
    ok |= t == types[i];
  if (!ok) {
    nc_fail(err, NC_ERR_FORMAT, "vocab: %s has elements of type %s", key,
            gguf_value_type_name(t));
    return false;
  }
  if (count != n) {
    nc_fail(err, NC_ERR_FORMAT,
            "vocab: %s has %llu entries, the vocab has %llu tokens", key,
            (unsigned long long)count, (unsigned long long)n);
    return false;
  }
  *present = true;
  return true;
}

static nc_code load_tokens(nc_vocab *v, const gguf_file *f, nc_error *err) {
  gguf_value_type t;
  uint64_t n;
  if (!gguf_get_arr(f, KEY("tokens"), &t, &n) || t != GGUF_TYPE_STRING)
    return nc_fail(err, NC_ERR_FORMAT,
                   "vocab: " KEY("tokens") " is missing or not a string "
                                           "array");
  if (n == 0 || n > (1u << 30))
    return nc_fail(err, NC_ERR_FORMAT, "vocab: %llu tokens (allowed 1..%u)",
                   (unsigned long long)n, 1u << 30);
  v->n_tokens = (int32_t)n;
  static const gguf_value_type score_types[] = {GGUF_TYPE_FLOAT32,
                                                GGUF_TYPE_INT32};
  static const gguf_value_type tt_types[] = {GGUF_TYPE_INT32};
  bool has_scores, has_types;
  if (!check_array(f, KEY("scores"), n, score_types, 2, &has_scores, err) ||
      !check_array(f, KEY("token_type"), n, tt_types, 1, &has_types, err))
    return err ? err->code : NC_ERR_FORMAT;

  v->scores = calloc(n, sizeof *v->scores);
  v->attr = calloc(n, sizeof *v->attr);
  v->eog = calloc(n, 1);
  if (!v->scores || !v->attr || !v->eog) return oom(err, "token arrays");
  for (uint64_t i = 0; i < n; i++) {
    gguf_str s;
    if (!gguf_get_arr_str(f, KEY("tokens"), i, &s))
      return nc_fail(err, NC_ERR_FORMAT, "vocab: cannot read token %llu",
                     (unsigned long long)i);
    char empty[32];
    const char *p = s.ptr;
    size_t len = (size_t)s.len;
    if (len == 0) { /* llama.cpp renames empty tokens */
      len = (size_t)snprintf(empty, sizeof empty, "[EMPTY_%llu]",
                             (unsigned long long)i);
      p = empty;
    }
    if (nc_strtab_find(&v->strs, p, len) >= 0)
      return nc_fail(err, NC_ERR_FORMAT,
                     "vocab: token %llu duplicates the text of token %d",
                     (unsigned long long)i, nc_strtab_find(&v->strs, p, len));
    if (nc_strtab_add(&v->strs, p, len) != (int32_t)i)
      return oom(err, "token text");
    if (len > v->max_token_len) v->max_token_len = (uint32_t)len;
    double score = 0;
    if (has_scores && !gguf_get_arr_f64(f, KEY("scores"), i, &score))
      return nc_fail(err, NC_ERR_FORMAT, "vocab: cannot read score %llu",
                     (unsigned long long)i);
    v->scores[i] = (float)score;
    uint32_t attr = NC_TOKEN_ATTR_NORMAL;
    if (has_types) {
      int64_t tt;
      if (!gguf_get_arr_i64(f, KEY("token_type"), i, &tt))
        return nc_fail(err, NC_ERR_FORMAT, "vocab: cannot read token type %llu",
                       (unsigned long long)i);
      switch (tt) {
      case 1: attr = NC_TOKEN_ATTR_NORMAL; break;
      case 2: attr = NC_TOKEN_ATTR_UNKNOWN; break;
      case 3: attr = NC_TOKEN_ATTR_CONTROL; break;
      case 4: attr = NC_TOKEN_ATTR_USER_DEFINED; break;
      case 5: attr = NC_TOKEN_ATTR_UNUSED; break;
      case 6: attr = NC_TOKEN_ATTR_BYTE; break;
      default: attr = NC_TOKEN_ATTR_UNDEFINED; break;
      }
    }
    v->attr[i] = attr;
  }
  return NC_OK;
}

static nc_code load_merges(nc_vocab *v, const gguf_file *f, nc_error *err) {
  gguf_value_type t;
  uint64_t n;
  if (!gguf_get_arr(f, KEY("merges"), &t, &n) || t != GGUF_TYPE_STRING)
    return nc_fail(
        err, NC_ERR_FORMAT,
        "vocab: a gpt2 tokenizer needs " KEY("merges") " (a string array)");
  if (n > (1u << 30))
    return nc_fail(err, NC_ERR_FORMAT, "vocab: %llu merges (at most %u)",
                   (unsigned long long)n, 1u << 30);
  size_t slots = 16;
  while (slots < n * 2)
    slots *= 2;
  v->merges = malloc(slots * sizeof *v->merges);
  if (!v->merges) return oom(err, "merges");
  for (size_t i = 0; i < slots; i++)
    v->merges[i].key = UINT64_MAX;
  v->n_merge_slots = slots;
  v->n_merges = (int32_t)n;
  char *buf = NULL;
  size_t cap = 0;
  nc_code rc = NC_OK;
  for (uint64_t i = 0; i < n; i++) {
    gguf_str s;
    if (!gguf_get_arr_str(f, KEY("merges"), i, &s)) {
      rc = nc_fail(err, NC_ERR_FORMAT, "vocab: cannot read merge %llu",
                   (unsigned long long)i);
      break;
    }
    /* "left right", split at the first space at index >= 1; an entry
     * without one can never match a symbol, so it is skipped. */
    const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
    if (!sp) continue;
    size_t nl = (size_t)(sp - s.ptr), nr = (size_t)s.len - nl - 1;
    if (nl + nr > cap) {
      cap = (nl + nr) * 2;
      char *nb = realloc(buf, cap);
      if (!nb) {
        rc = oom(err, "merges");
        break;
      }
      buf = nb;
    }
    int32_t a = nc_strtab_find(&v->strs, s.ptr, nl);
    if (a < 0) a = nc_strtab_add(&v->strs, s.ptr, nl);
    int32_t b = nc_strtab_find(&v->strs, sp + 1, nr);
    if (b < 0) b = nc_strtab_add(&v->strs, sp + 1, nr);
    memcpy(buf, s.ptr, nl);
    memcpy(buf + nl, sp + 1, nr);
    int32_t c = nc_strtab_find(&v->strs, buf, nl + nr);
    if (c < 0) c = nc_strtab_add(&v->strs, buf, nl + nr);
    if (a < 0 || b < 0 || c < 0) {
      rc = oom(err, "merge strings");
      break;
    }
    nc_merge_insert(v, a, b, (int32_t)i, c);
  }
  free(buf);
  return rc;
}

static nc_code load_type(nc_vocab *v, const gguf_file *f,
                         const nc_vocab_options *opt, nc_error *err) {
  gguf_str model;
  if (!gguf_get_str(f, KEY("model"), &model))
    return nc_fail(err, NC_ERR_FORMAT,
                   "vocab: " KEY("model") " is missing (or not a string)");
  bool is_spm = model.len == 5 && memcmp(model.ptr, "llama", 5) == 0;
  bool is_bpe = model.len == 4 && memcmp(model.ptr, "gpt2", 4) == 0;
  bool is_wpm = model.len == 4 && memcmp(model.ptr, "bert", 4) == 0;
  if (!is_spm && !is_bpe && !is_wpm)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "vocab: tokenizer model '%.*s' is not supported (gpt2, "
                   "llama and bert are)",
                   (int)(model.len > 64 ? 64 : model.len), model.ptr);
  v->unk = v->sep = v->pad = v->mask = -1;
  v->eot = v->eom = -1;
  v->fim_pre = v->fim_suf = v->fim_mid = -1;
  v->fim_pad = v->fim_rep = v->fim_sep = -1;
  if (is_wpm) { /* llama.cpp's defaults for "bert" */
    v->type = NC_VOCAB_WPM;
    v->pre = NC_PRE_DEFAULT;
    v->bos = 101;
    v->eos = -1;
    v->unk = 100;
    v->sep = 102;
    v->pad = 0;
    v->mask = 103;
    v->add_space_prefix = false;
    v->clean_spaces = true;
    v->add_bos = true;
    v->add_eos = false;
    bool lower = true, strip;
    gguf_get_bool(f, KEY("normalizer.lowercase"), &lower);
    strip = lower; /* Hugging Face: strip_accents unset follows lowercase */
    gguf_get_bool(f, KEY("normalizer.strip_accents"), &strip);
    if (opt && opt->wpm_lowercase) lower = opt->wpm_lowercase == NC_WPM_ON;
    if (opt && opt->wpm_strip_accents)
      strip = opt->wpm_strip_accents == NC_WPM_ON;
    v->wpm_lowercase = lower;
    v->wpm_strip_accents = strip;
  } else if (is_spm) {
    v->type = NC_VOCAB_SPM;
    v->pre = NC_PRE_DEFAULT;
    v->bos = 1;
    v->eos = 2;
    v->unk = 0;
    v->add_space_prefix = true;
    v->clean_spaces = false;
    v->add_bos = true;
    v->add_eos = false;
  } else {
    v->type = NC_VOCAB_BPE;
    v->bos = v->eos = 11; /* llama.cpp's legacy defaults */
    v->add_space_prefix = false;
    v->clean_spaces = true;
    v->add_bos = false;
    gguf_str pre = {"", 0};
    if (opt && opt->pre_override) {
      pre.ptr = opt->pre_override;
      pre.len = strlen(opt->pre_override);
    } else {
      gguf_get_str(f, KEY("pre"), &pre);
    }
    const pre_entry *e = NULL;
    if (pre.len == 0) e = &k_pre[0];
    for (size_t i = 0; !e && i < sizeof k_pre / sizeof k_pre[0]; i++)
      if (strlen(k_pre[i].name) == pre.len &&
          memcmp(k_pre[i].name, pre.ptr, pre.len) == 0)
        e = &k_pre[i];
    if (!e)
      return nc_fail(err, NC_ERR_UNSUPPORTED,
                     "vocab: pre-tokenizer '%.*s' is not supported",
                     (int)(pre.len > 64 ? 64 : pre.len), pre.ptr);
    v->pre = e->pre;
    v->clean_spaces = e->clean_spaces;
    v->ignore_merges = e->ignore_merges;
    if (e->add_bos) v->add_bos = true;
  }
  bool b;
  if (gguf_get_bool(f, KEY("add_space_prefix"), &b)) v->add_space_prefix = b;
  return NC_OK;
}

static void read_special_ids(nc_vocab *v, const gguf_file *f) {
  struct {
    const char *key;
    int32_t *id;
  } ids[] = {
      {KEY("bos_token_id"), &v->bos},
      {KEY("eos_token_id"), &v->eos},
      {KEY("eot_token_id"), &v->eot},
      {KEY("eom_token_id"), &v->eom},
      {KEY("unknown_token_id"), &v->unk},
      {KEY("seperator_token_id"), &v->sep}, /* sic: the GGUF spelling */
      {KEY("padding_token_id"), &v->pad},
      {KEY("mask_token_id"), &v->mask},
      {KEY("fim_pre_token_id"), &v->fim_pre},
      {KEY("fim_suf_token_id"), &v->fim_suf},
      {KEY("fim_mid_token_id"), &v->fim_mid},
      {KEY("fim_pad_token_id"), &v->fim_pad},
      {KEY("fim_rep_token_id"), &v->fim_rep},
      {KEY("fim_sep_token_id"), &v->fim_sep},
      {KEY("prefix_token_id"), &v->fim_pre},
      {KEY("suffix_token_id"), &v->fim_suf},
      {KEY("middle_token_id"), &v->fim_mid},
  };
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    int32_t *id = ids[i].id;
    if (*id >= v->n_tokens) *id = -1; /* default out of range: disabled */
    uint64_t u;
    if (!gguf_get_u64(f, ids[i].key, &u)) continue;
    if (u < (uint64_t)v->n_tokens) *id = (int32_t)u; /* else: keep default */
  }
  bool b;
  if (gguf_get_bool(f, KEY("add_bos_token"), &b)) v->add_bos = b;
  if (gguf_get_bool(f, KEY("add_eos_token"), &b)) v->add_eos = b;
  /* llama.cpp's default: only a WordPiece (bert) vocabulary adds it */
  v->add_sep = v->type != NC_VOCAB_SPM && v->type != NC_VOCAB_BPE;
  if (gguf_get_bool(f, KEY("add_sep_token"), &b)) v->add_sep = b;
}

static void build_byte_maps(nc_vocab *v) {
  static const char hex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; b++) {
    char c = (char)b;
    v->byte_str[b] = nc_strtab_find(&v->strs, &c, 1);
    uint32_t cp = nc_gpt2_byte_to_cp((uint8_t)b);
    v->gpt2_len[b] = (uint8_t)nc_utf8_encode(cp, v->gpt2_utf8[b]);
    v->gpt2_sid[b] = nc_strtab_find(&v->strs, v->gpt2_utf8[b], v->gpt2_len[b]);
    char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    int32_t id = nc_vocab_token_id(v, name, 6);
    if (id < 0) id = nc_vocab_token_id(v, &c, 1);
    v->byte_token[b] = id;
  }
}

nc_code nc_vocab_load_ex(const gguf_file *f, const nc_vocab_options *opt,
                         nc_vocab **out, nc_error *err) {
  *out = NULL;
  if (!f) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "vocab: no file");
  nc_vocab *v = calloc(1, sizeof *v);
  if (!v) return oom(err, "vocab");
  nc_code rc = load_type(v, f, opt, err);
  if (rc == NC_OK) rc = load_tokens(v, f, err);
  if (rc == NC_OK && v->type == NC_VOCAB_BPE) rc = load_merges(v, f, err);
  if (rc == NC_OK) {
    read_special_ids(v, f);
    if (v->type == NC_VOCAB_WPM && (v->bos < 0 || v->sep < 0 || v->unk < 0))
      rc = nc_fail(err, NC_ERR_FORMAT,
                   "vocab: a bert vocabulary needs valid CLS (BOS), SEP and "
                   "UNK ids below its %d tokens (has %d, %d, %d)",
                   v->n_tokens, v->bos, v->sep, v->unk);
    else if (v->add_bos && v->bos < 0)
      rc = nc_fail(err, NC_ERR_FORMAT,
                   "vocab: add_bos_token is set but there is no valid BOS "
                   "id");
    else if (v->add_eos && v->eos < 0)
      rc = nc_fail(err, NC_ERR_FORMAT,
                   "vocab: add_eos_token is set but there is no valid EOS "
                   "id");
  }
  if (rc == NC_OK) {
    nc_vocab_detect_specials(v);
    build_byte_maps(v);
    rc = nc_vocab_build_special(v, err);
  }
  if (rc == NC_OK) rc = nc_vocab_build_pieces(v, err);
  if (rc != NC_OK) {
    nc_vocab_free(v);
    return rc;
  }
  *out = v;
  return NC_OK;
}

nc_code nc_vocab_load(const gguf_file *f, nc_vocab **out, nc_error *err) {
  return nc_vocab_load_ex(f, NULL, out, err);
}

int32_t nc_vocab_n_tokens(const nc_vocab *v) {
  return v->n_tokens;
}
nc_vocab_type nc_vocab_get_type(const nc_vocab *v) {
  return v->type;
}
nc_pre_type nc_vocab_pre_type(const nc_vocab *v) {
  return v->pre;
}
int32_t nc_vocab_bos(const nc_vocab *v) {
  return v->bos;
}
int32_t nc_vocab_eos(const nc_vocab *v) {
  return v->eos;
}
bool nc_vocab_add_bos(const nc_vocab *v) {
  return v->add_bos;
}
bool nc_vocab_add_eos(const nc_vocab *v) {
  return v->add_eos;
}
int32_t nc_vocab_sep(const nc_vocab *v) {
  return v->sep;
}
bool nc_vocab_add_sep(const nc_vocab *v) {
  return v->add_sep && v->sep >= 0;
}
bool nc_vocab_add_space_prefix(const nc_vocab *v) {
  return v->add_space_prefix;
}

bool nc_vocab_is_eog(const nc_vocab *v, int32_t id) {
  return id >= 0 && id < v->n_tokens && v->eog[id];
}

bool nc_vocab_is_control(const nc_vocab *v, int32_t id) {
  return id >= 0 && id < v->n_tokens && (v->attr[id] & NC_TOKEN_ATTR_CONTROL);
}

const char *nc_vocab_token_text(const nc_vocab *v, int32_t id, size_t *len) {
  if (id < 0 || id >= v->n_tokens) {
    if (len) *len = 0;
    return NULL;
  }
  if (len) *len = v->strs.len[id];
  return v->strs.bytes + v->strs.off[id];
}

int32_t nc_vocab_find(const nc_vocab *v, const char *s, size_t len) {
  return nc_vocab_token_id(v, s, len);
}
