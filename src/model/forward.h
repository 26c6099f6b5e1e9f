/* forward: the primitives a forward graph (arch_*.c) is built from,
 * implemented by context.c over its scratch buffers, thread pool and KV
 * cache (the nc_fwd state below). Every primitive computes each output value
 * in a fixed order that depends only on its own row, so results are
 * batch-invariant. */
#ifndef NC_FORWARD_H
#define NC_FORWARD_H

#include <stdint.h>

#include "base/threadpool.h"
#include "batch.h"
#include "kernels/attn_flash.h"
#include "kernels/attn_kernel.h"
#include "kernels/ops.h"
#include "kv/kv_cache.h"
#include "model.h"

/* Scratch rows for up to max_batch_tokens entries (row-major, one row per
 * batch entry). */
typedef struct nc_fwd_bufs {
  float *x;    /* [T, n_embd] residual stream */
  float *xn;   /* [T, max(n_embd, n_head * head_dim_v)] normed / scratch */
  float *q;    /* [T, n_head * head_dim] */
  float *k;    /* [T, n_head_kv * head_dim] */
  float *v;    /* [T, n_head_kv * head_dim_v] */
  float *attn; /* [T, n_head * head_dim_v] */
  float *gate; /* [max(T, n_expert_used), max(n_ff, n_ff_exp)] */
  float *up;   /* [max(T, n_expert_used), max(n_ff, n_ff_exp)] */
  float *rope_cos, *rope_sin; /* [T, n_rot / 2]: per-row rope tables */
  /* mixture of experts (NULL when dense; nc_fwd_moe): router logits
   * [T, n_expert], chosen experts and their weights [T, n_expert_used],
   * the experts' outputs [T * n_expert_used, n_embd], for each (row, slot)
   * its row there [T * n_expert_used], and one expert's rows [T] */
  float *moe_logits, *moe_w, *moe_out;
  int32_t *moe_sel, *moe_at, *moe_rows;
  /* the same for sliding-window layers (gemma3's own base); NULL unless
   * the arch asks for them (NC_SCRATCH_SWA_ROPE, arch.h) */
  float *rope_cos_swa, *rope_sin_swa;
  /* gemma4: the per-layer inputs [T, n_layer * n_embd_per_layer] (NULL
   * without per-layer embeddings), and two more rows of the residual's
   * width [T, 2 * n_embd] (NC_SCRATCH_SIDE) */
  float *ple, *side;
  /* gated DeltaNet layers (NULL unless NC_SCRATCH_RECURRENT): the input
   * projection [T, conv_dim] (convolved in place), the gate z and the
   * heads' output [T, inner_size], beta and the decay [T, 2 x v heads];
   * attention with a gated query: q and its gate [T, 2 x n_head x head_dim];
   * NC_SCRATCH_SSM_PACKED: the packed projections [T, conv_dim + inner_size
   * + 2 x v heads] (nc_hp_ssm_packed_width) */
  float *ssm_mix, *ssm_z, *ssm_o, *ssm_bd, *qg, *ssm_packed;
  /* the MTP head (hparams.mtp; NULL without): its input rows, the normed
   * embedding and hidden state side by side [T, 2 n_embd], and a row of
   * the residual's width [T, n_embd] (arch_qwen35_mtp.c) */
  float *mtp_cat, *mtp_h;
} nc_fwd_bufs;

/* What the primitives run over: the model, the kernels chosen once, the
 * thread pool, the KV cache and the scratch memory, all set up (and freed)
 * by the context that owns it (context.c). */
