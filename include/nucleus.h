/* nucleus: an LLM inference engine in C. The public API.
 *
 * Every object is an opaque handle created by a *_create/_load function and
 * released by its matching *_free (one verb for every handle). Every
 * fallible call returns a nucleus_status and, when given a nucleus_error,
 * fills it with a message.
 * Parameter structs come with a *_default_params() function: start from it.
 *
 * Threads. A loaded model is immutable: every call that takes a
 * `const nucleus_model *` (the model queries, the tokenizer, detokenizer and
 * token calls, nucleus_chat_render*) is thread-safe and may run on any number
 * of threads at once, beside engines running over the same model (a server
 * tokenizes on its HTTP threads while the engine thread generates).
 * nucleus_eval_logits runs its own KV cache and thread pool, so it too may
 * run beside them. nucleus_engine_submit, nucleus_engine_get_stats and the
 * nucleus_request_* calls are thread-safe. Creating and freeing (model load
 * and free, engine create and destroy) are not: a model must outlive every
 * engine and call that uses it.
 */
#ifndef NUCLEUS_H
#define NUCLEUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Marks the API: the only symbols libnucleus.so exports (the library is
 * built with -fvisibility=hidden). */
#if defined(__GNUC__) || defined(__clang__)
#define NUCLEUS_API __attribute__((visibility("default")))
#else
#define NUCLEUS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The release this header belongs to (semantic versioning; the Makefile's
 * version, nucleus.pc's and nucleus --version's are read from here). */
#define NUCLEUS_VERSION "0.1.0"

/* The version of the library linked, as NUCLEUS_VERSION spells it: compare
 * the two to catch a program built against another release's header. */
NUCLEUS_API const char *nucleus_version(void);

/* ---------------------------------------------------------------- errors */

typedef enum nucleus_status {
  NUCLEUS_OK = 0,
  NUCLEUS_ERR_IO,               /* file missing, unreadable, socket error */
  NUCLEUS_ERR_FORMAT,           /* malformed model file or template */
  NUCLEUS_ERR_UNSUPPORTED,      /* valid but not supported (arch, type) */
  NUCLEUS_ERR_NOMEM,            /* allocation failed */
  NUCLEUS_ERR_INVALID_ARGUMENT, /* bad parameter: message names it */
  NUCLEUS_ERR_LIMIT,            /* a size, depth or context limit */
  NUCLEUS_ERR_BUSY,             /* queue full: try again later */
  NUCLEUS_ERR_CANCELLED,        /* cancelled by the caller */
  NUCLEUS_ERR_INTERNAL,
  NUCLEUS_ERR_TIMEOUT, /* nothing happened within the time given */
} nucleus_status;

typedef struct nucleus_error {
  nucleus_status code;
  char message[512];
} nucleus_error;

NUCLEUS_API const char *nucleus_status_name(nucleus_status code);

/* Frees memory that the API returned to the caller (token arrays, strings). */
NUCLEUS_API void nucleus_free(void *ptr);

/* ----------------------------------------------------------------- model */

typedef struct nucleus_model nucleus_model;
/* A decoded image (RGB8; nucleus_image_from_rgb, nucleus_image_decode) and
 * a vision projector (the mmproj section below). */
typedef struct nucleus_image nucleus_image;
typedef struct nucleus_mmproj nucleus_mmproj;

/* Flash attention, as llama.cpp's --flash-attn. auto (the default) is on,
 * as llama.cpp's CPU default: with llama.cpp's row orders (nucleus run,
 * nucleus_row_orders) a prompt's rows take its tiled order and generated
 * tokens its per-row order, so the logits follow llama.cpp at its defaults
 * (nucleus_model_flash_attn says what a loaded model runs). */
typedef enum nucleus_flash_attn {
  NUCLEUS_FLASH_ATTN_AUTO = 0,
  NUCLEUS_FLASH_ATTN_ON = 1,
  NUCLEUS_FLASH_ATTN_OFF = 2,
} nucleus_flash_attn;

/* The element type of the K or V half of the KV cache, as llama.cpp's
 * --cache-type-k / --cache-type-v (f16 its default). Every type other than
 * f16 needs flash attention here (llama.cpp: a quantized V does): with
 * flash_attn auto it turns flash attention on (as llama.cpp's auto does for
 * a quantized V), with flash_attn off the model load fails. */
typedef enum nucleus_cache_type {
  NUCLEUS_CACHE_F16 = 0,
  NUCLEUS_CACHE_BF16 = 1,
  NUCLEUS_CACHE_Q8_0 = 2,
  NUCLEUS_CACHE_Q4_0 = 3,
} nucleus_cache_type;

/* How nucleus_model_load brings the file into memory. */
typedef enum nucleus_load_mode {
  /* read when the file takes at most half the memory available
   * (MemAvailable), else mmap; mmap too when the memory cannot be had */
  NUCLEUS_LOAD_AUTO = 0,
  /* read into the process's own memory, in 2 MiB pages where the kernel
   * gives them (transparent huge pages, "madvise" or "always"): decode's
   * memory-bound matmuls stream faster than from the page cache's 4 KiB
   * pages. The whole file is then private memory of the process. */
  NUCLEUS_LOAD_READ = 1,
  /* map the file (llama.cpp's default): no copy, its pages shared with
   * other processes and left to the page cache */
  NUCLEUS_LOAD_MMAP = 2,
} nucleus_load_mode;

typedef struct nucleus_model_params {
  int n_threads;          /* 0: all online cores */
  bool reference_kernels; /* force the plain-C kernels (for checking) */
  /* Add in the float order of llama.cpp run with --no-repack (its plain x86
   * dots), not of its default build on this CPU (AMX tiles where the CPU
   * has them): slower prompts on AMX CPUs, the same logits as that run. */
  bool no_repack;
  /* Attention of every context of the model: flash attention in the float
   * order of llama.cpp's CPU flash path, or its non-flash order (off). */
  nucleus_flash_attn flash_attn;
  /* The KV cache's element types of every context of the model. */
  nucleus_cache_type cache_type_k, cache_type_v;
  const char *chat_template; /* override the model's template (text), or NULL */
  /* RoPE overrides, as llama.cpp's flags (each 0 or NULL: the file's value):
   * rope_scaling "none", "linear" or "yarn" (--rope-scaling), rope_scale
   * the scaling factor (--rope-scale), rope_freq_base (--rope-freq-base),
   * yarn_orig_ctx the original context YaRN corrects over
   * (--yarn-orig-ctx). YaRN with a factor other than the file's makes the
   * training context yarn_orig_ctx x the factor, as llama.cpp does. */
  const char *rope_scaling;
  float rope_scale, rope_freq_base;
  int32_t yarn_orig_ctx;
  nucleus_load_mode load_mode; /* default auto */
  /* Load and run the file's MTP (next-token prediction) head, the drafter
   * of NUCLEUS_SPEC_MTP (qwen35, qwen35moe, qwen3next files with
   * nextn_predict_layers): every forward also writes its K/V (one
   * attention layer more). Refused for a file without MTP layers. */
  bool mtp;
} nucleus_model_params;

NUCLEUS_API nucleus_model_params nucleus_model_default_params(void);

NUCLEUS_API nucleus_status
nucleus_model_load(const char *path, const nucleus_model_params *params,
                   nucleus_model **out, nucleus_error *err);
NUCLEUS_API void nucleus_model_free(nucleus_model *model);

/* The architectures (general.architecture values) this build runs, i in
 * [0, nucleus_arch_count()); NULL past the end. Static strings. */
NUCLEUS_API size_t nucleus_arch_count(void);
NUCLEUS_API const char *nucleus_arch_name(size_t i);

/* The tensor types (ggml's names: "F32", "Q4_K", "IQ4_XS", ...) this build
 * loads matrices of, i in [0, nucleus_type_count()), in ggml's id order;
 * NULL past the end. Static strings. */
NUCLEUS_API size_t nucleus_type_count(void);
NUCLEUS_API const char *nucleus_type_name(size_t i);

/* Writes the model at in_path to out_path with its matrices quantized to
 * type, a file type as llama-quantize names it: "Q4_0", "Q4_1", "Q5_0",
 * "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M" (or "Q3_K"), "Q3_K_L",
 * "Q4_K_S", "Q4_K_M" (or "Q4_K"), "Q5_K_S", "Q5_K_M" (or "Q5_K"), "Q6_K",
 * "IQ3_S", "IQ3_M", "IQ4_NL", "IQ4_XS", "MXFP4_MOE" (and with
 * nucleus_quantize_imatrix "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M",
 * "IQ3_XXS", "IQ3_XS", which llama.cpp refuses to write without an
 * importance matrix: an error naming the tensor). Each tensor gets the
 * type llama.cpp's quantizer gives it
 * (its per-tensor rules and fallbacks; no importance matrix) and the same
 * blocks; the metadata is copied with general.file_type set. n_threads in
 * [1, 256]. out_path is written whole or removed. */
NUCLEUS_API nucleus_status nucleus_quantize(const char *in_path,
                                            const char *out_path,
                                            const char *type, int n_threads,
                                            nucleus_error *err);

/* nucleus_quantize steered by an importance matrix (imatrix_path: a file
 * llama-imatrix or `nucleus imatrix` wrote, GGUF or legacy .dat), as
 * llama-quantize --imatrix: the quantizers weight each column's error by
 * its mean squared activation, the mixes apply their imatrix rules, and
 * the output's metadata names the matrix (quantize.imatrix.*). NULL: as
 * nucleus_quantize. */
NUCLEUS_API nucleus_status nucleus_quantize_imatrix(
    const char *in_path, const char *out_path, const char *type, int n_threads,
    const char *imatrix_path, nucleus_error *err);

/* An importance matrix, as llama-imatrix computes one (nucleus imatrix):
 * the text's tokens cut into chunks of n_ctx, each run from an empty cache
 * (its first token BOS when the model adds one), and for every "blk."
 * weight the sums of its input columns' squares and the rows summed (per
 * expert for a mixture's matrices; dense matmuls of 16 rows or more), in
 * llama-imatrix's GGUF form, which nucleus_quantize_imatrix and
 * llama-quantize --imatrix read. */
