/* dispatch: picks the fastest kernel table this CPU supports. */
#include "kernels.h"

const nc_kernels *nc_kernels_best(void) {
  return nc_kernels_ref();
}
