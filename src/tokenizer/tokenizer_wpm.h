/* tokenizer_wpm: the tables of the WordPiece tokenizer (tokenizer_wpm.c),
 * generated from Hugging Face tokenizers' BERT normalizer and
 * pre-tokenizer by scripts/gen_wordpiece_tables.py (wordpiece_tables.c).
 * Internal to the tokenizer module. */
#ifndef NC_TOKENIZER_WPM_H
#define NC_TOKENIZER_WPM_H

#include <stddef.h>
#include <stdint.h>

/* What happens to a code point (flags). */
enum {
  NC_WPF_REMOVE = 1,  /* clean_text drops it (controls, private use, NUL) */
  NC_WPF_SPACE = 2,   /* clean_text makes it a space (whitespace) */
  NC_WPF_SPLIT = 4,   /* the pre-tokenizer splits at it (whitespace) */
  NC_WPF_PUNCT = 8,   /* the pre-tokenizer keeps it as a word alone */
  NC_WPF_CJK = 16,    /* handle_chinese_chars puts spaces around it */
  NC_WPF_DROP = 32,   /* strip_accents drops it (a nonspacing mark) */
  NC_WPF_STRIP = 64,  /* strip_accents maps it (nc_wpm_strip_map) */
  NC_WPF_LOWER = 128, /* lowercase maps it (nc_wpm_lower_map) */
};

#define NC_WPM_MAX_CP 0x110000u

extern const uint16_t nc_wpm_stage1[NC_WPM_MAX_CP >> 8];
extern const uint8_t nc_wpm_stage2[];
/* {code point, its form (up to 3 / 2 code points, 0-padded)}, sorted. */
extern const uint32_t nc_wpm_strip_map[][4];
extern const size_t nc_wpm_strip_map_len;
extern const uint32_t nc_wpm_lower_map[][3];
extern const size_t nc_wpm_lower_map_len;

static inline uint8_t nc_wpm_flags(uint32_t cp) {
  if (cp >= NC_WPM_MAX_CP) return NC_WPF_REMOVE;
  return nc_wpm_stage2[(size_t)nc_wpm_stage1[cp >> 8] * 256 + (cp & 255)];
}

#endif