typedef struct nc_fwd {
  const nucleus_model *m;
  const nc_hparams *hp;
  const nc_kernels *kern;
  const nc_attn_kernels *attn;
  const nc_ops_kernels *ops;
  nc_kv_cache *kv;
  nc_threadpool *tp;
  nc_fwd_bufs bufs;
  uint8_t *qact; /* quantized activation rows */
  size_t qact_bytes;
  uint8_t *qpack; /* the kernels' shared activation layout (grown on use) */
  size_t qpack_cap;
  float *f16tab;     /* [65536]: half bits -> float */
  nc_fp16 *gelu_f16; /* [NC_GELU_TABLE_ENTRIES]: half bits -> half of gelu-tanh
                        (ggml's) */
  float *att; /* per thread, for one GQA group's heads: scores, q, lanes */
  size_t att_stride, att_ss, att_ls; /* floats: per thread, score row, lanes */
  float *kv_row; /* max(dk, dv) floats: a K or V row being rotated */
  float *kt;     /* prefill: the batch sequence's keys, transposed */
  size_t kt_cap; /* floats */
  float *vw;     /* and its values, widened: one row of n_embd_v per position */
  size_t vw_cap; /* floats */
  int32_t n_ctx; /* 0, or the context one sequence may reach (nc_fwd_ctx_len) */
  /* flash attention (forward_flash.c): the build in use, NULL when off;
   * per-thread scratch of flash_stride bytes */
  const nc_attn_flash_kernels *flash;
  uint8_t *flash_mem;
  size_t flash_stride;
  /* the split order's chunk states of a decode batch, or the decode
   * passes' scores and weights (forward_flash_rows.c); grown on use */
  float *flash_split;
  size_t flash_split_cap; /* floats */
  /* The matmul order of each row of the x the next matmuls read: NC_MM_FEW
   * set (batch.h) where it takes the kernels' gemm_few; NULL: none does.
   * From the batch (nc_fwd_rows_begin), then the last layer's kept rows
   * (nc_fwd_keep_output_order) and the MoE's expert rows. few_rows and
   * few_tmp hold max_batch_tokens flags, few_exp max_batch_tokens times
   * n_expert_used (forward-internal). */
  const uint8_t *mm_few;
  uint8_t *few_rows, *few_tmp, *few_exp;
  /* The matmuls are a mixture's experts (forward_moe.c sets it around
   * them): llama.cpp multiplies those a row at a time (mul_mat_id's
   * vec_dot, never llamafile's tinyBLAS), so an F16 or F32 expert takes
   * the kernels' gemm_few (its one-row order) for every row. */
  bool mm_experts;
  /* Embedding mode (nc_context_embed): nc_fwd_head writes the rows' final
   * normed hidden states (n_embd floats each) instead of their logits. */
  bool embed_out;
  /* [max_seqs]: the length each sequence of the batch reaches with it
   * (the keys of a non-causal row: nc_fwd_keys); set by the context. */
  const int32_t *seq_end;
  /* NULL, or what is told each matmul's input (nc_context_set_observer) */
  const struct nc_fwd_observer *observer;
} nc_fwd;

/* An observer of the matmuls' inputs (nucleus imatrix): before each
 * matmul, on the thread that called the forward, matmul gets its weight
 * (an expert's slice: nc_weight_expert) and the rows of x it reads: row k
 * is x + idx[k] * x_stride (idx NULL: k). */
typedef struct nc_fwd_observer {
  void (*matmul)(void *arg, const nc_weight *w, const float *x,
                 int64_t x_stride, const int32_t *idx, int32_t rows);
  void *arg;
} nc_fwd_observer;

const nc_fwd_bufs *nc_fwd_scratch(nc_fwd *ctx);
const nucleus_model *nc_fwd_model(const nc_fwd *ctx);
/* The row ops build of the model's kernel table. */
const nc_ops_kernels *nc_fwd_ops(const nc_fwd *ctx);

/* One matmul of a group sharing the input: y[t * y_stride + r] = W_r . x_t
 * for every weight row r. */
typedef struct nc_mm {
  const nc_weight *w;
  float *y;
  int64_t y_stride;
} nc_mm;

