/* Compile-time checks on the rule tables: which rules can finish
 * (productive), which can match "" (nullable), pruning of alternatives
 * that can never finish, the empty-language and left-recursion errors.
 * Every pass is linear in the grammar's size. */
#include <stdlib.h>
#include <string.h>

#include "grammar_internal.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Whether a class holds at least one code point. */
static nc_code class_nonempty(const nc_grammar *g, const nc_gelem *e,
                              bool *out) {
  if (!e->neg) {
    *out = e->b > 0;
    return NC_OK;
  }
  if (e->b == 0) {
    *out = true;
    return NC_OK;
  }
  uint64_t *r = malloc(e->b * sizeof *r);
  if (!r) return NC_ERR_NOMEM;
  for (uint32_t i = 0; i < e->b; i++)
    r[i] = ((uint64_t)g->ranges[2 * (e->a + i)] << 32) |
           g->ranges[2 * (e->a + i) + 1];
  qsort(r, e->b, sizeof *r, cmp_u64);
  uint64_t next = 0; /* first code point not yet covered */
  for (uint32_t i = 0; i < e->b; i++) {
    uint64_t lo = r[i] >> 32, hi = r[i] & 0xFFFFFFFFu;
    if (lo > next) break;
    if (hi + 1 > next) next = hi + 1;
  }
  free(r);
  *out = next <= 0x10FFFF;
  return NC_OK;
}

typedef struct tables {
  uint32_t *alt_rule;        /* the rule of each alternative */
  uint32_t *occ_start, *occ; /* CSR: rule -> alternatives referencing it */
  uint32_t *need;
  uint32_t *queue;
} tables;

/* has[r] for every rule: some alternative whose every element is a class
 * (classes_ok) or a reference to a rule with the property. */
static void propagate(const nc_grammar *g, tables *t, const uint8_t *class_ok,
                      uint8_t *has) {
  uint32_t qn = 0;
  memset(has, 0, g->n_rules);
  for (uint32_t a = 0; a < g->n_alts; a++) {
    uint32_t need = 0;
    for (uint32_t e = g->alts[a]; g->elems[e].kind != NC_GE_END; e++) {
      if (g->elems[e].kind == NC_GE_REF)
        need++;
      else if (!class_ok[e])
        need = UINT32_MAX / 2;
    }
    t->need[a] = need;
    if (need == 0 && !has[t->alt_rule[a]]) {
      has[t->alt_rule[a]] = 1;
      t->queue[qn++] = t->alt_rule[a];
    }
  }
  for (uint32_t qi = 0; qi < qn; qi++) {
    uint32_t s = t->queue[qi];
    for (uint32_t i = t->occ_start[s]; i < t->occ_start[s + 1]; i++) {
      uint32_t a = t->occ[i];
      if (--t->need[a] == 0 && !has[t->alt_rule[a]]) {
        has[t->alt_rule[a]] = 1;
        t->queue[qn++] = t->alt_rule[a];
      }
    }
  }
}

static nc_code build_tables(const nc_grammar *g, tables *t) {
  t->alt_rule = malloc((g->n_alts + 1) * sizeof(uint32_t));
  t->occ_start = calloc(g->n_rules + 1, sizeof(uint32_t));
  t->need = malloc((g->n_alts + 1) * sizeof(uint32_t));
  t->queue = malloc((g->n_rules + 1) * sizeof(uint32_t));
  if (!t->alt_rule || !t->occ_start || !t->need || !t->queue)
    return NC_ERR_NOMEM;
  uint32_t n_occ = 0;
  for (uint32_t r = 0; r < g->n_rules; r++)
    for (uint32_t k = 0; k < g->rules[r].n_alts; k++) {
      uint32_t a = g->rules[r].first_alt + k;
      t->alt_rule[a] = r;
      for (uint32_t e = g->alts[a]; g->elems[e].kind != NC_GE_END; e++)
        if (g->elems[e].kind == NC_GE_REF) {
          t->occ_start[g->elems[e].a + 1]++;
          n_occ++;
        }
    }
  for (uint32_t r = 0; r < g->n_rules; r++)
    t->occ_start[r + 1] += t->occ_start[r];
  t->occ = malloc((n_occ + 1) * sizeof(uint32_t));
  uint32_t *fill = malloc((g->n_rules + 1) * sizeof(uint32_t));
  if (!t->occ || !fill) {
    free(fill);
    return NC_ERR_NOMEM;
  }
  memcpy(fill, t->occ_start, g->n_rules * sizeof(uint32_t));
  for (uint32_t a = 0; a < g->n_alts; a++)
    for (uint32_t e = g->alts[a]; g->elems[e].kind != NC_GE_END; e++)
      if (g->elems[e].kind == NC_GE_REF) t->occ[fill[g->elems[e].a]++] = a;
  free(fill);
  return NC_OK;
}

