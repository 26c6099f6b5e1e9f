/* json_compact: a JSON value as compact text (json_dumps' JSON_COMPACT |
 * JSON_ENCODE_ANY), except that a real is written in the fewest digits that
 * read back as the same double, with a fraction or an exponent (0.1, not
 * jansson's 0.10000000000000001): tool-call arguments as the model wrote
 * them. */
#ifndef NC_JSON_COMPACT_H
#define NC_JSON_COMPACT_H

#include <jansson.h>

/* malloc'd NUL-terminated text; NULL when out of memory. */
char *nc_json_compact(const json_t *v);

#endif
