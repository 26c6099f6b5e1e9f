/* The canonical map of bounded repetitions (see grammar_internal.h): the
 * parser writes x{0,n} as the chain R1 ::= x | "", Rk ::= x R(k-1) | "";
 * a stack inside Rk differs from one inside R(D+1) only in how many more
 * x it allows, which no token of at most D bytes can tell apart when both
 * allow at least D more (every x that is not empty takes a byte, empty
 * ones can be left out). Chains are recognized by their shape, whoever
 * wrote them. The same pass marks each step of two or more with its place
 * in the chain's R2 and its level (dom_key, dom_level): a stack inside Rk
 * matches a subset of what the same stack inside Rj, j >= k, matches. */
#include <stdlib.h>
#include <string.h>

#include "grammar_internal.h"

#define D NC_GRAMMAR_CANON_DEPTH

static bool same_elem(const nc_grammar *g, const nc_gelem *a,
                      const nc_gelem *b) {
  if (a->kind != b->kind || a->neg != b->neg || a->b != b->b) return false;
  if (a->kind != NC_GE_CLASS) return a->a == b->a;
  return a->a == b->a || a->b == 0 ||
         memcmp(g->ranges + 2 * (size_t)a->a, g->ranges + 2 * (size_t)b->a,
                2 * (size_t)a->b * sizeof *g->ranges) == 0;
}

/* Rule r's chain link: its x's index and the rule it continues to
 * (UINT32_MAX: the base R1); false when r is not chain-shaped. */
static bool link_of(const nc_grammar *g, uint32_t r, uint32_t *x,
                    uint32_t *prev) {
  const nc_grule *R = &g->rules[r];
  if (R->n_alts != 2) return false;
  uint32_t a0 = g->alts[R->first_alt], a1 = g->alts[R->first_alt + 1];
  if (g->elems[a1].kind != NC_GE_END || g->elems[a0].kind == NC_GE_END)
    return false;
  *x = a0;
  const nc_gelem *e1 = &g->elems[a0 + 1];
  if (e1->kind == NC_GE_END) {
    *prev = UINT32_MAX;
    return true;
  }
  if (e1->kind != NC_GE_REF || g->elems[a0 + 2].kind != NC_GE_END) return false;
  *prev = e1->a;
  return true;
}

/* dom_key and dom_level of chain rule r's elements (level k, its chain's
 * R2 is two). */
static void set_dom(nc_grammar *g, uint32_t r, uint32_t two, uint32_t k) {
  const nc_grule *R = &g->rules[r], *T = &g->rules[two];
  for (uint32_t i = 0; i < 2; i++) {
    uint32_t s = g->alts[R->first_alt + i], t = g->alts[T->first_alt + i];
    for (uint32_t j = 0;; j++) {
      g->dom_key[s + j] = t + j;
      g->dom_level[s + j] = k;
      if (g->elems[s + j].kind == NC_GE_END) break;
    }
  }
}

nc_code nc_grammar_canon_build(nc_grammar *g) {
  g->canon = NULL;
  g->dom_key = g->dom_level = NULL;
  uint32_t n = g->n_rules;
  uint32_t *k = calloc((size_t)n + 1, sizeof *k); /* budget; 0: no chain */
  uint32_t *to = malloc(((size_t)n + 1) * sizeof *to);
  uint32_t *two = malloc(((size_t)n + 1) * sizeof *two); /* the chain's R2 */
  /* k[r] by following the links down to a base, through an explicit
   * path (a cycle of chain-shaped rules is no chain); to[r]: the step
   * D + 1 from the end of r's chain. */
  uint8_t *mark = calloc((size_t)n + 1, 1); /* 1 on the path, 2 done */
  uint32_t *path = malloc(((size_t)n + 1) * sizeof *path);
  nc_code rc = NC_OK;
  if (!k || !to || !two || !mark || !path) {
    rc = NC_ERR_NOMEM;
    goto done;
  }
  bool any = false, any_dom = false;
  for (uint32_t r0 = 0; r0 < n; r0++) {
    uint32_t len = 0, r = r0, below = 0, below_to = UINT32_MAX,
             below_two = UINT32_MAX;
    for (;;) {
      uint32_t x, prev, px, pp;
      if (mark[r] == 2) { /* resolved before */
        below = k[r];
        below_to = to[r];
        below_two = two[r];
        break;
      }
      if (mark[r] == 1) break; /* a cycle: no chain */
      if (!link_of(g, r, &x, &prev)) {
        mark[r] = 2;
        k[r] = 0;
        to[r] = two[r] = UINT32_MAX;
        break;
      }
      if (prev == UINT32_MAX) { /* the base R1 */
        mark[r] = 2;
        k[r] = below = 1;
        to[r] = below_to = D == 0 ? r : UINT32_MAX;
        two[r] = below_two = UINT32_MAX;
        break;
      }
      mark[r] = 1;
      path[len++] = r;
      if (prev >= n || !link_of(g, prev, &px, &pp) ||
          !same_elem(g, &g->elems[x], &g->elems[px]))
        break; /* continues to something that is no step of it */
      r = prev;
    }
    /* Each rule on the path is one step above the one after it. */
    for (uint32_t i = len; i-- > 0;) {
      uint32_t q = path[i];
      mark[q] = 2;
      k[q] = below ? ++below : 0;
      to[q] = !below          ? UINT32_MAX
              : k[q] == D + 1 ? q
              : k[q] > D + 1  ? below_to
                              : UINT32_MAX;
      two[q] = !below ? UINT32_MAX : k[q] == 2 ? q : below_two;
      below_to = to[q];
      below_two = two[q];
      any |= k[q] > D + 1;
      any_dom |= k[q] >= 2;
    }
  }
  if (any) {
    g->canon = malloc(((size_t)g->n_elems + 1) * sizeof *g->canon);
    if (!g->canon) {
      rc = NC_ERR_NOMEM;
      goto done;
    }
    for (uint32_t e = 0; e < g->n_elems; e++)
      g->canon[e] = e;
    for (uint32_t r = 0; r < n; r++) {
      if (k[r] <= D + 1 || to[r] == UINT32_MAX) continue;
      const nc_grule *R = &g->rules[r], *T = &g->rules[to[r]];
      for (uint32_t i = 0; i < 2; i++) {
        uint32_t s = g->alts[R->first_alt + i], t = g->alts[T->first_alt + i];
        for (uint32_t j = 0;; j++) {
          g->canon[s + j] = t + j;
          if (g->elems[s + j].kind == NC_GE_END) break;
        }
      }
    }
  }
  if (any_dom) {
    g->dom_key = malloc(((size_t)g->n_elems + 1) * sizeof *g->dom_key);
    g->dom_level = malloc(((size_t)g->n_elems + 1) * sizeof *g->dom_level);
    if (!g->dom_key || !g->dom_level) {
      rc = NC_ERR_NOMEM;
      goto done;
    }
    memset(g->dom_key, 0xFF, ((size_t)g->n_elems + 1) * sizeof *g->dom_key);
    for (uint32_t r = 0; r < n; r++)
      if (k[r] >= 2 && two[r] != UINT32_MAX) set_dom(g, r, two[r], k[r]);
  }
done:
  free(k);
  free(to);
  free(two);
  free(mark);
  free(path);
  return rc;
}
