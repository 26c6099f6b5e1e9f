/* qwen_patches: the pieces the Qwen vision encoders share (qwen2vl,
 * qwen2.5vl, qwen3vl: llama.cpp's clip.cpp inputs of those graphs): the
 * smart resize (nc_qwen_image_size, declared in mmproj_internal.h), the
 * merge order of the patches and the 2-D RoPE tables of a patch. */
#ifndef NC_QWEN_PATCHES_H
#define NC_QWEN_PATCHES_H

#include <stdint.h>

#include "mmproj_internal.h"

/* The patch (py, px) of merge-order row r of a pw x ph grid: each 2 x 2
 * block's four patches consecutive, blocks row by row. */
void nc_qwen_merge_order(int32_t r, int32_t pw, int32_t *py, int32_t *px);

/* The 2-D RoPE tables (dh / 2 cos and sin) of the patch (py, px): pairs
 * [0, dh/4) by the patch's row, [dh/4, dh/2) by its column (ggml's vision
 * M-RoPE, sections d/4 each, positions (y, x, y, x)). dh / 2 <= 512. */
void nc_qwen_vision_rope(int32_t dh, int32_t py, int32_t px, float *cos_c,
                         float *sin_c);

#endif
