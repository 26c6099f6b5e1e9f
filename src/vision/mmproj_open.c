/* mmproj_open: a projector file opened for a loaded language model (what
 * nc_mmproj_load_gguf needs of it, taken from the model). */
#include <string.h>

#include "mmproj.h"

nc_code nc_mmproj_load(const char *path, const nucleus_model *model,
                       nc_file_load how, int n_threads, nucleus_mmproj **out,
                       nc_error *err) {
  *out = NULL;
  if (!path)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "mmproj path is NULL");
  if (!model)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "an mmproj needs its language model (NULL given)");
  const nc_mmproj_lm lm = {
      .arch = nc_model_arch_name(model),
      .n_embd = nc_model_hparams(model)->n_embd,
      .n_deepstack = nc_model_hparams(model)->n_deepstack,
      .kern = nc_model_kernels(model),
      .n_threads = n_threads > 0 ? n_threads : nc_model_n_threads(model),
      .flash = nc_model_flash_attn(model),
  };
  gguf_file *file = NULL;
  nc_code rc = gguf_open_load(path, how, &file, err);
  if (rc != NC_OK) {
    if (err && strncmp(err->message, "mmproj", 6) != 0)
      nc_error_prefix(err, "mmproj");
    return rc;
  }
  return nc_mmproj_load_gguf(file, &lm, out, err);
}
