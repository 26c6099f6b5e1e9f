/* json_schema: the JSON strings several string grammars make together (a
 * format and a pattern, two patterns, a pattern and its lookaheads). Each
 * part is a string's GBNF body over the shared rules (quotes included),
 * made as usual (js_pattern, a format's rule); the result is the product
 * of their automata: the grammar engine's own states (grammar_state.h,
 * interned by grammar_memo.h), stepped on one code point of each class of
 * characters no part's ranges split, explored from the start, kept where
 * an accepted string can still be reached, and written as one rule per
 * state (a DFA as right-recursive GBNF). A part may be negated (the
 * strings it does not make: a negative lookahead). States and work are
 * bounded; past them the error names the pattern. */
#include "json_schema_internal.h"

#include <stdlib.h>
#include <string.h>

#include "grammar_memo.h"

#define MEET_MAX_STATES 4096u
#define MEET_MAX_CLASSES 2048u
#define MEET_WORK (1ull << 23)    /* units of each part's automaton */
#define MEET_MAX_EDGES (1u << 20) /* (state, class) pairs stepped */

typedef struct part {
  nc_grammar *g;
  nc_grammar_matcher *m; /* its start state and its work */
  nc_gmemo memo;
  nc_gstate scratch;
  bool negated;
} part;

typedef struct edge {
  uint32_t cls, to;
} edge;

typedef struct meet {
  part *parts;
  size_t n;
  uint32_t *lo; /* each character class: [lo[k], lo[k + 1]) */
  uint32_t n_cls;
  uint32_t *tuple; /* each state: n part state ids (NC_GMEMO_DEAD: dead) */
  uint32_t n_states;
  uint32_t *table; /* open addressing over tuples, MEET_MAX_STATES * 2 */
  edge *edges;
  size_t n_edges, cap_edges;
  uint32_t *first; /* each state's edges: first[s] .. first[s + 1] */
  bool *accepts, *live;
  nc_error err;
} meet;

static void meet_free(meet *mt) {
  for (size_t i = 0; i < mt->n; i++) {
    part *p = &mt->parts[i];
    nc_gmemo_free(&p->memo);
    nc_gstacks_free(&p->scratch.st);
    nc_grammar_matcher_free(p->m);
    nc_grammar_free(p->g);
  }
  free(mt->parts);
  free(mt->lo);
  free(mt->tuple);
  free(mt->table);
  free(mt->edges);
  free(mt->first);
  free(mt->accepts);
  free(mt->live);
}

/* Part i's grammar: the shared rules, the rules c wrote from offset
 * since on (those the bodies refer to: an inner intersection's), and
 * root ::= body. */
static int part_open(ctx *c, part *p, const char *body, bool negated,
                     size_t since) {
  sb t = {0};
  js_sb_add(&t, js_syntax_values(JS_SYNTAX_JSON),
            strlen(js_syntax_values(JS_SYNTAX_JSON)));
  js_sb_add(&t, js_shared_rules(), strlen(js_shared_rules()));
  if (c->out.s && since < c->out.n)
    js_sb_add(&t, c->out.s + since, c->out.n - since);
  js_sb_printf(&t, "root ::= %s\n", body);
  if (t.oom || t.big) {
    free(t.s);
    return t.oom ? js_fail_oom(c) : js_fail_big(c);
  }
  nc_error err = {0};
  nc_code rc = nc_grammar_parse(t.s, t.n, NULL, &p->g, &err);
  free(t.s);
  if (rc == NC_OK) rc = nc_grammar_matcher_create(p->g, &p->m, &err);
  if (rc == NC_OK && nc_gmemo_init(&p->memo, 1) != NC_OK) return js_fail_oom(c);
  if (rc != NC_OK) return js_fail(c, "pattern intersection: %s", err.message);
  p->negated = negated;
  nc_gwork_begin(&p->m->work, MEET_WORK);
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The classes: every part's range ends cut [0x20, 0x110000) (surrogates
 * and controls, which no JSON text holds raw, left out). */
