/* quantize_recipe: llama.cpp's tensor type choices (its
 * llama_tensor_get_type without an importance matrix, user overrides or
 * --pure) for the file types this build writes. */
#include "quantize_recipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "quantize_rows.h"

static const nc_ftype k_ftypes[] = {
    {"Q4_0", 2, NC_TYPE_Q4_0},        {"Q4_1", 3, NC_TYPE_Q4_1},
    {"Q8_0", 7, NC_TYPE_Q8_0},        {"Q5_0", 8, NC_TYPE_Q5_0},
    {"Q5_1", 9, NC_TYPE_Q5_1},        {"Q2_K", 10, NC_TYPE_Q2_K},
    {"Q3_K_S", 11, NC_TYPE_Q3_K},     {"Q3_K_M", 12, NC_TYPE_Q3_K},
    {"Q3_K_L", 13, NC_TYPE_Q3_K},     {"Q4_K_S", 14, NC_TYPE_Q4_K},
    {"Q4_K_M", 15, NC_TYPE_Q4_K},     {"Q5_K_S", 16, NC_TYPE_Q5_K},
    {"Q5_K_M", 17, NC_TYPE_Q5_K},     {"Q6_K", 18, NC_TYPE_Q6_K},
    {"IQ2_XXS", 19, NC_TYPE_IQ2_XXS}, {"IQ2_XS", 20, NC_TYPE_IQ2_XS},
    {"IQ3_XS", 22, NC_TYPE_IQ3_S},    {"IQ3_XXS", 23, NC_TYPE_IQ3_XXS},
    {"IQ1_S", 24, NC_TYPE_IQ1_S},     {"IQ1_M", 31, NC_TYPE_IQ1_M},
    {"IQ4_NL", 25, NC_TYPE_IQ4_NL},   {"IQ3_S", 26, NC_TYPE_IQ3_S},
    {"IQ3_M", 27, NC_TYPE_IQ3_S},     {"IQ2_S", 28, NC_TYPE_IQ2_XS},
    {"IQ2_M", 29, NC_TYPE_IQ2_S},     {"IQ4_XS", 30, NC_TYPE_IQ4_XS},
    {"MXFP4_MOE", 38, NC_TYPE_MXFP4},
};
enum { N_FTYPES = sizeof k_ftypes / sizeof k_ftypes[0] };

const nc_ftype *nc_ftype_by_name(const char *name) {
  if (!name) return NULL;
  if (strcasecmp(name, "Q3_K") == 0) name = "Q3_K_M";
  if (strcasecmp(name, "Q4_K") == 0) name = "Q4_K_M";
  if (strcasecmp(name, "Q5_K") == 0) name = "Q5_K_M";
  for (int i = 0; i < N_FTYPES; i++)
    if (strcasecmp(name, k_ftypes[i].name) == 0) return &k_ftypes[i];
  return NULL;
}

const char *nc_ftype_names(void) {
  return "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K_S, Q3_K_M (Q3_K), Q3_K_L, "
         "Q4_K_S, Q4_K_M (Q4_K), Q5_K_S, "
         "Q5_K_M (Q5_K), Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, "
         "IQ3_XXS, "
         "IQ3_XS, IQ3_S, IQ3_M, IQ4_NL, IQ4_XS, MXFP4_MOE";
}

typedef enum category {
  CAT_OTHER,
  CAT_OUTPUT,
  CAT_TOKEN_EMBD,
  CAT_ATTN_QKV,
  CAT_ATTN_KV_B,
  CAT_ATTN_V,
  CAT_ATTN_K,
  CAT_ATTN_Q,
  CAT_ATTN_OUTPUT,
  CAT_FFN_UP,
  CAT_FFN_GATE,
  CAT_FFN_DOWN,
} category;

static bool has(const char *name, const char *part) {
  return strstr(name, part) != NULL;
}

