/* mapped_file: a whole file mapped read-only (MAP_PRIVATE) into memory. */
#ifndef NC_MAPPED_FILE_H
#define NC_MAPPED_FILE_H

#include <stddef.h>

#include "status.h"

typedef struct nc_mapped_file nc_mapped_file;

/* Maps a regular file. An empty file maps to size 0 (data NULL). */
nc_code nc_mapped_file_open(const char *path, nc_mapped_file **out,
                            nc_error *err);
void nc_mapped_file_close(nc_mapped_file *mf);

const void *nc_mapped_file_data(const nc_mapped_file *mf);
size_t nc_mapped_file_size(const nc_mapped_file *mf);

#endif
