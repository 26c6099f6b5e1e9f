/* JPEG through libjpeg-turbo: gray and YCbCr pictures come out as RGB8
 * (the library's own conversion); CMYK and YCCK (Adobe) ones are refused,
 * as is a 12-bit one (the library's error). libjpeg's fatal errors longjmp
 * back here with their message; its one warning that means the data is
 * cut short (a premature end, which it would fill with gray) is fatal too.
 * A progressive file of more than MAX_SCANS scans is refused while it is
 * read (each scan costs a pass over the picture: a small file can carry
 * thousands), as libjpeg-turbo's own TurboJPEG API does. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include <jerror.h>
#include <jpeglib.h>

#include "vision/image_formats.h"

#define MAX_SCANS 500

typedef struct jpeg_job {
  struct jpeg_error_mgr pub; /* first: libjpeg's err points here */
  struct jpeg_progress_mgr progress;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int too_many_scans;
  struct nucleus_image *img;
} jpeg_job;

static void on_error_exit(j_common_ptr cinfo) {
  jpeg_job *job = (jpeg_job *)cinfo->err;
  cinfo->err->format_message(cinfo, job->message);
  longjmp(job->jump, 1);
}

static void on_message(j_common_ptr cinfo, int level) {
  /* level -1: a warning about corrupt data; others: trace output. */
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF)
    on_error_exit(cinfo);
}

static void on_progress(j_common_ptr cinfo) {
  jpeg_job *job = (jpeg_job *)cinfo->err;
  j_decompress_ptr d = (j_decompress_ptr)cinfo;
  if (!cinfo->is_decompressor || !d->progressive_mode) return;
  if (d->input_scan_number > MAX_SCANS) {
    job->too_many_scans = 1;
    snprintf(job->message, sizeof job->message, "more than %d scans",
             MAX_SCANS);
    longjmp(job->jump, 1);
  }
}

static const char *color_space_name(J_COLOR_SPACE cs) {
  return cs == JCS_CMYK ? "CMYK" : cs == JCS_YCCK ? "YCCK" : "unknown";
}

/* Everything that may longjmp; what it allocates lives in *job. */
static nc_code decode(struct jpeg_decompress_struct *cinfo, jpeg_job *job,
                      const uint8_t *bytes, size_t n,
                      const nucleus_image_limits *limits, nc_error *err) {
  if (setjmp(job->jump)) {
    if (job->too_many_scans)
      return nc_fail(err, NC_ERR_LIMIT, "a progressive JPEG image of %s",
                     job->message);
    return nc_fail(err, NC_ERR_FORMAT, "a corrupt JPEG image: %s",
                   job->message);
  }
  jpeg_create_decompress(cinfo);
  cinfo->progress = &job->progress;
  jpeg_mem_src(cinfo, bytes, (unsigned long)n);
  jpeg_read_header(cinfo, TRUE);
  nc_code rc = nc_image_check_size("JPEG", cinfo->image_width,
                                   cinfo->image_height, limits, err);
  if (rc != NC_OK) return rc;
  J_COLOR_SPACE cs = cinfo->jpeg_color_space;
  if (cs != JCS_GRAYSCALE && cs != JCS_YCbCr && cs != JCS_RGB)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "a %s JPEG image: only gray, YCbCr and RGB ones are taken",
                   color_space_name(cs));
  cinfo->out_color_space = JCS_RGB;
  jpeg_start_decompress(cinfo);
  if (cinfo->output_components != 3 ||
      cinfo->output_width != cinfo->image_width ||
      cinfo->output_height != cinfo->image_height)
    return nc_fail(err, NC_ERR_INTERNAL,
                   "JPEG: %d components of %ux%u out of a %ux%u picture",
                   cinfo->output_components, cinfo->output_width,
                   cinfo->output_height, cinfo->image_width,
                   cinfo->image_height);
  rc = nc_image_alloc((int32_t)cinfo->output_width,
                      (int32_t)cinfo->output_height, &job->img, err);
  if (rc != NC_OK) return rc;
  size_t stride = (size_t)cinfo->output_width * 3;
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = job->img->rgb + cinfo->output_scanline * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return NC_OK;
}

nc_code nc_image_decode_jpeg(const uint8_t *bytes, size_t n,
                             const nucleus_image_limits *limits,
                             struct nucleus_image **out, nc_error *err) {
  *out = NULL;
  struct jpeg_decompress_struct cinfo = {0};
  jpeg_job job = {0};
  cinfo.err = jpeg_std_error(&job.pub);
  job.pub.error_exit = on_error_exit;
  job.pub.emit_message = on_message;
  job.progress.progress_monitor = on_progress;
  nc_code rc = decode(&cinfo, &job, bytes, n, limits, err);
  jpeg_destroy_decompress(&cinfo);
  if (rc != NC_OK) {
    nc_image_free(job.img);
    return rc;
  }
  nc_image_rehash(job.img);
  *out = job.img;
  return NC_OK;
}
