/* grammar: llama.cpp's GBNF, compiled to a pushdown automaton over Unicode
 * code points that is fed bytes (UTF-8 aware: a token may end inside a
 * character), and a token mask computed through a trie over the vocabulary.
 *
 * Three objects, three lifetimes:
 *   nc_grammar        compiled rules; immutable once built, so one grammar
 *                     may serve any number of requests and threads;
 *   nc_grammar_vocab  the token trie of one vocabulary (built once per
 *                     model; immutable);
 *   nc_grammar_matcher one request's position in the language (the set of
 *                     parse stacks plus a partial UTF-8 character).
 * A matcher refers to its grammar (which must outlive it) and is otherwise
 * self-contained. A lazily activated grammar (tool calls, issue #20) is a
 * matcher created when the trigger is seen and fed the text from there.
 *
 * Syntax (llama.cpp's GBNF): `name ::= alternatives`, one rule per line
 * (a rule continues on the next line inside parentheses and after `|` or
 * `::=`); `|` alternatives, `( )` groups, postfix `* + ? {m} {m,} {m,n}`;
 * "literals" and [classes] (ranges a-z, negation [^...]) with escapes
 * \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH; `.` any character; rule
 * names [A-Za-z0-9_-]+; `#` comments. Rule `root` (or the name given) is
 * the start. A line `#@unique-items PATH` (nucleus's, written by the JSON
 * Schema compile for a whole output) says the output is one JSON value
 * whose array at PATH holds no two equal items; the matcher checks it
 * beside the automaton (grammar_unique.h).
 *
 * Errors (NC_ERR_INVALID_ARGUMENT, message "line L column C: ..."): syntax,
 * undefined rule, a rule defined twice, left recursion (direct, indirect or
 * through rules that can match ""; a repetition of a term that can match ""
 * is none: it repeats the term without ""), an empty language (a start
 * rule that matches no finite string). Alternatives that begin alike are
 * factored (an enum of 4,096 strings holds one stack per next character).
 * Alternatives that can never finish are dropped at compile time, so every
 * stack the matcher holds can still complete: a byte is accepted exactly when
 * it keeps the output a viable prefix. Bounds (NC_ERR_LIMIT): the text, rules,
 * elements, nesting, repetition counts at compile time; stacks per step, stack
 * depth and expansion work per step at match time, and the work of one call (a
 * mask, a token fed: NC_GRAMMAR_MAX_MASK_WORK, checked inside the computation),
 * so a grammar that blows up ends its request with an error, not a stalled
 * server. Bounded repetitions stay cheap: a stack holding a lower step of the
 * same repetition as another is dropped (it matches a subset of its strings).
 */
#ifndef NC_GRAMMAR_H
#define NC_GRAMMAR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define NC_GRAMMAR_MAX_TEXT (1u << 20)  /* bytes of GBNF */
#define NC_GRAMMAR_MAX_RULES 16384u     /* after desugaring */
#define NC_GRAMMAR_MAX_ELEMS (1u << 20) /* symbols in all rules */
#define NC_GRAMMAR_MAX_NESTING 64u      /* parentheses */
#define NC_GRAMMAR_MAX_REPEAT 1024u     /* m and n in {m,n} */
#define NC_GRAMMAR_MAX_STACKS 2048u     /* live parse stacks per step */
#define NC_GRAMMAR_MAX_DEPTH 1024u      /* symbols on one stack */
#define NC_GRAMMAR_MAX_WORK (1u << 18)  /* expansions per character */
/* Units of work (an expansion, a stack looked at, a comparison) one token
 * mask or one token fed may take: ~0.1 s of one core (a unit is 10-30 ns;
 * the schemas of tests/data/schemas take at most ~34,000 per mask, eight
 * .{0,1024} in a row ~380,000). */
#define NC_GRAMMAR_MAX_MASK_WORK (1u << 22)

typedef struct nc_grammar nc_grammar;
typedef struct nc_grammar_vocab nc_grammar_vocab;
typedef struct nc_grammar_matcher nc_grammar_matcher;

/* Compiles GBNF text. root may be NULL ("root"). */
nc_code nc_grammar_parse(const char *text, size_t len, const char *root,
                         nc_grammar **out, nc_error *err);
void nc_grammar_free(nc_grammar *g);
uint32_t nc_grammar_n_rules(const nc_grammar *g);

