/* Alternatives that begin alike share their beginning (left factoring):
 * R ::= a X | a Y | b becomes R ::= a T | b with T ::= X | Y, and T is
 * factored in turn; then alternatives that are one (not negated) class
 * followed by the same rest become one alternative with the classes'
 * union. An alternation of n literals (a JSON Schema enum of n strings,
 * all beginning with '"') then holds one parse stack per distinct next
 * character, not one per literal: 4,096 values fit the stack bound. The
 * language does not change; a group is left as it was where a new rule
 * would pass NC_GRAMMAR_MAX_RULES. Repetition rules keep their shape
 * (grammar_canon.c reads it). */
#include <stdlib.h>
#include <string.h>

#include "grammar_parse.h"

typedef struct alt {
  uint64_t key; /* the first element's hash (the rest's, when merging) */
  uint32_t start, len, order;
  uint32_t group; /* the alternative that leads its group */
} alt;

static int by_key(const void *x, const void *y) {
  const alt *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  return (h ^ v) * 0x100000001B3ull;
}

static uint64_t elem_hash(const parser *p, const nc_gelem *e) {
  uint64_t h = mix(mix(mix(0xCBF29CE484222325ull, e->kind), e->neg), e->b);
  if (e->kind == NC_GE_REF) return mix(h, e->a);
  for (uint32_t i = 0; i < 2 * e->b; i++)
    h = mix(h, p->ranges[2 * (size_t)e->a + i]);
  return h;
}

bool nc_gparse_elem_equal(const parser *p, const nc_gelem *x,
                          const nc_gelem *y) {
  if (x->kind != y->kind || x->neg != y->neg || x->b != y->b) return false;
  if (x->kind == NC_GE_REF || x->a == y->a) return x->a == y->a;
  return memcmp(p->ranges + 2 * (size_t)x->a, p->ranges + 2 * (size_t)y->a,
                2 * (size_t)x->b * sizeof *p->ranges) == 0;
}

static bool rest_equal(const parser *p, const nc_gelem *v, const alt *x,
                       const alt *y) {
  if (x->len != y->len) return false;
  for (uint32_t i = 1; i < x->len; i++)
    if (!nc_gparse_elem_equal(p, &v[x->start + i], &v[y->start + i]))
      return false;
  return true;
}

/* The alternatives of body v (n elements) into as (its count in *n_as). */
static uint32_t split(const nc_gelem *v, size_t n, alt *as) {
  uint32_t k = 0, start = 0;
  for (size_t i = 0; i <= n; i++)
    if (i == n || v[i].kind == NC_GE_ALT) {
      as[k] = (alt){.start = start, .len = (uint32_t)i - start, .order = k};
      k++;
      start = (uint32_t)i + 1;
    }
  return k;
}

/* Groups the alternatives of equal key whose heads (merge: rests) are
 * equal: as[i].group is the order of its group's first member. Sorts as. */
static void group(const parser *p, const nc_gelem *v, alt *as, uint32_t n,
                  bool merge) {
  qsort(as, n, sizeof *as, by_key);
  for (uint32_t i = 0; i < n; i++)
    as[i].group = UINT32_MAX;
  for (uint32_t lo = 0, hi; lo < n; lo = hi) {
    for (hi = lo + 1; hi < n && as[hi].key == as[lo].key; hi++)
      ;
    for (uint32_t i = lo; i < hi; i++) {
      if (as[i].group != UINT32_MAX || as[i].key == 0) continue;
      as[i].group = as[i].order;
      for (uint32_t j = i + 1; j < hi; j++)
        if (as[j].group == UINT32_MAX &&
            (merge ? rest_equal(p, v, &as[i], &as[j])
                   : nc_gparse_elem_equal(p, &v[as[i].start], &v[as[j].start])))
          as[j].group = as[i].order;
    }
  }
}

static int by_order(const void *x, const void *y) {
  const alt *a = x, *b = y;
  return (a->order > b->order) - (a->order < b->order);
}

/* Copies alternative a of v into out (after an NC_GE_ALT when not the
 * first), from its element skip on. */
static nc_code copy_alt(parser *p, nc_gvec *out, const nc_gelem *v,
                        const alt *a, uint32_t skip, bool *first) {
  nc_code rc = NC_OK;
  if (!*first) rc = nc_gparse_push(p, out, (nc_gelem){.kind = NC_GE_ALT});
  *first = false;
  for (uint32_t i = skip; i < a->len && rc == NC_OK; i++)
    rc = nc_gparse_push(p, out, v[a->start + i]);
  return rc;
}

static int by_lo(const void *x, const void *y) {
  const uint32_t *a = x, *b = y;
  return (a[0] > b[0]) - (a[0] < b[0]);
}

/* The union of the classes heading the members of as's group g, as one
 * class element (its ranges sorted and coalesced, appended). */
