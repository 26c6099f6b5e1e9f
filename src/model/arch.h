/* arch: what differs between model architectures. Each arch_<name>.c
 * defines one nc_arch: its extra hyperparameters, its tensors and its
 * forward graph (built from the primitives of forward.h). */
#ifndef NC_ARCH_H
#define NC_ARCH_H

#include "batch.h"
#include "gguf/gguf.h"
#include "model.h"
#include "base/status.h"

typedef struct nc_fwd nc_fwd;

typedef struct nc_arch {
  const char *name; /* general.architecture */
  int rope_type;
  /* Checks and completes hp after the generic keys were read. */
  nc_code (*check_hparams)(const gguf_file *f, nc_hparams *hp, nc_error *err);
  /* Fills w (allocating w->layers) from the file, checking every shape. */
  nc_code (*load_weights)(const gguf_file *f, const nc_hparams *hp,
                          const nc_kernels *kern, nc_model_weights *w,
                          nc_error *err);
  /* Runs one batch (already validated by the context). */
  nc_code (*forward)(nc_fwd *ctx, const nc_batch *b, float *logits,
                     nc_error *err);
} nc_arch;

extern const nc_arch nc_arch_llama;
extern const nc_arch nc_arch_qwen2;
extern const nc_arch nc_arch_qwen3;
extern const nc_arch nc_arch_phi3;
extern const nc_arch nc_arch_qwen3moe;
extern const nc_arch nc_arch_gemma2;
extern const nc_arch nc_arch_gemma3;

/* The supported architectures (model.c's table), i < nc_arch_count(). */
size_t nc_arch_count(void);
const nc_arch *nc_arch_at(size_t i);

/* The arch of a loaded model. */
const nc_arch *nc_model_arch(const nucleus_model *m);

/* The arch named name (len bytes), or NULL. */
const nc_arch *nc_arch_find(const char *name, size_t len);

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
/* Reads the metadata integer {arch}.suffix (which may be a per-layer array
 * of equal values) into *out, refusing values outside [lo, hi] with a
 * message naming the key; *found (may be NULL) says whether it was there. */
nc_code nc_meta_int(const gguf_file *f, const char *arch, const char *suffix,
                    bool required, int64_t lo, int64_t hi, int32_t *out,
                    bool *found, nc_error *err);
/* The same for a finite number. */
nc_code nc_meta_float(const gguf_file *f, const char *arch, const char *suffix,
                      bool required, float *out, bool *found, nc_error *err);

#endif