/* Quantizes each of the rows of x (x_stride floats apart) once per distinct
 * vec_dot_type, then runs the n_mm (at most NC_FWD_MAX_MM) matmuls in one
 * parallel pass, threads splitting the output rows. */
#define NC_FWD_MAX_MM 8
void nc_fwd_matmul(nc_fwd *ctx, const float *x, int64_t x_stride, int32_t rows,
                   const nc_mm *mm, int n_mm);
/* As nc_fwd_matmul over the rows idx[0..rows) of x (output row k is input
 * row idx[k]); with idx NULL, rows 0..rows-1. Each output row is the value
 * nc_fwd_matmul gives that row alone. */
void nc_fwd_matmul_rows(nc_fwd *ctx, const float *x, int64_t x_stride,
                        const int32_t *idx, int32_t rows, const nc_mm *mm,
                        int n_mm);

/* mm[i] over row i of x alone (n_mm <= NC_FWD_MAX_MM rows), in one
 * parallel pass: the rows quantized once, threads splitting the output
 * rows of all the matmuls. Each output row is the value nc_fwd_matmul
 * gives that row alone. */
void nc_fwd_matmul_each(nc_fwd *ctx, const float *x, int64_t x_stride,
                        const nc_mm *mm, int n_mm);

/* The mixture-of-experts FFN of layer L (ffn_gate_inp, ffn_*_exps; as
 * llama.cpp's build_moe_ffn with SiLU experts, softmax gating and
 * normalised weights): per row, softmax of the router's logits, the top
 * n_expert_used experts (in order of probability), their probabilities
 * divided by their sum; y = sum over the chosen experts, in that order, of
 * weight * down(silu(gate x) * up x). The model's moe_gating
 * SOFTMAX_WEIGHT instead takes the top logits and a softmax over those
 * (no division), moe_act SWIGLU_OAI the clamped SwiGLU; the layer's
 * optional biases are added to the router's logits and to each expert's
 * gate, up and down (gpt-oss). The rows are grouped by expert, so each
 * expert's matrices are read once per call (nc_fwd_matmul_rows over its
 * rows). y may be x. */
void nc_fwd_moe(nc_fwd *ctx, const nc_layer_weights *L, const float *x,
                float *y, int32_t rows);
/* nc_fwd_moe's options (zero: nc_fwd_moe): the router reads router_x
 * instead of x (gemma4: the scaled residual); exp_scale[e] (n_expert
 * values) multiplies expert e's output before its weight. */
typedef struct nc_moe_opts {
  const float *router_x;
  const float *exp_scale;
} nc_moe_opts;
void nc_fwd_moe_ext(nc_fwd *ctx, const nc_layer_weights *L, const float *x,
                    float *y, int32_t rows, const nc_moe_opts *o);
/* The experts beside a shared one (qwen35moe, llama.cpp's qwen35moe FFN),
 * in place on the rows x [rows, n_embd]: x = moe(x) + sigmoid(g . x) *
 * down_shexp(silu(gate_shexp x) * up_shexp x), g the layer's
 * gate_inp_shexp. Uses the side buffer (NC_SCRATCH_SIDE) and gate / up of
 * n_ff_shexp. */
void nc_fwd_moe_shared(nc_fwd *ctx, const nc_layer_weights *L, float *x,
                       int32_t rows);

/* The context one sequence may reach (llama.cpp's n_ctx_seq, for
 * LongRoPE): the one set by nc_context_set_n_ctx, else the KV cache's
 * positions; at most the model's training context. */
int32_t nc_fwd_ctx_len(const nc_fwd *ctx);

/* Attention of one layer for the batch's rows: writes K and V (rope already
 * applied to k) into the KV cache at each row's (seq, pos), then for each
 * row and head: softmax(scale * q.K) over positions [0, pos] of the row's
 * sequence, times V, into out [T, n_head * head_dim_v]. */
void nc_fwd_attention(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                      const float *q, const float *k, const float *v,
                      float *out);

