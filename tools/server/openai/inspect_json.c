/* nucleus serve: the sampler record as JSON. */
#include "inspect_json.h"

#include "http/json_text.h"

static json_t *piece(server_ctx *srv, int32_t id) {
  char buf[256];
  size_t len = 0;
  nucleus_error err;
  if (nucleus_token_piece(srv->model, id, buf, sizeof buf, &len, &err) !=
      NUCLEUS_OK)
    len = 0;
  if (len > sizeof buf) len = sizeof buf;
  return json_text(buf, len);
}

/* The draw on the cumulative distribution: the sums the sampler compared
 * (target, sum_lo, sum_hi, exact) and the same over mass for [0, 1). */
static void add_cdf(json_t *draw, const nucleus_inspect *in) {
  if (in->method == NUCLEUS_DRAW_GREEDY) {
    json_object_set_new(draw, "method", json_string("greedy"));
    return;
  }
  if (in->method != NUCLEUS_DRAW_INVERSE_CDF) return;
  double m = in->mass > 0.0 ? in->mass : 1.0;
  json_object_set_new(draw, "method", json_string("inverse_cdf"));
  json_object_set_new(draw, "order",
                      json_string(in->order == NUCLEUS_WALK_TOKEN_ID
                                      ? "token_id"
                                      : "kept_set"));
  json_object_set_new(draw, "mass", json_finite(in->mass));
  json_object_set_new(draw, "target", json_finite(in->target));
  json_object_set_new(draw, "sum_lo", json_finite(in->cdf_lo));
  json_object_set_new(draw, "sum_hi", json_finite(in->cdf_hi));
  json_object_set_new(draw, "cdf_lo", json_finite(in->cdf_lo / m));
  json_object_set_new(draw, "cdf_hi", json_finite(in->cdf_hi / m));
  json_object_set_new(draw, "clamped", json_boolean(in->clamped));
  json_t *walk = json_array();
  for (int32_t k = 0; k < in->n_walk && k <= NUCLEUS_MAX_INSPECT_TOP; k++)
    json_array_append_new(
        walk, json_pack("{s:I,s:f,s:f}", "id", (json_int_t)in->walk[k].token,
                        "lo", in->walk[k].lo / m, "hi", in->walk[k].hi / m));
  json_object_set_new(draw, "walk", walk);
}

json_t *inspect_json(server_ctx *srv, const nucleus_inspect *in) {
  json_t *stages = json_array();
  for (int32_t j = 0; j < in->n_stages; j++)
    json_array_append_new(stages, json_string(in->stages[j]));
  json_t *cands = json_array();
  for (int32_t c = 0; c < in->n_candidates; c++) {
    const nucleus_inspect_candidate *k = &in->candidates[c];
    json_t *after = json_object();
    for (int32_t j = 0; j < in->n_stages; j++)
      json_object_set_new(after, in->stages[j], json_finite(k->stage_prob[j]));
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(k->token));
    json_object_set_new(o, "text", piece(srv, k->token));
    json_object_set_new(o, "logit", json_finite(k->logit));
    json_object_set_new(o, "raw_prob", json_finite(k->raw_prob));
    json_object_set_new(o, "after", after);
    json_object_set_new(o, "removed_by",
                        k->removed_by >= 0 && k->removed_by < in->n_stages
                            ? json_string(in->stages[k->removed_by])
                            : json_null());
    json_object_set_new(o, "final_prob", json_finite(k->final_prob));
    json_array_append_new(cands, o);
  }
  json_t *draw = json_object();
  json_object_set_new(draw, "seed", json_integer((json_int_t)in->seed));
  json_object_set_new(draw, "stream", json_integer((json_int_t)in->stream));
  json_object_set_new(draw, "step", json_integer((json_int_t)in->step));
  json_object_set_new(draw, "uniform", json_finite(in->uniform));
  json_object_set_new(draw, "id", json_integer(in->token));
  add_cdf(draw, in);
  json_t *o = json_object();
  json_object_set_new(o, "stages", stages);
  json_object_set_new(o, "candidates", cands);
  json_object_set_new(o, "draw", draw);
  if (in->draft_token >= 0) { /* speculative decoding: what was drafted */
    json_t *d = json_object();
    json_object_set_new(d, "id", json_integer(in->draft_token));
    json_object_set_new(d, "text", piece(srv, in->draft_token));
    json_object_set_new(d, "accepted",
                        json_boolean(in->draft_token == in->token));
    json_object_set_new(o, "draft", d);
  }
  return o;
}
