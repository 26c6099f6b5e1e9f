/* mmproj_encode: an image through its projector's encoder (mmproj.h): a
 * job (mmproj.h, mmproj_job.c) run to its end in one call. */
#include <math.h>

#include "mmproj.h"
#include "mmproj_internal.h"

nc_code nc_mmproj_encode(const nucleus_mmproj *mm, const nucleus_image *image,
                         nc_threadpool *tp, float *out, nc_error *err) {
  nc_threadpool *own = NULL;
  if (!tp && mm->n_threads > 1) {
    nc_code prc = nc_threadpool_create(mm->n_threads, &own, err);
    if (prc != NC_OK) return prc;
    tp = own;
  }
  nc_mmproj_job *job = NULL;
  nc_code rc = nc_mmproj_job_begin(mm, image, out, &job, err);
  bool done = false;
  if (rc == NC_OK) rc = nc_mmproj_job_run(job, tp, INFINITY, &done, err);
  nc_mmproj_job_free(job);
  nc_threadpool_free(own);
  return rc;
}
