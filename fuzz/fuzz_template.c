/* libFuzzer target for chat templates (src/jinja/, src/chat/chat_template.c).
 *
 * The first input byte picks what the rest is:
 *   0-1: template text, rendered with a fixed conversation and tools;
 *   2-3: template text, a NUL byte, then JSON variables;
 *   4- : message content, rendered through real-template-like chat
 *        templates (byte 0 picks which) as a user and an assistant turn.
 * Limits are small so a hostile template fails fast; any crash, sanitizer
 * report, leak or hang is a bug. Build: make fuzz-template. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat_template.h"
#include "jinja/jinja.h"

static const char *const TEMPLATES[] = {
    /* ChatML with system default (SmolLM2, Qwen2.5 style) */
    "{% for message in messages %}{% if loop.first and messages[0]['role'] "
    "!= 'system' %}{{ '<|im_start|>system\\nYou are helpful<|im_end|>\\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
    "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    /* Qwen3-style reasoning split and reverse scan */
    "{%- set ns = namespace(multi=true, last=messages|length - 1) %}\n"
    "{%- for m in messages[::-1] %}{%- set i = (messages|length - 1) - "
    "loop.index0 %}{%- if ns.multi and m.role == 'user' and not "
    "(m.content.startswith('<tool_response>') and "
    "m.content.endswith('</tool_response>')) %}{%- set ns.multi = false %}"
    "{%- set ns.last = i %}{%- endif %}{%- endfor %}\n"
    "{%- for m in messages %}{%- set c = m.content %}{%- if '</think>' in c "
    "%}{%- set r = c.split('</think>')[0].rstrip('\\n').split('<think>')[-1]"
    ".lstrip('\\n') %}{%- set c = c.split('</think>')[-1].lstrip('\\n') %}"
    "{{- '<think>' + r.strip('\\n') + '</think>' }}{%- endif %}"
    "{{- '<|im_start|>' + m.role + '\\n' + c + '<|im_end|>\\n' }}"
    "{%- endfor %}{{ tools | tojson(indent=2) }}",
    /* Llama 3 style: trim, tojson of content, title, replace */
    "{{- bos_token }}{%- for m in messages %}{{- '<|start_header_id|>' + "
    "m['role'] | title + '<|end_header_id|>\\n\\n' + m['content'] | trim + "
    "'<|eot_id|>' }}{{ m.content | tojson }}{{ m.content | replace('a', "
    "'\\u00e9') | upper | length }}{{ m.content[1:-1] | wordcount }}"
    "{%- endfor %}",
    /* Gemma style: alternation check and content parts */
    "{{ bos_token }}{%- for message in messages -%}{%- if (message['role'] "
    "== 'user') != (loop.index0 % 2 == 0) -%}{{ raise_exception('alt') }}"
    "{%- endif -%}{{ '<start_of_turn>' + message['role'] + '\\n' }}{%- if "
    "message['content'] is string -%}{{ message['content'] | trim }}{%- "
    "else -%}{%- for item in message['content'] -%}{{ item['text'] | trim "
    "}}{%- endfor -%}{%- endif -%}{{ '<end_of_turn>\\n' }}{%- endfor -%}",
};
#define N_TEMPLATES (sizeof TEMPLATES / sizeof TEMPLATES[0])

static const char FIXED_MESSAGES[] =
    "[{\"role\":\"system\",\"content\":\"Be brief.\"},"
    "{\"role\":\"user\",\"content\":\"Hi \\u00e9 \\ud83e\\udd99\"},"
    "{\"role\":\"assistant\",\"content\":\"<think>\\nhm\\n</"
    "think>\\n\\nHello\","
    "\"tool_calls\":[{\"id\":\"abc123def\",\"type\":\"function\",\"function\":"
    "{\"name\":\"f\",\"arguments\":{\"x\":[1,2.5,null,true]}}}]},"
    "{\"role\":\"tool\",\"content\":\"{\\\"ok\\\": 1}\"},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\" part "
    "\"}]}]";
