/* The public model API: loading, facts, teacher-forced logits and a
 * prompt's own logprobs. */
#include <stdlib.h>
#include <string.h>

#include "base/mapped_file.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "kernels/kernels.h"
#include "model/arch.h"
#include "model/context.h"
#include "model/model.h"
#include "model/model_options.h"
#include "nucleus.h"
#include "sampling/sampler.h"

void nucleus_free(void *ptr) {
  free(ptr);
}

nucleus_model_params nucleus_model_default_params(void) {
  nucleus_model_params p = {.n_threads = 0,
                            .reference_kernels = false,
                            .no_repack = false,
                            .flash_attn = NUCLEUS_FLASH_ATTN_AUTO,
                            .cache_type_k = NUCLEUS_CACHE_F16,
                            .cache_type_v = NUCLEUS_CACHE_F16,
                            .chat_template = NULL,
                            .load_mode = NUCLEUS_LOAD_AUTO};
  return p;
}

nucleus_status nucleus_model_load(const char *path,
                                  const nucleus_model_params *params,
                                  nucleus_model **out, nucleus_error *err) {
  if (!out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "model load: out is NULL");
  return nc_model_load(path, params, out, err);
}

bool nucleus_model_flash_attn(const nucleus_model *model) {
  return model && nc_model_flash_attn(model);
}

/* The names come from the model-option table (model/model_options.c). */
static bool parse_choice(const char *field, const char *s, int *out) {
  int v = nc_model_options_choice(field, s);
  if (v < 0) return false;
  *out = v;
  return true;
}

bool nucleus_flash_attn_parse(const char *s, nucleus_flash_attn *out) {
  int v;
  if (!parse_choice("flash_attn", s, &v)) return false;
  *out = (nucleus_flash_attn)v;
  return true;
}

bool nucleus_cache_type_parse(const char *s, nucleus_cache_type *out) {
  int v;
  if (!parse_choice("cache_type_k", s, &v)) return false;
  *out = (nucleus_cache_type)v;
  return true;
}

bool nucleus_load_mode_parse(const char *s, nucleus_load_mode *out) {
  int v;
  if (!parse_choice("load_mode", s, &v)) return false;
  *out = (nucleus_load_mode)v;
  return true;
}

const char *nucleus_load_mode_name(nucleus_load_mode m) {
  const char *name = nc_model_options_choice_name("load_mode", (int)m);
  return name ? name : "?";
}

nucleus_load_mode nucleus_model_load_mode(const nucleus_model *model) {
  const nc_mapped_file *mf =
      model ? gguf_mapped_file(nc_model_gguf(model)) : NULL;
  return mf && nc_mapped_file_how(mf) == NC_FILE_READ ? NUCLEUS_LOAD_READ
                                                      : NUCLEUS_LOAD_MMAP;
}

size_t nucleus_model_huge_page_bytes(const nucleus_model *model) {
  return model
             ? nc_mapped_file_huge_bytes(gguf_mapped_file(nc_model_gguf(model)))
             : 0;
}

const char *nucleus_cache_type_name(nucleus_cache_type t) {
  const char *name = nc_model_options_choice_name("cache_type_k", (int)t);
  return name ? name : "?";
}

static nucleus_cache_type public_cache_type(nc_type t) {
  switch (t) {
  case NC_TYPE_BF16: return NUCLEUS_CACHE_BF16;
  case NC_TYPE_Q8_0: return NUCLEUS_CACHE_Q8_0;
  case NC_TYPE_Q4_0: return NUCLEUS_CACHE_Q4_0;
  default: return NUCLEUS_CACHE_F16;
  }
}

nucleus_cache_type nucleus_model_cache_type_k(const nucleus_model *model) {
  return model ? public_cache_type(nc_model_cache_type_k(model))
               : NUCLEUS_CACHE_F16;
}

nucleus_cache_type nucleus_model_cache_type_v(const nucleus_model *model) {
  return model ? public_cache_type(nc_model_cache_type_v(model))
               : NUCLEUS_CACHE_F16;
}

size_t nucleus_model_kv_bytes_per_position(const nucleus_model *model) {
  if (!model) return 0;
  return nc_kv_bytes_per_position(nc_hp_kv_shape(nc_model_hparams(model)),
                                  nc_model_kv_types(model));
}

size_t nucleus_model_state_bytes_per_sequence(const nucleus_model *model,
                                              int32_t *n_layer_rec) {
  if (n_layer_rec) *n_layer_rec = 0;
  if (!model) return 0;
  const nc_hparams *hp = nc_model_hparams(model);
  if (n_layer_rec) *n_layer_rec = hp->n_layer_rec;
  return (size_t)nc_hp_kv_shape(hp).state_floats * sizeof(float);
}