typedef struct nucleus_imatrix_params {
  int32_t n_ctx;       /* tokens per chunk, in [16, training context]: 512 */
  int32_t max_chunks;  /* at most this many chunks (0: every whole one) */
  bool process_output; /* also output.weight (llama-imatrix's flag) */
  const char *dataset; /* the name recorded in imatrix.datasets, or NULL */
} nucleus_imatrix_params;
NUCLEUS_API nucleus_imatrix_params nucleus_imatrix_default_params(void);
/* Called after each chunk: done of n_chunks. */
typedef void (*nucleus_imatrix_progress)(void *arg, int32_t done,
                                         int32_t n_chunks);
/* Computes the matrix over tokens (at least one chunk) and writes it to
 * out_path. params NULL: the defaults. */
NUCLEUS_API nucleus_status nucleus_imatrix_compute(
    nucleus_model *model, const int32_t *tokens, size_t n,
    const nucleus_imatrix_params *params, const char *out_path,
    nucleus_imatrix_progress progress, void *arg, nucleus_error *err);

/* Prints the metadata and the tensor table of a GGUF file (no weights read). */
NUCLEUS_API nucleus_status nucleus_print_gguf_info(const char *path, FILE *out,
                                                   nucleus_error *err);

NUCLEUS_API int32_t nucleus_model_n_vocab(const nucleus_model *model);
NUCLEUS_API int32_t nucleus_model_n_ctx_train(const nucleus_model *model);
NUCLEUS_API const char *nucleus_model_name(const nucleus_model *model);
NUCLEUS_API const char *nucleus_model_arch(const nucleus_model *model);
/* The Hugging Face class of the model's architecture (config.json's
 * "architectures": "LlamaForCausalLM", "MixtralForCausalLM" for a llama
 * file with experts, "Qwen2ForCausalLM", ...); NULL for no model. A static
 * string. */
NUCLEUS_API const char *
nucleus_model_hf_architecture(const nucleus_model *model);
/* The kernel table in use: "amx", "avx512", "avx2" or "ref". */
NUCLEUS_API const char *nucleus_model_kernels(const nucleus_model *model);
/* Whether the model's contexts run flash attention (auto resolved). */
NUCLEUS_API bool nucleus_model_flash_attn(const nucleus_model *model);
/* Parses "on", "off" or "auto" (llama.cpp's values of --flash-attn); false
 * for anything else. */
NUCLEUS_API bool nucleus_flash_attn_parse(const char *s,
                                          nucleus_flash_attn *out);

/* Parses "f16", "bf16", "q8_0" or "q4_0" (llama.cpp's names); false for
 * anything else. */
NUCLEUS_API bool nucleus_cache_type_parse(const char *s,
                                          nucleus_cache_type *out);
/* "f16", "bf16", "q8_0", "q4_0"; "?" for other values. */
NUCLEUS_API const char *nucleus_cache_type_name(nucleus_cache_type t);
/* Parses "auto", "read" or "mmap"; false for anything else. */
NUCLEUS_API bool nucleus_load_mode_parse(const char *s, nucleus_load_mode *out);
/* "auto", "read", "mmap"; "?" for other values. */
NUCLEUS_API const char *nucleus_load_mode_name(nucleus_load_mode m);
/* How the model's file came into memory: NUCLEUS_LOAD_READ or _MMAP (auto
 * resolved). */
NUCLEUS_API nucleus_load_mode
nucleus_model_load_mode(const nucleus_model *model);
/* ------------------------------------------------ the model-option contract
 *
 * One table of the nucleus_model_params fields a command line sets: the
 * field's name, its flags (llama.cpp's), its values and its help line.
 * nucleus_model_load's checks, the flags of `nucleus run`, `chat`, `bench`
 * and `serve`, and their --help texts all read it, so each gives the same
 * answer with the same message and shows the library's own defaults.
 * (chat_template, a text, is outside: the commands read it from a file.) */

typedef enum nucleus_option_kind {
  NUCLEUS_OPTION_FLAG,   /* a bool the bare flag sets */
  NUCLEUS_OPTION_INT,    /* in [min, max] */
  NUCLEUS_OPTION_FLOAT,  /* in [min, max] */
  NUCLEUS_OPTION_CHOICE, /* one of choices (an enum's values in order) */
} nucleus_option_kind;

typedef struct nucleus_option_info {
  const char *name;      /* the params struct's field, "flash_attn" */
  const char *cli_flag;  /* "--flash-attn" */
  const char *cli_alias; /* "-fa", or NULL */
  nucleus_option_kind kind;
  const char *metavar; /* the value's name in help ("WHEN"); NULL: a flag */
  double min, max;     /* INT and FLOAT: the allowed range, inclusive */
  const char *const *choices; /* CHOICE: the names, NULL-terminated */
  const char *help;
} nucleus_option_info;

NUCLEUS_API size_t nucleus_model_options_count(void);
NUCLEUS_API const nucleus_option_info *
nucleus_model_options_at(size_t i); /* NULL past the end */
/* By field name, flag or alias ("flash_attn", "--flash-attn", "-fa"). */
NUCLEUS_API const nucleus_option_info *
nucleus_model_options_find(const char *name);

/* Sets the option in p from its command-line text (NULL for a flag: true).
 * One message per kind: "'NAME' must be on, off or auto, got 'X'",
 * "'NAME' must be an integer in [LO, HI], got 'X'", ... */
NUCLEUS_API nucleus_status nucleus_model_params_set(
    nucleus_model_params *p, const nucleus_option_info *opt, const char *text,
    nucleus_error *err);

/* Checks every option of p against the table, with the same messages
 * (nucleus_model_load does this first). */
NUCLEUS_API nucleus_status nucleus_model_params_validate(
    const nucleus_model_params *p, nucleus_error *err);

/* The option's value in p as text ("auto (on)", "f16", "0 (the file's)"):
 * of nucleus_model_default_params(), the default a --help shows. */
NUCLEUS_API void nucleus_model_params_format(const nucleus_model_params *p,
                                             const nucleus_option_info *opt,
                                             char *buf, size_t cap);

/* Bytes of the model's file in memory on 2 MiB pages now, as the kernel
 * counts them (Linux's /proc/self/smaps); 0 when mapped, where the kernel
 * gave none, or where the count cannot be read. */
NUCLEUS_API size_t nucleus_model_huge_page_bytes(const nucleus_model *model);
/* The model's cache types (as given at load). */
NUCLEUS_API nucleus_cache_type
nucleus_model_cache_type_k(const nucleus_model *model);
NUCLEUS_API nucleus_cache_type
nucleus_model_cache_type_v(const nucleus_model *model);
/* KV cache bytes per position (K and V of every layer) at the model's cache
 * types. */
NUCLEUS_API size_t
nucleus_model_kv_bytes_per_position(const nucleus_model *model);
/* The part of those bytes on sliding-window layers, which the cache keeps
 * for the last *window positions of a sequence only (gemma2/3, gpt-oss;
 * --swa-full keeps them all); 0 and *window 0 when the model has none.
 * window may be NULL. */
NUCLEUS_API size_t nucleus_model_kv_bytes_per_position_swa(
    const nucleus_model *model, int32_t *window);
/* The layers that keep K/V in the cache; the others (Gemma 4's shared-KV
 * layers) read another layer's. *n_layer (may be NULL): all the layers. */
NUCLEUS_API int32_t nucleus_model_kv_layers(const nucleus_model *model,
                                            int32_t *n_layer);
/* Bytes of recurrent state one sequence carries beside its K/V, whatever
 * its length (a hybrid model's gated DeltaNet layers: their convolution
 * windows and state matrices); 0 for a model without. *n_layer_rec (may
 * be NULL): the layers that keep it. */
NUCLEUS_API size_t nucleus_model_state_bytes_per_sequence(
    const nucleus_model *model, int32_t *n_layer_rec);

/* ------------------------------------------------------------- tokenizer */

/* Tokenizes text (any bytes). add_special adds BOS/EOS as the model's
 * metadata asks; parse_special turns special-token text into special tokens.
 * *ids_out is allocated; release it with nucleus_free. */
NUCLEUS_API nucleus_status nucleus_tokenize(
    const nucleus_model *model, const char *text, size_t len, bool add_special,
    bool parse_special, int32_t **ids_out, size_t *n_out, nucleus_error *err);

/* Tokenizes a prompt rendered by a chat template: special-token text
 * becomes special tokens, BOS is added as the model asks, and a template
 * that prints bos_token itself does not end up with two. */
NUCLEUS_API nucleus_status nucleus_tokenize_chat(const nucleus_model *model,
                                                 const char *text, size_t len,
                                                 int32_t **ids_out,
                                                 size_t *n_out,
                                                 nucleus_error *err);

/* Decodes ids to text (NUL-terminated, *len_out without the NUL). */
NUCLEUS_API nucleus_status nucleus_detokenize(const nucleus_model *model,
                                              const int32_t *ids, size_t n,
                                              bool skip_special,
                                              char **text_out, size_t *len_out,
                                              nucleus_error *err);

/* The raw bytes of one token's piece (special tokens rendered as text). */
NUCLEUS_API nucleus_status nucleus_token_piece(const nucleus_model *model,
                                               int32_t id, char *buf,
                                               size_t cap, size_t *len_out,
                                               nucleus_error *err);

NUCLEUS_API bool nucleus_token_is_eog(const nucleus_model *model, int32_t id);
NUCLEUS_API int32_t
nucleus_token_bos(const nucleus_model *model); /* -1 when none */

/* --------------------------------------------------------- chat template */

/* Which template the model renders with: "override" (params.chat_template),
 * "file" (tokenizer.chat_template), the name of its family's built-in
 * template for a file that has none ("gemma": Gemma's turn markers for
 * gemma*; "chatml" for qwen* and vocabularies with <|im_start|>; "llama3":
 * the Llama 3 headers, for vocabularies with <|start_header_id|>), or NULL
 * when there is none. The string is static. */
NUCLEUS_API const char *
nucleus_model_chat_template_source(const nucleus_model *model);

/* Renders the model's chat template (or params.chat_template) for a JSON
 * array of messages ([{"role":..., "content":...}, ...]); tools_json may be
 * NULL or a JSON array. The result is allocated; release with nucleus_free.
 * A file without tokenizer.chat_template renders with its family's
 * built-in template (nucleus_model_chat_template_source); fails with a
 * clear error when there is none. */
NUCLEUS_API nucleus_status nucleus_chat_render(const nucleus_model *model,
                                               const char *messages_json,
                                               const char *tools_json,
                                               bool add_generation_prompt,
                                               char **out, size_t *len_out,
                                               nucleus_error *err);

