/* nucleus serve: streaming a job as server-sent events. libmicrohttpd
 * calls the reader on the connection's own thread whenever the socket can
 * take more bytes; the reader blocks for the next engine event. */
#include <stdlib.h>
#include <string.h>

#include "http/http_reply.h"
#include "job.h"

struct sse_stream {
  server_ctx *srv;
  struct MHD_Connection *conn;
  job *j;
  char *buf; /* bytes not yet handed to libmicrohttpd */
  size_t len, cap, off;
  bool started;  /* the opening role chunks are written */
  bool finished; /* the last event (chunks: data: [DONE]) is written */
};

static int put_bytes(sse_stream *s, const char *p, size_t n) {
  if (s->len + n > s->cap) {
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < s->len + n)
      cap *= 2;
    char *grown = realloc(s->buf, cap);
    if (!grown) return -1;
    s->buf = grown;
    s->cap = cap;
  }
  memcpy(s->buf + s->len, p, n);
  s->len += n;
  return 0;
}

int sse_put(sse_stream *s, const char *name, json_t *obj) {
  if (!obj) return 0;
  char *text = json_dumps(obj, JSON_COMPACT);
  json_decref(obj);
  if (!text) return -1;
  int rc =
      (name && (put_bytes(s, "event: ", 7) ||
                put_bytes(s, name, strlen(name)) || put_bytes(s, "\n", 1))) ||
      put_bytes(s, "data: ", 6) || put_bytes(s, text, strlen(text)) ||
      put_bytes(s, "\n\n", 2);
  free(text);
  return rc ? -1 : 0;
}

/* Writes "data: <json>\n\n" and drops the reference to obj. */
static int put_event(sse_stream *s, json_t *obj) {
  return sse_put(s, NULL, obj);
}

static int put_error(sse_stream *s, unsigned status, const char *param,
                     const char *msg) {
  api_error e;
  api_fail(&e, status, param, "%s", msg);
  return put_event(s, api_error_json(&e));
}

static int on_event(sse_stream *s, const nucleus_event *ev) {
  if (s->j->stream_ops) {
    int rc = s->j->stream_ops->event(s->j, ev, s);
    if (rc == 1) s->finished = true;
    return rc < 0 ? -1 : 0;
  }
  completion_out *out = &s->j->out;
  if (completion_out_record(out, ev, false)) return -1;
  switch (ev->kind) {
  case NUCLEUS_EVENT_TOKEN:
    return put_event(s, completion_chunk_token(out, ev));
  case NUCLEUS_EVENT_FINISH:
    if (ev->finish_reason == NUCLEUS_FINISH_ERROR)
      return put_error(s, api_status_for(ev->error.code), out->error_param,
                       ev->error.message);
    if (ev->finish_reason == NUCLEUS_FINISH_ABORT)
      return put_error(s, 503, NULL,
                       "the request was cancelled: the server is "
                       "shutting down");
    return put_event(s, completion_chunk_text(out, ev)) ||
                   put_event(s, completion_chunk_finish(out, ev->index))
               ? -1
               : 0;
  case NUCLEUS_EVENT_DONE:
    if (s->j->req.include_usage && put_event(s, completion_chunk_usage(out)))
      return -1;
    s->finished = true;
    return put_bytes(s, "data: [DONE]\n\n", 14);
  }
  return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *dst, size_t max) {
  (void)pos;
  sse_stream *s = cls;
  for (;;) {
    if (s->off < s->len) {
      /* Waiting for the engine (a queue, a long prefill) is not idling:
       * restart the idle timer whenever there is something to send. A
       * client that stops reading still times out. */
      reply_touch(s->conn, (unsigned)s->srv->cfg->timeout_s);
      size_t n = s->len - s->off < max ? s->len - s->off : max;
      memcpy(dst, s->buf + s->off, n);
      s->off += n;
      if (s->off == s->len) s->off = s->len = 0;
      return (ssize_t)n;
    }
    if (s->finished) return MHD_CONTENT_READER_END_OF_STREAM;
    if (!s->started) {
      s->started = true;
      if (s->j->stream_ops) {
        if (s->j->stream_ops->open(s->j, s))
          return MHD_CONTENT_READER_END_WITH_ERROR;
        continue;
      }
      for (int32_t i = 0; i < s->j->out.n; i++)
        if (put_event(s, completion_chunk_role(&s->j->out, i)))
          return MHD_CONTENT_READER_END_WITH_ERROR;
      continue;
    }
    nucleus_event ev;
    gen_wait w = gen_next(s->j->g, &ev);
    if (w == GEN_GONE) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (w == GEN_FAILED) {
      s->finished = true;
      if (s->j->stream_ops) {
        if (s->j->stream_ops->failed(s->j, s))
          return MHD_CONTENT_READER_END_WITH_ERROR;
        continue;
      }
      if (put_error(s, 500, NULL, "the engine stopped delivering events") ||
          put_bytes(s, "data: [DONE]\n\n", 14))
        return MHD_CONTENT_READER_END_WITH_ERROR;
      continue;
    }
    if (on_event(s, &ev)) return MHD_CONTENT_READER_END_WITH_ERROR;
  }
}

static void release(void *cls) {
  sse_stream *s = cls;
  job_free(s->j);
  free(s->buf);
  free(s);
}

enum MHD_Result sse_stream_start(server_ctx *srv, struct MHD_Connection *conn,
                                 job *j) {
  sse_stream *s = calloc(1, sizeof *s);
  if (!s) {
    job_free(j);
    return MHD_NO;
  }
  s->srv = srv;
  s->conn = conn;
  s->j = j;
  struct MHD_Response *resp = MHD_create_response_from_callback(
      MHD_SIZE_UNKNOWN, 16 * 1024, reader, s, release);
  if (!resp) {
    release(s);
    return MHD_NO;
  }
  reply_add_common_headers(resp, "text/event-stream");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  MHD_add_response_header(resp, "X-Accel-Buffering", "no");
  return reply_queue(srv, conn, 200, resp);
}
