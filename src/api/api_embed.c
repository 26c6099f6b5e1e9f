/* Public API: embeddings and rank scores (nucleus_embed*,
 * nucleus_embedder_*), over src/model's embedder. */
#include <stdlib.h>
#include <string.h>

#include "model/embed.h"
#include "model/pooling.h"
#include "nucleus.h"

/* The most inputs of one call. */
#define MAX_INPUTS (1 << 20)

struct nucleus_embedder {
  const nucleus_model *m;
  nc_embedder *e;
};

const char *nucleus_pooling_name(nucleus_pooling p) {
  return p == NUCLEUS_POOLING_MODEL ? "model" : nc_pooling_name((int)p);
}

bool nucleus_pooling_parse(const char *s, nucleus_pooling *out) {
  int v;
  if (s && strcmp(s, "model") == 0) {
    *out = NUCLEUS_POOLING_MODEL;
    return true;
  }
  if (!nc_pooling_parse(s, &v)) return false;
  *out = (nucleus_pooling)v;
  return true;
}

nucleus_pooling nucleus_model_pooling(const nucleus_model *model) {
  return model ? (nucleus_pooling)nc_model_hparams(model)->pooling
               : NUCLEUS_POOLING_NONE;
}

bool nucleus_model_is_embedding(const nucleus_model *model) {
  if (!model) return false;
  const nc_hparams *hp = nc_model_hparams(model);
  return hp->pooling != NC_POOLING_NONE || hp->non_causal;
}

int32_t nucleus_model_n_cls_out(const nucleus_model *model) {
  return model ? nc_model_hparams(model)->n_cls_out : 0;
}

nucleus_embed_params nucleus_embed_default_params(void) {
  return (nucleus_embed_params){
      .pooling = NUCLEUS_POOLING_MODEL, .normalize = true, .dimensions = 0};
}

/* p with the model's pooling resolved. */
static nc_embed_opts opts_of(const nucleus_model *m,
                             const nucleus_embed_params *p) {
  return (nc_embed_opts){.pooling = p->pooling == NUCLEUS_POOLING_MODEL
                                        ? nc_model_hparams(m)->pooling
                                        : (int)p->pooling,
                         .normalize = p->normalize,
                         .dimensions = p->dimensions};
}

nucleus_status nucleus_embed_params_validate(const nucleus_model *model,
                                             const nucleus_embed_params *p,
                                             nucleus_error *err) {
  if (!model || !p)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "embed: model and params are required");
  if (p->pooling == NUCLEUS_POOLING_MODEL &&
      nc_model_hparams(model)->pooling == NC_POOLING_NONE)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "pooling: the model file names none (no "
                   "'%s.pooling_type'); choose mean, cls or last",
                   nc_model_arch_name(model));
  const nc_embed_opts o = opts_of(model, p);
  return nc_embed_check(model, &o, err);
}

int32_t nucleus_embed_size(const nucleus_model *model,
                           const nucleus_embed_params *p) {
  if (nucleus_embed_params_validate(model, p, NULL)) return 0;
  const nc_embed_opts o = opts_of(model, p);
  return nc_embed_width(model, &o);
}

nucleus_status nucleus_embedder_create(const nucleus_model *model,
                                       int32_t max_batch_tokens,
                                       nucleus_embedder **out,
                                       nucleus_error *err) {
  if (!out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "embedder: the output pointer is NULL");
  *out = NULL;
  if (!model)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "embedder: model is NULL");
  if (max_batch_tokens < 0 || max_batch_tokens > (1 << 20))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "embedder: max_batch_tokens %d must be in [0, %d] (0: "
                   "the default)",
                   (int)max_batch_tokens, 1 << 20);
  if (max_batch_tokens == 0) {
    const int32_t ctx = nc_model_hparams(model)->n_ctx_train;
    max_batch_tokens =
        ctx < NUCLEUS_EMBED_DEFAULT_BATCH ? ctx : NUCLEUS_EMBED_DEFAULT_BATCH;
  }
  nucleus_embedder *e = calloc(1, sizeof *e);
  if (!e) return nc_fail(err, NC_ERR_NOMEM, "embedder: out of memory");
  e->m = model;
  nc_code rc = nc_embedder_create(model, max_batch_tokens, &e->e, err);
  if (rc) {
    free(e);
    return rc;
  }
  *out = e;
  return NC_OK;
}