static int classes(ctx *c, meet *mt) {
  size_t cap = 8;
  for (size_t i = 0; i < mt->n; i++)
    cap += 2 * (size_t)mt->parts[i].g->n_ranges;
  uint32_t *cut = malloc(cap * sizeof *cut);
  if (!cut) return js_fail_oom(c);
  size_t k = 0;
  cut[k++] = 0x20;
  cut[k++] = 0xD800;
  cut[k++] = 0xE000;
  cut[k++] = 0x110000;
  for (size_t i = 0; i < mt->n; i++) {
    const nc_grammar *g = mt->parts[i].g;
    for (uint32_t r = 0; r < g->n_ranges; r++) {
      cut[k++] = g->ranges[2 * r];
      cut[k++] = g->ranges[2 * r + 1] + 1;
    }
  }
  qsort(cut, k, sizeof *cut, cmp_u32);
  mt->lo = malloc((k + 1) * sizeof *mt->lo);
  if (!mt->lo) {
    free(cut);
    return js_fail_oom(c);
  }
  uint32_t n = 0;
  for (size_t i = 0; i < k; i++) {
    if (cut[i] < 0x20 || cut[i] > 0x110000 || (n && mt->lo[n - 1] == cut[i]))
      continue;
    mt->lo[n++] = cut[i];
  }
  free(cut);
  mt->n_cls = n - 1; /* the last cut ends the last class */
  if (mt->n_cls > MEET_MAX_CLASSES)
    return js_fail_limit(c,
                         "pattern intersection: more than %u classes of "
                         "characters",
                         MEET_MAX_CLASSES);
  return 0;
}

/* Part p's state after code point cp from state id (NC_GMEMO_DEAD: none);
 * -1 after a failure. */
static int part_step(ctx *c, meet *mt, part *p, uint32_t id, uint32_t cp,
                     uint32_t *to) {
  uint8_t u[4];
  int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  if (n == 1) {
    u[0] = (uint8_t)cp;
  } else {
    for (int i = n - 1; i > 0; i--, cp >>= 6)
      u[i] = (uint8_t)(0x80 | (cp & 0x3F));
    u[0] = (uint8_t)((0xF00u >> n) | cp);
  }
  bool full = false;
  nc_code rc = nc_gmemo_next(&p->memo, p->g, id, u[0], &p->scratch, &p->m->work,
                             to, &full, &mt->err);
  nc_gstate ch = {0}, next = {0};
  static const nc_gstate boundary;
  if (rc == NC_OK && !full && *to == NC_GMEMO_PARTIAL) {
    nc_gstate_utf8(&boundary, u[0], &ch);
    for (int i = 1; i < n && *to == NC_GMEMO_PARTIAL; i++) {
      rc = nc_gmemo_next_partial(&p->memo, p->g, id, &ch, u[i], &next,
                                 &p->scratch, &p->m->work, to, &full, &mt->err);
      if (rc != NC_OK || full) break;
      ch.cp = next.cp, ch.left = next.left, ch.lead = next.lead;
      ch.seen = next.seen;
    }
  }
  if (rc == NC_OK && full)
    return js_fail_limit(c,
                         "pattern intersection: a part has more than %u "
                         "states",
                         NC_GMEMO_MAX_STATES);
  if (rc == NC_ERR_NOMEM) return js_fail_oom(c);
  if (rc != NC_OK)
    return js_fail_limit(c,
                         "pattern intersection: more than %llu units of "
                         "work",
                         (unsigned long long)MEET_WORK);
  return 0;
}

static uint64_t tuple_hash(const uint32_t *t, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ t[i]) * 0x100000001B3ull;
  return h * 0x9E3779B97F4A7C15ull;
}

