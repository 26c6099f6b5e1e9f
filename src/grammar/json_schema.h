/* json_schema: JSON Schema -> GBNF for the grammar engine, compact (no
 * whitespace). The subset (docs/SERVER.md):
 *   type (one or a list), enum, const, anyOf, oneOf (as anyOf), allOf of
 *   one schema, $ref to #/$defs/... or #/definitions/... (recursive too);
 *   objects: properties (in the order given), required,
 *   additionalProperties (false or absent: none; a schema with no
 *   properties: a map of it);
 *   arrays: items, prefixItems, minItems, maxItems (<= 1024);
 *   strings: minLength, maxLength (<= 1024), pattern (a regex subset:
 *   literals, ., [classes], \d \w \s, groups, |, * + ? {m,n}, ^ $ at the
 *   ends), format date, time, date-time, uuid, email;
 *   integers: minimum/maximum (also exclusive) as ranges of at most 1000
 *   values, or a lower bound of 0 or 1; numbers: a lower bound of 0;
 *   boolean, null, true/{} (any JSON value).
 * Annotations (title, description, default, examples, $schema, $id,
 * $comment, readOnly, writeOnly, deprecated) are ignored: they do not
 * change what validates. Any other keyword is an error naming it. $ref,
 * const, enum and the combinators stand alone (annotations beside them,
 * and type beside const/enum): another keyword beside them is an error. */
#ifndef NC_JSON_SCHEMA_H
#define NC_JSON_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"

/* *gbnf: malloc'd NUL-terminated GBNF (root rule "root"). Errors:
 * NC_ERR_INVALID_ARGUMENT outside the subset (the message names the
 * keyword, as "unsupported JSON Schema keyword 'K'"), NC_ERR_LIMIT for a
 * schema whose grammar would be too large, NC_ERR_NOMEM. */
nc_code json_schema_to_gbnf(const json_t *schema, char **gbnf, nc_error *err);

#endif
