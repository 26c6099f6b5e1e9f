/* chat_template_builtin: the chat template of a model family, for files
 * that carry none (tokenizer.chat_template absent): the one the file's
 * architecture names (its nc_arch's chat_template: Gemma's turn markers
 * for gemma2/gemma3, Gemma 4's format for gemma4, ChatML for the qwen
 * archs), else ChatML for
 * vocabularies with <|im_start|> and the Llama 3 header format for
 * vocabularies with <|start_header_id|>. */
#ifndef NC_CHAT_TEMPLATE_BUILTIN_H
#define NC_CHAT_TEMPLATE_BUILTIN_H

#include "tokenizer/vocab.h"

typedef struct nc_builtin_template {
  const char *name; /* "gemma", "gemma4", "chatml", "llama3" */
  const char *text; /* Jinja source */
} nc_builtin_template;

/* The template named family (one of the names above; may be NULL), else
 * the one vocabulary v (may be NULL) calls for, else NULL. */
const nc_builtin_template *nc_chat_template_builtin(const char *family,
                                                    const nc_vocab *v);

#endif