/* llama.cpp's broad tensor categories, first match wins. */
static category category_of(const char *name) {
  if (strcmp(name, "output.weight") == 0) return CAT_OUTPUT;
  if (strcmp(name, "token_embd.weight") == 0 ||
      strcmp(name, "per_layer_token_embd.weight") == 0)
    return CAT_TOKEN_EMBD;
  static const struct {
    const char *part;
    category cat;
  } parts[] = {
      {"attn_qkv.weight", CAT_ATTN_QKV},
      {"attn_kv_b.weight", CAT_ATTN_KV_B},
      {"attn_v.weight", CAT_ATTN_V},
      {"attn_k.weight", CAT_ATTN_K},
      {"attn_q.weight", CAT_ATTN_Q},
      {"attn_output.weight", CAT_ATTN_OUTPUT},
      {"ffn_up", CAT_FFN_UP},
      {"ffn_gate", CAT_FFN_GATE},
      {"ffn_down", CAT_FFN_DOWN},
  };
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (has(name, parts[i].part)) return parts[i].cat;
  return CAT_OTHER;
}

static bool attn_v_like(category c) {
  return c == CAT_ATTN_V || c == CAT_ATTN_QKV || c == CAT_ATTN_KV_B;
}

/* Whether llama.cpp quantizes a tensor at all: matrices (2+ dims) whose name
 * ends in "weight", but norms, expert routers and the small or positional
 * tensors it names. */
static bool quantizable(const gguf_tensor_info *t) {
  if (t->n_dims < 2) return false;
  const char *n = t->name;
  const size_t len = strlen(n);
  if (len < 6 || strcmp(n + len - 6, "weight") != 0) return false;
  static const char *const keep[] = {"_norm.weight",
                                     "ffn_gate_inp.weight",
                                     "ffn_gate_tid2eid.weight",
                                     "altup",
                                     "laurel",
                                     "per_layer_model_proj",
                                     "ssm_conv1d",
                                     "shortconv.conv.weight",
                                     "indexer.k_proj.weight",
                                     "indexer.q_proj.weight",
                                     "time_mix_",
                                     "attn_rel_b.weight",
                                     ".position_embd",
                                     "sam.pos_embd",
                                     "sam.neck.",
                                     "sam.net_",
                                     ".rel_pos",
                                     ".patch_embd",
                                     ".patch_merger",
                                     "a.rvq.codebook",
                                     "mm.a.code_embd"};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
    if (has(n, keep[i])) return false;
  return strcmp(n, "position_embd.weight") != 0 &&
         strcmp(n, "token_types.weight") != 0;
}

/* The layer of "blk.N.", -1 outside the layers. */
static int layer_of(const char *name) {
  int n = -1;
  if (sscanf(name, "blk.%d.", &n) != 1) return -1;
  return n;
}

static int by_layer_then_name(const void *a, const void *b) {
  const gguf_tensor_info *x = ((const nc_recipe_entry *)a)->tensor;
  const gguf_tensor_info *y = ((const nc_recipe_entry *)b)->tensor;
  const int lx = layer_of(x->name), ly = layer_of(y->name);
  if (lx != ly) return lx < ly ? -1 : 1;
  return strcmp(x->name, y->name);
}