/* As nucleus_chat_render, plus kwargs_json: NULL or a JSON object of extra
 * template variables (the chat_template_kwargs of an OpenAI-style request,
 * e.g. {"enable_thinking": false} for Qwen3). */
NUCLEUS_API nucleus_status nucleus_chat_render_ex(
    const nucleus_model *model, const char *messages_json,
    const char *tools_json, const char *kwargs_json, bool add_generation_prompt,
    char **out, size_t *len_out, nucleus_error *err);

/* A conversation to turn into a prompt. */
typedef struct nucleus_chat_params {
  const char *messages_json;  /* a JSON array of {"role", "content", ...} */
  const char *tools_json;     /* NULL, or a JSON array */
  const char *kwargs_json;    /* NULL, or a JSON object of template variables */
  bool add_generation_prompt; /* true: open the assistant's turn */
  bool continue_final_message; /* leave the last message open (it is cut
                                  right after its content): the model
                                  continues it; needs add_generation_prompt
                                  false */
  /* false (default): special-token text inside message contents (a user
   * typing "<|im_end|>") is ordinary text, and only the template's own
   * bytes can produce control tokens. true: parse it everywhere, as
   * llama.cpp does (a user can then forge turns). */
  bool parse_special_in_content;
  /* true: when tools_json names tools and the template renders none (the
   * "generic" tool format, nucleus_model_tool_format), describe them and
   * the call syntax in the system message, and write earlier calls and
   * tool results back as text (the server and `nucleus chat --tools` do).
   * false (default): the template renders exactly what it renders, as
   * transformers' apply_chat_template. */
  bool describe_tools;
  /* strftime_now()'s clock: 0 reads the current local time, else it is
   * that many seconds since the epoch, shown in UTC (reproducible renders:
   * `nucleus template --now SECONDS`, tests). */
  int64_t now;
} nucleus_chat_params;

NUCLEUS_API nucleus_chat_params nucleus_chat_default_params(void);

/* As nucleus_chat_render_ex with strftime_now()'s clock given (see
 * nucleus_chat_params.now). */
NUCLEUS_API nucleus_status nucleus_chat_render_at(
    const nucleus_model *model, const char *messages_json,
    const char *tools_json, const char *kwargs_json, bool add_generation_prompt,
    int64_t now, char **out, size_t *len_out, nucleus_error *err);

/* Renders the conversation with the model's template and tokenizes it as
 * nucleus_tokenize_chat does, with parse_special_in_content as above.
 * Either output may be NULL: *text_out (NUL-terminated) and *ids_out are
 * allocated; release them with nucleus_free. */
NUCLEUS_API nucleus_status nucleus_chat_apply(
    const nucleus_model *model, const nucleus_chat_params *params,
    char **text_out, size_t *text_len_out, int32_t **ids_out, size_t *n_ids_out,
    nucleus_error *err);

/* ------------------------------------------------------------ tool calls */

/* The function-call syntax of the model's chat template family (or of the
 * override): "hermes" (Hermes, Qwen 2.5, Qwen 3: <tool_call>{...}</tool_call>),
 * "llama3" ({"name", "parameters"}, <|python_tag|>), "mistral"
 * ([TOOL_CALLS][...]), "mistral-args" ([TOOL_CALLS]name[ARGS]{...}),
 * "granite" (<|tool_call|>[...]), "deepseek-r1", "harmony" (gpt-oss:
 * <|channel|>commentary to=functions.NAME ...<|message|>{...}, the analysis
 * channel read as the reasoning), "gemma4" (<|tool_call>call:NAME{key:
 * value,...}<tool_call|>, its own argument syntax read into JSON; no
 * grammar forces it yet: tool_choice "auto" only), or "generic" for templates
 * that render no tools: then nucleus_chat_apply describes the tools in the
 * system message and asks for <tool_call>{...}</tool_call>. */
NUCLEUS_API const char *nucleus_model_tool_format(const nucleus_model *model);

typedef struct nucleus_tool_call {
  char *name;      /* the function */
  char *arguments; /* a JSON object, compact */
  char *id;        /* the id the model wrote, or NULL */
} nucleus_tool_call;

/* What a reply (or the part of it generated so far) says: its content and
 * its calls, decided from the start; decided bytes never change as the
 * reply grows. A malformed or unclosed call is content. */
typedef struct nucleus_tool_reply {
  char *content; /* NUL-terminated */
  size_t content_len;
  /* the reasoning: the thinking block (nucleus_model_reasoning_format;
   * harmony's analysis channel), NUL-terminated; NULL when there is none */
  char *reasoning;
  size_t reasoning_len;
  nucleus_tool_call *calls;
  size_t n_calls;
  size_t decided; /* bytes of the reply decided so far */
} nucleus_tool_reply;

/* Scans reply[0, len) in the model's format (final: the reply is complete;
 * everything is decided). Release *out with nucleus_tool_reply_clear. */
NUCLEUS_API nucleus_status nucleus_tool_reply_scan(const nucleus_model *model,
                                                   const char *reply,
                                                   size_t len, bool final,
                                                   nucleus_tool_reply *out,
                                                   nucleus_error *err);
NUCLEUS_API void nucleus_tool_reply_clear(nucleus_tool_reply *r);

/* ------------------------------------------------------------- reasoning */

/* The thinking markers of the model's chat template family (or of the
 * override): "think" (<think>…</think>: Qwen3/3.5, DeepSeek-R1 distills,
 * SmolLM3), "harmony" (gpt-oss's analysis channel), "gemma4"
 * (<|channel>thought … <channel|>), or "none". */
NUCLEUS_API const char *
nucleus_model_reasoning_format(const nucleus_model *model);

/* The family's markers (static strings; all NULL for "none"): open begins
 * the thinking block, close ends it, force_close is what ends it when the
 * thinking budget is spent (nucleus_request_params.reasoning), the close
 * marker and, for harmony, the final channel's header after it. */
typedef struct nucleus_reasoning_markers {
  const char *open, *close, *force_close;
} nucleus_reasoning_markers;
NUCLEUS_API nucleus_reasoning_markers
nucleus_model_reasoning_markers(const nucleus_model *model);

/* Whether a chat prompt's text (prompt[0, len)) leaves the reply inside
 * the thinking block: the template's generation prompt ends in the open
 * marker ("<think>\n"). */
NUCLEUS_API bool nucleus_reasoning_prompt_opens(const nucleus_model *model,
                                                const char *prompt, size_t len);

/* How a chat reply is read (nucleus_reply_scan). */
typedef struct nucleus_reply_format {
  bool calls;        /* read tool calls in the model's syntax */
  bool reasoning;    /* split the thinking into nucleus_tool_reply.reasoning
                        (false: it stays in the content as the model wrote
                        it: --reasoning-format none) */
  bool in_reasoning; /* the prompt opened the thinking block
                        (nucleus_reasoning_prompt_opens) */
} nucleus_reply_format;

/* calls and reasoning true, in_reasoning false (what
 * nucleus_tool_reply_scan reads with). */
NUCLEUS_API nucleus_reply_format nucleus_reply_default_format(void);

/* Scans reply[0, len) as format says: the reasoning (the thinking block,
 * trimmed, without its markers), the content and the calls of the answer
 * after it. Decided from the start: a streaming caller scans the growing
 * reply and sends what grew; decided bytes (a partial marker is held back)
 * never change, and the final scan equals the streamed ones joined. A
 * block the reply never closes is all reasoning. */
NUCLEUS_API nucleus_status nucleus_reply_scan(
    const nucleus_model *model, const nucleus_reply_format *format,
    const char *reply, size_t len, bool final, nucleus_tool_reply *out,
    nucleus_error *err);

/* ------------------------------------------------------ teacher forcing */

/* Logits for every position of tokens (n * n_vocab floats into logits), as
 * one sequence starting at position 0, in a context of the model's training
 * length (what LongRoPE picks its factors by). use_cache = false recomputes
 * each position from scratch without the KV cache (the reference mode). */
NUCLEUS_API nucleus_status nucleus_eval_logits(nucleus_model *model,
                                               const int32_t *tokens, size_t n,
                                               bool use_cache, float *logits,
                                               nucleus_error *err);

/* ---------------------------------------------------- embeddings, rerank */

/* How a sequence's output rows become one vector (llama.cpp's pooling
 * types; a file names its own as {arch}.pooling_type). */
typedef enum nucleus_pooling {
  NUCLEUS_POOLING_MODEL = -1, /* the model file's pooling */
  NUCLEUS_POOLING_NONE = 0,   /* a vector per token: not for nucleus_embed */
  NUCLEUS_POOLING_MEAN = 1,   /* the mean of the rows (BERT, EmbeddingGemma) */
  NUCLEUS_POOLING_CLS = 2,    /* the first row */
  NUCLEUS_POOLING_LAST = 3,   /* the last row (Qwen3-Embedding) */
  NUCLEUS_POOLING_RANK = 4,   /* the rank head's scores (rerankers) */
} nucleus_pooling;

/* "model", "none", "mean", "cls", "last", "rank"; NULL for others. */
NUCLEUS_API const char *nucleus_pooling_name(nucleus_pooling p);
/* The pooling named s (as nucleus_pooling_name spells it). */
NUCLEUS_API bool nucleus_pooling_parse(const char *s, nucleus_pooling *out);

/* The pooling the model file names (NONE when it names none). */
NUCLEUS_API nucleus_pooling nucleus_model_pooling(const nucleus_model *model);
/* Whether the file is an embedding model: it names a pooling other than
 * none, or its attention is non-causal (an encoder). */
NUCLEUS_API bool nucleus_model_is_embedding(const nucleus_model *model);
/* The rank head's outputs (0: the model is not a reranker): a reranker's
 * relevance score is the first. */
NUCLEUS_API int32_t nucleus_model_n_cls_out(const nucleus_model *model);

typedef struct nucleus_embed_params {
  nucleus_pooling pooling; /* NUCLEUS_POOLING_MODEL */
  bool normalize;          /* true: each vector L2-normalised (not scores) */
  int32_t dimensions;      /* 0: all; else the first `dimensions` values,
                              then normalised (Matryoshka) */
} nucleus_embed_params;

NUCLEUS_API nucleus_embed_params nucleus_embed_default_params(void);
/* Checks p against the model (the pooling resolved, not none; rank needs a
 * rank head; dimensions within the vector). */
NUCLEUS_API nucleus_status nucleus_embed_params_validate(
    const nucleus_model *model, const nucleus_embed_params *p,
    nucleus_error *err);
