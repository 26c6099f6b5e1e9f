#include "mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct nc_mapped_file {
  void *data; /* NULL when size is 0 */
  size_t size;
};

nc_code nc_mapped_file_open(const char *path, nc_mapped_file **out,
                            nc_error *err) {
  *out = NULL;
  if (!path)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "mapped_file: path is NULL");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return nc_fail(err, NC_ERR_IO, "cannot open '%s': %s", path,
                   strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return nc_fail(err, NC_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return nc_fail(err, NC_ERR_IO, "'%s' is not a regular file", path);
  }
  if (st.st_size < 0 || (uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
    close(fd);
    return nc_fail(err, NC_ERR_IO, "'%s' is too large to map", path);
  }
  nc_mapped_file *mf = calloc(1, sizeof *mf);
  if (!mf) {
    close(fd);
    return nc_fail(err, NC_ERR_NOMEM, "mapped_file: out of memory");
  }
  mf->size = (size_t)st.st_size;
  if (mf->size > 0) {
    void *p = mmap(NULL, mf->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      close(fd);
      free(mf);
      return nc_fail(err, NC_ERR_IO, "cannot map '%s' (%zu bytes): %s", path,
                     (size_t)st.st_size, strerror(e));
    }
    mf->data = p;
  }
  close(fd); /* the mapping stays valid */
  *out = mf;
  return NC_OK;
}

void nc_mapped_file_close(nc_mapped_file *mf) {
  if (!mf) return;
  if (mf->data) munmap(mf->data, mf->size);
  free(mf);
}

const void *nc_mapped_file_data(const nc_mapped_file *mf) {
  return mf ? mf->data : NULL;
}

size_t nc_mapped_file_size(const nc_mapped_file *mf) {
  return mf ? mf->size : 0;
}