/* The K and V rows of the batch (rope already applied to k) into the KV
 * cache's layer at each row's (seq, pos), as nc_fwd_attention writes
 * them, without the attention (a layer whose output no row needs). */
void nc_fwd_kv_store(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                     const float *k, const float *v);

/* nc_fwd_attention with the options of sliding-window and soft-capped
 * layers (gemma): window > 0 limits the keys of a row at pos to positions
 * (pos - window, pos] (the others are masked, as llama.cpp's -inf mask:
 * the same bits as scoring them and masking); softcap > 0 maps each score
 * s to softcap * tanh(s / softcap) before the softmax. k and v NULL: the
 * layer's K and V at the batch's positions are in the cache already (a
 * gemma4 layer reading another's K/V): nothing is written. */
void nc_fwd_attention_ext(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                          const float *q, const float *k, const float *v,
                          float *out, int32_t window, float softcap);
/* nc_fwd_attention_ext with attention sinks (gpt-oss): sinks NULL, or
 * n_head learned logits, head h's in the denominator of its softmax only
 * (it has no value): the attention kernels' softmax sink, and in flash
 * attention folded in after the keys (nc_flash_fold_sink), as llama.cpp's
 * soft_max and flash paths take them. */
void nc_fwd_attention_sinks(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                            const float *q, const float *k, const float *v,
                            float *out, int32_t window, float softcap,
                            const float *sinks);
/* Flash attention (forward_flash.c, attn_flash.h) of the batch's rows over
 * K and V already in the cache: for the row at position p, the keys at
 * positions p0 <= p with p - p0 < n_swa (n_swa 0: every p0 <= p), scores
 * scaled by the model's attn_scale and soft-capped at softcap (0: none),
 * with the heads' sinks (NULL: none; nc_fwd_attention_sinks).
 * Needs ctx->flash; nc_fwd_attention calls it when flash attention is on.
 * Scratch per thread: nc_fwd_flash_scratch_bytes. */
void nc_fwd_attention_flash(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                            const float *q, float *out, int32_t n_swa,
                            float softcap, const float *sinks);
size_t nc_fwd_flash_scratch_bytes(const nc_hparams *hp);
/* The prompt order for the rows of a decode in passes over every thread
 * (forward_flash_rows.c), when it pays: single-row runs too few (times the
 * KV heads) for the threads, deep enough, F16 caches; false (nothing done)
 * otherwise. The same bits as nc_fwd_attention_flash's one item per run. */
bool nc_fwd_flash_rows(nc_fwd *ctx, int32_t layer, const nc_batch *b,
                       const float *q, float *out, int32_t n_swa, float softcap,
                       const float *sinks);

/* The row-wise steps between matmuls, over rows rows of n values (split
 * over the thread pool when there are enough rows; each row's result is the
 * same whoever computes it), with the row ops of the kernel table:
 * y = rmsnorm(x) * w (eps from the model); x += y (bias first added to y
 * when not NULL); RoPE of the rows' q and k heads in place with the
 * scratch's per-row tables (rope_cos/rope_sin); gate = silu(gate) * up. */
void nc_fwd_rmsnorm(nc_fwd *ctx, const float *x, const float *w, float *y,
                    int32_t rows, int64_t n);
void nc_fwd_residual(nc_fwd *ctx, float *x, float *y, const float *bias,
                     int32_t rows, int64_t n);
/* y = layernorm(x) * w + b per row (ggml_norm, ggml_mul, ggml_add; eps the
 * model's norm epsilon; the mean and variance summed in double). y may be
 * x. */
void nc_fwd_layernorm(nc_fwd *ctx, const float *x, const float *w,
                      const float *b, float *y, int32_t rows, int64_t n);
/* nc_fwd_residual (x += y, bias first added to y when not NULL), then
 * nc_fwd_layernorm of x in place, a few rows at a time (the same bits as
 * the two calls). */
