/* encode: each projector family's encoder, called by nc_mmproj_encode
 * (mmproj_encode.c) with the call's scratch (vit.h). */
#ifndef NC_ENCODE_H
#define NC_ENCODE_H

#include "mmproj_internal.h"
#include "vit.h"

nc_code nc_encode_gemma3(const nucleus_mmproj *mm, const nucleus_image *image,
                         nc_vit *v, float *out, nc_error *err);

nc_code nc_encode_qwen3vl(const nucleus_mmproj *mm, const nucleus_image *image,
                          nc_vit *v, float *out, nc_error *err);

nc_code nc_encode_qwen2vl(const nucleus_mmproj *mm, const nucleus_image *image,
                          nc_vit *v, float *out, nc_error *err);

nc_code nc_encode_gemma4v(const nucleus_mmproj *mm, const nucleus_image *image,
                          nc_vit *v, float *out, nc_error *err);

#endif
