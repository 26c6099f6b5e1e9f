/* tokenizer_special: which tokens are special (llama.cpp's text-based EOT,
 * EOM, FIM and end-of-generation detection) and the longest-first list and
 * byte trie used to cut text around them. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"

/* Texts that end generation (llama.cpp's list, by token text). */
static const char *const k_eog_texts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "[e~[",
    NULL};

static const char *const k_eot_texts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<end_of_utterance>",
    NULL};
static const char *const k_eom_texts[] = {"<|eom_id|>", NULL};
static const char *const k_fim_pre_texts[] = {"<|fim_prefix|>",
                                              "<fim-prefix>",
                                              "<fim_prefix>",
                                              "<\xef\xbd\x9c"
                                              "fim\xe2\x96\x81"
                                              "begin\xef\xbd\x9c>",
                                              "<PRE>",
                                              "\xe2\x96\x81<PRE>",
                                              "<|code_prefix|>",
                                              "<|prefix|>",
                                              NULL};
static const char *const k_fim_suf_texts[] = {
    "<|fim_suffix|>",
    "<fim-suffix>",
    "<fim_suffix>",
    "<\xef\xbd\x9c"
    "fim\xe2\x96\x81hole\xef\xbd\x9c>",
    "<SUF>",
    "\xe2\x96\x81<SUF>",
    "<|code_suffix|>",
    "<|suffix|>",
    NULL};
static const char *const k_fim_mid_texts[] = {"<|fim_middle|>",
                                              "<fim-middle>",
                                              "<fim_middle>",
                                              "<\xef\xbd\x9c"
                                              "fim\xe2\x96\x81"
                                              "end\xef\xbd\x9c>",
                                              "<MID>",
                                              "\xe2\x96\x81<MID>",
                                              "<|code_middle|>",
                                              "<|middle|>",
                                              NULL};
static const char *const k_fim_pad_texts[] = {
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const k_fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>",
                                              "<fim-repo>",   "<REPO>",
                                              "<reponame>",   NULL};
static const char *const k_fim_sep_texts[] = {"<|file_sep|>", NULL};

static bool text_in(const char *s, size_t n, const char *const *list) {
  for (; *list; list++)
    if (strlen(*list) == n && memcmp(*list, s, n) == 0) return true;
  return false;
}

static void mark_control(nc_vocab *v, int32_t id) {
  v->attr[id] |= NC_TOKEN_ATTR_CONTROL;
}

/* Text-based detection of EOT/EOM/FIM tokens, unused tokens and the EOG
 * set (llama.cpp's rules; ties between candidates go to the lowest id). */
void nc_vocab_detect_specials(nc_vocab *v) {
  struct {
    int32_t *id;
    const char *const *texts;
  } det[] = {
      {&v->eot, k_eot_texts},         {&v->eom, k_eom_texts},
      {&v->fim_pre, k_fim_pre_texts}, {&v->fim_suf, k_fim_suf_texts},
      {&v->fim_mid, k_fim_mid_texts}, {&v->fim_pad, k_fim_pad_texts},
      {&v->fim_rep, k_fim_rep_texts}, {&v->fim_sep, k_fim_sep_texts},
  };
  for (int32_t id = 0; id < v->n_tokens; id++) {
    size_t n;
    const char *s = nc_vocab_token_text(v, id, &n);
    for (size_t k = 0; k < sizeof det / sizeof det[0]; k++) {
      if (*det[k].id < 0 && text_in(s, n, det[k].texts)) {
        *det[k].id = id;
        mark_control(v, id);
      }
    }
  }
  for (int32_t id = 0; id < v->n_tokens; id++) {
    size_t n;
    const char *s = nc_vocab_token_text(v, id, &n);
    if ((v->attr[id] & NC_TOKEN_ATTR_CONTROL) && memmem(s, n, "unused", 6))
      v->attr[id] |= NC_TOKEN_ATTR_UNUSED;
  }
  if (v->fim_pad >= 0) v->eog[v->fim_pad] = 1;
  if (v->fim_rep >= 0) v->eog[v->fim_rep] = 1;
  if (v->fim_sep >= 0) v->eog[v->fim_sep] = 1;
  for (int32_t id = 0; id < v->n_tokens; id++) {
    size_t n;
    const char *s = nc_vocab_token_text(v, id, &n);
    if (text_in(s, n, k_eog_texts)) {
      v->eog[id] = 1;
      mark_control(v, id);
    }
    static const char *const k_user[] = {"<|channel|>", "<|message|>",
                                         "<|start|>", "<|constrain|>", NULL};
    if (text_in(s, n, k_user)) v->attr[id] = NC_TOKEN_ATTR_USER_DEFINED;
  }
  if (v->eos >= 0) v->eog[v->eos] = 1;
  if (v->eot >= 0) v->eog[v->eot] = 1;
  if (v->eom >= 0) v->eog[v->eom] = 1;
  /* o200k_harmony / solar-open: <|end|> is not an end of generation. */
  int32_t end = -1;
  bool has_return = false, has_call = false, has_flush = false;
  bool has_marker = false;
  int32_t s_id = -1;
  for (int32_t id = 0; id < v->n_tokens; id++) {
    if (!v->eog[id]) continue;
    size_t n;
    const char *s = nc_vocab_token_text(v, id, &n);
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(s, lit, n) == 0)
    if (IS("<|return|>")) has_return = true;
    if (IS("<|call|>") || IS("<|calls|>")) has_call = true;
    if (IS("<|flush|>")) has_flush = true;
    if (IS("<|end|>")) end = id;
    if (IS("<|tool_response>") || IS("<|plamo:eos|>")) has_marker = true;
    if (IS("</s>")) s_id = id;
#undef IS
  }
  if (end >= 0 && ((has_return && has_call) || (has_call && has_flush))) {
    v->eog[end] = 0;
    v->attr[end] = NC_TOKEN_ATTR_USER_DEFINED;
  }
  if (has_marker && s_id >= 0) {
    v->eog[s_id] = 0;
    v->attr[s_id] = NC_TOKEN_ATTR_NORMAL;
  }
}