/* The floats of each vector nucleus_embed writes with p (0 when p is
 * refused): the rank head's outputs for rank, else dimensions or the
 * model's embedding size (after its dense projections). */
NUCLEUS_API int32_t nucleus_embed_size(const nucleus_model *model,
                                       const nucleus_embed_params *p);

/* One input: token ids (nucleus_tokenize's), at least one. */
typedef struct nucleus_embed_input {
  const int32_t *tokens;
  size_t n_tokens;
} nucleus_embed_input;

/* An embedder runs inputs through a model in embedding mode: many inputs
 * packed into batches of whole sequences kept apart (non-causal attention
 * within each for encoders), each pooled into one vector. A vector is the
 * same bits alone or among others, whatever the packing. It owns a
 * throwaway KV cache and a thread pool (the model's threads); one call at
 * a time per embedder, any number of embedders per model.
 * max_batch_tokens: the tokens of one batch, which is also the longest
 * input it takes (0: the model's training context, at most
 * NUCLEUS_EMBED_DEFAULT_BATCH); at most 1 << 20. */
#define NUCLEUS_EMBED_DEFAULT_BATCH 2048
typedef struct nucleus_embedder nucleus_embedder;
NUCLEUS_API nucleus_status nucleus_embedder_create(const nucleus_model *model,
                                                   int32_t max_batch_tokens,
                                                   nucleus_embedder **out,
                                                   nucleus_error *err);
NUCLEUS_API void nucleus_embedder_free(nucleus_embedder *e);
/* The longest input it takes. */
NUCLEUS_API int32_t nucleus_embedder_max_tokens(const nucleus_embedder *e);
/* The vectors of n inputs into out (n * nucleus_embed_size floats, in
 * input order). An input that is empty, longer than the embedder takes or
 * than the model's training context, or holds a token outside the
 * vocabulary is refused with a message naming its index ("input 3 ..."). */
NUCLEUS_API nucleus_status nucleus_embedder_run(nucleus_embedder *e,
                                                const nucleus_embed_input *in,
                                                size_t n,
                                                const nucleus_embed_params *p,
                                                float *out, nucleus_error *err);
/* The token ids a reranker scores for a (query, document) pair, as
 * llama-server builds them: the file's rerank prompt
 * (tokenizer.chat_template.rerank, as Qwen3-Reranker's converter writes
 * it) with {query} and {document} filled in, tokenized with special tokens
 * parsed and none added; else BOS query EOS SEP document EOS, each special
 * token where the vocabulary adds it (a bert vocabulary: [CLS] query [SEP]
 * document). Texts of at most 16 MiB each. *ids_out: nucleus_free it. */
NUCLEUS_API nucleus_status nucleus_rerank_tokens(
    const nucleus_model *model, const char *query, size_t qlen, const char *doc,
    size_t dlen, int32_t **ids_out, size_t *n_out, nucleus_error *err);
/* One call: an embedder sized for these inputs, run, freed. */
NUCLEUS_API nucleus_status nucleus_embed(const nucleus_model *model,
                                         const nucleus_embed_input *in,
                                         size_t n,
                                         const nucleus_embed_params *p,
                                         float *out, nucleus_error *err);

/* ---------------------------------------------------------------- images */

/* A decoded picture: RGB, 8 bits a channel, row-major, with a hash of its
 * content (two images with the same bytes and size have the same hash). */
typedef struct nucleus_image nucleus_image;

/* What nucleus_image_decode accepts. The size is read from the file's
 * header and checked before anything is decoded, so a small file that
 * claims a huge picture (a decompression bomb) costs nothing. */
typedef struct nucleus_image_limits {
  int32_t max_side;   /* widest and tallest picture, pixels */
  int64_t max_pixels; /* width * height */
} nucleus_image_limits;

#define NUCLEUS_IMAGE_MAX_SIDE 65535         /* limits.max_side's ceiling */
#define NUCLEUS_IMAGE_MAX_PIXELS (1LL << 28) /* limits.max_pixels' ceiling */

/* 8192 a side, 32 Mpx. */
NUCLEUS_API nucleus_image_limits nucleus_image_default_limits(void);

/* Decodes a PNG, JPEG or WebP file (the format is read from its first
 * bytes, not from a name or media type) into *out (nucleus_image_free).
 * Grayscale, palette and 16-bit pictures become RGB8 as stb_image (and so
 * llama.cpp) makes them: gray copied to the three channels, 16 bits cut to
 * their high 8, an alpha channel dropped (not composited). EXIF orientation
 * is not applied (neither does stb_image). limits: NULL for the defaults.
 * Errors: NUCLEUS_ERR_FORMAT (corrupt or truncated data),
 * NUCLEUS_ERR_UNSUPPORTED (another format, named: GIF, animated PNG or
 * WebP, CMYK JPEG, ...), NUCLEUS_ERR_LIMIT (over a limit, with the size),
 * NUCLEUS_ERR_INVALID_ARGUMENT (limits out of range). */
NUCLEUS_API nucleus_status nucleus_image_decode(
    const void *bytes, size_t n, const nucleus_image_limits *limits,
    nucleus_image **out, nucleus_error *err);

/* An image from width * height * 3 bytes of RGB (copied). */
NUCLEUS_API nucleus_status nucleus_image_from_rgb(const uint8_t *rgb,
                                                  int32_t width, int32_t height,
                                                  nucleus_image **out,
                                                  nucleus_error *err);

NUCLEUS_API void nucleus_image_free(nucleus_image *image);

NUCLEUS_API void nucleus_image_size(const nucleus_image *image, int32_t *width,
                                    int32_t *height);

/* The width * height * 3 RGB bytes, owned by the image. */
NUCLEUS_API const uint8_t *nucleus_image_rgb(const nucleus_image *image);

/* The content hash (128 bits) of the size and the RGB bytes. */
NUCLEUS_API void nucleus_image_hash(const nucleus_image *image,
                                    uint64_t out[2]);

/* ------------------------------------------------------------- sampling */

/* At most NUCLEUS_MAX_LOGIT_BIAS entries per request, each bias in
 * [-NUCLEUS_MAX_LOGIT_BIAS_VALUE, NUCLEUS_MAX_LOGIT_BIAS_VALUE] (OpenAI's
 * range; others are refused: nucleus_logit_bias_check). */
#define NUCLEUS_MAX_LOGIT_BIAS 1024
#define NUCLEUS_MAX_LOGIT_BIAS_VALUE 100

typedef struct nucleus_logit_bias {
  int32_t token;
  float bias; /* in [-100, 100] */
} nucleus_logit_bias;

typedef struct nucleus_sampling_params {
  float temperature;        /* 1; 0 = greedy */
  int32_t top_k;            /* 0 = off */
  float top_p;              /* 1 = off */
  float min_p;              /* 0 = off */
  float typical_p;          /* 1 = off */
  float repetition_penalty; /* 1 = off; over prompt and output */
  float presence_penalty;   /* 0 = off; [-2, 2] */
  float frequency_penalty;  /* 0 = off; [-2, 2] */
  const nucleus_logit_bias *logit_bias;
  size_t n_logit_bias;
  const int32_t *allowed_tokens; /* NULL = all */
  size_t n_allowed_tokens;
  const int32_t *banned_tokens;
  size_t n_banned_tokens;
  bool has_seed; /* false: a seed is drawn and reported back */
  uint64_t seed;
  bool logprobs;           /* report the chosen token's logprob */
  int32_t top_logprobs;    /* 0..20 alternatives */
  bool processed_logprobs; /* from the processed distribution, not raw */
  /* 0 = off; 1..NUCLEUS_MAX_INSPECT_TOP: each TOKEN event carries what the
   * sampler did at that step (event.inspect), for the top_n most likely
   * tokens before any stage. */
  int32_t inspect_top_n;
} nucleus_sampling_params;

NUCLEUS_API nucleus_sampling_params nucleus_sampling_default_params(void);

/* ------------------------------------------------------------- requests */

typedef enum nucleus_finish_reason {
  NUCLEUS_FINISH_NONE = 0,
  NUCLEUS_FINISH_STOP,   /* eos/eog token, stop token id, stop string */
  NUCLEUS_FINISH_LENGTH, /* max_tokens, or the context is full */
  NUCLEUS_FINISH_ABORT,  /* cancelled, client gone, shutdown */
  NUCLEUS_FINISH_ERROR,  /* the request could not run: see event.error */
} nucleus_finish_reason;

NUCLEUS_API const char *
nucleus_finish_reason_name(nucleus_finish_reason reason);

#define NUCLEUS_MAX_STOP_STRINGS 16
#define NUCLEUS_MAX_STOP_STRING_BYTES 512
#define NUCLEUS_MAX_TOP_LOGPROBS 20

/* ------------------------------------------------------------- grammars
 *
 * Structured output: a grammar (llama.cpp's GBNF; see docs/SERVER.md) is
 * compiled once and attached to any number of requests
 * (nucleus_request_params.grammar). Each request holds its own reference:
 * nucleus_grammar_free may be called right after submitting. At every step
 * only tokens that keep the output a viable prefix of the language may be
 * drawn (before every other sampling stage); end-of-generation only where
 * the output is a sentence; an output to which no byte can be added ends
 * the request with NUCLEUS_FINISH_STOP. Errors: NUCLEUS_ERR_INVALID_ARGUMENT
 * ("grammar: line L column C: ...", undefined rules, left recursion, empty
 * languages), NUCLEUS_ERR_LIMIT (sizes). Not with beam search. */
typedef struct nucleus_grammar nucleus_grammar;
#define NUCLEUS_MAX_GRAMMAR_TRIGGER_BYTES 64

/* root: the start rule (NULL: "root"). */
NUCLEUS_API nucleus_status nucleus_grammar_create(const char *gbnf, size_t len,
                                                  const char *root,
                                                  nucleus_grammar **out,
                                                  nucleus_error *err);
/* Drops the caller's reference (NULL is fine). */
NUCLEUS_API void nucleus_grammar_free(nucleus_grammar *g);