/* Token kinds for nc_grammar_vocab_create. */
enum {
  NC_GRAMMAR_TOKEN_NEVER = 0, /* control tokens, empty pieces */
  NC_GRAMMAR_TOKEN_TEXT = 1,  /* allowed when its bytes are */
  NC_GRAMMAR_TOKEN_END = 2,   /* end of generation: allowed when accepting */
};

/* The trie of n tokens: pieces[i] (lens[i] bytes) and kinds[i]. Copies
 * what it needs. */
nc_code nc_grammar_vocab_create(int32_t n, const char *const *pieces,
                                const size_t *lens, const uint8_t *kinds,
                                nc_grammar_vocab **out, nc_error *err);
/* The trie of a model's vocabulary: end-of-generation tokens are END,
 * control tokens NEVER, the others TEXT with their detokenized piece. */
typedef struct nc_vocab nc_vocab;
nc_code nc_grammar_vocab_from(const nc_vocab *v, nc_grammar_vocab **out,
                              nc_error *err);
void nc_grammar_vocab_free(nc_grammar_vocab *gv);
int32_t nc_grammar_vocab_n_tokens(const nc_grammar_vocab *gv);
/* Token id's kind (NC_GRAMMAR_TOKEN_*; NEVER out of range). */
uint8_t nc_grammar_vocab_kind(const nc_grammar_vocab *gv, int32_t id);

nc_code nc_grammar_matcher_create(const nc_grammar *g, nc_grammar_matcher **out,
                                  nc_error *err);
void nc_grammar_matcher_free(nc_grammar_matcher *m);
/* A copy of m in its current state (for forks: n > 1, beams). */
nc_code nc_grammar_matcher_clone(const nc_grammar_matcher *m,
                                 nc_grammar_matcher **out, nc_error *err);

/* While flag (may be NULL) is set, the mask and the feeding calls stop
 * within NC_GRAMMAR_MAX_MASK_WORK / 1024 units of work and fail with
 * NC_ERR_CANCELLED (the request was cancelled; the matcher stays usable).
 * flag must outlive the calls. */
void nc_grammar_matcher_set_cancel(nc_grammar_matcher *m,
                                   const atomic_bool *flag);
/* The units of work one call (a mask, a feeding call) may take before it
 * fails with NC_ERR_LIMIT; 0: NC_GRAMMAR_MAX_MASK_WORK (the default). */
void nc_grammar_matcher_set_budget(nc_grammar_matcher *m, uint64_t units);

/* Feeds bytes. *ok false: some byte is not a viable continuation, and the
 * matcher is left as it was before the call. NC_ERR_LIMIT: a per-step bound
 * was hit (the matcher is left as it was). */
nc_code nc_grammar_matcher_accept(nc_grammar_matcher *m, const char *bytes,
                                  size_t len, bool *ok, nc_error *err);
/* The text so far is a sentence of the language. */
bool nc_grammar_matcher_accepting(const nc_grammar_matcher *m);
/* Accepting and no further byte is possible. */
bool nc_grammar_matcher_complete(const nc_grammar_matcher *m);

/* Sets bit i of mask (ceil(n_tokens / 64) words, cleared first) for every
 * token that may come next: a TEXT token whose bytes keep the output a
 * viable prefix, an END token when the matcher is accepting. Does not
 * change m's position (m holds the walk's scratch and a bounded memo of
 * states, transitions and recent masks, grammar_memo.h; a matcher serves
 * one thread at a time). */
nc_code nc_grammar_matcher_mask(nc_grammar_matcher *m,
                                const nc_grammar_vocab *gv, uint64_t *mask,
                                nc_error *err);
/* Feeds token id's bytes (END tokens: *ok = accepting). */
nc_code nc_grammar_matcher_accept_token(nc_grammar_matcher *m,
                                        const nc_grammar_vocab *gv, int32_t id,
                                        bool *ok, nc_error *err);

/* The public handle (nucleus_grammar): a compiled grammar and a count of
 * its holders (the caller and each request), so one grammar serves many
 * requests. Any thread may take and drop references. */
nc_code nc_grammar_handle_create(const char *text, size_t len, const char *root,
                                 nucleus_grammar **out, nc_error *err);
void nc_grammar_handle_ref(const nucleus_grammar *h);
void nc_grammar_handle_unref(const nucleus_grammar *h);
const nc_grammar *nc_grammar_handle_get(const nucleus_grammar *h);

#endif
