/* mmproj_encode: an image through its projector's encoder (mmproj.h). */
#include "encode.h"
#include "image.h"

nc_code nc_mmproj_encode(const nucleus_mmproj *mm, const nucleus_image *image,
                         nc_threadpool *tp, float *out, nc_error *err) {
  nc_threadpool *own = NULL;
  if (!tp && mm->n_threads > 1) {
    nc_code prc = nc_threadpool_create(mm->n_threads, &own, err);
    if (prc != NC_OK) return prc;
    tp = own;
  }
  nc_vit v;
  nc_code rc = nc_vit_init(&v, mm->kern, tp, err);
  if (rc != NC_OK) {
    nc_threadpool_free(own);
    return rc;
  }
  switch (mm->projector) {
  case NC_PROJECTOR_GEMMA3:
    rc = nc_encode_gemma3(mm, image, &v, out, err);
    break;
  case NC_PROJECTOR_QWEN3VL:
    rc = nc_encode_qwen3vl(mm, image, &v, out, err);
    break;
  case NC_PROJECTOR_QWEN2VL:
  case NC_PROJECTOR_QWEN25VL:
    rc = nc_encode_qwen2vl(mm, image, &v, out, err);
    break;
  case NC_PROJECTOR_GEMMA4V:
    rc = nc_encode_gemma4v(mm, image, &v, out, err);
    break;
  }
  nc_vit_free(&v);
  nc_threadpool_free(own);
  return rc;
}
