/* nucleus quantize: a model file with its matrices quantized to a file type,
 * as llama-quantize writes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "nucleus.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: nucleus quantize [-t N] [--imatrix FILE] IN.gguf OUT.gguf "
          "TYPE\n\n"
          "Writes IN's model to OUT with its matrices quantized to TYPE, a\n"
          "file type as llama-quantize names it: Q4_0, Q4_1, Q5_0, Q5_1,\n"
          "Q8_0, Q2_K, Q3_K_S, Q3_K_M (Q3_K), Q3_K_L, Q4_K_S, Q4_K_M (Q4_K),\n"
          "Q5_K_S, Q5_K_M (Q5_K), Q6_K, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M,\n"
          "IQ3_XXS, IQ3_XS, IQ3_S, IQ3_M, IQ4_NL, IQ4_XS, MXFP4_MOE (MoE\n"
          "experts MXFP4, the rest Q8_0); IQ2_* and IQ3_XXS/IQ3_XS need\n"
          "--imatrix (make one with nucleus imatrix). Each\n"
          "tensor gets the type llama.cpp's quantizer gives it (output and\n"
          "tied embeddings Q6_K or Q8_0, more bits for some attn_v and\n"
          "ffn_down layers in the _M mixes, fallbacks for rows that are not\n"
          "whole blocks) and the same blocks; norms\n"
          "and vectors are copied. An already quantized input is\n"
          "dequantized first, as llama-quantize --allow-requantize does.\n\n"
          "  -t, --threads N   threads (1..256, default 2)\n"
          "  --imatrix FILE    an importance matrix (llama-imatrix's GGUF or\n"
          "                    .dat): columns weighted by their mean squared\n"
          "                    activation, as llama-quantize --imatrix\n");
}

int cmd_quantize(int argc, char **argv) {
  const char *pos[3] = {NULL, NULL, NULL};
  int npos = 0, threads = 2;
  const char *imatrix = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(arg, "-t") || !strcmp(arg, "--threads")) {
      char *end = NULL;
      const long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
      if (i + 1 >= argc || !end || *end || v < 1 || v > 256) {
        fprintf(stderr, "nucleus quantize: %s needs a number in [1, 256]\n",
                arg);
        return 2;
      }
      threads = (int)v;
      i++;
      continue;
    }
    if (!strcmp(arg, "--imatrix")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "nucleus quantize: --imatrix needs a file\n");
        return 2;
      }
      imatrix = argv[++i];
      continue;
    }
    if (arg[0] == '-' && arg[1]) {
      fprintf(stderr, "nucleus quantize: unknown option '%s'\n\n", arg);
      usage(stderr);
      return 2;
    }
    if (npos == 3) {
      fprintf(stderr, "nucleus quantize: too many arguments ('%s')\n\n", arg);
      usage(stderr);
      return 2;
    }
    pos[npos++] = arg;
  }
  if (npos != 3) {
    usage(stderr);
    return 2;
  }
  nucleus_error err = {0};
  if (nucleus_quantize_imatrix(pos[0], pos[1], pos[2], threads, imatrix,
                               &err) != NUCLEUS_OK) {
    fprintf(stderr, "nucleus quantize: %s\n", err.message);
    return 1;
  }
  printf("wrote %s (%s)\n", pos[1], pos[2]);
  return 0;
}
