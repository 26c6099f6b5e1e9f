/* grammar_unique: JSON Schema's uniqueItems checked beside the automaton.
 *
 * A grammar may begin with directive lines `#@unique-items PATH` (PATH a
 * JSON list of steps from the document's root: a string is an object key,
 * an integer an array index, a one-integer list [k] any index from k on).
 * The whole output is then one JSON value, and an array at such a path
 * holds no two equal items (strings compared decoded, numbers by value as
 * a validator reads them: 1, 1.0 and 10e-1 are one value). The matcher
 * scans its output as JSON (the syntax is deterministic, whatever the
 * automaton's stacks) and records the open unique array's items: a token
 * that would close an item equal to one recorded is refused, and the mask
 * drops tokens after which every completion of the item is a repeat (a
 * search over the automaton's bytes, grammar_unique_search.c). Directives
 * are written by json_schema.c for the whole-output compile only
 * (json_schema_to_gbnf with JS_DOC), for items that are strings or
 * numbers, so an array holds strings or numbers alone.
 * Bounds: NC_GUNIQ_MAX_PATHS directives of NC_GUNIQ_MAX_STEPS steps, keys
 * of NC_GUNIQ_MAX_KEY bytes; an array records at most NC_GUNIQ_MAX_ITEMS
 * items (the ',' after the last is refused; json_schema's maxItems is at
 * most that anyway). */
#ifndef NC_GRAMMAR_UNIQUE_H
#define NC_GRAMMAR_UNIQUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar_state.h"
#include "grammar_trie.h"

#define NC_GUNIQ_MAX_PATHS 64u
#define NC_GUNIQ_MAX_STEPS 32u
#define NC_GUNIQ_MAX_KEY 256u
#define NC_GUNIQ_MAX_ITEMS 1024u
#define NC_GUNIQ_FRAMES 64u /* containers whose paths are followed */

enum { NC_GUNIQ_KEY, NC_GUNIQ_INDEX, NC_GUNIQ_FROM };

typedef struct nc_guniq_step {
  uint8_t kind;
  uint32_t index; /* INDEX, FROM */
  uint32_t klen;  /* KEY: bytes of key */
  char key[NC_GUNIQ_MAX_KEY];
} nc_guniq_step;

typedef struct nc_guniq_spec {
  uint32_t n;
  uint32_t len[NC_GUNIQ_MAX_PATHS];
  nc_guniq_step *steps[NC_GUNIQ_MAX_PATHS];
} nc_guniq_spec;

/* The directives of GBNF text: *out NULL when there are none. A malformed
 * directive is NC_ERR_INVALID_ARGUMENT. */
nc_code nc_guniq_spec_parse(const char *text, size_t len, nc_guniq_spec **out,
                            nc_error *err);
void nc_guniq_spec_free(nc_guniq_spec *s);

/* A JSON string's decoder after its opening quote: esc 0, 1 after '\\',
 * 2..5 with that many minus 2 \\u digits read; u their value; hi a high
 * surrogate waiting for its low one. */
typedef struct nc_gudec {
  uint8_t esc;
  uint32_t u, hi;
} nc_gudec;
/* Byte b: the canonical bytes it completes into out (at most 8; a code
 * point as UTF-8, a lone surrogate as its 3-byte form): their count; -1 a
 * byte no JSON string has here; *closed: b is the closing quote. */
int nc_gudec_byte(nc_gudec *d, uint8_t b, uint8_t out[8], bool *closed);

/* ------------------------------------------------------------ the scanner */
typedef struct nc_guniq_frame {
  uint8_t obj;      /* an object (else an array) */
  uint8_t want_key; /* object: the next string is a key */
  uint64_t match;   /* directives whose steps so far lead here */
  uint64_t cmatch;  /* object: the current key's child's */
  uint32_t index;   /* array: the current item's */
} nc_guniq_frame;

enum { NC_GU_VALUE, NC_GU_STR, NC_GU_NUM, NC_GU_LIT };

typedef struct nc_guniq_lex {
  uint32_t depth; /* open containers */
  int32_t uniq;   /* frame of the open unique array, -1 none */
  uint8_t mode;
  uint8_t is_key, is_item; /* the string (number) being read */
  uint8_t klong;           /* the key passed NC_GUNIQ_MAX_KEY */
  uint8_t slot;            /* unique array: after '[' or ',' (an item next) */
  nc_gudec dec;            /* the string's */
  uint32_t klen;
  char key[NC_GUNIQ_MAX_KEY];
  nc_guniq_frame f[NC_GUNIQ_FRAMES];
} nc_guniq_lex;

