/* arch: what differs between model architectures. Each archs/arch_<name>.c
 * defines one nc_arch: its extra hyperparameters, its tensors, its forward
 * graph (built from the primitives of forward.h) and the facts other
 * modules need about it; archs/list.h registers it (docs/ADDING_AN_ARCH.md). */
#ifndef NC_ARCH_H
#define NC_ARCH_H

#include "archs/list.h"
#include "base/status.h"
#include "batch.h"
#include "gguf/gguf.h"
#include "model.h"

typedef struct nc_fwd nc_fwd;

/* The scratch buffers (forward.h's nc_fwd_bufs) an arch's graph uses beyond
 * those every graph has; the context allocates only the ones asked for (the
 * mixture-of-experts buffers follow the file's expert_count instead). */
enum {
  /* rope_{cos,sin}_swa: a second RoPE table, for sliding-window layers */
  NC_SCRATCH_SWA_ROPE = 1u << 0,
  /* side: [T, 2 * n_embd] (gemma4's experts beside its dense FFN) */
  NC_SCRATCH_SIDE = 1u << 1,
  /* ssm_*, qg: gated DeltaNet layers and gated-query attention (qwen35) */
  NC_SCRATCH_RECURRENT = 1u << 2,
  /* ssm_packed: the DeltaNet projections as packed per key head, before
   * they are sorted into ssm_* (qwen3next; with NC_SCRATCH_RECURRENT) */
  NC_SCRATCH_SSM_PACKED = 1u << 3,
};

typedef struct nc_arch {
  const char *name; /* general.architecture (unique in the list) */
  /* The Hugging Face class (config.json's "architectures", SGLang's
   * /model_info), and the class of its files with experts where that is
   * another one (llama: MixtralForCausalLM); NULL: hf_class. */
  const char *hf_class;
  const char *hf_class_moe;
  /* Its forward family: the archs of one family share one graph builder
   * and one test reference (tests/reference/forward_ref_<family>.c):
   * "llama" or "gemma". */
  const char *family;
  /* The built-in chat template (chat/chat_template_builtin.h: "gemma",
   * "gemma4", "chatml", "llama3") for its files that carry none; NULL: chosen
   * by the vocabulary's special tokens. */
  const char *chat_template;
  unsigned scratch; /* NC_SCRATCH_* bits */
  /* feed_forward_length and attention.head_count_kv may be per-layer
   * arrays of differing values (the generic reader takes layer 0's; its
   * check_hparams the rest) */
  bool layer_arrays;
  int rope_type;
  /* Its attention sees the whole sequence (an encoder: bert,
   * gemma-embedding), not only the positions up to a row's own; a file's
   * {arch}.attention.causal overrides it (nc_hparams.non_causal). */
  bool non_causal;
  /* It has no LM head (an encoder): nc_context_forward refuses it, only
   * embedding mode (nc_context_embed) runs it. */
  bool embedding_only;
  /* Checks and completes hp after the generic keys were read. */
  nc_code (*check_hparams)(const gguf_file *f, nc_hparams *hp, nc_error *err);
  /* Fills w (allocating w->layers) from the file, checking every shape. */
  nc_code (*load_weights)(const gguf_file *f, const nc_hparams *hp,
                          const nc_kernels *kern, nc_model_weights *w,
                          nc_error *err);
  /* Runs one batch (already validated by the context). Its head is
   * nc_fwd_head (forward.h): the logits of the rows with want_logits, or in
   * embedding mode their final normed hidden states. */
  nc_code (*forward)(nc_fwd *ctx, const nc_batch *b, float *logits,
                     nc_error *err);
  /* The MTP head alone (NULL: the arch has none; nc_context_mtp): for each
   * row its token and h_in's row (n_embd floats: the hidden state of the
   * position before) through the head: its final normed hidden state into
   * h_out and its logits into logits (every row; [rows, n_vocab]). */
  nc_code (*forward_mtp)(nc_fwd *ctx, const nc_batch *b, const float *h_in,
                         float *h_out, float *logits, nc_error *err);
} nc_arch;

/* nc_arch_<id> of every X(id) of archs/list.h */
#define NC_ARCH_DECLARE(id) extern const nc_arch nc_arch_##id;
NC_ARCH_LIST(NC_ARCH_DECLARE)
#undef NC_ARCH_DECLARE

/* The supported architectures (archs/list.h's order), i < nc_arch_count(). */
size_t nc_arch_count(void);
const nc_arch *nc_arch_at(size_t i);

/* The arch of a loaded model. */
const nc_arch *nc_model_arch(const nucleus_model *m);

/* The arch named name (len bytes), or NULL. */
const nc_arch *nc_arch_find(const char *name, size_t len);

/* The Hugging Face class of a's files of hyperparameters hp (hf_class, or
 * hf_class_moe for a file with experts); NULL when a is NULL. */
const char *nc_arch_hf_class(const nc_arch *a, const nc_hparams *hp);

/* Loads one weight tensor and checks it: name, shape {ne0, ne1} (ne1 = 1
 * for a vector), and that a vector is F32 and a matrix has a dot kernel.
 * An absent optional tensor leaves out->data NULL. */
nc_code nc_weight_load(const gguf_file *f, const char *name, int64_t ne0,
                       int64_t ne1, bool required, const nc_kernels *kern,
                       nc_weight *out, nc_error *err);

/* As nc_weight_load for a 3-D tensor {ne0, ne1, ne2} (ne2 matrices of ne1
 * rows: the experts of a mixture-of-experts layer). */
nc_code nc_weight_load3(const gguf_file *f, const char *name, int64_t ne0,
                        int64_t ne1, int64_t ne2, bool required,
                        const nc_kernels *kern, nc_weight *out, nc_error *err);
/* The experts' gate and up of layer l ({ne0 -> ff} each, n_expert of
 * them): blk.l.ffn_gate_up_exps {ne0, 2 ff, n_expert} where the file has
 * it (newer converters: per expert its ff gate rows, then its ff up rows;
 * gate and up are views of its two halves, no copy), else
 * blk.l.ffn_gate_exps and blk.l.ffn_up_exps. */
nc_code nc_weight_load_gate_up_exps(const gguf_file *f, int32_t l, int64_t ne0,
                                    int64_t ff, int64_t n_expert,
                                    const nc_kernels *kern, nc_weight *gate,
                                    nc_weight *up, nc_error *err);
/* As nc_weight_load for a matrix that may have a single row (a rank head
 * of one output): of any type with a dot kernel, not only F32. */
nc_code nc_weight_load_matrix(const gguf_file *f, const char *name, int64_t ne0,
                              int64_t ne1, bool required,
                              const nc_kernels *kern, nc_weight *out,
                              nc_error *err);
/* Reads the metadata integer {arch}.suffix (which may be a per-layer array
 * of equal values) into *out, refusing values outside [lo, hi] with a
 * message naming the key; *found (may be NULL) says whether it was there. */
nc_code nc_meta_int(const gguf_file *f, const char *arch, const char *suffix,
                    bool required, int64_t lo, int64_t hi, int32_t *out,
                    bool *found, nc_error *err);
/* The same for layer `layer` of a per-layer array (a scalar is every
 * layer's value; layer < 0: as nc_meta_int). */
nc_code nc_meta_int_layer(const gguf_file *f, const char *arch,
                          const char *suffix, int32_t layer, bool required,
                          int64_t lo, int64_t hi, int32_t *out, bool *found,
                          nc_error *err);
/* The same for a finite number. */
nc_code nc_meta_float(const gguf_file *f, const char *arch, const char *suffix,
                      bool required, float *out, bool *found, nc_error *err);

#endif
