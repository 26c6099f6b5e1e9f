/* mapped_file: a whole file in memory, read-only: mapped (MAP_PRIVATE,
 * the page cache's 4 KiB pages) or read into anonymous memory in 2 MiB
 * pages where the kernel gives them (transparent huge pages). */
#ifndef NC_MAPPED_FILE_H
#define NC_MAPPED_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

typedef struct nc_mapped_file nc_mapped_file;

typedef enum nc_file_load {
  /* NC_FILE_READ when the file takes at most half the memory available
   * (MemAvailable), else NC_FILE_MMAP; NC_FILE_MMAP too when the memory
   * for the read cannot be had */
  NC_FILE_AUTO = 0,
  /* read(2) into memory the process owns, 2 MiB-aligned and advised
   * MADV_HUGEPAGE, then made read-only: decode streams weights from
   * 2 MiB pages (one TLB entry each, the prefetchers not stopped at every
   * 4 KiB page), ~1.3x faster here on memory-bound matmuls */
  NC_FILE_READ,
  /* mmap(2) of the file: no copy, pages shared with other processes and
   * left to the page cache */
  NC_FILE_MMAP,
} nc_file_load;

/* Maps or reads a regular file. An empty file has size 0 (data NULL). */
nc_code nc_mapped_file_open(const char *path, nc_file_load how,
                            nc_mapped_file **out, nc_error *err);
void nc_mapped_file_close(nc_mapped_file *mf);

const void *nc_mapped_file_data(const nc_mapped_file *mf);
size_t nc_mapped_file_size(const nc_mapped_file *mf);
/* NC_FILE_READ or NC_FILE_MMAP: how the file came into memory. */
nc_file_load nc_mapped_file_how(const nc_mapped_file *mf);
/* Bytes of the file's memory on 2 MiB pages now (the kernel's count,
 * AnonHugePages of /proc/self/smaps); 0 for a mapped file or where the
 * count cannot be read. */
size_t nc_mapped_file_huge_bytes(const nc_mapped_file *mf);

#endif
