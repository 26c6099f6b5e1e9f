/* context: running a batch through the model. Owns the scratch buffers, the
 * persistent thread pool and the matmul/attention dispatch; the arch file
 * (arch_llama.c) describes the graph. The KV cache is the caller's. */
#ifndef NC_CONTEXT_H
#define NC_CONTEXT_H

#include <stdint.h>

#include "base/status.h"
#include "batch.h"
#include "forward.h"
#include "kv/kv_cache.h"
#include "model.h"

typedef struct nc_context nc_context;

/* max_batch_tokens: the most entries one forward call may carry. */
nc_code nc_context_create(const nucleus_model *m, nc_kv_cache *kv,
                          int32_t max_batch_tokens, nc_context **out,
                          nc_error *err);
void nc_context_free(nc_context *ctx);
/* The context length of one sequence (the engine's n_ctx), which LongRoPE
 * (phi3) picks its factors by, as llama.cpp by its n_ctx_seq; until set,
 * the KV cache's positions, at most the training context. */
void nc_context_set_n_ctx(nc_context *ctx, int32_t n_ctx);
/* Tells obs (NULL: nothing) each matmul's input from the next forward on
 * (forward.h's nc_fwd_observer); obs must outlive its use. */
void nc_context_set_observer(nc_context *ctx, const nc_fwd_observer *obs);
/* The context's worker threads, for other data-parallel work between
 * forward calls on the same thread (the engine's grammar masks). */
nc_threadpool *nc_context_threadpool(nc_context *ctx);

/* Runs a batch: a flat list of (seq, pos, token); several sequences and
 * several tokens per sequence in one call. The positions of a sequence are
 * consecutive, in order, and start at its current length; the caller has
 * reserved KV space for them. Writes the logits of the rows with
 * want_logits into logits ([rows, n_vocab], batch order) and advances each
 * sequence's length. A row's logits are bit-identical whatever else shares
 * the batch, the chunking of its prompt and the thread count. */
nc_code nc_context_forward(nc_context *ctx, const nc_batch *batch,
                           float *logits, nc_error *err);

/* nc_context_forward in embedding mode: for the rows with want_logits,
 * their final hidden states after the output norm (before the LM head)
 * into hidden ([rows, n_embd], batch order), as llama.cpp's t_embd. A
 * model with non-causal attention (nc_hparams.non_causal) takes each
 * sequence whole in one batch, from position 0; its rows see every
 * position of their sequence. Sequences stay apart as always. */
nc_code nc_context_embed(nc_context *ctx, const nc_batch *batch, float *hidden,
                         nc_error *err);
/* The model's MTP head (a model loaded with nucleus_model_params.mtp;
 * arch_qwen35_mtp.c) for the batch's rows: each row's token with h_in's
 * row (n_embd floats: the final normed hidden state of the position
 * before, the model's or the head's own) gives the head's hidden state
 * (h_out, [rows, n_embd]; may be h_in) and logits ([rows, n_vocab]) of the
 * token after. Writes only the head's K/V, at positions past each
 * sequence's length (within its reserved blocks; increasing per
 * sequence), and changes no length: the drafts of a speculative step,
 * which the step's own forward writes over. */
nc_code nc_context_mtp(nc_context *ctx, const nc_batch *b, const float *h_in,
                       float *h_out, float *logits, nc_error *err);

/* The state the graph primitives run over (the embedder's heads). */
nc_fwd *nc_context_fwd(nc_context *ctx);

/* Reference: the logits of every position of tokens (one sequence from
 * position 0), each position recomputed from scratch in a fresh contiguous
 * cache (no state carried between positions). O(n^2). */
nc_code nc_forward_nocache(const nucleus_model *m, const int32_t *tokens,
                           int32_t n, float *logits_all, nc_error *err);
/* The logits of the last position only, from scratch (one pass over the
 * n tokens in a private one-block cache). */
nc_code nc_forward_nocache_last(const nucleus_model *m, const int32_t *tokens,
                                int32_t n, float *logits, nc_error *err);

#endif