static nc_code union_class(parser *p, const nc_gelem *v, const alt *as,
                           uint32_t n, uint32_t g, nc_gelem *out) {
  size_t total = 0;
  for (uint32_t i = 0; i < n; i++)
    if (as[i].group == g) total += v[as[i].start].b;
  uint32_t *r = malloc((2 * total + 2) * sizeof *r);
  if (!r) return nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
  size_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (as[i].group != g) continue;
    const nc_gelem *e = &v[as[i].start];
    memcpy(r + 2 * k, p->ranges + 2 * (size_t)e->a, 2 * e->b * sizeof *r);
    k += e->b;
  }
  qsort(r, k, 2 * sizeof *r, by_lo);
  *out = (nc_gelem){.kind = NC_GE_CLASS, .a = (uint32_t)(p->n_ranges / 2)};
  nc_code rc = NC_OK;
  for (size_t i = 0; i < k && rc == NC_OK;) {
    uint32_t lo = r[2 * i], hi = r[2 * i + 1];
    for (i++; i < k && r[2 * i] <= (uint64_t)hi + 1; i++)
      if (r[2 * i + 1] > hi) hi = r[2 * i + 1];
    rc = nc_gparse_range(p, lo, hi);
    out->b++;
  }
  free(r);
  return rc;
}

/* One rule's pass: left factoring (merge false) or the class union. */
static nc_code factor_rule(parser *p, uint32_t r, bool merge, alt **scratch,
                           size_t *cap) {
  nc_gvec old = p->rules[r].body;
  size_t n_alts = 1;
  for (size_t i = 0; i < old.n; i++)
    n_alts += old.v[i].kind == NC_GE_ALT;
  if (n_alts < 2) return NC_OK;
  if (*cap < n_alts) {
    alt *s = realloc(*scratch, n_alts * sizeof *s);
    if (!s) return nc_fail(p->err, NC_ERR_NOMEM, "grammar: out of memory");
    *scratch = s;
    *cap = n_alts;
  }
  alt *as = *scratch;
  uint32_t n = split(old.v, old.n, as);
  for (uint32_t i = 0; i < n; i++) { /* key 0: not grouped */
    const nc_gelem *h = &old.v[as[i].start];
    as[i].key = 0;
    if (as[i].len == 0) continue;
    if (!merge) {
      as[i].key = elem_hash(p, h) | 1;
    } else if (h->kind == NC_GE_CLASS && !h->neg && h->b > 0) {
      uint64_t k = 0x9E3779B97F4A7C15ull ^ as[i].len;
      for (uint32_t j = 1; j < as[i].len; j++)
        k = mix(k, elem_hash(p, &old.v[as[i].start + j]));
      as[i].key = k | 1;
    }
  }
  group(p, old.v, as, n, merge);
  qsort(as, n, sizeof *as, by_order);
  bool any = false;
  for (uint32_t i = 0; i < n && !any; i++)
    any = as[i].group != UINT32_MAX && as[i].group != as[i].order;
  if (!any) return NC_OK;
  p->n_elems -= old.n; /* the new body replaces it (never larger) */
  nc_gvec out = {0};
  nc_code rc = NC_OK;
  bool first = true;
  for (uint32_t i = 0; i < n && rc == NC_OK; i++) {
    const alt *a = &as[i];
    uint32_t members = 0;
    for (uint32_t j = i; j < n && a->group == a->order; j++)
      members += as[j].group == a->order;
    if (a->group != UINT32_MAX && a->group != a->order) continue; /* led */
    if (members < 2 || (!merge && p->n_rules >= NC_GRAMMAR_MAX_RULES)) {
      rc = copy_alt(p, &out, old.v, a, 0, &first);
      for (uint32_t j = i + 1; j < n && rc == NC_OK && members >= 2; j++)
        if (as[j].group == a->order)
          rc = copy_alt(p, &out, old.v, &as[j], 0, &first);
      continue;
    }
    if (merge) { /* one class, then the shared rest */
      nc_gelem u;
      rc = union_class(p, old.v, as, n, a->order, &u);
      if (rc == NC_OK && !first)
        rc = nc_gparse_push(p, &out, (nc_gelem){.kind = NC_GE_ALT});
      first = false;
      if (rc == NC_OK) rc = nc_gparse_push(p, &out, u);
      for (uint32_t k = 1; k < a->len && rc == NC_OK; k++)
        rc = nc_gparse_push(p, &out, old.v[a->start + k]);
      continue;
    }
    /* the shared head, then a rule of the members' tails */
    uint32_t t;
    nc_gvec tails = {0};
    bool tfirst = true;
    for (uint32_t j = i; j < n && rc == NC_OK; j++)
      if (as[j].group == a->order)
        rc = copy_alt(p, &tails, old.v, &as[j], 1, &tfirst);
    if (rc == NC_OK) rc = nc_gparse_new_rule(p, NULL, 0, &t);
    if (rc != NC_OK) {
      free(tails.v);
      break;
    }
    p->rules[t].body = tails;
    if (!first) rc = nc_gparse_push(p, &out, (nc_gelem){.kind = NC_GE_ALT});
    first = false;
    if (rc == NC_OK) rc = nc_gparse_push(p, &out, old.v[a->start]);
    if (rc == NC_OK)
      rc = nc_gparse_push(p, &out, (nc_gelem){.kind = NC_GE_REF, .a = t});
  }
  if (rc != NC_OK) {
    free(out.v);
    return rc;
  }
  free(old.v);
  p->rules[r].body = out;
  return NC_OK;
}

nc_code nc_gparse_factor(parser *p) {
  alt *scratch = NULL;
  size_t cap = 0;
  nc_code rc = NC_OK;
  /* The rules made here are factored too (the loop reaches them). */
  for (uint32_t r = 0; r < p->n_rules && rc == NC_OK; r++) {
    if (p->rules[r].repeats) continue;
    rc = factor_rule(p, r, false, &scratch, &cap);
    if (rc == NC_OK) rc = factor_rule(p, r, true, &scratch, &cap);
  }
  free(scratch);
  return rc;
}
