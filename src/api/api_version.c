/* nucleus_version: the release the library was built as. */
#include "nucleus.h"

const char *nucleus_version(void) {
  return NUCLEUS_VERSION;
}
