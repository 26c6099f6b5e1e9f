/* Rewrites of the parsed rules before they are flattened (grammar_parse.h),
 * each keeping the language. */
#include <stdlib.h>
#include <string.h>

#include "grammar_parse.h"

/* ------------------------------------------- repetitions of nullable terms
 * x* and x{m,n} where x can match "": R ::= x R | "" would be left
 * recursive (refused), and a chain Rk ::= x R(k-1) | "" would expand every
 * step at each character. Both repeat x+ instead, x without "" (the same
 * language: x^i is the union of (x+)^j, j <= i), built as generated rules:
 * an alternative s1 .. sn of x gives, for each i whose s1 .. s(i-1) can all
 * be empty, si+ s(i+1) .. sn (si+ = si when si cannot be empty). */

/* nul[r]: rule r can match "" (a work list over the alternatives). */
static nc_code nullable_rules(parser *p, uint8_t *nul) {
  uint32_t n = p->n_rules;
  size_t n_alts = 0, n_refs = 0;
  for (uint32_t r = 0; r < n; r++) {
    n_alts++;
    for (size_t i = 0; i < p->rules[r].body.n; i++) {
      n_alts += p->rules[r].body.v[i].kind == NC_GE_ALT;
      n_refs += p->rules[r].body.v[i].kind == NC_GE_REF;
    }
  }
  uint32_t *need = malloc((n_alts + 1) * sizeof *need);
  uint32_t *alt_rule = malloc((n_alts + 1) * sizeof *alt_rule);
  uint32_t *occ_start = calloc((size_t)n + 2, sizeof *occ_start);
  uint32_t *occ = malloc((n_refs + 1) * sizeof *occ);
  uint32_t *queue = malloc(((size_t)n + 1) * sizeof *queue);
  nc_code rc = NC_OK;
  if (!need || !alt_rule || !occ_start || !occ || !queue) {
    rc = nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
    goto done;
  }
  /* need[a]: references of alternative a still to become nullable (a
   * class: never); occ: the alternatives each rule is referenced from. */
  for (int pass = 0; pass < 2; pass++) {
    uint32_t a = 0;
    for (uint32_t r = 0; r < n; r++) {
      const nc_gvec *b = &p->rules[r].body;
      bool cls = false;
      uint32_t refs = 0;
      for (size_t i = 0; i <= b->n; i++) {
        if (i == b->n || b->v[i].kind == NC_GE_ALT) {
          if (pass == 0) {
            need[a] = cls ? UINT32_MAX : refs;
            alt_rule[a] = r;
          }
          a++;
          cls = false;
          refs = 0;
        } else if (b->v[i].kind == NC_GE_CLASS) {
          cls = true;
        } else if (b->v[i].kind == NC_GE_REF) {
          refs++;
          if (pass == 0)
            occ_start[b->v[i].a + 2]++;
          else
            occ[occ_start[b->v[i].a + 1]++] = a;
        }
      }
    }
    if (pass == 0)
      for (uint32_t r = 0; r < n; r++)
        occ_start[r + 2] += occ_start[r + 1];
  }
  /* occ_start[r + 1] now ends rule r's occurrences: r's start is
   * occ_start[r]. */
  uint32_t qn = 0;
  memset(nul, 0, n);
  for (size_t a = 0; a < n_alts; a++)
    if (need[a] == 0 && !nul[alt_rule[a]]) {
      nul[alt_rule[a]] = 1;
      queue[qn++] = alt_rule[a];
    }
  for (uint32_t qi = 0; qi < qn; qi++) {
    uint32_t s = queue[qi];
    for (uint32_t i = occ_start[s]; i < occ_start[s + 1]; i++) {
      uint32_t a = occ[i];
      if (need[a] != UINT32_MAX && --need[a] == 0 && !nul[alt_rule[a]]) {
        nul[alt_rule[a]] = 1;
        queue[qn++] = alt_rule[a];
      }
    }
  }
done:
  free(need);
  free(alt_rule);
  free(occ_start);
  free(occ);
  free(queue);
  return rc;
}

/* The rule x+ of nullable rule r (made on first use, its body by
 * fill_plus; todo lists the rules whose x+ waits for its body). */
