/* mmproj_load_internal: the projector loader's parts across its files:
 * the shared pieces (mmproj_load_util.c: owned buffers, keys, tensors with
 * their shapes and types checked), the hyperparameters (mmproj_hparams.c)
 * and each family's tensors (mmproj_load_<family>.c), which mmproj_load.c
 * calls. */
#ifndef NC_MMPROJ_LOAD_INTERNAL_H
#define NC_MMPROJ_LOAD_INTERNAL_H

#include "mmproj_internal.h"

enum {
  MAX_VIT_EMBD = 16384,
  MAX_VIT_FF = 65536,
  MAX_VIT_LAYERS = 256,
  MAX_VIT_HEADS = 256,
  MAX_IMAGE_SIZE = 4096,
  MAX_MERGE = 64,
  MAX_POS_TABLE = 65536, /* gemma4v's position tables */
};

/* ---- mmproj_load_util.c */

/* p, freed with the projector; NULL (p freed) when out of memory. */
void *nc_mmproj_keep(nucleus_mmproj *mm, void *p);
/* The integer key in [lo, hi] into *out; absent: an error if required,
 * else *out untouched. */
nc_code nc_mmproj_get_u32(const gguf_file *f, const char *key, bool required,
                          int64_t lo, int64_t hi, int32_t *out, nc_error *err);
/* The first 3 numbers of the array key (finite; nonzero: not 0). */
nc_code nc_mmproj_get_floats3(const gguf_file *f, const char *key, float *out,
                              bool nonzero, nc_error *err);
/* The tensor called name with ne {n0, n1, n2, n3} (1 for unused
 * dimensions); NULL in *out when absent and not required. */
nc_code nc_mmproj_find(const nucleus_mmproj *mm, const char *name,
                       bool required, int64_t n0, int64_t n1, int64_t n2,
                       int64_t n3, const gguf_tensor_info **out, nc_error *err);
/* A vector of n0 x n1 as F32 (the file's data, or a dequantized copy). */
nc_code nc_mmproj_vector(nucleus_mmproj *mm, const char *name, bool required,
                         int64_t n0, int64_t n1, const float **out,
                         nc_error *err);
/* Whether the kernels multiply type (rows of ne0 elements). */
nc_code nc_mmproj_check_matmul_type(const nucleus_mmproj *mm, const char *name,
                                    nc_type type, int64_t ne0, nc_error *err);
/* The weight of tensor t as a matmul [ne0 -> ne1]. */
nc_weight nc_mmproj_weight_of(const gguf_tensor_info *t, int64_t ne0,
                              int64_t ne1);
/* A matrix [n_in -> n_out] (ggml ne {n_in, n_out}), its type checked. */
nc_code nc_mmproj_matrix(nucleus_mmproj *mm, const char *name, int64_t n_in,
                         int64_t n_out, nc_weight *out, nc_error *err);

/* ---- mmproj_hparams.c */

/* The keys, checked against each other and mm->lm. */
nc_code nc_mmproj_load_hparams(nucleus_mmproj *mm, nc_error *err);

/* ---- mmproj_load_qwen.c */

/* The hyperparameters' parts (nc_mmproj_load_hparams), then the tensors
 * past the layers (mmproj_load.c). */
nc_code nc_mmproj_load_deepstack_flags(nucleus_mmproj *mm, nc_error *err);
nc_code nc_mmproj_load_windows(nucleus_mmproj *mm, nc_error *err);
nc_code nc_mmproj_load_qwen3vl(nucleus_mmproj *mm, nc_error *err);
nc_code nc_mmproj_load_qwen2vl(nucleus_mmproj *mm, nc_error *err);

/* ---- mmproj_load_gemma3.c */

nc_code nc_mmproj_load_input_proj(nucleus_mmproj *mm, nc_error *err);

/* ---- mmproj_load_gemma4v.c */

/* Layer il's parts beyond the common ones, the position tables, the
 * tensors past the layers. */
nc_code nc_mmproj_load_gemma4v_layer(nucleus_mmproj *mm, int32_t il,
                                     nc_error *err);
nc_code nc_mmproj_load_gemma4v_positions(nucleus_mmproj *mm, nc_error *err);
nc_code nc_mmproj_load_gemma4v(nucleus_mmproj *mm, nc_error *err);

#endif
