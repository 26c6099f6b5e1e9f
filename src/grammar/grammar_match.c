/* One request's matcher: a current state and a spare one (a byte is
 * applied into the spare, which becomes current only if the byte fits, so
 * a refused call leaves the matcher as it was). */
#include <stdlib.h>
#include <string.h>

#include "grammar_memo.h"
#include "grammar_unique.h"

nc_code nc_grammar_matcher_create(const nc_grammar *g, nc_grammar_matcher **out,
                                  nc_error *err) {
  *out = NULL;
  nc_grammar_matcher *m = calloc(1, sizeof *m);
  if (!m) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  m->g = g;
  nc_gwork_begin(&m->work, nc_grammar_matcher_budget(m));
  nc_code rc = nc_gstate_init(g, &m->cur, &m->work, err);
  if (rc == NC_OK && g->uniq && nc_guniq_create(g->uniq, &m->uniq) != NC_OK)
    rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  if (rc != NC_OK) {
    nc_grammar_matcher_free(m);
    return rc;
  }
  *out = m;
  return NC_OK;
}

void nc_grammar_matcher_free(nc_grammar_matcher *m) {
  if (!m) return;
  nc_gstacks_free(&m->cur.st);
  nc_gstacks_free(&m->spare.st);
  nc_gstacks_free(&m->saved.st);
  nc_gstacks_free(&m->canon.st);
  nc_gwork_free(&m->work);
  for (uint32_t i = 0; i < m->n_levels; i++)
    nc_gstacks_free(&m->levels[i].st);
  free(m->levels);
  free(m->walk);
  free(m->lid);
  if (m->memo) nc_gmemo_free(m->memo);
  free(m->memo);
  nc_guniq_free(m->uniq);
  free(m);
}

nc_code nc_grammar_matcher_clone(const nc_grammar_matcher *m,
                                 nc_grammar_matcher **out, nc_error *err) {
  *out = NULL;
  nc_grammar_matcher *c = calloc(1, sizeof *c);
  if (!c) return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  c->g = m->g;
  c->work.limit = m->work.limit;
  c->work.cancel = m->work.cancel;
  nc_gwork_begin(&c->work, nc_grammar_matcher_budget(c));
  if (nc_gstate_copy(&c->cur, &m->cur) != NC_OK ||
      (m->uniq && nc_guniq_clone(m->uniq, &c->uniq) != NC_OK)) {
    nc_grammar_matcher_free(c);
    return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  }
  *out = c;
  return NC_OK;
}

void nc_grammar_matcher_set_cancel(nc_grammar_matcher *m,
                                   const atomic_bool *flag) {
  m->work.cancel = flag;
}

void nc_grammar_matcher_set_budget(nc_grammar_matcher *m, uint64_t units) {
  m->work.limit = units ? units : NC_GRAMMAR_MAX_MASK_WORK;
}

/* The budget of the matcher's calls. */
uint64_t nc_grammar_matcher_budget(const nc_grammar_matcher *m) {
  return m->work.limit ? m->work.limit : NC_GRAMMAR_MAX_MASK_WORK;
}

nc_code nc_grammar_matcher_accept(nc_grammar_matcher *m, const char *bytes,
                                  size_t len, bool *ok, nc_error *err) {
  *ok = true;
  if (len == 0) return NC_OK;
  nc_gwork_begin(&m->work, nc_grammar_matcher_budget(m));
  /* uniqueItems: a repeated item is refused before the automaton moves */
  if (m->uniq && nc_guniq_dry(m->uniq, (const uint8_t *)bytes, len) != NC_OK)
    return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  if (m->uniq && m->uniq->dloc.dup) {
    *ok = false;
    return NC_OK;
  }
  if (m->uniq) { /* nor one whose item can then only repeat (the mask's) */
    bool keeps = true;
    nc_code rc = nc_guniq_keeps(m, (const uint8_t *)bytes, len, &keeps, err);
    if (rc != NC_OK || !keeps) {
      *ok = false;
      return rc;
    }
  }
  if (len > 1 && nc_gstate_copy(&m->saved, &m->cur) != NC_OK)
    return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  for (size_t i = 0; i < len; i++) {
    bool fits;
    nc_code rc = nc_gstate_step(m->g, &m->cur, (uint8_t)bytes[i], &m->spare,
                                &m->work, &fits, err);
    if (rc != NC_OK || !fits) {
      if (i > 0) { /* back to the state before the call */
        nc_gstate t = m->cur;
        m->cur = m->saved;
        m->saved = t;
      }
      *ok = false;
      return rc;
    }
    nc_gstate t = m->cur;
    m->cur = m->spare;
    m->spare = t;
  }
  if (m->uniq && nc_guniq_feed(m->uniq, (const uint8_t *)bytes, len) != NC_OK)
    return nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
  return NC_OK;
}

bool nc_grammar_matcher_accepting(const nc_grammar_matcher *m) {
  return nc_gstate_accepting(&m->cur);
}

bool nc_grammar_matcher_complete(const nc_grammar_matcher *m) {
  return nc_gstate_complete(&m->cur);
}