static nc_code plus_rule(parser *p, uint32_t r, uint32_t *plus, uint32_t *todo,
                         uint32_t *n_todo, uint32_t *id) {
  if (plus[r] == UINT32_MAX) {
    nc_code rc = nc_gparse_new_rule(p, NULL, 0, &plus[r]);
    if (rc != NC_OK) return rc;
    todo[(*n_todo)++] = r;
  }
  *id = plus[r];
  return NC_OK;
}

/* Rule plus[r]'s body from rule r's alternatives (nul covers the first n
 * rules; the later ones are x+ rules, never empty). */
static nc_code fill_plus(parser *p, uint32_t r, const uint8_t *nul, uint32_t n,
                         uint32_t *plus, uint32_t *todo, uint32_t *n_todo) {
  nc_gvec out = {0};
  nc_code rc = NC_OK;
  size_t start = 0;
  bool any = false;
  for (size_t i = 0; i <= p->rules[r].body.n && rc == NC_OK; i++) {
    const nc_gvec *b = &p->rules[r].body;
    if (i < b->n && b->v[i].kind != NC_GE_ALT) continue;
    /* the alternative b->v[start .. i) */
    for (size_t k = start; k < i && rc == NC_OK; k++) {
      nc_gelem e = p->rules[r].body.v[k];
      bool empty = e.kind == NC_GE_REF && e.a < n && nul[e.a];
      if (any) rc = nc_gparse_push(p, &out, (nc_gelem){.kind = NC_GE_ALT});
      any = true;
      uint32_t id;
      if (rc == NC_OK && empty &&
          (rc = plus_rule(p, e.a, plus, todo, n_todo, &id)) == NC_OK)
        e = (nc_gelem){.kind = NC_GE_REF, .a = id};
      if (rc == NC_OK) rc = nc_gparse_push(p, &out, e);
      for (size_t j = k + 1; j < i && rc == NC_OK; j++)
        rc = nc_gparse_push(p, &out, p->rules[r].body.v[j]);
      if (!empty) break; /* the later ones follow a non-empty one */
    }
    start = i + 1;
  }
  /* Only "": no string; a class of nothing (the check drops it). */
  if (rc == NC_OK && !any)
    rc = nc_gparse_push(p, &out, (nc_gelem){.kind = NC_GE_CLASS});
  if (rc != NC_OK) {
    free(out.v);
    return rc;
  }
  p->rules[plus[r]].body = out;
  return NC_OK;
}

nc_code nc_gparse_nonempty_repeats(parser *p) {
  uint32_t n = p->n_rules;
  uint8_t *nul = malloc((size_t)n + 1);
  uint32_t *plus = malloc(((size_t)n + 1) * sizeof *plus);
  uint32_t *todo = malloc(((size_t)n + 1) * sizeof *todo);
  nc_code rc = NC_OK;
  if (!nul || !plus || !todo) {
    rc = nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
    goto done;
  }
  memset(plus, 0xFF, ((size_t)n + 1) * sizeof *plus);
  if ((rc = nullable_rules(p, nul)) != NC_OK) goto done;
  /* Every repetition first (so an x+ built from a repetition sees its
   * rewritten term), then the bodies of the x+ rules. */
  uint32_t n_todo = 0;
  for (uint32_t r = 0; r < n && rc == NC_OK; r++) {
    nc_gelem t = p->rules[r].repeats ? p->rules[r].body.v[0]
                                     : (nc_gelem){.kind = NC_GE_END};
    if (t.kind != NC_GE_REF || !nul[t.a]) continue;
    uint32_t id;
    if ((rc = plus_rule(p, t.a, plus, todo, &n_todo, &id)) == NC_OK)
      p->rules[r].body.v[0] = (nc_gelem){.kind = NC_GE_REF, .a = id};
  }
  while (rc == NC_OK && n_todo > 0) {
    uint32_t q = todo[--n_todo];
    rc = fill_plus(p, q, nul, n, plus, todo, &n_todo);
  }
done:
  free(nul);
  free(plus);
  free(todo);
  return rc;
}
