/* jinja_json: turning the caller's JSON (jansson) into template values. The
 * tojson filter's writer is declared in jinja_interp.h. */
#ifndef NC_JINJA_JSON_H
#define NC_JINJA_JSON_H

#include <jansson.h>
#include <stdbool.h>

#include "jinja_value.h"

/* Converts j into arena-owned values; false when the arena is full or the
 * value is nested deeper than 512 levels. */
bool jinja_value_from_json(jinja_arena *a, const json_t *j, jv *out);

#endif
