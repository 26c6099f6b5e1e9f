/* engine_options: the engine-option table and its checks. */
#include "engine_options.h"

#include <stdint.h>
#include <stdio.h>

#include "base/option_table.h"
#include "kv/kv_cache.h"

#define E(field) offsetof(nucleus_engine_params, field)
#define STR_(x) #x
#define STR(x) STR_(x)

_Static_assert(sizeof(nucleus_row_orders) == sizeof(int),
               "enum fields are ints");

/* Indexed by nucleus_row_orders' values (include/nucleus.h). */
static const char *const ROW_ORDERS[] = {"auto", "reuse", "llama", "split",
                                         NULL};

static const nc_opt_row ROWS[] = {
    {{"n_ctx", "--ctx-size", "-c", NUCLEUS_OPTION_INT, "N", 0, 1 << 24, NULL,
      "context size per sequence"},
     E(n_ctx),
     NC_OPT_I32,
     "the model's, at most " STR(NC_ENGINE_N_CTX_CAP),
     "--ctx"},
    {{"kv_cache_tokens", "--kv-tokens", NULL, NUCLEUS_OPTION_INT, "N", 0,
      1 << 30, NULL, "KV cache pool size in tokens"},
     E(kv_cache_tokens),
     NC_OPT_I64,
     "derived: " STR(NC_ENGINE_KV_TOKENS) ", or one context when larger",
     NULL},
    {{"kv_block_tokens", "--kv-block-tokens", NULL, NUCLEUS_OPTION_INT, "N", 1,
      1024, NULL, "tokens per KV cache block"},
     E(kv_block_tokens),
     NC_OPT_I32,
     NULL,
     NULL},
    {{"max_batch_tokens", "--batch-tokens", NULL, NUCLEUS_OPTION_INT, "N", 1,
      65536, NULL, "tokens per forward step (chunked prefill budget)"},
     E(max_batch_tokens),
     NC_OPT_I32,
     NULL,
     NULL},
    {{"max_running", "--parallel", "-np", NUCLEUS_OPTION_INT, "N", 1, 4096,
      NULL, "sequences decoding at once"},
     E(max_running),
     NC_OPT_I32,
     NULL,
     NULL},
    {{"max_queued", "--max-queue", NULL, NUCLEUS_OPTION_INT, "N", 1, 1 << 20,
      NULL, "waiting requests beyond which a submit is refused as busy"},
     E(max_queued),
     NC_OPT_I32,
     NULL,
     NULL},
    {{"no_prefix_cache", "--no-prefix-cache", NULL, NUCLEUS_OPTION_FLAG, NULL,
      0, 1, NULL,
      "no KV reuse across requests or chat turns (the prefix cache is on)"},
     E(no_prefix_cache),
     NC_OPT_BOOL,
     NULL,
     NULL},
    {{"swa_full", "--swa-full", NULL, NUCLEUS_OPTION_FLAG, NULL, 0, 1, NULL,
      "sliding-window layers keep every position (default: the window's)"},
     E(swa_full),
     NC_OPT_BOOL,
     NULL,
     NULL},
    {{"state_snapshots", "--state-snapshots", NULL, NUCLEUS_OPTION_INT, "N", 0,
      NC_KV_MAX_SNAPS, NULL,
      "recurrent-state snapshots the prefix cache keeps (hybrid models: "
      "each a sequence's state at a block end, evicted LRU)"},
     E(state_snapshots),
     NC_OPT_I32,
     "derived: one per sequence slot (2 x --parallel + 8)",
     NULL},
    {{"row_orders", "--row-orders", NULL, NUCLEUS_OPTION_CHOICE, "WHICH", 0, 0,
      ROW_ORDERS,
      "float orders of the rows: reuse (one order for every row, so the "
      "prefix cache reuses earlier turns' prompts and replies), llama "
      "(llama.cpp's per request, its logits bit for bit; no prefix cache), "
      "split (reuse with flash attention's keys split over the threads: "
      "faster deep in the cache, not llama.cpp's bits past 256 positions) "
      "or auto (llama for run, else reuse)"},
     E(row_orders),
     NC_OPT_ENUM,
     NULL,
     NULL},
    {{"spec_row_cost", "--spec-row-cost", NULL, NUCLEUS_OPTION_FLOAT, "X", 0, 4,
      NULL,
      "speculative decoding: a verify row's cost against a decode step, "
      "for the draft length (0: measured from the decode steps' times)"},
     E(spec_row_cost),
     NC_OPT_FLOAT,
     "measured",
     NULL},
    {{"image_step_tokens", "--image-step-tokens", NULL, NUCLEUS_OPTION_INT, "N",
      0, 65536, NULL,
      "image encoding per step beside the batch: at most the work of N "
      "tokens through the language model (one vision layer at least)"},
     E(image_step_tokens),
     NC_OPT_I32,
     "--batch-tokens",
     NULL},
    {{"no_image_batch", "--no-image-batch", NULL, NUCLEUS_OPTION_FLAG, NULL, 0,
      1, NULL,
      "each image's vision layers on their own (default: images at the same "
      "layer in a step share its weight products)"},
     E(no_image_batch),
     NC_OPT_BOOL,
     NULL,
     NULL},
    {{"decode_stall", "--decode-stall", NULL, NUCLEUS_OPTION_FLOAT, "X", 0,
      1000, NULL,
      "while sequences decode, a step with prompt chunks costs at most X "
      "decode steps of the sequences running and waiting (fewer prompt "
      "tokens per step; 1000: only --batch-tokens)"},
     E(decode_stall),
     NC_OPT_FLOAT,
     "2",
     NULL},
};
#define N_ROWS (sizeof ROWS / sizeof ROWS[0])

size_t nc_engine_options_count(void) {
  return N_ROWS;
}

const nucleus_option_info *nc_engine_options_at(size_t i) {
  return i < N_ROWS ? &ROWS[i].info : NULL;
}

const nucleus_option_info *nc_engine_options_find(const char *name) {
  return nc_opt_find(ROWS, N_ROWS, name);
}

nc_code nc_engine_options_set(nucleus_engine_params *p,
                              const nucleus_option_info *opt, const char *text,
                              nc_error *err) {
  return nc_opt_set(p, opt, text, err);
}

nc_code nc_engine_options_check_all(const nc_hparams *hp,
                                    const nucleus_engine_params *p,
                                    nc_error *err) {
  /* 0 is the default for the counts (nucleus_engine_params). */
  nucleus_engine_params q = *p, d = nucleus_engine_default_params();
  if (q.kv_block_tokens == 0) q.kv_block_tokens = d.kv_block_tokens;
  if (q.max_batch_tokens == 0) q.max_batch_tokens = d.max_batch_tokens;
  if (q.max_running == 0) q.max_running = d.max_running;
  if (q.max_queued == 0) q.max_queued = d.max_queued;
  nc_code rc = nc_opt_check_all(&q, ROWS, N_ROWS, err);
  if (rc != NC_OK || !hp || q.n_ctx <= hp->n_ctx_train) return rc;
  return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                 "'n_ctx' must be an integer in [0, %d] (the model's training "
                 "context), got %d",
                 hp->n_ctx_train, q.n_ctx);
}

void nc_engine_options_format(const nucleus_engine_params *p,
                              const nucleus_option_info *opt, char *buf,
                              size_t cap) {
  nc_opt_format(p, opt, buf, cap);
}
