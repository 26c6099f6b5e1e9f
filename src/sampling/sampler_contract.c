/* sampler_contract: the parameter table and its checks. */
#include "sampler_contract.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct row {
  nucleus_param_info info;
  size_t offset; /* into nucleus_request_params: float, int32_t or bool */
} row;

#define S(field) offsetof(nucleus_request_params, sampling.field)
#define R(field) offsetof(nucleus_request_params, field)
#define D(lib, server, cli)                                                    \
  { lib, server, cli }

/* Library and server defaults are OpenAI's; the CLI's are llama.cpp's. */
static const row ROWS[] = {
    {{"temperature", "--temp", "--temperature", NUCLEUS_PARAM_FLOAT, 0, 100,
      false, D(1, 1, 0.8), "general.sampling.temp", "temperature (0: greedy)"},
     S(temperature)},
    {{"top_k", "--top-k", NULL, NUCLEUS_PARAM_INT, -1, 1 << 30, false,
      D(0, 0, 40), "general.sampling.top_k",
      "keep the k most likely tokens (0 or -1: off)"},
     S(top_k)},
    {{"top_p", "--top-p", NULL, NUCLEUS_PARAM_FLOAT, 0, 1, true, D(1, 1, 0.95),
      "general.sampling.top_p",
      "nucleus sampling: the smallest set with this much mass (1: off)"},
     S(top_p)},
    {{"min_p", "--min-p", NULL, NUCLEUS_PARAM_FLOAT, 0, 1, false, D(0, 0, 0.05),
      "general.sampling.min_p",
      "drop tokens below min_p x the top probability (0: off)"},
     S(min_p)},
    {{"typical_p", "--typical", NULL, NUCLEUS_PARAM_FLOAT, 0, 1, true,
      D(1, 1, 1), NULL, "locally typical sampling p (1: off)"},
     S(typical_p)},
    {{"repetition_penalty", "--repeat-penalty", NULL, NUCLEUS_PARAM_FLOAT, 0,
      100, true, D(1, 1, 1), "general.sampling.penalty_repeat",
      "repetition penalty over prompt and output (1: off)"},
     S(repetition_penalty)},
    {{"presence_penalty", "--presence-penalty", NULL, NUCLEUS_PARAM_FLOAT, -2,
      2, false, D(0, 0, 0), NULL, "presence penalty (0: off)"},
     S(presence_penalty)},
    {{"frequency_penalty", "--frequency-penalty", NULL, NUCLEUS_PARAM_FLOAT, -2,
      2, false, D(0, 0, 0), NULL, "frequency penalty (0: off)"},
     S(frequency_penalty)},
    {{"max_tokens", "-n", "--n-predict", NUCLEUS_PARAM_INT, -1, INT32_MAX,
      false, D(-1, -1, -1), NULL,
      "tokens to generate (-1: until end of generation or a full context; "
      "0: none, the prompt is only read)"},
     R(max_tokens)},
    {{"min_tokens", "--min-tokens", NULL, NUCLEUS_PARAM_INT, 0, INT32_MAX,
      false, D(0, 0, 0), NULL,
      "end-of-generation and stop tokens are masked until this many"},
     R(min_tokens)},
    {{"n", "--n-completions", NULL, NUCLEUS_PARAM_INT, 1, 16, false, D(1, 1, 1),
      NULL, "completions of the prompt (sharing its KV cache)"},
     R(n)},
    {{"top_logprobs", "--logprobs", NULL, NUCLEUS_PARAM_INT, 0,
      NUCLEUS_MAX_TOP_LOGPROBS, false, D(0, 0, 0), NULL,
      "report each token's logprob and this many alternatives"},
     S(top_logprobs)},
    {{"inspect_top_n", NULL, NULL, NUCLEUS_PARAM_INT, 0,
      NUCLEUS_MAX_INSPECT_TOP, false, D(0, 0, 0), NULL,
      "record what the sampler did to this many of the most likely tokens "
      "at each step (0: off; the server's inspect.top_n)"},
     S(inspect_top_n)},
    {{"ignore_eos", "--ignore-eos", NULL, NUCLEUS_PARAM_BOOL, 0, 1, false,
      D(0, 0, 0), NULL, "keep generating past end-of-generation tokens"},
     R(ignore_eos)},
    {{"include_stop_str_in_output", "--include-stop", NULL, NUCLEUS_PARAM_BOOL,
      0, 1, false, D(0, 0, 0), NULL,
      "keep the matched stop string in the text"},
     R(include_stop_str_in_output)},
    {{"skip_special_tokens", NULL, NULL, NUCLEUS_PARAM_BOOL, 0, 1, false,
      D(1, 1, 1), NULL, "leave special tokens out of the text"},
     R(skip_special_tokens)},
    {{"beam_width", "--beam-width", NULL, NUCLEUS_PARAM_INT, 1, 16, false,
      D(1, 1, 1), NULL,
      "beam search with this many beams (1: off; the server's best_of with "
      "use_beam_search)"},
     R(beam_width)},
    {{"length_penalty", "--length-penalty", NULL, NUCLEUS_PARAM_FLOAT, -10, 10,
      false, D(1, 1, 1), NULL, "beam score = sum of logprobs / length^X"},
     R(length_penalty)},
    {{"early_stopping", "--early-stopping", NULL, NUCLEUS_PARAM_BOOL, 0, 1,
      false, D(0, 0, 0), NULL, "beam search ends once n beams have finished"},
     R(early_stopping)},
};
#define N_ROWS (sizeof ROWS / sizeof ROWS[0])