static void free_tables(tables *t) {
  free(t->alt_rule);
  free(t->occ_start);
  free(t->occ);
  free(t->need);
  free(t->queue);
}

/* Drops every alternative that references a rule that cannot finish or
 * holds an empty class. */
static void prune(nc_grammar *g, const uint8_t *class_ok,
                  const uint8_t *productive) {
  uint32_t w = 0;
  for (uint32_t r = 0; r < g->n_rules; r++) {
    uint32_t first = w;
    for (uint32_t k = 0; k < g->rules[r].n_alts; k++) {
      uint32_t start = g->alts[g->rules[r].first_alt + k];
      bool keep = true;
      for (uint32_t e = start; keep && g->elems[e].kind != NC_GE_END; e++)
        keep = g->elems[e].kind == NC_GE_REF ? productive[g->elems[e].a]
                                             : class_ok[e];
      if (keep) g->alts[w++] = start;
    }
    g->rules[r].first_alt = first;
    g->rules[r].n_alts = w - first;
  }
  g->n_alts = w;
}

/* Left recursion: a cycle of references each reached through a prefix
 * that can match "". Iterative depth-first search over that graph. */
static nc_code left_recursion(const nc_grammar *g, const uint8_t *nullable,
                              const char *const *names, const size_t *lens,
                              nc_error *err) {
  uint32_t n = g->n_rules;
  uint8_t *color = calloc(n, 1);
  uint32_t *stack = malloc((n + 1) * sizeof *stack);
  uint32_t *cur_alt = malloc((n + 1) * sizeof *cur_alt);
  uint32_t *cur_elem = malloc((n + 1) * sizeof *cur_elem);
  nc_code rc = NC_OK;
  if (!color || !stack || !cur_alt || !cur_elem) {
    rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    goto done;
  }
  for (uint32_t s = 0; s < n && rc == NC_OK; s++) {
    if (color[s]) continue;
    uint32_t sp = 0;
    stack[sp] = s;
    cur_alt[sp] = 0;
    cur_elem[sp] = UINT32_MAX;
    color[s] = 1;
    sp++;
    while (sp > 0) {
      uint32_t r = stack[sp - 1];
      uint32_t next = UINT32_MAX;
      /* The next left-reachable reference of rule r. */
      while (cur_alt[sp - 1] < g->rules[r].n_alts) {
        uint32_t start = g->alts[g->rules[r].first_alt + cur_alt[sp - 1]];
        uint32_t e =
            cur_elem[sp - 1] == UINT32_MAX ? start : cur_elem[sp - 1] + 1;
        if (cur_elem[sp - 1] != UINT32_MAX) {
          const nc_gelem *prev = &g->elems[cur_elem[sp - 1]];
          if (!nullable[prev->a])
            e = UINT32_MAX; /* the prefix no longer matches "" */
        }
        if (e != UINT32_MAX && g->elems[e].kind == NC_GE_REF) {
          cur_elem[sp - 1] = e;
          next = g->elems[e].a;
          break;
        }
        cur_alt[sp - 1]++;
        cur_elem[sp - 1] = UINT32_MAX;
      }
      if (next == UINT32_MAX) {
        color[r] = 2;
        sp--;
        continue;
      }
      if (color[next] == 1) {
        rc = nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                     "grammar: left recursion in rule '%.*s'",
                     (int)(lens[next] > 64 ? 64 : lens[next]), names[next]);
        break;
      }
      if (color[next] == 0) {
        color[next] = 1;
        stack[sp] = next;
        cur_alt[sp] = 0;
        cur_elem[sp] = UINT32_MAX;
        sp++;
      }
    }
  }