/* JSON Schema to grammar: schema_json is len bytes of JSON, a schema object
 * or a boolean, in the subset docs/SERVER.md lists (objects, arrays,
 * strings with formats and patterns, numbers, enums, anyOf/oneOf, $ref and
 * $defs, recursive ones too); outputs are compact JSON (no whitespace).
 * Unknown keywords are ignored, each named in a leading "# json-schema:"
 * comment of the GBNF. Errors: NUCLEUS_ERR_INVALID_ARGUMENT (not JSON; a
 * keyword that constrains and is not enforced, named with its schema's
 * JSON pointer: "... (at #/properties/a)"), NUCLEUS_ERR_LIMIT (a schema
 * whose grammar would be too large: nesting, counts, size).
 * nucleus_json_schema_to_gbnf gives the GBNF text the schema becomes (root
 * rule "root"), NUL-terminated; release it with nucleus_free. */
NUCLEUS_API nucleus_status nucleus_json_schema_to_gbnf(const char *schema_json,
                                                       size_t len,
                                                       char **gbnf_out,
                                                       nucleus_error *err);
/* The text a schema's values are written in. */
typedef enum nucleus_value_syntax {
  NUCLEUS_VALUE_SYNTAX_JSON = 0,
  /* Gemma 4's tool-call arguments: {key:value,...} with bare keys (of
   * letters, digits, '_' and '-' where the schema leaves them open),
   * strings between <|"|> marks, unescaped, without '<' or control
   * characters but tab and newline; arrays, numbers, true, false and null
   * as in JSON. 'pattern' (and patternProperties, propertyNames) is
   * refused: patterns are made of JSON's escapes. */
  NUCLEUS_VALUE_SYNTAX_GEMMA4 = 1,
} nucleus_value_syntax;
/* nucleus_json_schema_to_gbnf with the values written in syntax (an
 * error names a syntax outside the enum). */
NUCLEUS_API nucleus_status nucleus_json_schema_to_gbnf_in(
    const char *schema_json, size_t len, nucleus_value_syntax syntax,
    char **gbnf_out, nucleus_error *err);
/* nucleus_json_schema_to_gbnf for a grammar that is the whole output (not
 * a part of a larger grammar): arrays with uniqueItems over strings or
 * numbers, reached from the root through properties, items and $refs, are
 * then checked exactly ("#@unique-items" directive lines, which the
 * matcher reads: no item repeats, by value). */
NUCLEUS_API nucleus_status nucleus_json_schema_to_gbnf_doc(
    const char *schema_json, size_t len, char **gbnf_out, nucleus_error *err);
/* The same, compiled (the whole output: nucleus_json_schema_to_gbnf_doc),
 * nucleus_grammar_create of that text. */
NUCLEUS_API nucleus_status
nucleus_grammar_from_json_schema(const char *schema_json, size_t len,
                                 nucleus_grammar **out, nucleus_error *err);

/* Speculative decoding (docs/SPECULATIVE.md): a drafter proposes tokens,
 * the model scores them in the step that feeds the last token, and the
 * completion keeps those the model's own sampling agrees with (point-mass
 * drafts are accepted exactly when the draw of decoding without drafts
 * equals them). The output is token for token what decoding without
 * drafts gives, greedy or sampled with the same seed; only the speed
 * changes. Not with beam search. */
typedef enum nucleus_spec_type {
  NUCLEUS_SPEC_OFF = 0,
  NUCLEUS_SPEC_NGRAM,      /* prompt lookup: drafts from the prompt and the
                              output so far */
  NUCLEUS_SPEC_PREDICTION, /* predicted outputs: drafts from `prediction`,
                              the caller's expected output (OpenAI's) */
  NUCLEUS_SPEC_DRAFT,      /* a draft model (nucleus_engine_params.
                              draft_model) samples the drafts */
  NUCLEUS_SPEC_MTP,        /* the model's own MTP head samples them (a model
                              loaded with nucleus_model_params.mtp) */
  NUCLEUS_SPEC_TYPE_COUNT,
} nucleus_spec_type;

#define NUCLEUS_MAX_DRAFT 64 /* draft_max at most */
#define NUCLEUS_MAX_PREDICTION_TOKENS 32768
#define NUCLEUS_DEFAULT_DRAFT_MAX 16

typedef struct nucleus_spec_params {
  nucleus_spec_type type;
  /* Drafted tokens per step at most, in [1, NUCLEUS_MAX_DRAFT] (the
   * draft length adapts below it to the recent acceptance, down to none);
   * a drafter that proposes fewer than draft_min (in [0, draft_max]) drafts
   * nothing that step. */
  int32_t draft_max, draft_min;
  /* NUCLEUS_SPEC_PREDICTION only: the expected output's token ids, at most
   * NUCLEUS_MAX_PREDICTION_TOKENS (kept by the caller until submit). */
  const int32_t *prediction;
  size_t n_prediction;
  /* NUCLEUS_SPEC_DRAFT and _MTP only: verify as llama.cpp's server does (draw
   * from the model, keep an equal draft) instead of rejection sampling; both
   * are exact, strict accepts less (for comparison). */
  bool strict;
} nucleus_spec_params;

/* A thinking model's reasoning, as the engine tracks it in the output
 * (the markers of nucleus_model_reasoning_markers): the reply's thinking
 * block is found by its markers in the generated text, its tokens are
 * counted (nucleus_usage.reasoning_tokens), a budget closes it, and a
 * grammar may constrain only the answer after it. close NULL: nothing is
 * tracked (the default; the other fields must be NULL/false then, and the
 * budget is unused). */
typedef struct nucleus_reasoning_params {
  /* The marker that opens the block when the reply begins with it (blanks
   * aside); NULL: the reply begins inside the block (its prompt opened
   * it). */
  const char *open;
  const char *close; /* the marker that ends the block */
  /* What the engine writes to end the block when the budget is spent
   * (NULL: close): tokenized, then forced token by token through the
   * sampler (every other token masked), so the answer follows. */
  const char *force_close;
  /* max_reasoning_tokens: -1 none; else the tokens of thinking (those
   * generated inside the block) after which the engine closes it, in
   * [0, max_tokens]. */
  int32_t budget;
  /* The grammar (params.grammar, lazily with grammar_trigger) constrains
   * only the answer: it starts at the byte after close; the thinking is
   * free text. Needs a grammar and open NULL. */
  bool answer_grammar;
} nucleus_reasoning_params;

#define NUCLEUS_MAX_REASONING_MARKER_BYTES 64

typedef struct nucleus_request_params {
  nucleus_sampling_params sampling;
  int32_t max_tokens; /* -1: until the context is full */
  int32_t min_tokens; /* eog and stop tokens are masked until reached */
  bool ignore_eos;
  const char *const *stop; /* stop strings */
  size_t n_stop;
  const int32_t *stop_token_ids;
  size_t n_stop_token_ids;
  bool include_stop_str_in_output;
  bool skip_special_tokens; /* true by default */
  int32_t n;                /* completions of one prompt, sharing its KV */
  int32_t beam_width;       /* > 1: beam search (returns the best n beams) */
  float length_penalty;     /* beam score = sum logprob / len^penalty */
  bool early_stopping;
  /* Prefix cache: mixed into the hash of the prompt's first KV block, so
   * only requests with the same salt share cached blocks (vLLM's
   * cache_salt). NULL or "" = no salt; at most NUCLEUS_MAX_CACHE_SALT_BYTES
   * bytes. */
  const char *cache_salt;
  const nucleus_grammar *grammar; /* NULL: none (see nucleus_grammar) */
  /* With a grammar: NULL (the grammar applies from the first token), or a
   * trigger of at most NUCLEUS_MAX_GRAMMAR_TRIGGER_BYTES bytes: the output
   * is free until the trigger appears in it, and from the trigger's first
   * byte on it must follow the grammar (llama.cpp's lazy grammars; tool
   * calls under tool_choice "auto"). Output that cannot continue the
   * grammar at the trigger leaves it free. */
  const char *grammar_trigger;
  nucleus_spec_params speculative;    /* off by default */
  nucleus_reasoning_params reasoning; /* nothing tracked by default */
  /* The prompt's images, in the order of their runs of NUCLEUS_TOKEN_IMAGE
   * entries: image i takes the next nucleus_mmproj_image_tokens(image i)
   * of them. At most NUCLEUS_MAX_IMAGES; needs an engine with an mmproj.
   * Submit keeps a reference of its own (the caller may free them). */
  const nucleus_image *const *images;
  size_t n_images;
} nucleus_request_params;

#define NUCLEUS_MAX_CACHE_SALT_BYTES 256
#define NUCLEUS_MAX_STOP_TOKEN_IDS 64

NUCLEUS_API nucleus_request_params nucleus_request_default_params(void);

/* ------------------------------------------ the generation-parameter contract
 *
 * One table of every scalar generation parameter: its name (the OpenAI/vLLM
 * request field), CLI flag, range, and default on each surface. The library's
 * validation, the server's parser and the CLI's options all read it, so each
 * gives the same answer and the same message. Structured parameters (stop,
 * stop_token_ids, logit_bias, cache_salt, seed, logprobs) are outside the
 * table: they have the checks below. */

typedef enum nucleus_param_kind {
  NUCLEUS_PARAM_FLOAT,
  NUCLEUS_PARAM_INT,
  NUCLEUS_PARAM_BOOL,
} nucleus_param_kind;

typedef enum nucleus_surface {
  NUCLEUS_SURFACE_LIBRARY, /* nucleus_request_default_params() */
  NUCLEUS_SURFACE_SERVER,  /* OpenAI's: temperature 1, top_p 1 */
  NUCLEUS_SURFACE_CLI,     /* llama.cpp's CLI: temperature 0.8, top_k 40,
                              top_p 0.95, min_p 0.05 */
  NUCLEUS_SURFACE_COUNT,
} nucleus_surface;

typedef struct nucleus_param_info {
  const char *name;     /* the request field, e.g. "temperature" */
  const char *cli_flag; /* e.g. "--temp"; NULL when the CLI has none */
  const char *cli_alias;
  nucleus_param_kind kind;
  double min, max;    /* the allowed range, inclusive */
  bool min_exclusive; /* (min, max] */
  double defaults[NUCLEUS_SURFACE_COUNT];
  const char *gguf_key; /* general.sampling.* key a model file may set, or
                           NULL; it overrides the server and CLI defaults */
  const char *help;
} nucleus_param_info;

NUCLEUS_API size_t nucleus_params_count(void);
NUCLEUS_API const nucleus_param_info *
nucleus_params_at(size_t i); /* NULL past the end */
NUCLEUS_API const nucleus_param_info *nucleus_params_find(const char *name);

/* Sets the parameter called name in p to v, checked against its range
 * ("'NAME' must be in [LO, HI], got V" otherwise). */
