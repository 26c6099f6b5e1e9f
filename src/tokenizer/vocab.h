/* vocab: a model's token table, read from GGUF metadata the way llama.cpp
 * reads it (llama_vocab::impl::load), and the tokenizer entry points.
 *
 * Supported: tokenizer.ggml.model "gpt2" (byte-level BPE, pre-tokenizers
 * smollm/starcoder family, llama3 family, qwen2 family, gpt-2 family and
 * default), "llama" (SentencePiece-style with byte fallback) and "bert"
 * (WordPiece over llama.cpp's phantom-space vocabulary, with
 * tokenizer.ggml.normalizer.lowercase and strip_accents; add_special gives
 * [CLS] text [SEP]). Other tokenizer models are refused with
 * NC_ERR_UNSUPPORTED.
 *
 * Validation: every array must hold exactly one entry per token (scores,
 * token types); duplicate token texts are refused. A special-token id that
 * is out of range is ignored and the type's default kept, as llama.cpp does
 * (a default that is itself out of range is disabled, -1). add_bos/add_eos
 * set with no BOS/EOS id is refused at load (llama.cpp would abort later).
 *
 * A loaded vocab owns copies of every string: the gguf_file may be closed
 * afterwards. It is immutable, so any number of threads may share it.
 */
#ifndef NC_VOCAB_H
#define NC_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "gguf/gguf.h"

typedef struct nc_vocab nc_vocab;

/* Token attributes (llama.cpp's llama_token_attr bits). */
enum {
  NC_TOKEN_ATTR_UNDEFINED = 0,
  NC_TOKEN_ATTR_UNKNOWN = 1 << 0,
  NC_TOKEN_ATTR_UNUSED = 1 << 1,
  NC_TOKEN_ATTR_NORMAL = 1 << 2,
  NC_TOKEN_ATTR_CONTROL = 1 << 3,
  NC_TOKEN_ATTR_USER_DEFINED = 1 << 4,
  NC_TOKEN_ATTR_BYTE = 1 << 5,
  NC_TOKEN_ATTR_LSTRIP = 1 << 7,
  NC_TOKEN_ATTR_RSTRIP = 1 << 8,
};

typedef enum nc_vocab_type {
  NC_VOCAB_SPM = 1, /* "llama" */
  NC_VOCAB_BPE = 2, /* "gpt2" */
  NC_VOCAB_WPM = 3, /* "bert": WordPiece (tokenizer_wpm.c) */
} nc_vocab_type;

/* Pre-tokenizer families (BPE only). */
typedef enum nc_pre_type {
  NC_PRE_DEFAULT = 0, /* missing pre, "default" */
  NC_PRE_GPT2,        /* gpt-2, phi-2, mpt, olmo, ... */
  NC_PRE_DIGITS_GPT2, /* smollm, starcoder, refact, command-r, ... */
  NC_PRE_LLAMA3,      /* llama3, llama-bpe, falcon3, pixtral, ... */
  NC_PRE_QWEN2,       /* qwen2, stablelm2, deepseek-r1-qwen, ... */
} nc_pre_type;

typedef struct nc_vocab_options {
  /* Replaces tokenizer.ggml.pre (tests: one vocab, every pre-tokenizer). */
  const char *pre_override;
  /* Replace a bert vocabulary's tokenizer.ggml.normalizer.lowercase and
   * strip_accents (tests: one vocabulary, every normalizer): 0 keeps the
   * file's, NC_WPM_OFF or NC_WPM_ON sets it. */
  uint8_t wpm_lowercase, wpm_strip_accents;
} nc_vocab_options;
enum { NC_WPM_OFF = 1, NC_WPM_ON = 2 };

nc_code nc_vocab_load(const gguf_file *f, nc_vocab **out, nc_error *err);
nc_code nc_vocab_load_ex(const gguf_file *f, const nc_vocab_options *opt,
                         nc_vocab **out, nc_error *err);
void nc_vocab_free(nc_vocab *v);

int32_t nc_vocab_n_tokens(const nc_vocab *v);
nc_vocab_type nc_vocab_get_type(const nc_vocab *v);
nc_pre_type nc_vocab_pre_type(const nc_vocab *v);
int32_t nc_vocab_bos(const nc_vocab *v); /* -1: none */
int32_t nc_vocab_eos(const nc_vocab *v); /* -1: none */
bool nc_vocab_add_bos(const nc_vocab *v);
bool nc_vocab_add_eos(const nc_vocab *v);
/* SEP (-1: none), and whether a pair of texts takes one between them
 * (tokenizer.ggml.add_sep_token; llama.cpp's default: bert vocabularies) */
int32_t nc_vocab_sep(const nc_vocab *v);
bool nc_vocab_add_sep(const nc_vocab *v);
bool nc_vocab_add_space_prefix(const nc_vocab *v);

/* False for ids out of range. */
bool nc_vocab_is_eog(const nc_vocab *v, int32_t id);
bool nc_vocab_is_control(const nc_vocab *v, int32_t id);

/* Raw vocab text (not NUL-terminated); NULL for ids out of range. */
const char *nc_vocab_token_text(const nc_vocab *v, int32_t id, size_t *len);
/* The id whose text is exactly s, or -1. */
int32_t nc_vocab_find(const nc_vocab *v, const char *s, size_t len);

/* Tokenizes any bytes, as llama_tokenize(add_special, parse_special).
 * *ids_out is malloc'd (free() it); it may be NULL when *n_out is 0. */
nc_code nc_tokenize(const nc_vocab *v, const char *text, size_t len,
                    bool add_special, bool parse_special, int32_t **ids_out,
                    size_t *n_out, nc_error *err);

/* A byte range of a text. */
typedef struct nc_span {
  size_t off, len;
} nc_span;

/* As nc_tokenize with parse_special, except that control-token text
 * overlapping one of the spans (sorted, not overlapping: the bytes a chat
 * template copied from message contents) stays ordinary text, as if
 * tokenized without parse_special. */
nc_code nc_tokenize_guarded(const nc_vocab *v, const char *text, size_t len,
                            bool add_special, const nc_span *plain,
                            size_t n_plain, int32_t **ids_out, size_t *n_out,
                            nc_error *err);

/* A prompt rendered by a chat template: nc_tokenize_guarded with BOS as the
 * model asks, and one BOS when the template printed bos_token itself. */
nc_code nc_tokenize_chat_prompt(const nc_vocab *v, const char *text, size_t len,
                                const nc_span *plain, size_t n_plain,
                                int32_t **ids_out, size_t *n_out,
                                nc_error *err);

/* The length of the longest control-token text (one that only
 * parse_special turns into a token) at the start of s, or 0. */
size_t nc_vocab_match_control(const nc_vocab *v, const char *s, size_t n);

#endif
