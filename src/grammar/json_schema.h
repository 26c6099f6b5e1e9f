/* json_schema: JSON Schema -> GBNF for the grammar engine, compact (no
 * whitespace); every string of the grammar validates (a subset of the
 * schema's instances where the whole cannot be a grammar). docs/SERVER.md
 * lists the keywords; in short:
 *   type (one or a list; inferred from the keywords when absent), enum and
 *   const (values the keywords beside them also accept), anyOf, oneOf
 *   (branches that provably never both match), allOf and keywords beside
 *   $ref/anyOf/oneOf (merged into one schema), $ref (JSON pointers,
 *   anchors, '$id' resources, recursion; not remote documents);
 *   objects: properties (in order), required, additionalProperties,
 *   patternProperties, min/maxProperties, dependentRequired, propertyNames
 *   (on the names written); arrays: items, prefixItems, additionalItems,
 *   min/maxItems, uniqueItems (exact over a few values; over strings and
 *   numbers checked by the matcher with JS_DOC; else arrays of at most one
 *   item); strings:
 *   min/maxLength, pattern (a regex subset), format (date, time,
 *   date-time, uuid, email, ipv4, ipv6, hostname, uri) and their
 *   intersections; integers and numbers: minimum, maximum, exclusive
 *   bounds (as exact grammars over the digits), whole multipleOf.
 * Each keyword's JSON type is checked first (a 400 naming it and where).
 * Annotations are ignored; unknown keywords too, as the spec says, each
 * named in a "# json-schema: ..." comment line before the rules (the
 * server logs them). A keyword that changes what validates and is not
 * enforced (if, contains, a 'not' that narrows nothing, ...) is an error
 * naming it and the JSON pointer of its schema ("... (at #/properties/a)").
 */
#ifndef NC_JSON_SCHEMA_H
#define NC_JSON_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"

/* The text the grammar's values are written in. */
typedef enum js_syntax {
  JS_SYNTAX_JSON,
  /* Gemma 4's call arguments (its template's format_argument with bare
   * keys): {key:value,...}, strings between <|"|> marks and unescaped,
   * arrays, numbers, true, false and null as JSON writes them. Keys are
   * names of [A-Za-z0-9_-] (declared ones: no ':' ',' '{' '}' '[' ']'),
   * strings hold no '<' nor control characters but tab and newline, and
   * 'pattern' (and what needs one: patternProperties, propertyNames) is
   * refused. */
  JS_SYNTAX_GEMMA4,
} js_syntax;

/* *gbnf: malloc'd NUL-terminated GBNF (root rule "root") of values in
 * syntax. Errors:
 * NC_ERR_INVALID_ARGUMENT outside the subset (the message names the
 * keyword and where: "... (at #/pointer)"), NC_ERR_LIMIT for a schema
 * whose grammar would be too large, NC_ERR_NOMEM. */
nc_code json_schema_to_gbnf(const json_t *schema, js_syntax syntax, char **gbnf,
                            nc_error *err);
/* The grammar is the whole output (not part of a larger grammar): arrays
 * with uniqueItems over strings or numbers, at a path from the root
 * through properties, items and $refs alone, are checked exactly by the
 * matcher ("#@unique-items" directives, grammar_unique.h). */
#define JS_DOC 1u
nc_code json_schema_to_gbnf_opts(const json_t *schema, js_syntax syntax,
                                 unsigned flags, char **gbnf, nc_error *err);

#endif
