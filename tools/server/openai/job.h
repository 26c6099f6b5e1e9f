/* nucleus serve: one generation request from parse to last byte: its
 * parameters, prompt tokens, engine request and response being built. */
#ifndef NUCLEUS_SERVER_JOB_H
#define NUCLEUS_SERVER_JOB_H

#include <microhttpd.h>

#include "completion_json.h"
#include "gen.h"
#include "image_input.h"
#include "request_parse.h"

typedef struct job job;
typedef struct sse_stream sse_stream;

/* How a stream other than chat's and completions' chunks is written (the
 * Responses API's typed events): NULL in a job streams chunks. */
typedef struct job_stream_ops {
  /* The events before the first engine event: 0, or -1. */
  int (*open)(job *j, sse_stream *s);
  /* One engine event: 0 going on, 1 the stream is complete, -1 an error
   * (out of memory: the connection is closed). */
  int (*event)(job *j, const nucleus_event *ev, sse_stream *s);
  /* The engine stopped delivering events: the closing events. */
  int (*failed)(job *j, sse_stream *s);
} job_stream_ops;

struct job {
  gen_request req;
  int32_t *prompt;
  size_t n_prompt;
  image_list images; /* the prompt's images, in order */
  completion_out out;
  gen *g;
  const job_stream_ops *stream_ops; /* NULL: chunks */
  void *ext;                        /* the endpoint's own state */
  void (*ext_free)(void *ext);      /* releases ext in job_free */
};

void job_free(job *j);

/* Parses the body (a chat or completions request) and builds the prompt:
 * 0, or -1 with *e. */
int job_prepare(server_ctx *srv, const char *body, size_t len, bool chat,
                job *j, api_error *e);
/* The same from a parsed body (root: an object). */
int job_prepare_json(server_ctx *srv, const json_t *root, bool chat, job *j,
                     api_error *e);

/* Submits j to the engine: 0, or -1 with *e (503 busy, 400 too long). */
int job_submit(server_ctx *srv, struct MHD_Connection *conn, job *j,
               api_error *e);

typedef enum job_waited {
  JOB_DONE,   /* every event arrived: j->out holds the answer */
  JOB_GONE,   /* the client went away: the request is cancelled */
  JOB_FAILED, /* *e holds the error to answer with */
} job_waited;

/* Non-streaming: records every event of j into j->out. */
job_waited job_wait(server_ctx *srv, struct MHD_Connection *conn, job *j,
                    api_error *e);

/* Non-streaming: waits for every event, then answers once; takes
 * ownership of j. */
enum MHD_Result job_wait_and_reply(server_ctx *srv, struct MHD_Connection *conn,
                                   job *j);

/* Appends one server-sent event to s: "event: NAME\n" (when name is not
 * NULL), then "data: <obj>\n\n"; takes obj (NULL: nothing is written).
 * 0, or -1 when out of memory. */
int sse_put(sse_stream *s, const char *name, json_t *obj);

/* Streams j as server-sent events (chunks, or j->stream_ops' events);
 * takes ownership of j. */
enum MHD_Result sse_stream_start(server_ctx *srv, struct MHD_Connection *conn,
                                 job *j);

#endif
