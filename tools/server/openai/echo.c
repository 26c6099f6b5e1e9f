/* nucleus serve: the echoed prompt of a completions request (echo.h). */
#include "echo.h"

#include <stdlib.h>
#include <string.h>

/* The prompt's pieces, concatenated; *starts[i]: where token i's begins. */
static int echo_text(server_ctx *srv, const int32_t *ids, size_t n, char **text,
                     size_t *len, size_t *starts, api_error *e) {
  size_t cap = 256, used = 0;
  char *buf = malloc(cap);
  if (!buf) return api_fail(e, 500, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) {
    char piece[256];
    size_t pl = 0;
    nucleus_error err = {0};
    if (nucleus_token_piece(srv->model, ids[i], piece, sizeof piece, &pl,
                            &err) != NUCLEUS_OK) {
      free(buf);
      return api_fail(e, 400, "prompt", "prompt[%zu]: %s", i, err.message);
    }
    if (pl > sizeof piece) pl = sizeof piece;
    if (used + pl + 1 > cap) {
      while (used + pl + 1 > cap)
        cap *= 2;
      char *grown = realloc(buf, cap);
      if (!grown) {
        free(buf);
        return api_fail(e, 500, NULL, "out of memory");
      }
      buf = grown;
    }
    starts[i] = used;
    memcpy(buf + used, piece, pl);
    used += pl;
  }
  buf[used] = '\0';
  *text = buf;
  *len = used;
  return 0;
}

/* The prompt tokens' logprobs as completions' four arrays. */
static json_t *echo_logprobs(server_ctx *srv, const gen_request *req,
                             const int32_t *ids, size_t n, const size_t *starts,
                             api_error *e) {
  nucleus_prompt_logprob *lp = calloc(n, sizeof *lp);
  if (!lp) {
    api_fail(e, 500, NULL, "out of memory");
    return NULL;
  }
  nucleus_error err = {0};
  nucleus_status st =
      nucleus_prompt_logprobs(srv->model, ids, n, req->top_logprobs, lp, &err);
  if (st != NUCLEUS_OK) {
    free(lp);
    api_fail(e, api_status_for(st), "echo", "echo: %s", err.message);
    return NULL;
  }
  json_t *out = completions_logprobs_empty();
  for (size_t i = 0; out && i < n; i++)
    completions_logprob_put(srv, out, ids[i], i > 0, lp[i].logprob, lp[i].top,
                            lp[i].n_top, req->top_logprobs, starts[i]);
  free(lp);
  if (!out) api_fail(e, 500, NULL, "out of memory");
  return out;
}

int echo_prepare(server_ctx *srv, job *j, api_error *e) {
  size_t *starts = malloc(j->n_prompt * sizeof *starts);
  if (!starts) return api_fail(e, 500, NULL, "out of memory");
  char *text = NULL;
  size_t len = 0;
  json_t *lp = NULL;
  int rc = echo_text(srv, j->prompt, j->n_prompt, &text, &len, starts, e);
  if (!rc && j->req.logprobs) {
    lp = echo_logprobs(srv, &j->req, j->prompt, j->n_prompt, starts, e);
    if (!lp) rc = -1;
  }
  free(starts);
  if (rc) {
    free(text);
    return -1;
  }
  completion_out_set_echo(&j->out, text, len, lp);
  return 0;
}
