#include "cli_stream.h"

#include "cli_io.h"

#include <stdlib.h>
#include <string.h>

typedef struct text_buf {
  char *data;
  size_t len, cap;
} text_buf;

static void buf_append(text_buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return;
    b->data = p;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

typedef struct logprob_row {
  int32_t token;
  float logprob;
  int32_t n_top;
  nucleus_token_logprob top[NUCLEUS_MAX_TOP_LOGPROBS];
} logprob_row;

static void print_piece(FILE *out, const nucleus_model *model, int32_t id) {
  char piece[256];
  size_t len = 0;
  if (nucleus_token_piece(model, id, piece, sizeof piece, &len, NULL) !=
      NUCLEUS_OK)
    len = 0;
  if (len > sizeof piece) len = sizeof piece;
  cli_print_piece(out, piece, len);
}

#define DIM "\x1b[2m"
#define UNDIM "\x1b[0m"

/* What of a chat reply's reasoning and answer was printed. */
typedef struct shown {
  size_t reasoning, content;
} shown;

/* Prints what the reply so far (text[0, len)) decided since the last call:
 * new reasoning (dimmed, plain or not at all), then new answer text, a
 * blank line between the two. */
static void show_split(FILE *out, const nucleus_model *model,
                       const cli_thinking_view *v, const char *text, size_t len,
                       bool final, shown *s) {
  nucleus_tool_reply r;
  nucleus_error err;
  if (nucleus_reply_scan(model, &v->fmt, text ? text : "", len, final, &r,
                         &err) != NUCLEUS_OK)
    return;
  if (r.reasoning_len > s->reasoning && !v->hide) {
    if (v->dim) fputs(DIM, out);
    fwrite(r.reasoning + s->reasoning, 1, r.reasoning_len - s->reasoning, out);
    if (v->dim) fputs(UNDIM, out);
  }
  if (r.content_len > s->content) {
    if (s->content == 0 && r.reasoning_len && !v->hide) fputs("\n\n", out);
    fwrite(r.content + s->content, 1, r.content_len - s->content, out);
  }
  if (r.reasoning_len > s->reasoning) s->reasoning = r.reasoning_len;
  if (r.content_len > s->content) s->content = r.content_len;
  fflush(out);
  nucleus_tool_reply_clear(&r);
}

int cli_stream_request(const nucleus_model *model, nucleus_request *req,
                       const nucleus_request_params *params, FILE *out,
                       volatile sig_atomic_t *interrupt,
                       const cli_thinking_view *thinking,
                       cli_stream_result *result) {
  shown seen = {0, 0};
  memset(result, 0, sizeof *result);
  int32_t n = params->n > 0 ? params->n : 1;
  text_buf *texts = calloc((size_t)n, sizeof *texts);
  logprob_row *rows = NULL;
  size_t n_rows = 0, cap_rows = 0;
  bool want_lp = params->sampling.top_logprobs > 0 || params->sampling.logprobs;
  if (!texts) return -1;
  bool cancelled = false;
  for (;;) {
    if (interrupt && *interrupt && !cancelled) {
      nucleus_request_cancel(req);
      cancelled = true;
    }
    nucleus_event ev;
    if (nucleus_request_next_event(req, &ev, 100) != NUCLEUS_OK) continue;
    if (ev.kind == NUCLEUS_EVENT_DONE) {
      result->usage = ev.usage;
      result->timings = ev.timings;
      result->seed = ev.seed;
      break;
    }
    if (ev.index < 0 || ev.index >= n) continue;
    if (ev.text_len) {
      buf_append(&texts[ev.index], ev.text, ev.text_len);
      if (n == 1 && thinking) {
        show_split(out, model, thinking, texts[0].data, texts[0].len, false,
                   &seen);
      } else if (n == 1) {
        fwrite(ev.text, 1, ev.text_len, out);
        fflush(out);
      }
    }
    if (ev.kind == NUCLEUS_EVENT_FINISH && n == 1 && thinking)
      show_split(out, model, thinking, texts[0].data, texts[0].len, true,
                 &seen);
    if (ev.kind == NUCLEUS_EVENT_TOKEN && want_lp && ev.index == 0) {
      if (n_rows == cap_rows) {
        cap_rows = cap_rows ? cap_rows * 2 : 64;
        logprob_row *p = realloc(rows, cap_rows * sizeof *rows);
        if (!p) continue;
        rows = p;
      }
      logprob_row *r = &rows[n_rows++];
      r->token = ev.token;
      r->logprob = ev.logprob;
      r->n_top = ev.n_top_logprobs;
      memcpy(r->top, ev.top_logprobs,
             (size_t)ev.n_top_logprobs * sizeof *ev.top_logprobs);
    }
    if (ev.kind == NUCLEUS_EVENT_FINISH) {
      if (n > 1) {
        fprintf(out, "--- completion %d (finish: %s)\n", ev.index,
                nucleus_finish_reason_name(ev.finish_reason));
        fwrite(texts[ev.index].data ? texts[ev.index].data : "", 1,
               texts[ev.index].len, out);
        fputc('\n', out);
      }
      if (ev.index == 0) {
        result->reason = ev.finish_reason;
        if (ev.finish_reason == NUCLEUS_FINISH_ERROR)
          snprintf(result->detail, sizeof result->detail, "%s",
                   ev.error.message);
        else if (ev.stop_string)
          snprintf(result->detail, sizeof result->detail, "stop string \"%s\"",
                   ev.stop_string);
        else if (ev.stop_token >= 0)
          snprintf(result->detail, sizeof result->detail, "token %d",
                   ev.stop_token);
      }
    }
  }
  if (n == 1) fputc('\n', out);
  fflush(out);
  if (want_lp && n_rows) {
    fprintf(out, "\n%-8s %-20s %10s  top alternatives\n", "id", "piece",
            "logprob");
    for (size_t i = 0; i < n_rows; i++) {
      fprintf(out, "%-8d ", rows[i].token);
      print_piece(out, model, rows[i].token);
      fprintf(out, " %10.4f ", (double)rows[i].logprob);
      for (int32_t k = 0; k < rows[i].n_top; k++) {
        fputc(' ', out);
        print_piece(out, model, rows[i].top[k].token);
        fprintf(out, "=%.3f", (double)rows[i].top[k].logprob);
      }
      fputc('\n', out);
    }
    fflush(out);
  }
  result->text = texts[0].data;
  result->text_len = texts[0].len;
  texts[0].data = NULL;
  for (int32_t i = 0; i < n; i++)
    free(texts[i].data);
  free(texts);
  free(rows);
  return 0;
}

void cli_stream_result_free(cli_stream_result *r) {
  free(r->text);
  r->text = NULL;
}

void cli_print_summary(const cli_stream_result *r) {
  fprintf(stderr, "finish: %s", nucleus_finish_reason_name(r->reason));
  if (r->detail[0]) fprintf(stderr, " (%s)", r->detail);
  fprintf(stderr, "\nprompt: %d tokens", r->usage.prompt_tokens);
  /* the prefix cache's share; the speed is the computed tokens' */
  if (r->usage.cached_tokens > 0)
    fprintf(stderr, " (%d cached, %d computed)", r->usage.cached_tokens,
            r->usage.prompt_tokens - r->usage.cached_tokens);
  fprintf(stderr,
          ", %.1f tok/s | generation: %d tokens, %.1f "
          "tok/s | first token after %.0f ms | seed %llu\n",
          r->timings.prompt_tokens_per_s, r->usage.completion_tokens,
          r->timings.generation_tokens_per_s, r->timings.time_to_first_token_ms,
          (unsigned long long)r->seed);
  if (r->usage.draft_tokens > 0) /* speculative decoding */
    fprintf(stderr, "drafts: %d of %d accepted (%.1f%%)\n",
            r->usage.accepted_draft_tokens, r->usage.draft_tokens,
            100.0 * r->usage.accepted_draft_tokens / r->usage.draft_tokens);
}
