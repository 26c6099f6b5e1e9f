#include "mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  HUGE_PAGE = 2u << 20,  /* x86-64's transparent huge page */
  READ_CHUNK = 16u << 20 /* bytes per pread */
};

struct nc_mapped_file {
  void *data; /* NULL when size is 0 */
  size_t size;
  size_t map_len;   /* the length munmap takes at data */
  nc_file_load how; /* NC_FILE_READ or NC_FILE_MMAP */
};

/* MemAvailable of /proc/meminfo in bytes (the kernel's estimate of what
 * can be had without swapping); 0 when it cannot be read. */
static uint64_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1) break;
  fclose(f);
  return kb > UINT64_MAX / 1024 ? 0 : kb * 1024;
}

/* Anonymous read-write memory for size bytes (> 0), its length in *len:
 * from a 2 MiB boundary and advised MADV_HUGEPAGE when size reaches one
 * huge page (the kernel then backs each whole 2 MiB with one page where
 * its setting allows: "madvise" or "always"). NULL when none is had. */
static uint8_t *anon_alloc(size_t size, size_t *len) {
  const long pg = sysconf(_SC_PAGESIZE);
  const bool huge = size >= HUGE_PAGE;
  const size_t align = huge ? HUGE_PAGE : pg > 0 ? (size_t)pg : 4096;
  if (size > SIZE_MAX - 2 * (size_t)HUGE_PAGE) return NULL;
  const size_t n = (size + align - 1) / align * align;
  const size_t span = n + (huge ? align : 0);
  uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uint8_t *a = p;
  if (huge) { /* keep the aligned n bytes, unmap the slack around them */
    a = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    if (a > p) munmap(p, (size_t)(a - p));
    const size_t tail = (size_t)((p + span) - (a + n));
    if (tail) munmap(a + n, tail);
#ifdef MADV_HUGEPAGE
    (void)madvise(a, n, MADV_HUGEPAGE); /* a hint: THP may be off */
#endif
  }
  *len = n;
  return a;
}

/* Reads size bytes of fd from offset 0 into dst. */
static nc_code read_all(int fd, const char *path, uint8_t *dst, size_t size,
                        nc_error *err) {
  size_t got = 0;
  while (got < size) {
    const size_t want = size - got < READ_CHUNK ? size - got : READ_CHUNK;
    const ssize_t r = pread(fd, dst + got, want, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return nc_fail(err, NC_ERR_IO, "cannot read '%s' at byte %zu: %s", path,
                     got, strerror(errno));
    if (r == 0)
      return nc_fail(err, NC_ERR_IO,
                     "'%s' ended at byte %zu of %zu (changed while read)", path,
                     got, size);
    got += (size_t)r;
  }
  return NC_OK;
}

/* The file's bytes read into memory of our own (mf->data, mf->map_len):
 * NC_ERR_NOMEM when the memory cannot be had. */
static nc_code read_into_memory(int fd, const char *path, nc_mapped_file *mf,
                                nc_error *err) {
  uint8_t *p = anon_alloc(mf->size, &mf->map_len);
  if (!p)
    return nc_fail(err, NC_ERR_NOMEM,
                   "cannot allocate %zu bytes to read '%s' into (load mode "
                   "mmap maps the file instead)",
                   mf->size, path);
#ifdef POSIX_FADV_SEQUENTIAL
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  nc_code c = read_all(fd, path, p, mf->size, err);
  if (c) {
    munmap(p, mf->map_len);
    return c;
  }
  (void)mprotect(p, mf->map_len, PROT_READ); /* read-only, as a mapping */
  mf->data = p;
  return NC_OK;
}

static nc_code map_file(int fd, const char *path, nc_mapped_file *mf,
                        nc_error *err) {
  void *p = mmap(NULL, mf->size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED)
    return nc_fail(err, NC_ERR_IO, "cannot map '%s' (%zu bytes): %s", path,
                   mf->size, strerror(errno));
  mf->data = p;
  mf->map_len = mf->size;
  return NC_OK;
}

nc_code nc_mapped_file_open(const char *path, nc_file_load how,
                            nc_mapped_file **out, nc_error *err) {
  *out = NULL;
  if (!path)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "mapped_file: path is NULL");
  if (how != NC_FILE_AUTO && how != NC_FILE_READ && how != NC_FILE_MMAP)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "mapped_file: load mode %d is not auto, read or mmap",
                   (int)how);
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
  const bool automatic = how == NC_FILE_AUTO;
  if (automatic)
    how = mf->size <= mem_available() / 2 ? NC_FILE_READ : NC_FILE_MMAP;
  nc_code c = NC_OK;
  if (mf->size > 0 && how == NC_FILE_READ) {
    c = read_into_memory(fd, path, mf, err);
    if (c == NC_ERR_NOMEM && automatic) {
      how = NC_FILE_MMAP;
      c = NC_OK;
    }
  }
  if (!c && mf->size > 0 && how == NC_FILE_MMAP)
    c = map_file(fd, path, mf, err);
  close(fd); /* a mapping stays valid */
  if (c) {
    free(mf);
    return c;
  }
  mf->how = how;
  *out = mf;
  return NC_OK;
}

void nc_mapped_file_close(nc_mapped_file *mf) {
  if (!mf) return;
  if (mf->data) munmap(mf->data, mf->map_len);
  free(mf);
}

const void *nc_mapped_file_data(const nc_mapped_file *mf) {
  return mf ? mf->data : NULL;
}

size_t nc_mapped_file_size(const nc_mapped_file *mf) {
  return mf ? mf->size : 0;
}

nc_file_load nc_mapped_file_how(const nc_mapped_file *mf) {
  return mf ? mf->how : NC_FILE_MMAP;
}

size_t nc_mapped_file_huge_bytes(const nc_mapped_file *mf) {
  if (!mf || !mf->data || mf->how != NC_FILE_READ) return 0;
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  const uintptr_t lo = (uintptr_t)mf->data, hi = lo + mf->map_len;
  char line[512];
  bool at_start = true, inside = false;
  uint64_t total = 0;
  while (fgets(line, sizeof line, f)) {
    /* only the start of a line: a long path's tail is no header */
    const bool start = at_start;
    at_start = strchr(line, '\n') != NULL;
    if (!start) continue;
    unsigned long long a, b, kb;
    if (sscanf(line, "%llx-%llx ", &a, &b) == 2) { /* a mapping's header */
      inside = a < hi && b > lo;
      continue;
    }
    if (inside && sscanf(line, "AnonHugePages: %llu kB", &kb) == 1 &&
        kb < (1ull << 40))
      total += (uint64_t)kb * 1024;
  }
  fclose(f);
  return total < mf->map_len ? (size_t)total : mf->map_len;
}