/* The id of tuple t, adding it as a new state (-1 after a failure). */
static int intern(ctx *c, meet *mt, const uint32_t *t, uint32_t *id) {
  uint32_t mask = 2 * MEET_MAX_STATES - 1;
  uint32_t at = (uint32_t)(tuple_hash(t, mt->n) >> 40) & mask;
  for (;; at = (at + 1) & mask) {
    uint32_t k = mt->table[at];
    if (k == UINT32_MAX) break;
    if (!memcmp(mt->tuple + (size_t)k * mt->n, t, mt->n * sizeof *t)) {
      *id = k;
      return 0;
    }
  }
  if (mt->n_states == MEET_MAX_STATES)
    return js_fail_limit(c, "pattern intersection: more than %u states",
                         MEET_MAX_STATES);
  memcpy(mt->tuple + (size_t)mt->n_states * mt->n, t, mt->n * sizeof *t);
  mt->table[at] = mt->n_states;
  *id = mt->n_states++;
  return 0;
}

static bool part_accepts(const part *p, uint32_t id) {
  return id != NC_GMEMO_DEAD && nc_gstate_accepting(&p->memo.states[id].s);
}

/* The states reachable from the start, their edges and which accept. */
static int explore(ctx *c, meet *mt) {
  size_t n = mt->n;
  mt->tuple = malloc((size_t)MEET_MAX_STATES * n * sizeof *mt->tuple);
  mt->table = malloc(2 * MEET_MAX_STATES * sizeof *mt->table);
  mt->first = malloc((MEET_MAX_STATES + 1) * sizeof *mt->first);
  mt->accepts = calloc(MEET_MAX_STATES, sizeof *mt->accepts);
  uint32_t *t = malloc(n * sizeof *t);
  if (!mt->tuple || !mt->table || !mt->first || !mt->accepts || !t) {
    free(t);
    return js_fail_oom(c);
  }
  memset(mt->table, 0xFF, 2 * MEET_MAX_STATES * sizeof *mt->table);
  for (size_t i = 0; i < n; i++) {
    part *p = &mt->parts[i];
    nc_code rc = nc_gmemo_intern(&p->memo, &p->m->cur, &t[i]);
    if (rc != NC_OK) {
      free(t);
      return js_fail_oom(c);
    }
  }
  uint32_t id;
  int rc = intern(c, mt, t, &id);
  for (uint32_t s = 0; rc == 0 && s < mt->n_states; s++) {
    mt->first[s] = (uint32_t)mt->n_edges;
    const uint32_t *from = mt->tuple + (size_t)s * n;
    bool acc = true;
    for (size_t i = 0; i < n; i++)
      acc &= part_accepts(&mt->parts[i], from[i]) != mt->parts[i].negated;
    mt->accepts[s] = acc;
    if ((uint64_t)(s + 1) * mt->n_cls > MEET_MAX_EDGES) {
      rc = js_fail_limit(c,
                         "pattern intersection: more than %u steps (states "
                         "times classes of characters)",
                         MEET_MAX_EDGES);
      break;
    }
    for (uint32_t k = 0; rc == 0 && k < mt->n_cls; k++) {
      bool dead = false;
      for (size_t i = 0; rc == 0 && i < n && !dead; i++) {
        part *p = &mt->parts[i];
        from = mt->tuple + (size_t)s * n; /* intern may not move it */
        t[i] = NC_GMEMO_DEAD;
        if (from[i] != NC_GMEMO_DEAD)
          rc = part_step(c, mt, p, from[i], mt->lo[k], &t[i]);
        dead = t[i] == NC_GMEMO_DEAD && !p->negated;
      }
      if (rc || dead) continue;
      rc = intern(c, mt, t, &id);
      if (rc) break;
      if (mt->n_edges == mt->cap_edges) {
        size_t cap = mt->cap_edges ? 2 * mt->cap_edges : 256;
        edge *e = realloc(mt->edges, cap * sizeof *e);
        if (!e) {
          rc = js_fail_oom(c);
          break;
        }
        mt->edges = e;
        mt->cap_edges = cap;
      }
      mt->edges[mt->n_edges++] = (edge){.cls = k, .to = id};
    }
  }
  mt->first[mt->n_states] = (uint32_t)mt->n_edges;
  free(t);
  return rc;
}