static const char FIXED_TOOLS[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
    "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"array\"}}}}}]";

static jinja_render_opts small_limits(void) {
  jinja_render_opts o = jinja_default_render_opts();
  o.limits.max_output = 64 * 1024;
  o.limits.max_memory = 16u << 20;
  o.limits.max_steps = 20000;
  o.limits.max_range = 1000;
  o.limits.max_repeat = 64 * 1024;
  o.now = 1721980800;
  return o;
}

static void render_text(const char *tmpl, size_t len, json_t *vars) {
  jinja_template *t;
  nc_error err;
  if (jinja_compile(tmpl, len, &t, &err) != NC_OK) return;
  jinja_render_opts o = small_limits();
  char *out = NULL;
  size_t n;
  if (jinja_render(t, vars, &o, &out, &n, &err) == NC_OK) free(out);
  /* compile once, render twice: the template must not change */
  if (jinja_render(t, vars, &o, &out, &n, &err) == NC_OK) free(out);
  jinja_free(t);
}

static json_t *fixed_vars(void) {
  json_t *vars = json_object();
  json_object_set_new(vars, "messages", json_loads(FIXED_MESSAGES, 0, NULL));
  json_object_set_new(vars, "tools", json_loads(FIXED_TOOLS, 0, NULL));
  json_object_set_new(vars, "add_generation_prompt", json_true());
  json_object_set_new(vars, "bos_token", json_string("<s>"));
  json_object_set_new(vars, "eos_token", json_string("</s>"));
  return vars;
}

/* Protected text for the guard: "<|" ... "|>" within 32 bytes. */
static size_t match_special(const void *ctx, const char *s, size_t n) {
  (void)ctx;
  if (n < 4 || s[0] != '<' || s[1] != '|') return 0;
  for (size_t i = 2; i + 1 < n && i < 32; i++)
    if (s[i] == '|' && s[i + 1] == '>') return i + 2;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;
  uint8_t mode = data[0];
  const char *rest = (const char *)data + 1;
  size_t n = size - 1;
  if (mode < 2) {
    json_t *vars = fixed_vars();
    render_text(rest, n, vars);
    json_decref(vars);
  } else if (mode < 4) {
    const char *nul = memchr(rest, 0, n);
    size_t tlen = nul ? (size_t)(nul - rest) : n;
    json_t *vars = NULL;
    if (nul)
      vars = json_loadb(nul + 1, n - tlen - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL,
                        NULL);
    if (vars && !json_is_object(vars)) {
      json_t *wrap = json_object();
      json_object_set_new(wrap, "messages", vars);
      vars = wrap;
    }
    render_text(rest, tlen, vars);
    json_decref(vars);
  } else {
    /* message content through real-template-like templates */
    json_t *msgs = json_array();
    json_t *content = json_stringn_nocheck(rest, n);
    json_t *user = json_object(), *asst = json_object();
    json_object_set_new(user, "role", json_string("user"));
    json_object_set(user, "content", content);
    json_object_set_new(asst, "role", json_string("assistant"));
    json_object_set(asst, "content", content);
    json_array_append_new(msgs, user);
    json_array_append_new(msgs, asst);
    json_decref(content);
    char *mj = json_dumps(msgs, JSON_ENCODE_ANY);
    json_decref(msgs);
    if (!mj) return 0; /* content was not valid UTF-8 */
    const char *tmpl = TEMPLATES[mode % N_TEMPLATES];
    nc_chat_template *t;
    nc_error err;
    if (nc_chat_template_compile(tmpl, strlen(tmpl), &t, &err) == NC_OK) {
      nc_chat_args a = {.messages_json = mj,
                        .tools_json = FIXED_TOOLS,
                        .add_generation_prompt = mode & 1,
                        .bos_token = "<s>",
                        .eos_token = "</s>",
                        .now = 1721980800};
      char *out = NULL;
      size_t len;
      if (nc_chat_template_apply(t, &a, &out, &len, &err) == NC_OK) free(out);
      /* The content guard (chat_template_guard.c) on the same input: the
       * spans it reports are sorted, inside the text, and each holds
       * exactly one protected text. */
      nc_span *spans = NULL;
      size_t n_spans = 0;
      out = NULL;
      if (nc_chat_template_apply_guarded(t, &a, match_special, NULL, &out, &len,
                                         &spans, &n_spans, &err) == NC_OK) {
        for (size_t i = 0; i < n_spans; i++) {
          if (spans[i].off > len || spans[i].len > len - spans[i].off ||
              (i && spans[i].off < spans[i - 1].off + spans[i - 1].len))
            abort();
          size_t m = match_special(NULL, out + spans[i].off, spans[i].len);
          bool marker =
              spans[i].len == 4 && (unsigned char)out[spans[i].off] == 0xF4;
          if (m != spans[i].len && !marker) abort();
        }
      }
      free(out);
      free(spans);
      nc_chat_template_free(t);
    }
    free(mj);
  }
  return 0;
}
