/* quantize_recipe: which type each tensor of a model gets for a file type
 * (Q4_K_M and the like), as llama.cpp's quantizer chooses them without an
 * importance matrix: its per-tensor rules (output and tied token
 * embeddings, attn_v and ffn_down in "more bits" layers, ...) and its
 * fallbacks for rows that are not whole blocks. Internal to src/quantize/. */
#ifndef NC_QUANTIZE_RECIPE_H
#define NC_QUANTIZE_RECIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "iq_lattice.h"

/* A file type: the name llama-quantize takes, llama.cpp's llama_ftype id
 * (general.file_type) and the type most matrices get. */
typedef struct nc_ftype {
  const char *name;
  uint32_t id;
  nc_type base;
} nc_ftype;

/* The file type named name (case-insensitive; "Q4_K" and "Q5_K" are the
 * _M mixes, as in llama-quantize); NULL when unknown. */
const nc_ftype *nc_ftype_by_name(const char *name);
/* The names this build writes, ", "-separated (for messages and --help). */
const char *nc_ftype_names(void);

/* The tensors of a file in llama.cpp's order (by layer number, those
 * outside a layer first, then by name) with the type each gets. */
typedef struct nc_recipe_entry {
  const gguf_tensor_info *tensor;
  nc_type type;
  /* its importance weights (ne0 per expert), or NULL: set by the caller */
  const float *imatrix;
  /* the search table of type's codebook (lattice types), or NULL: set by
   * the caller */
  const nc_iq_lattice *lattice;
} nc_recipe_entry;

/* Fills out[gguf_tensor_count(f)] for ftype (has_imatrix: the rules
 * llama.cpp applies when an importance matrix is given); an error names a
 * tensor whose type cannot be written (a fallback type this build has no
 * quantizer for). */
nc_code nc_quantize_recipe(const gguf_file *f, const nc_ftype *ftype,
                           bool has_imatrix, nc_recipe_entry *out,
                           nc_error *err);

#endif