done:
  free(color);
  free(stack);
  free(cur_alt);
  free(cur_elem);
  return rc;
}

nc_code nc_grammar_check(nc_grammar *g, const char *const *names,
                         const size_t *lens, nc_error *err) {
  tables t = {0};
  uint8_t *class_ok = calloc(g->n_elems + 1, 1);
  uint8_t *productive = malloc(g->n_rules + 1);
  uint8_t *nullable = malloc(g->n_rules + 1);
  uint8_t *no_class = calloc(g->n_elems + 1, 1);
  nc_code rc = NC_OK;
  if (!class_ok || !productive || !nullable || !no_class ||
      build_tables(g, &t) != NC_OK) {
    rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    goto done;
  }
  for (uint32_t e = 0; e < g->n_elems; e++) {
    if (g->elems[e].kind != NC_GE_CLASS) continue;
    bool ok;
    if (class_nonempty(g, &g->elems[e], &ok) != NC_OK) {
      rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
      goto done;
    }
    class_ok[e] = ok;
  }
  propagate(g, &t, class_ok, productive);
  if (!productive[g->root]) {
    rc =
        nc_fail(err, NC_ERR_INVALID_ARGUMENT,
                "grammar: empty language: rule '%.*s' matches no string",
                (int)(lens[g->root] > 64 ? 64 : lens[g->root]), names[g->root]);
    goto done;
  }
  prune(g, class_ok, productive);
  free_tables(&t);
  memset(&t, 0, sizeof t);
  if (build_tables(g, &t) != NC_OK) {
    rc = nc_fail(err, NC_ERR_NOMEM, "grammar: out of memory");
    goto done;
  }
  propagate(g, &t, no_class, nullable);
  rc = left_recursion(g, nullable, names, lens, err);
done:
  free_tables(&t);
  free(class_ok);
  free(productive);
  free(nullable);
  free(no_class);
  return rc;
}

bool nc_grammar_class_has(const nc_grammar *g, const nc_gelem *e, uint32_t c) {
  if (e->b == 0) return e->neg != 0; /* `.` (ranges may be NULL) */
  const uint32_t *r = g->ranges + 2 * (size_t)e->a;
  bool in = false;
  for (uint32_t i = 0; i < e->b && !in; i++)
    in = c >= r[2 * i] && c <= r[2 * i + 1];
  return in != (e->neg != 0);
}

bool nc_grammar_class_meets(const nc_grammar *g, const nc_gelem *e, uint32_t lo,
                            uint32_t hi) {
  if (e->b == 0) return e->neg != 0;
  const uint32_t *r = g->ranges + 2 * (size_t)e->a;
  if (!e->neg) {
    for (uint32_t i = 0; i < e->b; i++)
      if (r[2 * i] <= hi && r[2 * i + 1] >= lo) return true;
    return false;
  }
  /* Negated: some point of [lo, hi] outside every range. Walk c upwards,
   * jumping past any range that holds it (at most b jumps per range). */
  uint64_t c = lo;
  for (uint32_t round = 0; round <= e->b && c <= hi; round++) {
    bool moved = false;
    for (uint32_t i = 0; i < e->b; i++)
      if (c >= r[2 * i] && c <= r[2 * i + 1]) {
        c = (uint64_t)r[2 * i + 1] + 1;
        moved = true;
      }
    if (!moved) return true;
  }
  return c <= hi && !nc_grammar_class_has(g, e, (uint32_t)c) ? true : false;
}