size_t nucleus_model_kv_bytes_per_position_swa(const nucleus_model *model,
                                               int32_t *window) {
  if (window) *window = 0;
  if (!model) return 0;
  const nc_hparams *hp = nc_model_hparams(model);
  const nc_model_weights *w = nc_model_weights_of(model);
  const nc_kv_shape shape = nc_hp_kv_shape(hp);
  bool *swa = calloc((size_t)shape.n_layer, sizeof *swa);
  if (!swa) return 0;
  bool any = false;
  for (int32_t l = 0; hp->n_swa > 0 && l < shape.n_layer; l++) {
    swa[l] = w->layers[l].swa;
    any = any || swa[l];
  }
  /* the layers that own K/V, each in its own shape (gemma4's differ) */
  const size_t n = any ? nc_kv_bytes_per_position_of(
                             shape, nc_model_kv_types(model), swa, true)
                       : 0;
  free(swa);
  if (n && window) *window = hp->n_swa;
  return n;
}

int32_t nucleus_model_kv_layers(const nucleus_model *model, int32_t *n_layer) {
  if (n_layer) *n_layer = model ? nc_model_hparams(model)->n_layer : 0;
  return model ? nc_hp_n_layer_kv(nc_model_hparams(model)) : 0;
}

void nucleus_model_free(nucleus_model *model) {
  nc_model_free(model);
}

int32_t nucleus_model_n_vocab(const nucleus_model *model) {
  return model ? nc_model_hparams(model)->n_vocab : 0;
}

int32_t nucleus_model_n_ctx_train(const nucleus_model *model) {
  return model ? nc_model_hparams(model)->n_ctx_train : 0;
}

const char *nucleus_model_name(const nucleus_model *model) {
  return model ? nc_model_name_str(model) : "";
}

const char *nucleus_model_arch(const nucleus_model *model) {
  return model ? nc_model_arch_name(model) : "";
}

const char *nucleus_model_hf_architecture(const nucleus_model *model) {
  return model ? nc_arch_hf_class(nc_model_arch(model), nc_model_hparams(model))
               : NULL;
}

const char *nucleus_model_kernels(const nucleus_model *model) {
  return model ? nc_model_kernels(model)->name : "";
}

#define EVAL_BLOCK_TOKENS 16
#define EVAL_CHUNK 256

/* What is done with each chunk's logits (rows i0.. of the tokens). */
typedef nc_code (*eval_sink)(void *arg, int32_t i0, int32_t rows,
                             const float *logits, nc_error *err);

/* The tokens as one sequence through a cache of their own, chunk by chunk,
 * in llama.cpp's orders for that prompt or (reuse) in the engine's reuse
 * orders: sink sees each chunk's logits (out, when not NULL, holds them
 * all: the chunks are written straight there; else one chunk's buffer is
 * reused). */
static nc_code eval_cached(const nucleus_model *m, const int32_t *tokens,
                           int32_t n, int32_t max_chunk, bool reuse, float *out,
                           eval_sink sink, void *arg, nc_error *err) {
  nc_kv_cache *kv = NULL;
  nc_context *ctx = NULL;
  nc_batch b = {0};
  const int32_t chunk = n < max_chunk ? n : max_chunk;
  const int64_t n_vocab = nc_model_hparams(m)->n_vocab;
  float *buf = out ? NULL : malloc((size_t)chunk * (size_t)n_vocab * 4);
  nc_code rc = out || buf ? NC_OK
                          : nc_fail(err, NC_ERR_NOMEM,
                                    "eval: out of memory for %d rows of "
                                    "logits",
                                    (int)chunk);
  if (!rc)
    rc = nc_kv_cache_create_typed(
        nc_hp_kv_shape(nc_model_hparams(m)), nc_model_kv_types(m),
        (n + EVAL_BLOCK_TOKENS - 1) / EVAL_BLOCK_TOKENS, EVAL_BLOCK_TOKENS, 1,
        &kv, err);
  if (!rc) rc = nc_context_create(m, kv, chunk, &ctx, err);
  /* the model at its training context, as llama.cpp's default n_ctx (the
   * one LongRoPE picks its factors by), however short the tokens */
  if (!rc) nc_context_set_n_ctx(ctx, nc_model_hparams(m)->n_ctx_train);
  if (!rc) rc = nc_batch_init(&b, chunk, err);
  const int32_t s = rc ? -1 : nc_kv_seq_new(kv);
  if (!rc) rc = nc_kv_seq_reserve(kv, s, n, err);
  for (int32_t i0 = 0; !rc && i0 < n; i0 += chunk) {
    nc_batch_clear(&b);
    for (int32_t i = i0; i < n && i < i0 + chunk; i++)
      if (reuse)
        nc_batch_add_reusable(&b, tokens[i], i, s, true);
      else
        nc_batch_add_prompt(&b, tokens[i], i, s, NC_LOGITS_ALL, n);
    float *dst = out ? out + (int64_t)i0 * n_vocab : buf;
    rc = nc_context_forward(ctx, &b, dst, err);
    if (!rc && sink)
      rc = sink(arg, i0, n - i0 < chunk ? n - i0 : chunk, dst, err);
  }
  free(buf);
  nc_batch_free(&b);
  nc_context_free(ctx);
  nc_kv_cache_free(kv);
  return rc;
}

