/* The public tokenizer API: thin wrappers over the model's vocab. */
#include <string.h>

#include "model/model.h"
#include "nucleus.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/vocab.h"

static const nc_vocab *vocab_of(const nucleus_model *model, nc_error *err) {
  const nc_vocab *v = model ? nc_model_vocab(model) : NULL;
  if (!v)
    nc_fail(err, NC_ERR_INVALID_ARGUMENT,
            model ? "the model has no vocabulary" : "model is NULL");
  return v;
}

nucleus_status nucleus_tokenize(const nucleus_model *model, const char *text,
                                size_t len, bool add_special,
                                bool parse_special, int32_t **ids_out,
                                size_t *n_out, nucleus_error *err) {
  const nc_vocab *v = vocab_of(model, err);
  if (!v) return NC_ERR_INVALID_ARGUMENT;
  return nc_tokenize(v, text, len, add_special, parse_special, ids_out, n_out,
                     err);
}

nucleus_status nucleus_tokenize_chat(const nucleus_model *model,
                                     const char *text, size_t len,
                                     int32_t **ids_out, size_t *n_out,
                                     nucleus_error *err) {
  const nc_vocab *v = vocab_of(model, err);
  if (!v) return NC_ERR_INVALID_ARGUMENT;
  return nc_tokenize_chat_prompt(v, text, len, NULL, 0, ids_out, n_out, err);
}

nucleus_status nucleus_detokenize(const nucleus_model *model,
                                  const int32_t *ids, size_t n,
                                  bool skip_special, char **text_out,
                                  size_t *len_out, nucleus_error *err) {
  const nc_vocab *v = vocab_of(model, err);
  if (!v) return NC_ERR_INVALID_ARGUMENT;
  return nc_detokenize(v, ids, n, skip_special, text_out, len_out, err);
}

/* *len_out is the piece's full length; when it is over cap, buf holds its
 * first cap bytes. */
nucleus_status nucleus_token_piece(const nucleus_model *model, int32_t id,
                                   char *buf, size_t cap, size_t *len_out,
                                   nucleus_error *err) {
  if (len_out) *len_out = 0;
  const nc_vocab *v = vocab_of(model, err);
  if (!v) return NC_ERR_INVALID_ARGUMENT;
  if (id < 0 || id >= nc_vocab_n_tokens(v))
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                   "token id %d is out of range [0, %d)", id,
                   nc_vocab_n_tokens(v));
  size_t n = nc_token_to_piece(v, id, true, buf, cap);
  if (len_out) *len_out = n;
  return NC_OK;
}

bool nucleus_token_is_eog(const nucleus_model *model, int32_t id) {
  const nc_vocab *v = model ? nc_model_vocab(model) : NULL;
  return v && nc_vocab_is_eog(v, id);
}

int32_t nucleus_token_bos(const nucleus_model *model) {
  const nc_vocab *v = model ? nc_model_vocab(model) : NULL;
  return v ? nc_vocab_bos(v) : -1;
}