static bool more_bits(int i, int n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The model facts the rules read. */
typedef struct recipe_state {
  int n_attn_wv, i_attn_wv, n_layer, i_ffn_down, i_ffn_gate, i_ffn_up;
  int64_t n_expert, n_gqa;
  bool tied; /* no output.weight: token_embd is also the output */
  bool has_imatrix;
  /* llama.cpp's LLM_TYPE_70B (its one size class the rules read): llama
   * with 80 layers and grouped KV heads, deci, olmo or qwen2 with 80,
   * jais2 with 68 */
  bool is_70b;
} recipe_state;

static nc_type fallback(nc_type t, int64_t ncols) {
  const int64_t bs = nc_type_traits_of((uint32_t)t)->block_size;
  if (ncols % bs == 0) return t;
  nc_type f = t;
  switch (t) {
  case NC_TYPE_Q2_K:
  case NC_TYPE_Q3_K: f = NC_TYPE_Q4_0; break;
  case NC_TYPE_Q4_K: f = NC_TYPE_Q5_0; break;
  case NC_TYPE_Q5_K: f = NC_TYPE_Q5_1; break;
  case NC_TYPE_Q6_K: f = NC_TYPE_Q8_0; break;
  case NC_TYPE_IQ1_S:
  case NC_TYPE_IQ1_M:
  case NC_TYPE_IQ2_XXS:
  case NC_TYPE_IQ2_XS:
  case NC_TYPE_IQ2_S:
  case NC_TYPE_IQ3_XXS:
  case NC_TYPE_IQ3_S:
  case NC_TYPE_IQ4_XS: f = NC_TYPE_IQ4_NL; break;
  default: break; /* the 32-block types: F16 below */
  }
  if (ncols % nc_type_traits_of((uint32_t)f)->block_size != 0) f = NC_TYPE_F16;
  return f;
}

/* The layer a per-layer rule reads: the running count of the tensor's kind,
 * or with experts its "blk.N." (their tensors are not in layer order). */
static int rule_layer(const recipe_state *s, const gguf_tensor_info *t,
                      int counter) {
  return s->n_expert > 1 ? layer_of(t->name) : counter;
}

/* The very-low-bit mixes (IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S, IQ1_M):
 * their own rules for attn_v, attn_k, ffn_down and attn_output. */
static nc_type rule_lowbit(recipe_state *s, uint32_t id, category c,
                           nc_type ty) {
  const bool iq2sm = id == 28 || id == 29, iq1 = id == 24 || id == 31;
  if (attn_v_like(c)) {
    if (s->n_gqa >= 4 || s->n_expert >= 4)
      ty = NC_TYPE_Q4_K;
    else
      ty = iq2sm ? NC_TYPE_IQ3_S : NC_TYPE_Q2_K;
    s->i_attn_wv++;
  } else if (s->n_expert == 8 && c == CAT_ATTN_K) {
    ty = NC_TYPE_Q4_K;
  } else if (c == CAT_FFN_DOWN) {
    if (s->i_ffn_down < s->n_layer / 8)
      ty = iq2sm ? NC_TYPE_IQ3_S : NC_TYPE_Q2_K;
    s->i_ffn_down++;
  } else if (c == CAT_ATTN_OUTPUT) {
    if (s->n_expert == 8)
      ty = NC_TYPE_Q5_K;
    else if (iq1)
      ty = NC_TYPE_IQ2_XXS;
    else if (iq2sm)
      ty = NC_TYPE_IQ3_S;
  }
  return ty;
}

static nc_type rule(recipe_state *s, const nc_ftype *ft,
                    const gguf_tensor_info *t) {
  nc_type ty = ft->base;
  const category c = category_of(t->name);
  const uint32_t id = ft->id;
  const bool q2k = id == 10, q3ks = id == 11, q3km = id == 12, q3kl = id == 13;
  const bool q4km = id == 15, q5km = id == 17, q4ks = id == 14;
  const bool iq4 = id == 25 || id == 30, mxfp4 = id == 38;
  const bool iq3xs = id == 22, iq3xxs = id == 23, iq3s = id == 26,
             iq3m = id == 27;
  /* the very-low-bit mixes: IQ2_XXS, IQ2_XS, IQ1_S, IQ2_S, IQ2_M, IQ1_M */
  const bool lowbit =
      id == 19 || id == 20 || id == 24 || id == 28 || id == 29 || id == 31;
  if (c == CAT_OUTPUT || (s->tied && c == CAT_TOKEN_EMBD)) {
    const int64_t bs = nc_type_traits_of((uint32_t)ty)->block_size;
    if (mxfp4 || t->ne[0] % bs != 0)
      ty = NC_TYPE_Q8_0;
    else if (lowbit || iq3xxs)
      ty = NC_TYPE_Q5_K;
    else if (ty != NC_TYPE_Q8_0)
      ty = NC_TYPE_Q6_K;
  } else if (mxfp4) { /* experts MXFP4, the rest Q8_0 */
    ty = t->ne[2] > 1 ? NC_TYPE_MXFP4 : NC_TYPE_Q8_0;
  } else if (c == CAT_TOKEN_EMBD) {
    if (id == 19 || id == 20 || id == 24 || id == 31)
      ty = NC_TYPE_Q2_K;
    else if (id == 28 || id == 29 || iq3xxs)
      ty = NC_TYPE_IQ3_S;
  } else if (lowbit) {
    ty = rule_lowbit(s, id, c, ty);
  } else if (attn_v_like(c)) {
    if (q2k)
      ty = s->n_gqa >= 4 ? NC_TYPE_Q4_K : NC_TYPE_Q3_K;
    else if (iq3xxs)
      ty = s->n_gqa >= 4     ? NC_TYPE_Q4_K
           : !s->has_imatrix ? NC_TYPE_IQ3_S
                             : NC_TYPE_IQ3_XXS;
    else if ((iq3xs || iq3s) && s->n_gqa >= 4)
      ty = NC_TYPE_Q4_K;
    else if (iq3m)
      ty = NC_TYPE_Q4_K;
    else if (q3km)
      ty = s->i_attn_wv < 2 ? NC_TYPE_Q5_K : NC_TYPE_Q4_K;
    else if (q3kl)
      ty = NC_TYPE_Q5_K;
    else if (iq4 && s->n_gqa >= 4)
      ty = NC_TYPE_Q5_K;
    else if ((q4km || q5km) && more_bits(s->i_attn_wv, s->n_attn_wv))
      ty = NC_TYPE_Q6_K;
    else if (q4ks && s->i_attn_wv < 4)
      ty = NC_TYPE_Q5_K;
    /* 8 query heads per attn_v: more bits at little cost */
    if (s->is_70b && (ty == NC_TYPE_Q3_K || ty == NC_TYPE_Q4_K))
      ty = NC_TYPE_Q5_K;
    if (s->n_expert == 8) ty = NC_TYPE_Q8_0;
    s->i_attn_wv++;
  } else if (c == CAT_ATTN_K) {
    if (s->n_expert == 8)
      ty = NC_TYPE_Q8_0;
    else if (iq3xs)
      ty = NC_TYPE_IQ3_XXS;
    else if (iq3xxs)
      ty = NC_TYPE_IQ2_S;
  } else if (c == CAT_ATTN_Q) {
    if (iq3xs)
      ty = NC_TYPE_IQ3_XXS;
    else if (iq3xxs)
      ty = NC_TYPE_IQ2_S;
  } else if (c == CAT_FFN_DOWN) {
    const int i_layer = rule_layer(s, t, s->i_ffn_down);
    const int n = s->n_layer;
    if (q2k) {
      ty = NC_TYPE_Q3_K;
    } else if (iq3xxs && !s->has_imatrix) {
      ty = i_layer < n / 8 ? NC_TYPE_Q4_K : NC_TYPE_Q3_K;
    } else if (q3km) {
      ty = i_layer < n / 16 ? NC_TYPE_Q5_K : NC_TYPE_Q4_K;
    } else if (iq3m && (i_layer < n / 8 ||
                        (s->n_expert == 8 && more_bits(i_layer, n)))) {
      ty = NC_TYPE_Q4_K;
    } else if (q3kl) {
      ty = NC_TYPE_Q5_K;
    } else if (q4km) {
      if (more_bits(i_layer, n)) ty = NC_TYPE_Q6_K;
    } else if (i_layer < n / 8 && iq4 && !s->has_imatrix) {
      ty = NC_TYPE_Q5_K;
    } else if (q5km && more_bits(i_layer, n)) {
      ty = NC_TYPE_Q6_K;
    } else if (q4ks && i_layer < n / 8) {
      ty = NC_TYPE_Q5_K;
    } else if ((id == 2 || id == 8) && s->has_imatrix && i_layer < n / 8) {
      /* Q4_0 and Q5_0 guard their first ffn_down layers */
      ty = id == 2 ? NC_TYPE_Q4_1 : NC_TYPE_Q5_1;
    }
    s->i_ffn_down++;
  } else if (c == CAT_ATTN_OUTPUT) {
    if (s->n_expert == 8) {
      if (q2k || q3ks || q3km || q4ks || q4km || iq4 || iq3xs || iq3xxs ||
          iq3s || iq3m)
        ty = NC_TYPE_Q5_K;
    } else if (q2k) {
      ty = NC_TYPE_Q3_K;
    } else if (iq3xxs) {
      ty = NC_TYPE_IQ3_S;
    } else if (q3km || iq3m) {
      ty = NC_TYPE_Q4_K;
    } else if (q3kl) {
      ty = NC_TYPE_Q5_K;
    }
  } else if (c == CAT_FFN_GATE || c == CAT_FFN_UP) {
    int *counter = c == CAT_FFN_GATE ? &s->i_ffn_gate : &s->i_ffn_up;
    const int i_layer = rule_layer(s, t, *counter);
    const int n = s->n_layer;
    if (iq3xs && i_layer >= n / 8 && i_layer < 7 * n / 8) ty = NC_TYPE_IQ3_XXS;
    (*counter)++;
  }
  return fallback(ty, t->ne[0]);
}

static bool key_eq(gguf_str s, const char *lit) {
  return s.ptr && s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0;
}

/* <arch>.key as an integer (an array's first element: per-layer counts),
 * or dflt. */
static int64_t arch_int(const gguf_file *f, const char *key, int64_t dflt) {
  gguf_str arch;
  if (!gguf_get_str(f, "general.architecture", &arch) || arch.len > 64)
    return dflt;
  char full[160];
  snprintf(full, sizeof full, "%.*s.%s", (int)arch.len, arch.ptr, key);
  int64_t v;
  if (gguf_get_i64(f, full, &v) || gguf_get_arr_i64(f, full, 0, &v)) return v;
  return dflt;
}

nc_code nc_quantize_recipe(const gguf_file *f, const nc_ftype *ftype,
                           bool has_imatrix, nc_recipe_entry *out,
                           nc_error *err) {
  const int64_t n = gguf_tensor_count(f);
  recipe_state s = {0};
  s.has_imatrix = has_imatrix;
  s.tied = gguf_find_tensor(f, "output.weight") == NULL;
  s.n_layer = (int)arch_int(f, "block_count", 0);
  s.n_expert = arch_int(f, "expert_count", 0);
  const int64_t heads = arch_int(f, "attention.head_count", 0);
  const int64_t kv_heads = arch_int(f, "attention.head_count_kv", heads);
  s.n_gqa = kv_heads > 0 ? heads / kv_heads : 0;
  gguf_str arch = {0};
  (void)gguf_get_str(f, "general.architecture", &arch);
  const bool llama = key_eq(arch, "llama");
  s.is_70b = (llama && s.n_layer == 80 && heads != kv_heads) ||
             ((key_eq(arch, "deci") || key_eq(arch, "olmo") ||
               key_eq(arch, "qwen2")) &&
              s.n_layer == 80) ||
             (key_eq(arch, "jais2") && s.n_layer == 68);
  for (int64_t i = 0; i < n; i++) {
    out[i].tensor = gguf_tensor_at(f, i);
    s.n_attn_wv += attn_v_like(category_of(out[i].tensor->name));
  }
  qsort(out, (size_t)n, sizeof *out, by_layer_then_name);
  for (int64_t i = 0; i < n; i++) {
    const gguf_tensor_info *t = out[i].tensor;
    out[i].type = (nc_type)t->type;
    if (!quantizable(t)) continue;
    const nc_type ty = rule(&s, ftype, t);
    if (ty == (nc_type)t->type) continue;
    if (!nc_quantize_weights_supported(ty))
      return nc_fail(err, NC_ERR_UNSUPPORTED,
                     "tensor '%s' would become %s, which this build cannot "
                     "write",
                     t->name, nc_type_name(ty));
    if (!nc_type_traits_of(t->type) || !nc_type_traits_of(t->type)->supported)
      return nc_fail(err, NC_ERR_UNSUPPORTED,
                     "tensor '%s' has type %s, which this build cannot read",
                     t->name, nc_type_name(t->type));
    out[i].type = ty;
  }
  return NC_OK;
}
