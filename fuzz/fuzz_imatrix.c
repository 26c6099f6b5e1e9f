/* libFuzzer target for the importance-matrix reader (src/quantize/
 * imatrix_load.c: llama-imatrix's GGUF and legacy forms): load any bytes;
 * when they load, every entry is found by name, names are unique and
 * sorted, and every value is finite (a violation traps). Build:
 * make fuzz-imatrix. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "quantize/imatrix_load.h"

static void check(int ok) {
  if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const int fd = memfd_create("imatrix", 0);
  if (fd < 0) return 0;
  if (write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  nc_imatrix m;
  nc_error err = {0};
  if (nc_imatrix_load(path, &m, &err) == NC_OK) {
    for (int64_t i = 0; i < m.n_entries; i++) {
      const nc_imatrix_entry *e = &m.entries[i];
      check(nc_imatrix_find(&m, e->name) == e);
      if (i > 0) check(strcmp(m.entries[i - 1].name, e->name) < 0);
      for (int64_t j = 0; j < e->n; j++)
        check(isfinite(e->values[j]));
    }
    nc_imatrix_free(&m);
  } else {
    check(err.message[0] != '\0');
  }
  close(fd);
  return 0;
}
