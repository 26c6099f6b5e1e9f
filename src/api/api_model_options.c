/* Public API: the model-option contract (src/model/model_options.c). */
#include "model/model_options.h"
#include "nucleus.h"

size_t nucleus_model_options_count(void) {
  return nc_model_options_count();
}

const nucleus_option_info *nucleus_model_options_at(size_t i) {
  return nc_model_options_at(i);
}

const nucleus_option_info *nucleus_model_options_find(const char *name) {
  return nc_model_options_find(name);
}

nucleus_status nucleus_model_params_set(nucleus_model_params *p,
                                        const nucleus_option_info *opt,
                                        const char *text, nucleus_error *err) {
  if (!p || !opt)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "model params: params or option is NULL");
  return nc_model_options_set(p, opt, text, err);
}

nucleus_status nucleus_model_params_validate(const nucleus_model_params *p,
                                             nucleus_error *err) {
  if (!p) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "model params: NULL");
  return nc_model_options_check_all(p, err);
}

void nucleus_model_params_format(const nucleus_model_params *p,
                                 const nucleus_option_info *opt, char *buf,
                                 size_t cap) {
  if (!buf || !cap) return;
  buf[0] = '\0';
  if (p && opt) nc_model_options_format(p, opt, buf, cap);
}
