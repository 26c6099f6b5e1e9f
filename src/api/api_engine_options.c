/* Public API: the engine-option contract (src/engine/engine_options.c). */
#include "base/option_table.h"
#include "engine/engine_options.h"
#include "model/model.h"
#include "nucleus.h"

size_t nucleus_engine_options_count(void) {
  return nc_engine_options_count();
}

const nucleus_option_info *nucleus_engine_options_at(size_t i) {
  return nc_engine_options_at(i);
}

const nucleus_option_info *nucleus_engine_options_find(const char *name) {
  return nc_engine_options_find(name);
}

const char *nucleus_option_other_spelling(const nucleus_option_info *opt) {
  return nc_opt_also(opt);
}

nucleus_status nucleus_engine_params_set(nucleus_engine_params *p,
                                         const nucleus_option_info *opt,
                                         const char *text, nucleus_error *err) {
  if (!p || !opt)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "engine params: params or option is NULL");
  return nc_engine_options_set(p, opt, text, err);
}

nucleus_status nucleus_engine_params_validate(const nucleus_model *model,
                                              const nucleus_engine_params *p,
                                              nucleus_error *err) {
  if (!p) return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "engine params: NULL");
  return nc_engine_options_check_all(model ? nc_model_hparams(model) : NULL, p,
                                     err);
}

void nucleus_engine_params_format(const nucleus_engine_params *p,
                                  const nucleus_option_info *opt, char *buf,
                                  size_t cap) {
  if (!buf || !cap) return;
  buf[0] = '\0';
  if (p && opt) nc_engine_options_format(p, opt, buf, cap);
}
