/* nucleus serve: JSON Schema -> GBNF for the grammar engine, compact (no
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
 * change what validates. Any other keyword is an error naming it. */
#ifndef NUCLEUS_SERVER_JSON_SCHEMA_H
#define NUCLEUS_SERVER_JSON_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

/* *gbnf: malloc'd NUL-terminated GBNF (root rule "root"). Returns 0, or -1
 * with why (the keyword, a path) in msg. */
int json_schema_to_gbnf(const json_t *schema, char **gbnf, char *msg,
                        size_t msg_cap);

#endif
