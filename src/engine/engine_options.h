/* engine_options: the one table of the engine options a command line sets
 * (nucleus_engine_params' fields: the context, the KV pool and its blocks,
 * the step's token budget, the sequences running and queued, the prefix
 * cache, sliding windows). Each row is the field's name, its flags, its
 * range, the library's default and its help. nucleus_engine_create's
 * checks, the flags of `nucleus run`, `chat`, `bench` and `serve` and their
 * --help texts read it, so every surface answers with the same message
 * (base/option_table.h) and shows the library's defaults. */
#ifndef NC_ENGINE_OPTIONS_H
#define NC_ENGINE_OPTIONS_H

#include <stddef.h>

#include "base/status.h"
#include "model/model.h"
#include "nucleus.h"

/* n_ctx 0: the model's training context, at most this. */
#define NC_ENGINE_N_CTX_CAP 8192
/* kv_cache_tokens 0: this many tokens, or one context when larger. */
#define NC_ENGINE_KV_TOKENS 16384
/* decode_stall's default: a step with prompt chunks beside decoding
 * sequences costs at most 2 decode steps (of the sequences running and
 * waiting: prefill_budget.h). */
#define NC_ENGINE_DECODE_STALL 2.0f

size_t nc_engine_options_count(void);
const nucleus_option_info *nc_engine_options_at(size_t i);
/* By field name, flag, alias or other spelling; NULL when none. */
const nucleus_option_info *nc_engine_options_find(const char *name);

nc_code nc_engine_options_set(nucleus_engine_params *p,
                              const nucleus_option_info *opt, const char *text,
                              nc_error *err);
/* Every option of p against the table, 0 standing for the default where
 * nucleus_engine_params says so, then n_ctx against the model's training
 * context (hp may be NULL: not known). */
nc_code nc_engine_options_check_all(const nc_hparams *hp,
                                    const nucleus_engine_params *p,
                                    nc_error *err);
void nc_engine_options_format(const nucleus_engine_params *p,
                              const nucleus_option_info *opt, char *buf,
                              size_t cap);

#endif