size_t nc_params_count(void) {
  return N_ROWS;
}

const nucleus_param_info *nc_params_at(size_t i) {
  return i < N_ROWS ? &ROWS[i].info : NULL;
}

const nucleus_param_info *nc_params_find(const char *name) {
  for (size_t i = 0; name && i < N_ROWS; i++)
    if (!strcmp(ROWS[i].info.name, name)) return &ROWS[i].info;
  return NULL;
}

static const row *row_of(const nucleus_param_info *info) {
  return (const row *)info; /* info is a row's first member */
}

double nc_params_value(const nucleus_request_params *p,
                       const nucleus_param_info *info) {
  const char *base = (const char *)p + row_of(info)->offset;
  switch (info->kind) {
  case NUCLEUS_PARAM_FLOAT: return *(const float *)(const void *)base;
  case NUCLEUS_PARAM_INT: return *(const int32_t *)(const void *)base;
  case NUCLEUS_PARAM_BOOL: return *(const bool *)(const void *)base;
  }
  return 0;
}

static nc_code out_of_range(const nucleus_param_info *info, double v,
                            nc_error *err) {
  if (info->kind == NUCLEUS_PARAM_BOOL)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "'%s' must be true or false",
                   info->name);
  if (info->kind == NUCLEUS_PARAM_INT)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "'%s' must be an integer in [%.0f, %.0f], got %g",
                   info->name, info->min, info->max, v);
  return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                 "'%s' must be in %s%g, %g], got %g", info->name,
                 info->min_exclusive ? "(" : "[", info->min, info->max, v);
}

static bool in_range(const nucleus_param_info *info, double v) {
  if (!isfinite(v)) return false;
  if (info->kind != NUCLEUS_PARAM_FLOAT && v != floor(v)) return false;
  if (info->min_exclusive ? v <= info->min : v < info->min) return false;
  if (v > info->max) return false;
  return true;
}

nc_code nc_params_check(const nucleus_request_params *p,
                        const nucleus_param_info *info, nc_error *err) {
  double v = nc_params_value(p, info);
  return in_range(info, v) ? NC_OK : out_of_range(info, v, err);
}

nc_code nc_params_set(nucleus_request_params *p, const nucleus_param_info *info,
                      double v, nc_error *err) {
  if (!in_range(info, v)) return out_of_range(info, v, err);
  char *base = (char *)p + row_of(info)->offset;
  switch (info->kind) {
  case NUCLEUS_PARAM_FLOAT: *(float *)(void *)base = (float)v; break;
  case NUCLEUS_PARAM_INT:
    /* top_k: -1 is "off", as 0 is */
    *(int32_t *)(void *)base =
        v < 0 && !strcmp(info->name, "top_k") ? 0 : (int32_t)v;
    break;
  case NUCLEUS_PARAM_BOOL: *(bool *)(void *)base = v != 0; break;
  }
  return NC_OK;
}

double nc_params_default(const nucleus_param_info *info, nucleus_surface s) {
  return s >= 0 && s < NUCLEUS_SURFACE_COUNT ? info->defaults[s]
                                             : info->defaults[0];
}

void nc_params_apply_defaults(nucleus_request_params *p, nucleus_surface s) {
  for (size_t i = 0; i < N_ROWS; i++)
    nc_params_set(p, &ROWS[i].info, nc_params_default(&ROWS[i].info, s), NULL);
}

static nc_code check_rows(const nucleus_request_params *p, bool sampling,
                          nc_error *err) {
  const size_t lo = offsetof(nucleus_request_params, sampling);
  const size_t hi = lo + sizeof(nucleus_sampling_params);
  for (size_t i = 0; i < N_ROWS; i++) {
    bool in_sampling = ROWS[i].offset >= lo && ROWS[i].offset < hi;
    if (in_sampling != sampling) continue;
    nc_code rc = nc_params_check(p, &ROWS[i].info, err);
    if (rc != NC_OK) return rc;
  }
  return NC_OK;
}

nc_code nc_params_check_sampling(const nucleus_sampling_params *s,
                                 nc_error *err) {
  nucleus_request_params p;
  memset(&p, 0, sizeof p);
  p.sampling = *s;
  return check_rows(&p, true, err);
}

nc_code nc_params_check_request(const nucleus_request_params *p,
                                nc_error *err) {
  return check_rows(p, false, err);
}