/* A byte string: the recorded items' canonical forms ('s' + the decoded
 * UTF-8 of a string, 'n' + a number's canonical text). */
typedef struct nc_guniq_rec {
  uint8_t **v;
  uint32_t *len;
  uint32_t n, cap;
} nc_guniq_rec;

/* The current item's canonical bytes: base (read-only, the real scanner's)
 * then loc (own). */
typedef struct nc_guniq_item {
  const uint8_t *base;
  size_t base_n;
  uint8_t *loc;
  size_t n, cap;
} nc_guniq_item;

/* Items closed during one dry run (a token): their bytes in buf. */
typedef struct nc_guniq_local {
  uint8_t *buf;
  size_t n, cap;
  uint32_t off[64], len[64];
  uint32_t count;
  bool fresh; /* a unique array opened in the run: the record is not its */
  bool dup;   /* an item equal to an earlier one closed */
  bool over;  /* more items closed than off holds (a repeat assumed no) */
} nc_guniq_local;

/* The items recorded so far, as a set the searches and checks read: the
 * record (unless fresh) and the run's closed items. */
typedef struct nc_guniq_set {
  const nc_guniq_rec *rec; /* NULL: none */
  const nc_guniq_local *loc;
} nc_guniq_set;

bool nc_guniq_set_has(const nc_guniq_set *s, const uint8_t *a, size_t an,
                      const uint8_t *b, size_t bn);
/* Some item of s begins with a then b. */
bool nc_guniq_set_prefix(const nc_guniq_set *s, const uint8_t *a, size_t an,
                         const uint8_t *b, size_t bn);
bool nc_guniq_set_empty(const nc_guniq_set *s);

/* The canonical form of number text t[0..n) into out (at least n + 40
 * bytes): its length. */
size_t nc_guniq_number_canon(const char *t, size_t n, uint8_t *out);

/* One matcher's check (NULL when the grammar has no directives). */
typedef struct nc_guniq {
  const nc_guniq_spec *spec;
  nc_guniq_lex lex;
  nc_guniq_rec rec;
  nc_guniq_item item; /* base NULL */
  /* The mask's scratch: a dry run's lexer, item and closed items. */
  nc_guniq_lex dlex;
  nc_guniq_item ditem;
  nc_guniq_local dloc;
  /* The state after a token (the mask's), two in turn. */
  nc_gstate ta, tb;
  /* The searches' states, one per depth, and their text. */
  nc_gstate *lv;
  uint32_t n_lv;
  uint8_t *q;
  size_t qn, qcap;
} nc_guniq;

nc_code nc_guniq_create(const nc_guniq_spec *spec, nc_guniq **out);
void nc_guniq_free(nc_guniq *u);
nc_code nc_guniq_clone(const nc_guniq *u, nc_guniq **out);

/* A dry run of bytes from u's position into u->dlex/ditem/dloc (u is not
 * changed): NC_ERR_NOMEM. dloc.dup tells a repeat. */
nc_code nc_guniq_dry(nc_guniq *u, const uint8_t *b, size_t n);
/* Feeds bytes (after a dry run said no repeat). */
nc_code nc_guniq_feed(nc_guniq *u, const uint8_t *b, size_t n);
/* The set of items a dry run ends with. */
nc_guniq_set nc_guniq_dry_set(const nc_guniq *u);

/* The mask's filter (grammar_unique_search.c): clears the bits of tokens
 * that close a repeated item or leave no completion of the item outside
 * the recorded ones. m->uniq must be set. */
nc_code nc_guniq_mask(nc_grammar_matcher *m, const nc_grammar_vocab *gv,
                      uint64_t *mask, nc_error *err);
/* After a dry run of bytes b[0..n) from m's position (nc_guniq_dry, no
 * repeat): *ok false when the open item (or the one a ',' asks for) is
 * left with no completion outside the recorded items. */
nc_code nc_guniq_keeps(nc_grammar_matcher *m, const uint8_t *b, size_t n,
                       bool *ok, nc_error *err);
/* Whether the language of g (one item: a JSON string or number) holds at
 * least need distinct values: *count (at most need). NC_ERR_LIMIT when
 * the search passes budget units. */
nc_code nc_guniq_count(const nc_grammar *g, uint32_t need, uint64_t budget,
                       uint32_t *count, nc_error *err);

#endif
