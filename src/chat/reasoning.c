/* reasoning: the families' thinking markers and the split of a reply into
 * its reasoning and its answer (reasoning.h). */
#include "reasoning.h"

#include <stdint.h>
#include <string.h>

static bool has(const char *src, size_t len, const char *needle) {
  return memmem(src, len, needle, strlen(needle)) != NULL;
}

nc_reasoning_format nc_reasoning_format_of_template(const char *src,
                                                    size_t len) {
  if (!src) return NC_REASONING_NONE;
  if (has(src, len, "<|channel|>") && has(src, len, "<|message|>"))
    return NC_REASONING_HARMONY;
  if (has(src, len, "<|channel>thought") && has(src, len, "<channel|>"))
    return NC_REASONING_GEMMA4;
  if (has(src, len, "</think>")) return NC_REASONING_THINK;
  return NC_REASONING_NONE;
}

const char *nc_reasoning_format_name(nc_reasoning_format f) {
  static const char *const names[NC_REASONING_FORMAT_COUNT] = {
      [NC_REASONING_NONE] = "none",
      [NC_REASONING_THINK] = "think",
      [NC_REASONING_HARMONY] = "harmony",
      [NC_REASONING_GEMMA4] = "gemma4",
  };
  return (unsigned)f < NC_REASONING_FORMAT_COUNT ? names[f] : "unknown";
}

nc_reasoning_markers nc_reasoning_markers_of(nc_reasoning_format f) {
  switch (f) {
  case NC_REASONING_THINK:
    return (nc_reasoning_markers){"<think>", "</think>", "</think>"};
  case NC_REASONING_GEMMA4:
    return (nc_reasoning_markers){"<|channel>thought", "<channel|>",
                                  "<channel|>"};
  case NC_REASONING_HARMONY:
    return (nc_reasoning_markers){
        "<|channel|>analysis<|message|>", "<|end|>",
        "<|end|><|start|>assistant<|channel|>final<|message|>"};
  default: return (nc_reasoning_markers){NULL, NULL, NULL};
  }
}

static bool blank(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

static size_t skip_blanks(const char *s, size_t len, size_t i) {
  while (i < len && blank(s[i]))
    i++;
  return i;
}

/* s[from, to) without its trailing blanks: the new end. */
static size_t trim_end(const char *s, size_t from, size_t to) {
  while (to > from && blank(s[to - 1]))
    to--;
  return to;
}

bool nc_reasoning_prompt_opens(nc_reasoning_format f, const char *prompt,
                               size_t len) {
  const char *open = nc_reasoning_markers_of(f).open;
  if (!open || !prompt) return false;
  size_t end = trim_end(prompt, 0, len), n = strlen(open);
  return end >= n && !memcmp(prompt + end - n, open, n);
}

/* The longest proper prefix of lit that ends s[from, len). */
static size_t partial_tail(const char *s, size_t len, size_t from,
                           const char *lit) {
  size_t l = strlen(lit);
  for (size_t k = l - 1; k > 0; k--)
    if (k <= len - from && !memcmp(s + len - k, lit, k)) return k;
  return 0;
}

void nc_reasoning_split_of(nc_reasoning_format f, bool inside,
                           const char *reply, size_t len, bool final,
                           nc_reasoning_split *out) {
  const nc_reasoning_markers m = nc_reasoning_markers_of(f);
  *out = (nc_reasoning_split){0, 0, 0};
  if (!m.open) return; /* no block: all answer */
  size_t body = 0;
  if (!inside) {
    const size_t i = skip_blanks(reply, len, 0), ol = strlen(m.open);
    if (len - i >= ol && !memcmp(reply + i, m.open, ol)) {
      body = i + ol;
    } else if (!final &&
               (len - i < ol && !memcmp(reply + i, m.open, len - i))) {
      out->answer_at = SIZE_MAX; /* blanks, or the open marker begun */
      return;
    } else {
      return; /* the reply opens no block */
    }
  }
  const size_t r0 = skip_blanks(reply, len, body);
  const char *close =
      memmem(reply + body, len - body, m.close, strlen(m.close));
  size_t r1;
  if (close) {
    const size_t at = (size_t)(close - reply);
    r1 = at;
    out->answer_at = skip_blanks(reply, len, at + strlen(m.close));
  } else if (final) {
    r1 = len;
    out->answer_at = len;
  } else {
    r1 = len - partial_tail(reply, len, body, m.close);
    out->answer_at = SIZE_MAX;
  }
  if (r1 < r0) r1 = r0;
  r1 = trim_end(reply, r0, r1);
  out->reasoning_at = r0;
  out->reasoning_len = r1 - r0;
}
