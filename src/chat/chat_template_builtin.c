/* chat_template_builtin: the family templates (chat_template_builtin.h),
 * written from each family's documented turn format. */
#include "chat_template_builtin.h"

#include <string.h>

/* Gemma: system text folded into the first user turn, assistant turns as
 * "model", contents trimmed. */
static const nc_builtin_template GEMMA = {
    "gemma",
    "{{ bos_token }}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set prefix = messages[0]['content'] | trim + '\n\n' -%}"
    "{%- set turns = messages[1:] -%}"
    "{%- else -%}"
    "{%- set prefix = '' -%}"
    "{%- set turns = messages -%}"
    "{%- endif -%}"
    "{%- for m in turns -%}"
    "{%- set role = 'model' if m['role'] == 'assistant' else m['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' + (prefix if loop.first else '') + "
    "m['content'] | trim + '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}"
    "{%- endif -%}"};

static const nc_builtin_template CHATML = {
    "chatml",
    "{%- for m in messages -%}"
    "{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}"
    "{%- endif -%}"};

static const nc_builtin_template LLAMA3 = {
    "llama3",
    "{{ bos_token }}"
    "{%- for m in messages -%}"
    "{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + "
    "m['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{%- endif -%}"};

static bool has_token(const nc_vocab *v, const char *s) {
  return v && nc_vocab_find(v, s, strlen(s)) >= 0;
}

const nc_builtin_template *nc_chat_template_builtin(const char *family,
                                                    const nc_vocab *v) {
  static const nc_builtin_template *const ALL[] = {&GEMMA, &CHATML, &LLAMA3};
  for (size_t i = 0; family && i < sizeof ALL / sizeof ALL[0]; i++)
    if (!strcmp(family, ALL[i]->name)) return ALL[i];
  if (has_token(v, "<|start_header_id|>")) return &LLAMA3;
  if (has_token(v, "<|im_start|>")) return &CHATML;
  return NULL;
}
