/* mmproj_load_util: the projector loader's shared pieces (declared in
 * mmproj_load_internal.h): the buffers a projector owns, its keys, its
 * tensors with their shapes and types checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gguf/quant.h"
#include "mmproj_load_internal.h"

void *nc_mmproj_keep(nucleus_mmproj *mm, void *p) {
  if (!p) return NULL;
  if (mm->n_owned == mm->cap_owned) {
    int32_t cap = mm->cap_owned ? 2 * mm->cap_owned : 64;
    void **grown = realloc(mm->owned, (size_t)cap * sizeof *grown);
    if (!grown) {
      free(p);
      return NULL;
    }
    mm->owned = grown;
    mm->cap_owned = cap;
  }
  mm->owned[mm->n_owned++] = p;
  return p;
}

/* ---- keys */

nc_code nc_mmproj_get_u32(const gguf_file *f, const char *key, bool required,
                          int64_t lo, int64_t hi, int32_t *out, nc_error *err) {
  int64_t v;
  if (!gguf_get_i64(f, key, &v)) {
    if (gguf_find_key(f, key) >= 0)
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: key '%s' is not an integer (one in [%lld, "
                     "%lld])",
                     key, (long long)lo, (long long)hi);
    if (!required) return NC_OK;
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: key '%s' is missing (an integer in [%lld, %lld])",
                   key, (long long)lo, (long long)hi);
  }
  if (v < lo || v > hi)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: key '%s' is %lld, must be in [%lld, %lld]", key,
                   (long long)v, (long long)lo, (long long)hi);
  *out = (int32_t)v;
  return NC_OK;
}

nc_code nc_mmproj_get_floats3(const gguf_file *f, const char *key, float *out,
                              bool nonzero, nc_error *err) {
  gguf_value_type t;
  uint64_t n;
  if (!gguf_get_arr(f, key, &t, &n) || n < 3)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: key '%s' must be an array of at least 3 numbers",
                   key);
  for (uint64_t i = 0; i < 3; i++) {
    double v;
    if (!gguf_get_arr_f64(f, key, i, &v) || !isfinite(v) || (nonzero && v == 0))
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: key '%s' element %llu must be a finite%s "
                     "number",
                     key, (unsigned long long)i, nonzero ? ", non-zero" : "");
    out[i] = (float)v;
  }
  return NC_OK;
}

/* ---- tensors */

static void shape_text(const gguf_tensor_info *t, char *buf, size_t cap) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (uint32_t d = 0; d < t->n_dims && k < cap; d++)
    k += (size_t)snprintf(buf + k, cap - k, d ? ", %lld" : "%lld",
                          (long long)t->ne[d]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* The tensor called name with ne = {n0, n1, n2, n3} (1 for unused
 * dimensions); NULL in *out when absent and not required. */
nc_code nc_mmproj_find(const nucleus_mmproj *mm, const char *name,
                       bool required, int64_t n0, int64_t n1, int64_t n2,
                       int64_t n3, const gguf_tensor_info **out,
                       nc_error *err) {
  *out = NULL;
  const gguf_tensor_info *t = gguf_find_tensor(mm->file, name);
  if (!t) {
    if (!required) return NC_OK;
    return nc_fail(err, NC_ERR_FORMAT, "mmproj: tensor '%s' is missing", name);
  }
  const int64_t want[4] = {n0, n1, n2, n3};
  for (int d = 0; d < 4; d++) {
    const int64_t have = d < (int)t->n_dims ? t->ne[d] : 1;
    if (have != want[d]) {
      char s[96];
      shape_text(t, s, sizeof s);
      return nc_fail(err, NC_ERR_FORMAT,
                     "mmproj: tensor '%s' has shape %s, expected [%lld, %lld, "
                     "%lld, %lld] (ggml order)",
                     name, s, (long long)n0, (long long)n1, (long long)n2,
                     (long long)n3);
    }
  }
  *out = t;
  return NC_OK;
}

/* A vector (norm, bias, positions) of n0 x n1 elements as F32: the file's
 * data when F32, else a dequantized copy (any type the file reader takes:
 * Q8_0 files quantize the positions too). */
nc_code nc_mmproj_vector(nucleus_mmproj *mm, const char *name, bool required,
                         int64_t n0, int64_t n1, const float **out,
                         nc_error *err) {
  *out = NULL;
  const gguf_tensor_info *t;
  nc_code rc = nc_mmproj_find(mm, name, required, n0, n1, 1, 1, &t, err);
  if (rc != NC_OK || !t) return rc;
  if (t->type == NC_TYPE_F32) {
    *out = t->data;
    return NC_OK;
  }
  float *v = nc_mmproj_keep(mm, malloc((size_t)(n0 * n1) * sizeof *v));
  if (!v) return nc_fail(err, NC_ERR_NOMEM, "mmproj: out of memory");
  nc_dequantize_row((nc_type)t->type, t->data, v, n0 * n1);
  *out = v;
  return NC_OK;
}

nc_code nc_mmproj_check_matmul_type(const nucleus_mmproj *mm, const char *name,
                                    nc_type type, int64_t ne0, nc_error *err) {
  const nc_type_traits *tr = nc_type_traits_of(type);
  if (!tr || !mm->kern->vec_dot[type] ||
      !mm->kern->quantize_act[tr->vec_dot_type])
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "mmproj: tensor '%s' has type %s, which the %s kernels "
                   "cannot multiply",
                   name, nc_type_name(type), mm->kern->name);
  if (ne0 % tr->block_size != 0 ||
      ne0 % nc_type_traits_of(tr->vec_dot_type)->block_size != 0)
    return nc_fail(err, NC_ERR_FORMAT,
                   "mmproj: tensor '%s' of type %s has rows of %lld "
                   "elements, not a multiple of its block size %lld",
                   name, nc_type_name(type), (long long)ne0,
                   (long long)tr->block_size);
  return NC_OK;
}

nc_weight nc_mmproj_weight_of(const gguf_tensor_info *t, int64_t ne0,
                              int64_t ne1) {
  nc_weight w = {.data = t->data,
                 .type = (nc_type)t->type,
                 .ne0 = ne0,
                 .ne1 = ne1,
                 .ne2 = 1,
                 .row_bytes = nc_row_size((nc_type)t->type, ne0),
                 .name = t->name};
  return w;
}

/* A matrix [n_in -> n_out] (ggml ne {n_in, n_out}). */
nc_code nc_mmproj_matrix(nucleus_mmproj *mm, const char *name, int64_t n_in,
                         int64_t n_out, nc_weight *out, nc_error *err) {
  const gguf_tensor_info *t;
  nc_code rc = nc_mmproj_find(mm, name, true, n_in, n_out, 1, 1, &t, err);
  if (rc == NC_OK)
    rc = nc_mmproj_check_matmul_type(mm, name, (nc_type)t->type, n_in, err);
  if (rc != NC_OK) return rc;
  *out = nc_mmproj_weight_of(t, n_in, n_out);
  return NC_OK;
}