NUCLEUS_API nucleus_status nucleus_params_set(nucleus_request_params *p,
                                              const char *name, double v,
                                              nucleus_error *err);
NUCLEUS_API double nucleus_params_value(const nucleus_request_params *p,
                                        const char *name);

/* The defaults of a surface, with the model's own recommendation
 * (general.sampling.*, as llama.cpp reads it) first where the file has one
 * and the surface is the server's or the CLI's. model may be NULL. */
NUCLEUS_API nucleus_request_params
nucleus_request_params_for(const nucleus_model *model, nucleus_surface surface);

/* The model's recommendation for one parameter: true with *v. */
NUCLEUS_API bool nucleus_model_recommends(const nucleus_model *model,
                                          const char *name, double *v);

/* Validates every parameter against the model (token ids in range, ...). */
NUCLEUS_API nucleus_status nucleus_request_params_validate(
    const nucleus_model *model, const nucleus_request_params *params,
    nucleus_error *err);

/* The structured parameters, outside the table: one check each, with one
 * message per failure, which nucleus_request_params_validate (and so
 * nucleus_engine_submit), the server's parser and the CLI's flags all use.
 *
 * Stop string number index (from 0), len bytes at s: at most
 * NUCLEUS_MAX_STOP_STRINGS strings ("stop: at most 16 stop strings are
 * allowed"), each 1 to NUCLEUS_MAX_STOP_STRING_BYTES bytes ("stop[I]: N
 * bytes; each stop string must be 1 to 512 bytes"), no NUL byte. */
NUCLEUS_API nucleus_status nucleus_stop_string_check(size_t index,
                                                     const char *s, size_t len,
                                                     nucleus_error *err);
/* Checks each of stops (NUL-terminated) as above, then points p->stop at
 * them: the caller keeps them until submit, which copies them. */
NUCLEUS_API nucleus_status nucleus_request_params_set_stop(
    nucleus_request_params *p, const char *const *stops, size_t n,
    nucleus_error *err);

/* Logit bias entry number index: at most NUCLEUS_MAX_LOGIT_BIAS entries
 * ("logit_bias: at most 1024 entries are allowed"), the token a token id
 * below n_vocab ("logit_bias[I]: token T is not a token id: allowed range
 * [0, V-1]"; n_vocab 0: not known yet, checked at submit), the bias a
 * number in [-100, 100] ("logit_bias[I] (token T): bias B must be a number
 * in [-100, 100]"). */
NUCLEUS_API nucleus_status nucleus_logit_bias_check(size_t index,
                                                    nucleus_logit_bias b,
                                                    int32_t n_vocab,
                                                    nucleus_error *err);
/* Checks each entry as above (against model's vocabulary; model may be
 * NULL), then points p->sampling.logit_bias at them (the caller keeps them
 * until submit, which copies them). */
NUCLEUS_API nucleus_status nucleus_request_params_set_logit_bias(
    nucleus_request_params *p, const nucleus_model *model,
    const nucleus_logit_bias *bias, size_t n, nucleus_error *err);

/* Stop token id number index: at most NUCLEUS_MAX_STOP_TOKEN_IDS ids
 * ("stop_token_ids: at most 64 token ids are allowed"), each a token id
 * below n_vocab ("stop_token_ids[I]: token T is not a token id: allowed
 * range [0, V-1]"; n_vocab 0: not known yet, checked at submit). */
NUCLEUS_API nucleus_status nucleus_stop_token_id_check(size_t index, int32_t id,
                                                       int32_t n_vocab,
                                                       nucleus_error *err);
/* Checks each id as above (against model's vocabulary; model may be NULL),
 * then points p->stop_token_ids at them (kept by the caller until submit,
 * which copies them). */
NUCLEUS_API nucleus_status nucleus_request_params_set_stop_token_ids(
    nucleus_request_params *p, const nucleus_model *model, const int32_t *ids,
    size_t n, nucleus_error *err);
/* The cache salt, len bytes at s: at most NUCLEUS_MAX_CACHE_SALT_BYTES
 * ("cache_salt: N bytes; at most 256 are allowed"), no NUL byte
 * ("cache_salt: must not contain NUL bytes"). */
NUCLEUS_API nucleus_status nucleus_cache_salt_check(const char *s, size_t len,
                                                    nucleus_error *err);
/* With beam search (beam_width > 1) n is at most beam_width ("'n' (N) must
 * not exceed beam_width (W): beam search returns the best n of its
 * beams"). Each of n and beam_width alone is a row of the contract. */
NUCLEUS_API nucleus_status nucleus_beam_check(int32_t n, int32_t beam_width,
                                              nucleus_error *err);
/* The reasoning parameters (nucleus_reasoning_params): markers of 1 to
 * NUCLEUS_MAX_REASONING_MARKER_BYTES bytes, close given when another
 * marker or answer_grammar is; with close, budget -1 or in [0, max_tokens]
 * ("max_reasoning_tokens (B) must not exceed max_tokens (M): ..."; max_tokens
 * -1: no bound); answer_grammar only with a grammar and a reply that begins
 * inside the block; a budget or an answer grammar not with beam search or
 * speculative decoding. */
NUCLEUS_API nucleus_status
nucleus_reasoning_check(const nucleus_request_params *p, nucleus_error *err);
/* Points params->reasoning at the model's markers for a chat prompt (its
 * text prompt[0, len)) with the given budget (-1: none): open NULL when
 * the prompt opened the block (*in_reasoning true). Returns false, tracking
 * nothing, when the model's template has no thinking or the prompt
 * switched it off (it ends with the close marker: Qwen3's enable_thinking
 * false). The server and `nucleus chat` both prepare requests so. */
NUCLEUS_API bool nucleus_reasoning_params_for(const nucleus_model *model,
                                              const char *prompt, size_t len,
                                              int32_t budget,
                                              nucleus_request_params *params,
                                              bool *in_reasoning);

/* Speculative decoding's parameters: a known type ("speculative.type: T is
 * not a drafter: allowed 0 (off), 1 (ngram), 2 (prediction), 3 (draft)"),
 * draft_max
 * in [1, NUCLEUS_MAX_DRAFT], draft_min in [0, draft_max], a prediction
 * only with the prediction type, at most NUCLEUS_MAX_PREDICTION_TOKENS ids
 * below n_vocab (0: not known yet), the draft model not with beam search
 * (beam_width > 1: beams draft by n-gram or prediction).
 * One message per failure, naming the value and its range. */
NUCLEUS_API nucleus_status
nucleus_speculative_check(const nucleus_spec_params *s, int32_t beam_width,
                          int32_t n_vocab, nucleus_error *err);
/* The name of a drafter ("off", "ngram", "prediction"), NULL past the end;
 * and the type of a name (false when it names none). */
NUCLEUS_API const char *nucleus_spec_type_name(nucleus_spec_type t);
NUCLEUS_API bool nucleus_spec_type_from_name(const char *name,
                                             nucleus_spec_type *out);

/* ---------------------------------------------------------------- mmproj
 *
 * Vision-language models (docs/VISION.md): a second GGUF file, the
 * "mmproj" (general.architecture "clip": a vision encoder and the projector
 * into the language model's embedding space), turns an image into rows of
 * the language model's input embeddings. A prompt carries an image as a
 * run of NUCLEUS_TOKEN_IMAGE entries, one per row, the image itself in
 * nucleus_request_params.images. */

/* Images in one request at most. */
#define NUCLEUS_MAX_IMAGES 64
/* The text a chat template renders for each image (llama.cpp mtmd's
 * default marker): nucleus_tokenize_with_images replaces each one by the
 * family's image markers around the image's rows. */
#define NUCLEUS_MEDIA_MARKER "<__media__>"
/* A prompt entry that stands for one row of an image's embeddings. */
#define NUCLEUS_TOKEN_IMAGE (-2)

/* Loads a projector file for model: general.architecture "clip" with a
 * vision encoder, a clip.projector_type this build runs ("gemma3",
 * "qwen2vl_merger", "qwen2.5vl_merger", "qwen3vl_merger"), and a
 * projection width equal to the model's embedding width; every hyper-
 * parameter and tensor shape is checked, with a message naming the key or
 * tensor, its value and what was expected. params: the model's (threads,
 * kernels, load mode; NULL for the defaults). The model must outlive it.
 * Immutable once loaded: nucleus_mmproj_encode may run on several threads
 * at once, and engines over the model share it (nucleus_engine_params). */
NUCLEUS_API nucleus_status
nucleus_mmproj_load(const char *path, const nucleus_model *model,
                    const nucleus_model_params *params, nucleus_mmproj **out,
                    nucleus_error *err);
NUCLEUS_API void nucleus_mmproj_free(nucleus_mmproj *mmproj);
/* clip.projector_type ("gemma3"). */
NUCLEUS_API const char *nucleus_mmproj_projector(const nucleus_mmproj *mmproj);
/* The width of an embedding row (the language model's n_embd; Qwen3-VL's
 * n_embd x (1 + n_deepstack_layers), its DeepStack features after it). */
NUCLEUS_API int32_t nucleus_mmproj_n_embd(const nucleus_mmproj *mmproj);
/* How many embedding rows (prompt entries) image becomes: 256 for every
 * image with Gemma 3's projector (clip.vision.projector.scale_factor sets
 * the pooling). */
NUCLEUS_API nucleus_status nucleus_mmproj_image_tokens(
    const nucleus_mmproj *mmproj, const nucleus_image *image, int32_t *n_tokens,
    nucleus_error *err);
/* Encodes image into its rows, as llama.cpp's mtmd does (its resize, its
 * normalisation by the file's mean and std, its encoder's order): out
 * gets n_tokens x n_embd floats, row-major; cap is out's size in floats
 * (at least n_tokens x n_embd). */
NUCLEUS_API nucleus_status nucleus_mmproj_encode(const nucleus_mmproj *mmproj,
                                                 const nucleus_image *image,
                                                 float *out, size_t cap,
                                                 nucleus_error *err);

/* Tokenizes text that holds NUCLEUS_MEDIA_MARKER once per image (a chat
 * template's rendering, as llama-mtmd-cli): each marker becomes the
 * family's image markers (Gemma 3: <start_of_image> and <end_of_image>)
 * around nucleus_mmproj_image_tokens entries of NUCLEUS_TOKEN_IMAGE;
 * special-token text becomes special tokens; BOS is added as the model asks
 * and not doubled (nucleus_tokenize_chat). Markers and images must be as
 * many (at most NUCLEUS_MAX_IMAGES). *ids_out: release with nucleus_free. */
