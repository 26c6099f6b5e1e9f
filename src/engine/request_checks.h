/* request_checks: the checks of the request parameters that are neither in
 * the contract table (sampling/sampler_contract.c) nor stop strings
 * (stop_matcher.h): stop token ids, the cache salt, how n relates to
 * beam_width, speculative decoding, and whether the request can fit the KV
 * pool at all, the reasoning budget. One message per failure, on every surface:
 * submit, the server's parser and the CLI's flags all call these
 * (include/nucleus.h: nucleus_stop_token_id_check, nucleus_cache_salt_check,
 * nucleus_beam_check). */
#ifndef NC_REQUEST_CHECKS_H
#define NC_REQUEST_CHECKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "nucleus.h"

/* Stop token id number index: index below NUCLEUS_MAX_STOP_TOKEN_IDS, id
 * in [0, n_vocab) (n_vocab 0: not known yet, only id >= 0). */
nc_code nc_stop_token_id_check(size_t index, int32_t id, int32_t n_vocab,
                               nc_error *err);
/* len bytes at s: at most NUCLEUS_MAX_CACHE_SALT_BYTES, no NUL byte. */
nc_code nc_cache_salt_check(const char *s, size_t len, nc_error *err);
/* With beam search (beam_width > 1), n is at most beam_width. */
nc_code nc_beam_check(int32_t n, int32_t beam_width, nc_error *err);
/* Speculative decoding's parameters (nucleus_speculative_check). */
nc_code nc_spec_check(const nucleus_spec_params *s, int32_t beam_width,
                      int32_t n_vocab, nc_error *err);
const char *nc_spec_type_name(nucleus_spec_type t);
/* The reasoning parameters (nucleus_reasoning_check). */
nc_code nc_reasoning_check(const nucleus_request_params *p, nc_error *err);
bool nc_spec_type_from_name(const char *name, nucleus_spec_type *out);

/* The KV blocks a request of n_prompt tokens holds at its end when it runs
 * alone: the prompt's full blocks are shared by its sequences (n, or
 * beam_width with beam search), each sequence owns the rest of its final
 * length, n_prompt + generated - 1 (the last token is never fed; generated
 * is max_tokens, at most what the context leaves: n_ctx - n_prompt).
 * Without max_tokens, a request that an end token, a stop or a grammar can
 * end needs its prompt's blocks only (it may end at its first token); one
 * that cannot end so runs to the full context. */
int64_t nc_request_blocks_needed(size_t n_prompt,
                                 const nucleus_request_params *p, int32_t n_ctx,
                                 int32_t block_tokens);

/* Refuses (NC_ERR_LIMIT) a request whose nc_request_blocks_needed exceeds
 * the pool's pool_blocks: it could not finish even alone, and would
 * otherwise fail only after it had run as far as the pool goes. */
nc_code nc_request_fit_check(size_t n_prompt, const nucleus_request_params *p,
                             int32_t n_ctx, int32_t block_tokens,
                             int64_t pool_blocks, nc_error *err);

#endif
