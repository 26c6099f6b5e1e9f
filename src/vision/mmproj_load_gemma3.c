/* mmproj_load_gemma3: Gemma 3's part of the loader (its input projection,
 * kept transposed). */
#include <stdlib.h>
#include <string.h>

#include "gguf/quant.h"
#include "mmproj_load_internal.h"

/* Gemma 3's mm.input_projection.weight is [n_embd_text, n_embd] in ggml
 * order (llama.cpp multiplies its transpose): kept here transposed, as
 * n_embd_text rows of n_embd, in its own type (F32, F16 or BF16). */
nc_code nc_mmproj_load_input_proj(nucleus_mmproj *mm, nc_error *err) {
  const char *name = "mm.input_projection.weight";
  const int64_t E = mm->n_embd, T = mm->n_embd_text;
  const gguf_tensor_info *t;
  nc_code rc = nc_mmproj_find(mm, name, true, T, E, 1, 1, &t, err);
  if (rc != NC_OK) return rc;
  if (t->type != NC_TYPE_F32 && t->type != NC_TYPE_F16 &&
      t->type != NC_TYPE_BF16)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: tensor '%s' has type %s, expected F32, F16 or "
                   "BF16",
                   name, nc_type_name(t->type));
  rc = nc_mmproj_check_matmul_type(mm, name, (nc_type)t->type, E, err);
  if (rc != NC_OK) return rc;
  const size_t es = t->type == NC_TYPE_F32 ? 4 : 2;
  uint8_t *tr = nc_mmproj_keep(mm, malloc((size_t)(T * E) * es));
  if (!tr) return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  const uint8_t *src = t->data;
  for (int64_t e = 0; e < E; e++)
    for (int64_t o = 0; o < T; o++)
      memcpy(tr + ((size_t)o * E + e) * es, src + ((size_t)e * T + o) * es, es);
  mm->input_proj = nc_mmproj_weight_of(t, E, T);
  mm->input_proj.data = tr;
  return NC_OK;
}
