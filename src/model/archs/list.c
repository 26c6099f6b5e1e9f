/* list: the table of architectures (list.h) and the lookups over it. */
#include "list.h"

#include <string.h>

#include "model/arch.h"

#define NC_ARCH_ENTRY(id) &nc_arch_##id,
static const nc_arch *const ARCHS[] = {NC_ARCH_LIST(NC_ARCH_ENTRY)};
#undef NC_ARCH_ENTRY

size_t nc_arch_count(void) {
  return sizeof ARCHS / sizeof ARCHS[0];
}

const nc_arch *nc_arch_at(size_t i) {
  return i < nc_arch_count() ? ARCHS[i] : NULL;
}

const nc_arch *nc_arch_find(const char *name, size_t len) {
  for (size_t i = 0; i < nc_arch_count(); i++)
    if (strlen(ARCHS[i]->name) == len && !memcmp(ARCHS[i]->name, name, len))
      return ARCHS[i];
  return NULL;
}

const char *nc_arch_hf_class(const nc_arch *a, const nc_hparams *hp) {
  if (!a) return NULL;
  return hp && hp->n_expert > 0 && a->hf_class_moe ? a->hf_class_moe
                                                   : a->hf_class;
}