void nc_fwd_residual_layernorm(nc_fwd *ctx, float *x, float *y,
                               const float *bias, const float *w,
                               const float *b, int32_t rows, int64_t n);
void nc_fwd_rope(nc_fwd *ctx, float *q, int64_t q_stride, float *k,
                 int64_t k_stride, int32_t rows);
void nc_fwd_swiglu(nc_fwd *ctx, float *gate, const float *up, int32_t rows,
                   int64_t n);
/* nc_fwd_rope with the given per-row tables (cos_c, sin_c: [rows, n_rot /
 * 2]) instead of the scratch's; k may be NULL (q alone), or q (k alone). */
void nc_fwd_rope_with(nc_fwd *ctx, float *q, int64_t q_stride, float *k,
                      int64_t k_stride, int32_t rows, const float *cos_c,
                      const float *sin_c);
/* Element-wise over rows * n contiguous values (split over the threads by
 * elements: each value's result is a function of it alone):
 * gate = gelu_tanh(gate) * up as ggml's GeGLU (gate rounded to F16 and
 * looked up in ggml's F16 GELU table for -10 < gate < 10, 0 below, gate
 * itself above); y *= s; y = cap * tanhf(y * (1 / cap)). */
void nc_fwd_geglu(nc_fwd *ctx, float *gate, const float *up, int32_t rows,
                  int64_t n);
/* y = gelu_tanh(y) as ggml_gelu (the same F16 table and bounds as
 * nc_fwd_geglu's gate), element-wise. */
void nc_fwd_gelu(nc_fwd *ctx, float *y, int32_t rows, int64_t n);
/* nc_fwd_add_bias, then nc_fwd_gelu, row by row (the same bits). */
void nc_fwd_bias_gelu(nc_fwd *ctx, float *y, const float *bias, int32_t rows,
                      int64_t n);
void nc_fwd_scale(nc_fwd *ctx, float *y, float s, int32_t rows, int64_t n);
/* x[t] += slice `slice` (n values from slice * n) of the input embedding
 * of each row t that has one (Qwen3-VL's DeepStack: an image row carries
 * n x (1 + n_deepstack) values, the first slice its input, slice l + 1
 * added after layer l); token rows add nothing (llama.cpp pads theirs
 * with zeros). */
void nc_fwd_add_input_slice(const nc_batch *b, float *x, int64_t n,
                            int32_t slice);
/* nc_fwd_scale of the batch's token rows of x only: an input embedding
 * keeps its scale (llama.cpp scales token embeddings, not an image's). */
void nc_fwd_scale_tokens(nc_fwd *ctx, const nc_batch *b, float *x, float s,
                         int64_t n);
/* gpt-oss's clamped SwiGLU, as ggml's swiglu_oai: per value, x = min(gate,
 * limit), y = up clamped to [-limit, limit], gate = x / (1 + expf(alpha *
 * -x)) * (y + 1) (llama.cpp: alpha 1.702, limit 7). */
#define NC_SWIGLU_OAI_ALPHA 1.702f
#define NC_SWIGLU_OAI_LIMIT 7.0f
void nc_fwd_swiglu_oai(nc_fwd *ctx, float *gate, const float *up, int32_t rows,
                       int64_t n);
void nc_fwd_softcap(nc_fwd *ctx, float *y, float cap, int32_t rows, int64_t n);
/* Fills tab[65536] with ggml's F16 GELU table: for each half h, the half
 * of 0.5 x (1 + tanh(sqrt(2 / pi) x (1 + 0.044715 x^2))), x = h's value. */
void nc_fwd_gelu_table(nc_fp16 *tab);
/* The rows of an embedding table (n values each) of the batch's tokens,
 * dequantized into x (b->n_tokens rows of n); a row with an input
 * embedding (nc_batch_set_input: an image's) takes that one instead. */
