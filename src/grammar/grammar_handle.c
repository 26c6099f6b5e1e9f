/* The reference-counted public grammar handle (see grammar.h). */
#include <stdatomic.h>
#include <stdlib.h>

#include "grammar.h"

struct nucleus_grammar {
  nc_grammar *g;
  atomic_int refs;
};

nc_code nc_grammar_handle_create(const char *text, size_t len, const char *root,
                                 nucleus_grammar **out, nc_error *err) {
  *out = NULL;
  nucleus_grammar *h = calloc(1, sizeof *h);
  if (!h) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  nc_code rc = nc_grammar_parse(text, len, root, &h->g, err);
  if (rc != NC_OK) {
    free(h);
    return rc;
  }
  atomic_init(&h->refs, 1);
  *out = h;
  return NC_OK;
}

/* References change a count, not the grammar: the handle stays logically
 * const for its holders. */
void nc_grammar_handle_ref(const nucleus_grammar *h) {
  if (h) atomic_fetch_add(&((nucleus_grammar *)h)->refs, 1);
}

void nc_grammar_handle_unref(const nucleus_grammar *h) {
  nucleus_grammar *m = (nucleus_grammar *)h;
  if (m && atomic_fetch_sub(&m->refs, 1) == 1) {
    nc_grammar_free(m->g);
    free(m);
  }
}

const nc_grammar *nc_grammar_handle_get(const nucleus_grammar *h) {
  return h ? h->g : NULL;
}
