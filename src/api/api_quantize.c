/* nucleus_quantize: a model file quantized to a file type (src/quantize/). */
#include "nucleus.h"
#include "quantize/quantize.h"

nucleus_status nucleus_quantize_imatrix(const char *in_path,
                                        const char *out_path, const char *type,
                                        int n_threads, const char *imatrix_path,
                                        nucleus_error *err) {
  if (!in_path || !out_path)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "nucleus_quantize needs an input and an output path");
  return nc_quantize_file(in_path, out_path, type, n_threads, imatrix_path,
                          err);
}

nucleus_status nucleus_quantize(const char *in_path, const char *out_path,
                                const char *type, int n_threads,
                                nucleus_error *err) {
  return nucleus_quantize_imatrix(in_path, out_path, type, n_threads, NULL,
                                  err);
}