static int32_t trie_new(nc_vocab *v, uint8_t byte) {
  if (v->n_trie == v->cap_trie) {
    int32_t cap = v->cap_trie ? v->cap_trie * 2 : 256;
    nc_trie_node *t = realloc(v->trie, (size_t)cap * sizeof *t);
    if (!t) return -1;
    v->trie = t;
    v->cap_trie = cap;
  }
  nc_trie_node *n = &v->trie[v->n_trie];
  n->first_child = n->next_sibling = n->token = -1;
  n->byte = byte;
  return v->n_trie++;
}

typedef struct len_id {
  uint32_t len;
  int32_t id;
} len_id;

static int cmp_len_id(const void *a, const void *b) {
  const len_id *x = a, *y = b;
  if (x->len != y->len) return x->len > y->len ? -1 : 1; /* longest first */
  return x->id < y->id ? -1 : x->id > y->id;             /* then by id */
}

nc_code nc_vocab_build_special(nc_vocab *v, nc_error *err) {
  const uint32_t mask = NC_TOKEN_ATTR_CONTROL | NC_TOKEN_ATTR_USER_DEFINED |
                        NC_TOKEN_ATTR_UNKNOWN;
  int32_t n = 0;
  for (int32_t id = 0; id < v->n_tokens; id++)
    if (v->attr[id] & mask) n++;
  v->special = malloc(((size_t)n + 1) * sizeof *v->special);
  len_id *tmp = malloc(((size_t)n + 1) * sizeof *tmp);
  if (!v->special || !tmp) {
    free(tmp);
    return nc_fail(err, NC_ERR_NOMEM, "vocab: out of memory (special tokens)");
  }
  int32_t k = 0;
  for (int32_t id = 0; id < v->n_tokens; id++)
    if (v->attr[id] & mask) tmp[k++] = (len_id){v->strs.len[id], id};
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_len_id);
  for (int32_t i = 0; i < n; i++)
    v->special[i] = tmp[i].id;
  free(tmp);
  v->n_special = n;
  if (trie_new(v, 0) < 0)
    return nc_fail(err, NC_ERR_NOMEM, "vocab: out of memory (special trie)");
  for (int32_t i = 0; i < n; i++) {
    int32_t id = v->special[i];
    size_t len;
    const char *s = nc_vocab_token_text(v, id, &len);
    int32_t node = 0;
    for (size_t j = 0; j < len; j++) {
      uint8_t c = (uint8_t)s[j];
      int32_t ch = v->trie[node].first_child;
      while (ch >= 0 && v->trie[ch].byte != c)
        ch = v->trie[ch].next_sibling;
      if (ch < 0) {
        ch = trie_new(v, c);
        if (ch < 0)
          return nc_fail(err, NC_ERR_NOMEM,
                         "vocab: out of memory (special trie)");
        v->trie[ch].next_sibling = v->trie[node].first_child;
        v->trie[node].first_child = ch;
      }
      node = ch;
    }
    v->trie[node].token = i; /* index into v->special */
  }
  return NC_OK;
}
