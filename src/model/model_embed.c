/* model_embed: the embedding facts and heads of a model file, as
 * llama.cpp's loader reads them (pooling_type, attention.causal,
 * classifier.output_labels; cls, cls.output, dense_2, dense_3). */
#include "model_embed.h"

#include <stdio.h>

#include "arch.h"
#include "pooling.h"

nc_code nc_model_embed_hparams(const gguf_file *f, const char *arch,
                               bool arch_non_causal, nc_hparams *hp,
                               nc_error *err) {
  char key[128];
  hp->non_causal = arch_non_causal;
  snprintf(key, sizeof key, "%s.attention.causal", arch);
  if (gguf_find_key(f, key) >= 0) {
    bool causal;
    if (!gguf_get_bool(f, key, &causal))
      return nc_fail(err, NC_ERR_FORMAT, "metadata '%s' is not a boolean", key);
    hp->non_causal = !causal;
  }
  hp->pooling = NC_POOLING_NONE;
  return nc_meta_int(f, arch, "pooling_type", false, 0, NC_POOLING_COUNT - 1,
                     &hp->pooling, NULL, err);
}

/* The row count (ne[1]) of an optional 2-D tensor, 0 when absent. */
static int64_t rows_of(const gguf_file *f, const char *name) {
  const gguf_tensor_info *t = gguf_find_tensor(f, name);
  return t ? t->ne[1] : 0;
}

nc_code nc_model_embed_heads(const gguf_file *f, const char *arch,
                             const nc_kernels *kern, nc_hparams *hp,
                             nc_model_weights *w, nc_error *err) {
  const int64_t E = hp->n_embd;
  const int64_t BIG = 1 << 24;
  char key[128];
  snprintf(key, sizeof key, "%s.classifier.output_labels", arch);
  gguf_value_type et;
  uint64_t n_labels = 0;
  const bool labels = gguf_get_arr(f, key, &et, &n_labels);
  const int64_t n_out = rows_of(f, "cls.output.weight");
  if (labels && (n_labels < 1 || n_labels > 4096))
    return nc_fail(err, NC_ERR_FORMAT,
                   "metadata '%s' has %llu labels, expected [1, 4096]", key,
                   (unsigned long long)n_labels);
  if (labels && n_out && (uint64_t)n_out != n_labels)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor 'cls.output.weight' has %lld rows but '%s' names "
                   "%llu labels",
                   (long long)n_out, key, (unsigned long long)n_labels);
  if (n_out < 0 || n_out > 4096)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor 'cls.output.weight' has %lld rows, expected [1, "
                   "4096]",
                   (long long)n_out);
  hp->n_cls_out = (int32_t)(n_out ? n_out : 0);
  const int64_t d2 = rows_of(f, "dense_2.weight");
  if (d2 < 0 || d2 > BIG)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor 'dense_2.weight' has %lld rows, expected [1, %lld]",
                   (long long)d2, (long long)BIG);
  const int64_t d3 = rows_of(f, "dense_3.weight");
  if (d3 < 0 || d3 > BIG)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor 'dense_3.weight' has %lld rows, expected [1, %lld]",
                   (long long)d3, (long long)BIG);
  const int64_t d3_in = d2 ? d2 : E;
  nc_code rc;
  if ((rc = nc_weight_load_matrix(f, "cls.weight", E, E, false, kern, &w->cls,
                                  err)) ||
      (rc = nc_weight_load(f, "cls.bias", E, 1, false, kern, &w->cls_b, err)))
    return rc;
  if (n_out && ((rc = nc_weight_load_matrix(f, "cls.output.weight", E, n_out,
                                            true, kern, &w->cls_out, err)) ||
                (rc = nc_weight_load(f, "cls.output.bias", n_out, 1, false,
                                     kern, &w->cls_out_b, err))))
    return rc;
  if (d2 && ((rc = nc_weight_load_matrix(f, "dense_2.weight", E, d2, true, kern,
                                         &w->dense_2, err)) ||
             (rc = nc_weight_load(f, "dense_2.bias", d2, 1, false, kern,
                                  &w->dense_2_b, err))))
    return rc;
  if (d3 && (rc = nc_weight_load_matrix(f, "dense_3.weight", d3_in, d3, true,
                                        kern, &w->dense_3, err)))
    return rc;
  if (w->cls_b.data && !w->cls.data)
    return nc_fail(err, NC_ERR_FORMAT,
                   "tensor 'cls.bias' without 'cls.weight'");
  hp->n_embd_out = (int32_t)(d3 ? d3 : d2 ? d2 : E);
  return NC_OK;
}
