/* quant_check: finds blocks whose scale is not a finite number, so a file
 * with one is refused at load rather than computing NaN logits. */
#include <stddef.h>
#include <string.h>

#include "quant.h"

/* Byte offset of the half scale in a block of type t; -1 when not checked. */
static ptrdiff_t half_scale_offset(nc_type t) {
  switch (t) {
  case NC_TYPE_IQ4_NL: return offsetof(block_iq4_nl, d);
  case NC_TYPE_IQ4_XS: return offsetof(block_iq4_xs, d);
  case NC_TYPE_TQ1_0: return offsetof(block_tq1_0, d);
  case NC_TYPE_TQ2_0: return offsetof(block_tq2_0, d);
  case NC_TYPE_Q1_0: return offsetof(block_q1_0, d);
  case NC_TYPE_Q2_0: return offsetof(block_q2_0, d);
  case NC_TYPE_IQ2_XXS: return offsetof(block_iq2_xxs, d);
  case NC_TYPE_IQ2_XS: return offsetof(block_iq2_xs, d);
  case NC_TYPE_IQ2_S: return offsetof(block_iq2_s, d);
  case NC_TYPE_IQ3_XXS: return offsetof(block_iq3_xxs, d);
  case NC_TYPE_IQ3_S: return offsetof(block_iq3_s, d);
  case NC_TYPE_IQ1_S: return offsetof(block_iq1_s, d);
  default: return -1;
  }
}

int64_t nc_first_bad_block(nc_type type, const void *data, int64_t nb) {
  if (type == NC_TYPE_IQ1_M && nb > 0) { /* the half is spread out */
    const block_iq1_m *x = data;
    for (int64_t i = 0; i < nb; i++)
      if ((nc_iq1m_half_scale(&x[i]) & 0x7c00u) == 0x7c00u) return i;
    return -1;
  }
  const ptrdiff_t off = half_scale_offset(type);
  if (off < 0 || nb <= 0) return -1;
  const size_t bs = nc_type_traits_of((uint32_t)type)->type_size;
  const uint8_t *p = (const uint8_t *)data + off;
  for (int64_t i = 0; i < nb; i++, p += bs) {
    nc_fp16 h;
    memcpy(&h, p, sizeof h);
    if ((h & 0x7c00u) == 0x7c00u) return i; /* exponent all ones */
  }
  return -1;
}
