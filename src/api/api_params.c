/* Public API: the generation-parameter contract (src/sampler_contract.c)
 * and the defaults of each surface, with the model's own recommendation. */
#include "gguf/gguf.h"
#include "model/model.h"
#include "nucleus.h"
#include "sampling/sampler_contract.h"

size_t nucleus_params_count(void) {
  return nc_params_count();
}

const nucleus_param_info *nucleus_params_at(size_t i) {
  return nc_params_at(i);
}

const nucleus_param_info *nucleus_params_find(const char *name) {
  return nc_params_find(name);
}

nucleus_status nucleus_params_set(nucleus_request_params *p, const char *name,
                                  double v, nucleus_error *err) {
  const nucleus_param_info *info = nc_params_find(name);
  if (!p || !info)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "no parameter '%s'",
                   name ? name : "(null)");
  return nc_params_set(p, info, v, err);
}

double nucleus_params_value(const nucleus_request_params *p, const char *name) {
  const nucleus_param_info *info = nc_params_find(name);
  return p && info ? nc_params_value(p, info) : 0;
}

bool nucleus_model_recommends(const nucleus_model *model, const char *name,
                              double *v) {
  const nucleus_param_info *info = nc_params_find(name);
  const gguf_file *g = model ? nc_model_gguf(model) : NULL;
  double x;
  if (!info || !info->gguf_key || !g || !gguf_get_f64(g, info->gguf_key, &x))
    return false;
  /* A value outside the contract's range is not a recommendation. */
  nucleus_request_params probe = nucleus_request_default_params();
  if (nc_params_set(&probe, info, x, NULL) != NC_OK) return false;
  if (v) *v = x;
  return true;
}

nucleus_request_params nucleus_request_params_for(const nucleus_model *model,
                                                  nucleus_surface surface) {
  nucleus_request_params p = nucleus_request_default_params();
  nc_params_apply_defaults(&p, surface);
  if (surface == NUCLEUS_SURFACE_LIBRARY) return p;
  for (size_t i = 0; i < nc_params_count(); i++) {
    const nucleus_param_info *info = nc_params_at(i);
    double v;
    if (nucleus_model_recommends(model, info->name, &v))
      nc_params_set(&p, info, v, NULL);
  }
  return p;
}
