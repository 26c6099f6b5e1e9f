/* option_table: the machinery of an option table (the model options', the
 * engine options'): a row is a public nucleus_option_info plus where its
 * field lives in the params struct and how it is stored. Setting from text,
 * checking, formatting and lookup are the same for every table, so every
 * table answers with the same messages:
 *   "'NAME' must be an integer in [LO, HI], got X"
 *   "'NAME' must be a number in [LO, HI], got X"
 *   "'NAME' must be A, B or C, got X"
 *   "'NAME' must be true or false, got X" */
#ifndef NC_OPTION_TABLE_H
#define NC_OPTION_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "nucleus.h"
#include "status.h"

/* How a row's field is stored in its params struct. */
typedef enum nc_opt_store {
  NC_OPT_I32,   /* int32_t */
  NC_OPT_I64,   /* int64_t */
  NC_OPT_FLOAT, /* float */
  NC_OPT_BOOL,  /* bool */
  NC_OPT_ENUM,  /* an enum (int) indexing choices */
  NC_OPT_NAME,  /* const char *, one of choices (static) or NULL */
} nc_opt_store;

typedef struct nc_opt_row {
  nucleus_option_info info; /* first: a row is found from its info */
  size_t offset;            /* into the params struct */
  nc_opt_store st;
  const char *zero_note; /* what 0 (or NULL) means, shown with the value */
  const char *also;      /* one more accepted spelling of the flag, or NULL */
} nc_opt_row;

/* By field name, flag, alias or the other spelling; NULL when none. */
const nucleus_option_info *nc_opt_find(const nc_opt_row *rows, size_t n,
                                       const char *name);
/* The row's other accepted spelling (nc_opt_row.also), or NULL. */
const char *nc_opt_also(const nucleus_option_info *opt);

/* Sets the option in params (the table's struct) from its text (NULL for a
 * flag: true). */
nc_code nc_opt_set(void *params, const nucleus_option_info *opt,
                   const char *text, nc_error *err);
/* Checks the value params holds for the option / for every row. */
nc_code nc_opt_check(const void *params, const nucleus_option_info *opt,
                     nc_error *err);
nc_code nc_opt_check_all(const void *params, const nc_opt_row *rows, size_t n,
                         nc_error *err);
/* The refusal of got (the value as given, quoted or not) for the option. */
nc_code nc_opt_refuse(const nucleus_option_info *opt, const char *got,
                      nc_error *err);
/* The value params holds as text: "f16", "0 (the file's)", "on". */
void nc_opt_format(const void *params, const nucleus_option_info *opt,
                   char *buf, size_t cap);

/* The index of name among a CHOICE option's choices; -1 when none. */
int nc_opt_choice(const nucleus_option_info *opt, const char *name);
int nc_opt_n_choices(const nucleus_option_info *opt);

#endif