/* live[s]: an accepting state is reachable from s (a fixpoint over the
 * edges: few rounds, as the states are few). */
static int mark_live(ctx *c, meet *mt) {
  mt->live = calloc(mt->n_states ? mt->n_states : 1, sizeof *mt->live);
  if (!mt->live) return js_fail_oom(c);
  for (uint32_t s = 0; s < mt->n_states; s++)
    mt->live[s] = mt->accepts[s];
  for (bool more = true; more;) {
    more = false;
    for (uint32_t s = mt->n_states; s-- > 0;) {
      if (mt->live[s]) continue;
      for (uint32_t e = mt->first[s]; e < mt->first[s + 1]; e++)
        if (mt->live[mt->edges[e].to]) {
          mt->live[s] = more = true;
          break;
        }
    }
  }
  return 0;
}

/* The states as rules r<base + s>: per target, the classes that lead
 * there as one GBNF class. */
static int emit(ctx *c, meet *mt, int *start) {
  int *rule = malloc(mt->n_states * sizeof *rule);
  if (!rule) return js_fail_oom(c);
  for (uint32_t s = 0; s < mt->n_states; s++) {
    rule[s] = -1;
    if (mt->live[s] && (rule[s] = js_new_rule(c)) < 0) {
      free(rule);
      return -1;
    }
  }
  for (uint32_t s = 0; s < mt->n_states; s++) {
    if (!mt->live[s]) continue;
    sb body = {0};
    bool any = false;
    for (uint32_t e = mt->first[s]; e < mt->first[s + 1]; e++) {
      uint32_t to = mt->edges[e].to;
      if (!mt->live[to]) continue;
      bool seen = false; /* written with an earlier edge to the same */
      for (uint32_t f = mt->first[s]; f < e && !seen; f++)
        seen = mt->edges[f].to == to;
      if (seen) continue;
      js_sb_add(&body, any ? " | [" : "[", any ? 4 : 1);
      any = true;
      for (uint32_t f = e; f < mt->first[s + 1]; f++) {
        if (mt->edges[f].to != to) continue;
        uint32_t k = mt->edges[f].cls, z = k;
        while (f + 1 < mt->first[s + 1] && mt->edges[f + 1].to == to &&
               mt->edges[f + 1].cls == z + 1)
          z = mt->edges[++f].cls; /* adjacent classes: one range */
        js_sb_printf(&body, "\\U%08X-\\U%08X", mt->lo[k], mt->lo[z + 1] - 1);
      }
      js_sb_printf(&body, "] r%d", rule[to]);
    }
    if (mt->accepts[s]) js_sb_add(&body, any ? " | \"\"" : "\"\"", any ? 5 : 2);
    js_emit(c, rule[s], &body);
  }
  *start = rule[0];
  free(rule);
  return 0;
}

int js_string_meet(ctx *c, const char *const *bodies, const bool *negated,
                   size_t n, size_t since, sb *b) {
  meet mt = {0};
  mt.parts = calloc(n, sizeof *mt.parts);
  int rc = mt.parts ? 0 : js_fail_oom(c);
  for (size_t i = 0; rc == 0 && i < n; i++, mt.n++)
    rc = part_open(c, &mt.parts[i], bodies[i], negated[i], since);
  if (rc == 0) rc = classes(c, &mt);
  if (rc == 0) rc = explore(c, &mt);
  if (rc == 0) rc = mark_live(c, &mt);
  if (rc == 0 && !mt.live[0])
    rc = js_fail_unsat(c, "no string matches all of the string's patterns "
                          "and format");
  int start = -1;
  if (rc == 0) rc = emit(c, &mt, &start);
  if (rc == 0) js_sb_printf(b, "r%d", start);
  meet_free(&mt);
  return rc;
}
