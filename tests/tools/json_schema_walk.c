/* JSON Schemas through the converter and random walks of their grammars,
 * for bench/jsonschema_bench.py: json_schema_walk MODEL [STEPS] [SEED]
 * reads one JSON Schema a line on stdin and prints one JSON line per
 * schema: {"ok": true, "outputs": [texts of the walks that finished],
 * "mask_us": [each mask's CPU microseconds (CLOCK_THREAD_CPUTIME_ID)],
 * "compile_ms": the conversion and GBNF compile} or {"ok": false,
 * "error": message}. Each schema gets STEPS masks (default 300): walks
 * from a fresh matcher, each step the mask and then a drawn allowed token
 * (an end token when allowed, half the time; else, a third of the time, a
 * token holding one of "}],: that closes things; else any), a walk ending
 * when the grammar completes or an end token is drawn (a finished output)
 * or after 400 tokens (unfinished, not printed). Schemas compile as the
 * server's response_format does (nucleus_json_schema_to_gbnf_doc: the
 * whole output, uniqueItems over strings and numbers checked). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/gguf.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/vocab.h"

#define WALK_MAX 400

static double cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void fail_line(const char *msg) {
  json_t *o = json_pack("{s:b,s:s}", "ok", 0, "error", msg);
  char *t = json_dumps(o, JSON_COMPACT);
  puts(t);
  free(t);
  json_decref(o);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL [STEPS] [SEED] < schemas.jsonl\n",
            argv[0]);
    return 2;
  }
  long steps = argc > 2 ? atol(argv[2]) : 300;
  uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
  if (steps < 1 || steps > 1000000) steps = 300;
  if (!seed) seed = 1;
  gguf_file *f = NULL;
  nc_vocab *v = NULL;
  nc_grammar_vocab *gv = NULL;
  nc_error err = {0};
  if (gguf_open(argv[1], &f, &err) != NC_OK ||
      nc_vocab_load(f, &v, &err) != NC_OK ||
      nc_grammar_vocab_from(v, &gv, &err) != NC_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  gguf_close(f);
  int32_t n = nc_grammar_vocab_n_tokens(gv);
  size_t words = ((size_t)n + 63) / 64;
  uint64_t *mask = calloc(words, sizeof *mask);
  int32_t *allowed = malloc((size_t)n * sizeof *allowed);
  int32_t *closing = malloc((size_t)n * sizeof *closing);
  bool *closes = calloc((size_t)n, sizeof *closes);
  char **pieces = calloc((size_t)n, sizeof *pieces);
  size_t *plens = calloc((size_t)n, sizeof *plens);
  if (!mask || !allowed || !closing || !closes || !pieces || !plens) return 1;
  for (int32_t i = 0; i < n; i++) {
    char one[1];
    size_t need = nc_token_to_piece(v, i, false, one, 0);
    pieces[i] = malloc(need + 1);
    if (!pieces[i]) return 1;
    plens[i] = nc_token_to_piece(v, i, false, pieces[i], need);
    for (size_t k = 0; k < plens[i]; k++)
      if (strchr("\"}],:", pieces[i][k])) closes[i] = true;
  }
  size_t cap = 1 << 22;
  char *line = malloc(cap);
  char *text = malloc(1 << 16);
  if (!line || !text) return 1;
  while (fgets(line, (int)cap, stdin)) {
    size_t ll = strlen(line);
    double t0 = cpu_us();
    char *gbnf = NULL;
    nucleus_error jerr = {0};
    nc_grammar *g = NULL;
    if (nucleus_json_schema_to_gbnf_doc(line, ll, &gbnf, &jerr) != NUCLEUS_OK) {
      fail_line(jerr.message);
      continue;
    }
    nc_code rc = nc_grammar_parse(gbnf, strlen(gbnf), NULL, &g, &err);
    nucleus_free(gbnf);
    if (rc != NC_OK) {
      fail_line(err.message);
      continue;
    }
    double compile_ms = (cpu_us() - t0) / 1e3;
    json_t *outs = json_array(), *times = json_array();
    long done = 0;
    const char *why = NULL;
    while (done < steps && !why) {
      nc_grammar_matcher *m = NULL;
      if (nc_grammar_matcher_create(g, &m, &err) != NC_OK) {
        why = err.message;
        break;
      }
      size_t tl = 0;
      bool finished = false;
      for (int step = 0; step < WALK_MAX && done < steps; step++) {
        double m0 = cpu_us();
        if (nc_grammar_matcher_mask(m, gv, mask, &err) != NC_OK) {
          why = err.message;
          break;
        }
        json_array_append_new(times, json_real(cpu_us() - m0));
        done++;
        int32_t k = 0, kc = 0, end = -1;
        for (int32_t i = 0; i < n; i++)
          if ((mask[i / 64] >> (i % 64)) & 1) {
            allowed[k++] = i;
            if (closes[i]) closing[kc++] = i;
            if (nc_grammar_vocab_kind(gv, i) == NC_GRAMMAR_TOKEN_END) end = i;
          }
        if (k == 0) {
          why = "a mask with no token";
          break;
        }
        uint64_t r = next_rand(&seed);
        int32_t t = end >= 0 && r % 2 == 0 ? end
                    : kc && (r >> 8) % 3 == 0
                        ? closing[(r >> 16) % (uint64_t)kc]
                        : allowed[(r >> 16) % (uint64_t)k];
        if (nc_grammar_vocab_kind(gv, t) == NC_GRAMMAR_TOKEN_END) {
          finished = true;
          break;
        }
        bool ok = false;
        if (nc_grammar_matcher_accept_token(m, gv, t, &ok, &err) != NC_OK ||
            !ok) {
          why = "an allowed token was refused";
          break;
        }
        if (tl + plens[t] < (1 << 16)) {
          memcpy(text + tl, pieces[t], plens[t]);
          tl += plens[t];
        }
        if (nc_grammar_matcher_complete(m)) {
          finished = true;
          break;
        }
      }
      if (finished) json_array_append_new(outs, json_stringn(text, tl));
      nc_grammar_matcher_free(m);
    }
    nc_grammar_free(g);
    json_t *o = why ? json_pack("{s:b,s:s}", "ok", 0, "error", why)
                    : json_pack("{s:b,s:o,s:o,s:f}", "ok", 1, "outputs", outs,
                                "mask_us", times, "compile_ms", compile_ms);
    if (why) {
      json_decref(outs);
      json_decref(times);
    }
    char *out = json_dumps(o, JSON_COMPACT);
    puts(out);
    fflush(stdout);
    free(out);
    json_decref(o);
  }
  free(text);
  free(line);
  for (int32_t i = 0; i < n; i++)
    free(pieces[i]);
  free(pieces);
  free(plens);
  free(closes);
  free(closing);
  free(allowed);
  free(mask);
  nc_grammar_vocab_free(gv);
  nc_vocab_free(v);
  return 0;
}
