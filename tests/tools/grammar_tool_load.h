/* grammar_tool_load.h: what the grammar tools (grammar_mask_dump,
 * grammar_mask_bench) start with: a model file's vocabulary, a GBNF file
 * compiled, and the grammar's view of the vocabulary. */
#ifndef NC_GRAMMAR_TOOL_LOAD_H
#define NC_GRAMMAR_TOOL_LOAD_H

#include <stdio.h>

#include "gguf/gguf.h"
#include "grammar/grammar.h"
#include "tokenizer/vocab.h"

/* 0, or 1 after printing why to stderr. The caller owns *v, *g and *gv. */
static int grammar_tool_load(const char *gguf_path, const char *gbnf_path,
                             nc_vocab **v, nc_grammar **g,
                             nc_grammar_vocab **gv) {
  gguf_file *f = NULL;
  nc_error err = {0};
  *v = NULL, *g = NULL, *gv = NULL;
  if (gguf_open(gguf_path, &f, &err) != NC_OK ||
      nc_vocab_load(f, v, &err) != NC_OK) {
    fprintf(stderr, "%s\n", err.message);
    gguf_close(f);
    return 1;
  }
  gguf_close(f);
  FILE *gf = fopen(gbnf_path, "rb");
  if (!gf) {
    fprintf(stderr, "cannot open %s\n", gbnf_path);
    return 1;
  }
  static char text[1 << 20];
  size_t len = fread(text, 1, sizeof text, gf);
  fclose(gf);
  if (nc_grammar_parse(text, len, NULL, g, &err) != NC_OK ||
      nc_grammar_vocab_from(*v, gv, &err) != NC_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 1;
  }
  return 0;
}

#endif