void nucleus_embedder_free(nucleus_embedder *e) {
  if (!e) return;
  nc_embedder_free(e->e);
  free(e);
}

int32_t nucleus_embedder_max_tokens(const nucleus_embedder *e) {
  return e ? nc_embedder_max_tokens(e->e) : 0;
}

/* The inputs as the embedder takes them (arrays the caller frees). */
static nc_code split_inputs(const nucleus_embed_input *in, size_t n,
                            const int32_t ***toks, int32_t **lens,
                            nc_error *err) {
  *toks = NULL;
  *lens = NULL;
  if (n > MAX_INPUTS)
    return nc_fail(err, NC_ERR_LIMIT, "embed: %zu inputs, at most %d", n,
                   MAX_INPUTS);
  if (n > 0 && !in)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "embed: inputs are NULL");
  *toks = malloc(sizeof **toks * (n ? n : 1));
  *lens = malloc(sizeof **lens * (n ? n : 1));
  if (!*toks || !*lens)
    return nc_fail(err, NC_ERR_NOMEM, "embed: out of memory");
  for (size_t i = 0; i < n; i++) {
    if (in[i].n_tokens > (size_t)INT32_MAX || (in[i].n_tokens && !in[i].tokens))
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "input %zu: %zu tokens at %p", i, in[i].n_tokens,
                     (const void *)in[i].tokens);
    (*toks)[i] = in[i].tokens;
    (*lens)[i] = (int32_t)in[i].n_tokens;
  }
  return NC_OK;
}

nucleus_status nucleus_embedder_run(nucleus_embedder *e,
                                    const nucleus_embed_input *in, size_t n,
                                    const nucleus_embed_params *p, float *out,
                                    nucleus_error *err) {
  if (!e || !p || (n > 0 && !out))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "embed: embedder, params and output are required");
  nc_code rc = nucleus_embed_params_validate(e->m, p, err);
  if (rc) return rc;
  const int32_t **toks;
  int32_t *lens;
  rc = split_inputs(in, n, &toks, &lens, err);
  const nc_embed_opts o = opts_of(e->m, p);
  if (!rc)
    rc = nc_embedder_run(e->e, (const int32_t *const *)toks, lens, (int32_t)n,
                         &o, out, err);
  free(toks);
  free(lens);
  return rc;
}

nucleus_status nucleus_embed(const nucleus_model *model,
                             const nucleus_embed_input *in, size_t n,
                             const nucleus_embed_params *p, float *out,
                             nucleus_error *err) {
  if (!model || !p)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "embed: model and params are required");
  nc_code rc = nucleus_embed_params_validate(model, p, err);
  if (rc || n == 0) return rc;
  if (!in)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "embed: inputs are NULL");
  /* room for the longest input, and for packing up to the default batch */
  size_t longest = 1, total = 0;
  for (size_t i = 0; i < n && i < MAX_INPUTS; i++) {
    if (in[i].n_tokens > longest) longest = in[i].n_tokens;
    total += in[i].n_tokens;
  }
  const size_t ctx = (size_t)nc_model_hparams(model)->n_ctx_train;
  size_t size =
      total < NUCLEUS_EMBED_DEFAULT_BATCH ? total : NUCLEUS_EMBED_DEFAULT_BATCH;
  if (size < longest) size = longest <= ctx ? longest : ctx;
  if (size < 1) size = 1;
  nucleus_embedder *e;
  rc = nucleus_embedder_create(model, (int32_t)size, &e, err);
  if (rc) return rc;
  rc = nucleus_embedder_run(e, in, n, p, out, err);
  nucleus_embedder_free(e);
  return rc;
}
