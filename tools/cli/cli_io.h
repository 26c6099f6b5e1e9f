/* Reading whole files and streams, for the commands. */
#ifndef NUCLEUS_CLI_IO_H
#define NUCLEUS_CLI_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "nucleus.h"

/* All of f, NUL-terminated (the NUL not counted in *len, which may be NULL).
 * NULL when out of memory or on a read error. */
char *cli_read_stream(FILE *f, size_t *len);

/* All of the file at path ("-" reads standard input); NULL with errno set
 * when it cannot be opened or read. */
char *cli_read_file(const char *path, size_t *len);

/* Prints a token piece quoted: printable ASCII and whole UTF-8 as is,
 * everything else escaped (\n, \t, \r, \\, \', \xNN). */
void cli_print_piece(FILE *out, const char *s, size_t n);

/* When the model renders with its family's built-in chat template (the
 * file carries none), says so on stderr in one line, prefixed with who. */
void cli_note_template(const nucleus_model *model, const char *who);

/* s as a whole decimal integer in [lo, hi] into *out; false otherwise. */
bool cli_parse_long(const char *s, long lo, long hi, long *out);

#endif
