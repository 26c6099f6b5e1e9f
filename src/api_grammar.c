/* Public grammar entry points (include/nucleus.h). */
#include "grammar.h"

nucleus_status nucleus_grammar_create(const char *gbnf, size_t len,
                                      const char *root, nucleus_grammar **out,
                                      nucleus_error *err) {
  if (!out)
    return nc_fail(err, NC_ERR_INVALID_ARGUMENT, "grammar: out is NULL");
  return nc_grammar_handle_create(gbnf, len, root, out, err);
}

void nucleus_grammar_free(nucleus_grammar *g) {
  nc_grammar_handle_unref(g);
}