NUCLEUS_API nucleus_status nucleus_tokenize_with_images(
    const nucleus_model *model, const nucleus_mmproj *mmproj, const char *text,
    size_t len, const nucleus_image *const *images, size_t n_images,
    int32_t **ids_out, size_t *n_out, nucleus_error *err);

/* --------------------------------------------------------------- engine */

typedef struct nucleus_engine nucleus_engine;
typedef struct nucleus_request nucleus_request;

/* The float orders of the forward pass's rows (docs/forward.md, "Row
 * orders"). llama.cpp's CPU build computes a row in other float orders
 * (flash attention's and the K-quant matmuls') by the size of the
 * micro-batch its request puts it in: a prompt's rows differ from a
 * generated token's, and a short prompt's from a long one's.
 * - REUSE: every row takes the orders of a long prompt's rows (flash
 *   attention's tiled prompt order, the tiled matmuls), whatever its
 *   request, so a position's K/V depend only on its tokens and the prefix
 *   cache reuses every full block of earlier requests and chat turns,
 *   prompts and replies alike.
 * - LLAMA: each row takes llama.cpp's orders for its place in its request
 *   (its prompt's length decides), so the logits are llama.cpp's at its
 *   defaults bit for bit; a position's K/V then depend on the prompt's
 *   length, so the prefix cache is off (cached_tokens 0).
 * - SPLIT: REUSE with flash attention's keys in chunks of 256 positions,
 *   each chunk's softmax state folded into the row's in position order:
 *   a decode row's keys spread over every thread (faster deep in the
 *   cache) and the bits stay independent of threads and batches, but past
 *   256 positions they are not llama.cpp's (docs/forward.md: on the default
 *   model top-1 ~96%, mean KL ~3e-3 against the tiled order, the distance
 *   of any last-bit change); the prefix cache works as with REUSE.
 * - AUTO (0): REUSE for the library, `nucleus chat`, `bench` and `serve`;
 *   LLAMA for `nucleus run`. */
typedef enum nucleus_row_orders {
  NUCLEUS_ROW_ORDERS_AUTO = 0,
  NUCLEUS_ROW_ORDERS_REUSE = 1,
  NUCLEUS_ROW_ORDERS_LLAMA = 2,
  NUCLEUS_ROW_ORDERS_SPLIT = 3,
} nucleus_row_orders;

/* Each field's flag, range and default is a row of the engine-option table
 * below (nucleus_engine_options_*); 0 in a count means its default. */
typedef struct nucleus_engine_params {
  int32_t n_ctx; /* per-sequence context; 0 = the model's, at most 8192 */
  int64_t kv_cache_tokens;  /* KV pool size in tokens; 0 = 16384, or one
                               context when larger */
  int32_t kv_block_tokens;  /* tokens per KV block (16) */
  int32_t max_batch_tokens; /* token budget per step (chunked prefill; 512) */
  int32_t max_running;      /* sequences decoding at once (64) */
  int32_t max_queued;   /* waiting requests beyond which submit is busy (256) */
  bool no_prefix_cache; /* true: no KV reuse across requests (the prefix
                           cache is on by default) */
  bool swa_full;        /* true: sliding-window layers keep every
                           position (as llama.cpp --swa-full); by
                           default they release what left the window */
  /* hybrid models (recurrent layers): the state snapshots the prefix
   * cache keeps (each one sequence's state at a block end, evicted LRU);
   * 0 = one per sequence slot (2 x max_running + 8). No effect on a model
   * without recurrent state. */
  int32_t state_snapshots;
  nucleus_row_orders row_orders; /* auto (reuse; the engine reports what it
                                    resolved to) */
  /* Speculative decoding: what one verify row costs against a decode step,
   * for the draft length's choice (docs/SPECULATIVE.md "How long a draft
   * is"), in [0, 4]; 0 = measured by the engine from its decode steps'
   * times (the default). Only the speed depends on it, never the output. */
  float spec_row_cost;
  /* While sequences decode, a step that also carries prompt chunks costs
   * at most this many times a decode step of the sequences running and
   * waiting (estimated from the engine's measured steps: decode steps by
   * row count, prompt rows per token and attended key), so that no stream
   * waits long for others' prompts: fewer prompt tokens per step while
   * others decode.
   * In [0, 1000]; 0 = the default, 2; 1000 leaves only max_batch_tokens.
   * Only the timing depends on it, never the output. */
  float decode_stall;
  /* Speculative decoding's draft model (NUCLEUS_SPEC_DRAFT), NULL: none.
   * Its vocabulary must be the model's (nucleus_engine_create names the
   * first token that differs); it runs with its own paged KV cache of the
   * same size. The caller keeps it loaded while the engine lives. */
  nucleus_model *draft_model;
  /* The projector that encodes the images of requests (nucleus_mmproj_load
   * over this engine's model), NULL: prompts with images are refused. The
   * caller keeps it loaded while the engine lives. */
  const nucleus_mmproj *mmproj;
  /* The image encoding a step runs beside its batch (docs/VISION.md
   * "Encoding in the steps"): at most the estimated FLOPs of this many
   * tokens through the language model (2 per weight of its layers, an
   * expert's weights counted as often as the tokens that use them), each
   * step at least one vision layer of one image while any waits; 0 =
   * max_batch_tokens (a prompt chunk's work). Only the speed depends on
   * it, never the output. */
  int32_t image_step_tokens;
  /* false (the default): images of requests encoding in the same step
   * that stand at the same vision layer run it as one, each weight product
   * once over all their patches (docs/VISION.md "Encoding in the steps");
   * true: each image's layers on their own. Only the speed depends on it,
   * never the output. */
  bool no_image_batch;
} nucleus_engine_params;

NUCLEUS_API nucleus_engine_params nucleus_engine_default_params(void);

/* ----------------------------------------------- the engine-option contract
 *
 * One table of the nucleus_engine_params fields, as the model options' (a
 * nucleus_option_info per field: name, flags, range, help):
 * nucleus_engine_create's checks, the flags of `nucleus run`, `chat`,
 * `bench` and `serve` and their --help texts all read it. Flags: -c,
 * --ctx-size N (--ctx too), --kv-tokens N, --kv-block-tokens N,
 * --batch-tokens N, -np, --parallel N, --max-queue N, --no-prefix-cache,
 * --swa-full, --state-snapshots N, --row-orders auto|reuse|llama,
 * --spec-row-cost X, --image-step-tokens N, --decode-stall X. */
NUCLEUS_API size_t nucleus_engine_options_count(void);
NUCLEUS_API const nucleus_option_info *
nucleus_engine_options_at(size_t i); /* NULL past the end */
/* By field name, flag, alias or other spelling ("n_ctx", "--ctx-size",
 * "-c", "--ctx"). */
NUCLEUS_API const nucleus_option_info *
nucleus_engine_options_find(const char *name);
/* A flag's other accepted spelling besides cli_flag and cli_alias ("--ctx"
 * for n_ctx), or NULL. Works on either table's rows. */
NUCLEUS_API const char *
nucleus_option_other_spelling(const nucleus_option_info *opt);

/* Sets the option in p from its command-line text (NULL for a flag), with
 * the model options' messages ("'max_running' must be an integer in [1,
 * 4096], got '0'"). */
NUCLEUS_API nucleus_status nucleus_engine_params_set(
    nucleus_engine_params *p, const nucleus_option_info *opt, const char *text,
    nucleus_error *err);

/* Checks every option of p against the table (0 standing for the default
 * where a field says so), then, when model is not NULL, n_ctx against its
 * training context ("'n_ctx' must be an integer in [0, T] (the model's
 * training context), got N"). nucleus_engine_create does this first. */
NUCLEUS_API nucleus_status nucleus_engine_params_validate(
    const nucleus_model *model, const nucleus_engine_params *p,
    nucleus_error *err);

/* The option's value in p as text ("0 (the model's, at most 8192)", "64",
 * "off"): of nucleus_engine_default_params(), the default a --help shows. */
NUCLEUS_API void nucleus_engine_params_format(const nucleus_engine_params *p,
                                              const nucleus_option_info *opt,
                                              char *buf, size_t cap);

/* Starts the engine thread over a loaded model (which must outlive it). */
NUCLEUS_API nucleus_status
nucleus_engine_create(nucleus_model *model, const nucleus_engine_params *params,
                      nucleus_engine **out, nucleus_error *err);

/* The engine's parameters, defaults resolved (n_ctx, the KV pool, ...). */
NUCLEUS_API void nucleus_engine_get_params(const nucleus_engine *engine,
                                           nucleus_engine_params *out);

/* Aborts every request still running and joins the engine thread. */
NUCLEUS_API void nucleus_engine_free(nucleus_engine *engine);

/* Thread-safe. Validates params and the prompt, then deep-copies both (the
 * stop strings and every token array included): the caller may free or
 * reuse them as soon as it returns. The request handle is owned by the
 * caller: release it with nucleus_request_free once done reading
 * events. */
NUCLEUS_API nucleus_status
nucleus_engine_submit(nucleus_engine *engine, const int32_t *prompt,
                      size_t n_prompt, const nucleus_request_params *params,
                      nucleus_request **out, nucleus_error *err);

/* Thread-safe; the request ends with finish reason abort at the next step. */
NUCLEUS_API void nucleus_request_cancel(nucleus_request *request);
/* Releases the caller's handle (NULL is fine). A request still running is
 * cancelled first (a client that goes away): it ends with finish reason
 * abort at the engine's next step, which frees its KV blocks. */
NUCLEUS_API void nucleus_request_free(nucleus_request *request);

typedef enum nucleus_event_kind {
  NUCLEUS_EVENT_TOKEN,  /* one generated token, with the text it released */
  NUCLEUS_EVENT_FINISH, /* one completion (index) ended */
  NUCLEUS_EVENT_DONE,   /* every completion ended: no more events */
} nucleus_event_kind;

typedef struct nucleus_token_logprob {
  int32_t token;
  float logprob;
} nucleus_token_logprob;

