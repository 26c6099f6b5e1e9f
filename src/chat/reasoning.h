/* reasoning: the thinking block of a reasoning model's reply, by family.
 *
 * A thinking model writes its reasoning between two markers, then its
 * answer: <think>…</think> (Qwen3/3.5, DeepSeek-R1 distills, SmolLM3),
 * <|channel>thought … <channel|> (Gemma 4), or harmony's analysis channel
 * (gpt-oss, whose whole reply is read by tool_call_harmony.c). The family
 * is chosen from the chat template, as the tool-call syntax is.
 *
 * The split of a reply so far into reasoning and answer is decided from the
 * start, like tool_call.h's scan: bytes that may still turn out to be a
 * marker (or the blanks that end the reasoning, which are trimmed) are held
 * back until the reply says what they are, so what a split decided never
 * changes as the reply grows, and the final split of a whole reply equals
 * what the streamed splits decided. */
#ifndef NC_REASONING_H
#define NC_REASONING_H

#include <stdbool.h>
#include <stddef.h>

#include "tool_call.h"

typedef enum nc_reasoning_format {
  NC_REASONING_NONE,    /* the template marks no thinking */
  NC_REASONING_THINK,   /* <think>…</think> */
  NC_REASONING_HARMONY, /* gpt-oss: the analysis channel */
  NC_REASONING_GEMMA4,  /* <|channel>thought … <channel|> */
  NC_REASONING_FORMAT_COUNT
} nc_reasoning_format;

/* The family of a chat template, from the thinking markers its source
 * renders (NONE when it renders none). */
nc_reasoning_format nc_reasoning_format_of_template(const char *src,
                                                    size_t len);
const char *nc_reasoning_format_name(nc_reasoning_format f);

/* A family's markers (all NULL for NONE). open begins the block; close
 * ends it; force_close is what the engine writes to end the block when
 * the thinking budget is spent (the close marker, and for harmony the
 * final channel's header after it, so that the answer follows). */
typedef struct nc_reasoning_markers {
  const char *open, *close, *force_close;
} nc_reasoning_markers;

nc_reasoning_markers nc_reasoning_markers_of(nc_reasoning_format f);

/* Whether a prompt's text leaves its reply inside the thinking block: its
 * end (blanks aside) is the open marker (templates whose generation prompt
 * opens the block, e.g. "<think>\n"). */
bool nc_reasoning_prompt_opens(nc_reasoning_format f, const char *prompt,
                               size_t len);

/* What a split of reply[0, len) decided. */
typedef struct nc_reasoning_split {
  /* The reasoning decided so far, reply[reasoning_at, reasoning_at +
   * reasoning_len): the block's text without its markers and without
   * the blanks at either end. */
  size_t reasoning_at, reasoning_len;
  /* Where the answer begins (after the close marker and the blanks that
   * follow it; 0 for a reply that opens no block), or SIZE_MAX while that
   * is undecided: the block is still open, or the reply may still open
   * one. */
  size_t answer_at;
} nc_reasoning_split;

/* Splits reply[0, len) of a THINK or GEMMA4 family (inside: the prompt
 * opened the block). final: the reply is complete; a block it never
 * closed is all reasoning (the answer is empty: answer_at = len). */
void nc_reasoning_split_of(nc_reasoning_format f, bool inside,
                           const char *reply, size_t len, bool final,
                           nc_reasoning_split *out);

/* How a reply is read: its calls, its reasoning. */
typedef struct nc_reply_format {
  nc_tool_format tools; /* the family's call syntax */
  bool calls;           /* read calls (else the answer is all content) */
  /* NONE: the thinking is not split out (it stays in the content, as the
   * model wrote it; harmony's analysis bodies go to the content). */
  nc_reasoning_format reasoning;
  bool inside; /* the prompt opened the thinking block */
} nc_reply_format;

/* Scans reply[0, len) as nc_tool_scan does (same decided-never-changes
 * rule), after splitting off the reasoning: out->reasoning holds the
 * thinking, out->content and out->calls what the answer says. */
nc_code nc_reply_scan(const nc_reply_format *f, const char *reply, size_t len,
                      bool final, nc_tool_scan_result *out, nc_error *err);

#endif