void nc_fwd_embed(const nc_weight *table, const nc_batch *b, float *x,
                  int64_t n);
/* RoPE's cos/sin rows (half values each) of the batch's positions, with
 * the file's frequency factors ff (NULL: none); with M-RoPE
 * (rope->mrope) of the rows' (t, h, w, e) positions (b->rope_pos). */
void nc_fwd_rope_rows(const nc_batch *b, const nc_rope_params *rope,
                      const float *ff, float *cos, float *sin, int32_t half);
/* y += bias for each of rows rows of n values. */
void nc_fwd_add_bias(nc_fwd *ctx, float *y, const float *bias, int32_t rows,
                     int64_t n);

/* The keys of its sequence that row t of the batch attends to:
 * positions [*lo, *hi). Causal (the default): up to its own position, and
 * with window > 0 (a sliding-window layer) the window positions up to it.
 * Non-causal (hp->non_causal): every position of the sequence up to the
 * length it reaches with this batch (ctx->seq_end), a window taking those
 * within window - 1 before it, or with hp->swa_symmetric those within
 * window / 2 either side (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC). */
void nc_fwd_keys(const nc_fwd *ctx, const nc_batch *b, int32_t t,
                 int32_t window, int32_t *lo, int32_t *hi);

/* The graph's head, for the rows rows of xn (the output-normed final
 * hidden states, n_embd floats each, the rows with want_logits in batch
 * order): their logits through the output matrix into out ([rows,
 * n_vocab]), returning true; in embedding mode (ctx->embed_out) xn's rows
 * copied into out ([rows, n_embd]), returning false (a graph applies its
 * logit soft cap only when it returns true). */
bool nc_fwd_head(nc_fwd *ctx, const float *xn, int32_t rows,
                 const nc_weight *output, float *out);

/* The last layer after its attention, as llama.cpp's (inp_out_ids): only
 * the rows whose logits are wanted go on. Moves those rows of x (rows of n
 * floats, one per batch entry) to the front, in batch order, and returns
 * how many there are. */
int32_t nc_fwd_keep_output_rows(const nc_batch *b, float *x, int64_t n);
/* The matmul orders of the batch's rows (every arch's forward begins
 * with it), and in the last layer of its kept rows: out false for the
 * attention output's projection (as the whole micro-batch in llama.cpp,
 * which drops the rows without logits after it), true for the FFN and the
 * output head (as its rows with logits, NC_MM_OUT_FEW). */
void nc_fwd_rows_begin(nc_fwd *ctx, const nc_batch *b);
void nc_fwd_keep_output_order(nc_fwd *ctx, const nc_batch *b, bool out);

/* The gated DeltaNet block of recurrent layer L (llama.cpp's qwen35
 * build_layer_attn_linear with its fused gated delta net; qwen3next's) for
 * the batch's rows, from the normed input xn [T, n_embd] to its output
 * projection in out [T, n_embd]: projections (q k v mixed, z, beta, alpha;
 * qwen3next's packed ones sorted into that order); per row, in
 * the order of its sequence's positions, the causal convolution over the
 * sequence's last conv_kernel inputs (kept in its state) and SiLU; q and k
 * L2-normed per head; beta = sigmoid, decay = exp(softplus(alpha + dt) a);
 * the delta rule on the sequence's state of each value head (reading key
 * head h % k heads, or h / (v / k heads): hp->ssm_k_grouped); RMSNorm
 * (ssm_norm) of each head's output times silu(z); the output projection. The
 * states advance in the sequences' slots (nc_kv_seq_state). forward_delta.c. */
void nc_fwd_gated_delta_net(nc_fwd *ctx, const nc_layer_weights *L,
                            const nc_batch *b, const float *xn, float *out);

/* Runs fn(arg, ith, nth) on the context's thread pool. */
void nc_fwd_parallel(nc_fwd *ctx, nc_task_fn fn, void *arg);

#endif