typedef struct nucleus_usage {
  int32_t prompt_tokens;
  int32_t completion_tokens;
  int32_t cached_tokens; /* prompt tokens whose KV came from the prefix cache */
  /* Speculative decoding: tokens drafted, and those of them kept (each
   * kept one is also a completion token; drafted - accepted were
   * rejected: OpenAI's accepted/rejected_prediction_tokens). */
  int32_t draft_tokens;
  int32_t accepted_draft_tokens;
  /* With params.reasoning: the completion tokens of the thinking block,
   * its markers included (OpenAI's completion_tokens_details.
   * reasoning_tokens). */
  int32_t reasoning_tokens;
} nucleus_usage;

typedef struct nucleus_timings {
  double time_to_first_token_ms;
  double prompt_tokens_per_s; /* the prompt tokens computed (not those from
                                 the prefix cache) per second of prefill */
  double generation_tokens_per_s;
} nucleus_timings;

/* ------------------------------------------------- the sampler inspector
 *
 * What the sampler did at one step, recorded as it ran: the stages that ran
 * (in the pipeline's order, named as sampler.h names them: "grammar",
 * "logit_bias", "repetition_penalty", "presence_frequency_penalty",
 * "temperature", "top_k", "top_p", "min_p", "typical_p"), and for each
 * candidate its probability before any stage (raw_prob: the softmax of the
 * model's logits), after each stage that ran, and at the draw. */

#define NUCLEUS_MAX_INSPECT_TOP 64
#define NUCLEUS_MAX_INSPECT_STAGES 9

typedef struct nucleus_inspect_candidate {
  int32_t token;
  float logit; /* the model's raw logit */
  float raw_prob;
  float stage_prob[NUCLEUS_MAX_INSPECT_STAGES]; /* after stages[k] */
  int32_t removed_by; /* index into stages of the first that cut it, or -1 */
  float final_prob;   /* in the distribution the draw read */
} nucleus_inspect_candidate;

/* How a step's token was drawn (nucleus_inspect.method). */
typedef enum nucleus_draw_method {
  NUCLEUS_DRAW_NONE = 0,    /* no draw recorded: the row failed, or a
                               draft model's token was kept or drawn from
                               the residual (draft_token >= 0) */
  NUCLEUS_DRAW_GREEDY,      /* temperature 0: the argmax; u is not read */
  NUCLEUS_DRAW_INVERSE_CDF, /* u against the running sum of kept weights */
} nucleus_draw_method;

/* The order the inverse CDF walks the kept set in. */
typedef enum nucleus_walk_order {
  NUCLEUS_WALK_TOKEN_ID, /* nothing truncated: every token, by id */
  NUCLEUS_WALK_KEPT_SET, /* the set the truncating stages kept, in the order
                            their selection left it (not by probability) */
} nucleus_walk_order;

/* One token's interval on the draw's running sum: [lo, hi), hi = lo + its
 * weight, in the walk's units (divide by nucleus_inspect.mass for [0, 1)). */
typedef struct nucleus_inspect_walk {
  int32_t token;
  double lo, hi;
} nucleus_inspect_walk;

typedef struct nucleus_inspect {
  int32_t n_stages;
  const char *stages[NUCLEUS_MAX_INSPECT_STAGES]; /* static strings */
  /* the top_n most likely before any stage (descending raw_prob, ties to the
   * lower id), then the drawn token when it is not among them */
  int32_t n_candidates;
  nucleus_inspect_candidate candidates[NUCLEUS_MAX_INSPECT_TOP + 1];
  uint64_t seed, stream, step; /* the generator's key */
  double uniform;              /* u in [0, 1); unused for greedy rows */
  int32_t token;               /* the drawn id */
  /* The draw on the cumulative distribution, as the sampler ran it (method
   * INVERSE_CDF): walking the kept set in `order`, it adds each token's
   * weight (exp((logit - max) / T), zero weights skipped) to a running sum
   * and takes the first token whose sum exceeds target = uniform * mass,
   * mass being the kept set's total weight. cdf_lo and cdf_hi are the drawn
   * token's sum before and after it: the very doubles the sampler compared,
   * so cdf_lo <= target < cdf_hi, unless clamped (rounding left the sum at
   * or below target at the end: the last token with weight was taken).
   * walk: the candidates above that the walk passes with weight (the kept
   * ones and the drawn one), in walk order, with their intervals. For
   * GREEDY all of these are 0. */
  nucleus_draw_method method;
  nucleus_walk_order order;
  double mass, target, cdf_lo, cdf_hi;
  bool clamped;
  int32_t n_walk;
  nucleus_inspect_walk walk[NUCLEUS_MAX_INSPECT_TOP + 1];
  /* Speculative decoding: the token a drafter proposed at this position, or
   * -1 (none: a plain step, or the token after the last draft). The draft
   * was kept exactly when token == draft_token. */
  int32_t draft_token;
} nucleus_inspect;

/* Runs the sampling pipeline once on a row of n_logits logits (token ids
 * 0..n_logits-1, e.g. the top candidates of a step that an inspect record
 * carries), with p's settings and seed (p->has_seed is required), at steps
 * 0..n_draws-1 of its generator. inspect (when not NULL) receives the
 * record of step 0 for up to NUCLEUS_MAX_INSPECT_TOP candidates; draws
 * (n_draws entries, when n_draws > 0) the token drawn at each step. The
 * penalties need a history and are refused, as are logprobs. n_logits in
 * [1, 1 << 20], n_draws in [0, 100000]. */
NUCLEUS_API nucleus_status nucleus_sample_logits(
    const nucleus_sampling_params *p, const float *logits, int32_t n_logits,
    int32_t n_draws, nucleus_inspect *inspect, int32_t *draws,
    nucleus_error *err);

/* A prompt's own logprobs (a completion's echo with logprobs): for each
 * position i in [1, n), the raw logprob of tokens[i] after tokens[0..i)
 * (the log-softmax of the logits, as a TOKEN event's raw logprob) and the
 * top_n (in [0, NUCLEUS_MAX_TOP_LOGPROBS]) most likely tokens there,
 * descending, into out[i] (n entries); out[0] has no context: logprob 0,
 * n_top 0. The rows take the engine's reuse orders (NUCLEUS_ROW_ORDERS_
 * REUSE, the default), so a token's logprob here is bit for bit the one a
 * completion under those orders reports when it samples that token after
 * the same tokens. Like nucleus_eval_logits it runs its own cache and threads
 * (holding the logits of 64 positions at a time), beside any engine; n in
 * [1, the model's training context], every token an id of the vocabulary. */
typedef struct nucleus_prompt_logprob {
  float logprob;
  int32_t n_top;
  nucleus_token_logprob top[NUCLEUS_MAX_TOP_LOGPROBS];
} nucleus_prompt_logprob;

NUCLEUS_API nucleus_status nucleus_prompt_logprobs(nucleus_model *model,
                                                   const int32_t *tokens,
                                                   size_t n, int32_t top_n,
                                                   nucleus_prompt_logprob *out,
                                                   nucleus_error *err);

/* Pointers inside an event stay valid until the next call to
 * nucleus_request_next_event on the same request. */
typedef struct nucleus_event {
  nucleus_event_kind kind;
  int32_t index; /* which completion (0..n-1) */
  /* TOKEN */
  int32_t token;
  const char *text; /* text delta released by this token (may be empty) */
  size_t text_len;
  float logprob; /* when logprobs were asked for */
  const nucleus_token_logprob *top_logprobs;
  int32_t n_top_logprobs;
  /* TOKEN, and FINISH when an end token (eog, stop token id) ended it:
   * that step's sampler record, when inspect_top_n > 0; else NULL */
  const nucleus_inspect *inspect;
  /* FINISH */
  nucleus_finish_reason finish_reason;
  const char *stop_string; /* the matched stop string, or NULL */
  int32_t stop_token;      /* the matched stop/eog token, or -1 */
  nucleus_error error;     /* for NUCLEUS_FINISH_ERROR */
  /* NUCLEUS_FINISH_ERROR: the error came from the request's grammar
   * (params.grammar: its per-token work budget, a size limit), not from
   * the engine */
  bool error_in_grammar;
  /* FINISH and DONE */
  nucleus_usage usage;
  nucleus_timings timings;
  uint64_t seed; /* the seed used (drawn from the OS when none was given) */
} nucleus_event;

/* Blocks up to timeout_ms (-1: forever, 0: does not block) for the next
 * event. Returns NUCLEUS_OK with *ev filled, or NUCLEUS_ERR_TIMEOUT when
 * none came in time. */
NUCLEUS_API nucleus_status nucleus_request_next_event(nucleus_request *request,
                                                      nucleus_event *ev,
                                                      int timeout_ms);

typedef struct nucleus_engine_stats {
  int32_t queued;
  int32_t running;
  int64_t kv_blocks_used;
  int64_t kv_blocks_free;
  int64_t prompt_tokens_total;
  int64_t generated_tokens_total;
  int64_t steps_total;
  int64_t preemptions_total;
  /* Prefix cache: prompt tokens looked up and found (at a request's first
   * admission), blocks it names (held or cached) and cached blocks taken
   * for other content. */
  int64_t prefix_cache_queried_tokens_total;
  int64_t prefix_cache_hit_tokens_total;
  int64_t prefix_cache_blocks;
  int64_t prefix_cache_evictions_total;
  /* Speculative decoding, per drafter (nucleus_spec_type): tokens drafted
   * and accepted; steps that verified drafts by how many were accepted
   * (the last bucket: NUCLEUS_MAX_DRAFT). */
  int64_t spec_drafted_total[NUCLEUS_SPEC_TYPE_COUNT];
  int64_t spec_accepted_total[NUCLEUS_SPEC_TYPE_COUNT];
  int64_t spec_accepted_hist[NUCLEUS_MAX_DRAFT + 1];
  /* The draft model's forward calls (one serves every completion that
   * drafts in a step). */
  int64_t spec_draft_forwards_total;
  /* Recurrent state (hybrid models; 0 for others): bytes of the sequences'
   * state slots allocated, the state snapshots the prefix cache holds and
   * the bytes of their buffers. */
  int64_t state_bytes;
  int64_t state_snapshots;
  int64_t state_snapshot_bytes;
  /* Images the encoder ran on (a picture repeated in one request is
   * encoded once). */
  int64_t images_encoded_total;
  /* Patch rows that went through a vision layer together with another
   * image's (one weight product over both): each batched layer adds the
   * patches of all its images. */
  int64_t image_rows_batched;
} nucleus_engine_stats;

NUCLEUS_API void nucleus_engine_get_stats(nucleus_engine *engine,
                                          nucleus_engine_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
