/* chat_template_builtin: the chat template of a model family, for files
 * that carry none (tokenizer.chat_template absent): Gemma's turn markers
 * for gemma*, ChatML for qwen* and for vocabularies with <|im_start|>, the
 * Llama 3 header format for vocabularies with <|start_header_id|>. */
#ifndef NC_CHAT_TEMPLATE_BUILTIN_H
#define NC_CHAT_TEMPLATE_BUILTIN_H

#include "tokenizer/vocab.h"

typedef struct nc_builtin_template {
  const char *name; /* "gemma", "chatml", "llama3" */
  const char *text; /* Jinja source */
} nc_builtin_template;

/* The family template for a file of architecture arch with vocabulary v
 * (may be NULL), or NULL when no family applies. */
const nc_builtin_template *nc_chat_template_builtin(const char *arch,
                                                    const nc_vocab *v);

#endif