static nc_code check_eval(const nucleus_model *model, const int32_t *tokens,
                          size_t n, const void *out, const char *what,
                          nc_error *err) {
  if (!model || !tokens || !out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "%s: model, tokens and the output are required", what);
  if (n == 0)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "%s: no tokens", what);
  if (n > (size_t)nc_model_hparams(model)->n_ctx_train || n > (1u << 20))
    return nc_fail(err, NC_ERR_LIMIT,
                   "%s: %zu tokens, more than the model's context of %d", what,
                   n, (int)nc_model_hparams(model)->n_ctx_train);
  const int32_t n_vocab = nc_model_hparams(model)->n_vocab;
  for (size_t i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "%s: tokens[%zu] = %d is not a token id in [0, %d)", what,
                     i, (int)tokens[i], (int)n_vocab);
  return NC_OK;
}

nucleus_status nucleus_eval_logits(nucleus_model *model, const int32_t *tokens,
                                   size_t n, bool use_cache, float *logits,
                                   nucleus_error *err) {
  nc_code rc = check_eval(model, tokens, n, logits, "eval_logits", err);
  if (rc) return rc;
  if (use_cache)
    return eval_cached(model, tokens, (int32_t)n, EVAL_CHUNK, false, logits,
                       NULL, NULL, err);
  return nc_forward_nocache(model, tokens, (int32_t)n, logits, err);
}

typedef struct prompt_lp {
  const int32_t *tokens;
  int32_t n, n_vocab, top_n, simd;
  nucleus_prompt_logprob *out;
} prompt_lp;

/* Row i's logits score token i + 1 (the last row scores nothing). */
static nc_code prompt_lp_sink(void *arg, int32_t i0, int32_t rows,
                              const float *logits, nc_error *err) {
  (void)err;
  const prompt_lp *p = arg;
  for (int32_t r = 0; r < rows && i0 + r + 1 < p->n; r++) {
    nucleus_prompt_logprob *o = &p->out[i0 + r + 1];
    o->n_top = nc_row_logprobs(logits + (int64_t)r * p->n_vocab, p->n_vocab,
                               p->tokens[i0 + r + 1], p->top_n, p->simd,
                               &o->logprob, o->top);
  }
  return NC_OK;
}

/* Rows of logits held at once: bounded memory whatever the prompt. */
#define PROMPT_LP_CHUNK 64

nucleus_status nucleus_prompt_logprobs(nucleus_model *model,
                                       const int32_t *tokens, size_t n,
                                       int32_t top_n,
                                       nucleus_prompt_logprob *out,
                                       nucleus_error *err) {
  nc_code rc = check_eval(model, tokens, n, out, "prompt_logprobs", err);
  if (rc) return rc;
  if (top_n < 0 || top_n > NUCLEUS_MAX_TOP_LOGPROBS)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "prompt_logprobs: top_n %d is not in [0, %d]", (int)top_n,
                   NUCLEUS_MAX_TOP_LOGPROBS);
  memset(out, 0, n * sizeof *out);
  prompt_lp p = {.tokens = tokens,
                 .n = (int32_t)n,
                 .n_vocab = nc_model_hparams(model)->n_vocab,
                 .top_n = top_n,
                 .simd = nc_model_kernels(model)->sampler_simd,
                 .out = out};
  return eval_cached(model, tokens, (int32_t)n, PROMPT_LP_CHUNK, true, NULL,
                     prompt_lp_sink, &p, err);
}

size_t nucleus_arch_count(void) {
  return nc_arch_count();
}

const char *nucleus_arch_name(size_t i) {
  const nc_arch *a = nc_arch_at(i);
  return a ? a->name : NULL;
}

/* The i-th type with a dot kernel in every table (the plain-C one is the
 * floor: the SIMD tables cover at least its types); NULL past the end. */
static const char *runnable_type(size_t i) {
  const nc_kernels *ref = nc_kernels_ref();
  for (uint32_t t = 0; t < NC_TYPE_COUNT; t++)
    if (ref->vec_dot[t] && i-- == 0) return nc_type_name(t);
  return NULL;
}

size_t nucleus_type_count(void) {
  size_t n = 0;
  while (runnable_type(n))
    n++;
  return n;
}

const char *nucleus_type_name(size_t i) {
  return runnable_type(i);
}
