/* image_resize: Pillow's resampling as llama.cpp runs it (image_resize.h). */
#include "image_resize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PRECISION_BITS = 32 - 8 - 2 };

static double filter_at(nc_resize_filter f, double x) {
  if (x < 0.0) x = -x;
  if (f == NC_RESIZE_BILINEAR) return x < 1.0 ? 1.0 - x : 0.0;
  const double a = -0.5;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

/* For each output pixel: its first input pixel and count (bounds) and
 * ksize fixed-point weights. Returns ksize, 0 when out of memory. */
static int weights_of(nc_resize_filter f, int in, int out, int **bounds_out,
                      int32_t **w_out) {
  const double support_1 = f == NC_RESIZE_BILINEAR ? 1.0 : 2.0;
  double scale = (double)in / out, filterscale = scale;
  if (filterscale < 1.0) filterscale = 1.0;
  const double support = support_1 * filterscale;
  const int ksize = (int)ceil(support) * 2 + 1;
  double *pre = malloc((size_t)out * (size_t)ksize * sizeof *pre);
  int *bounds = malloc((size_t)out * 2 * sizeof *bounds);
  int32_t *w = malloc((size_t)out * (size_t)ksize * sizeof *w);
  if (!pre || !bounds || !w) {
    free(pre);
    free(bounds);
    free(w);
    return 0;
  }
  for (int xx = 0; xx < out; xx++) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = (int)(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = (int)(center + support + 0.5);
    if (xmax > in) xmax = in;
    xmax -= xmin;
    double ww = 0.0;
    int x = 0;
    for (; x < xmax; x++) {
      const double v = filter_at(f, (x + xmin - center + 0.5) * ss);
      pre[(size_t)xx * ksize + x] = v;
      ww += v;
    }
    for (x = 0; x < xmax; x++)
      if (ww != 0.0) pre[(size_t)xx * ksize + x] /= ww;
    for (; x < ksize; x++)
      pre[(size_t)xx * ksize + x] = 0;
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = xmax;
  }
  const double fxp = ldexp(1.0, PRECISION_BITS);
  for (size_t i = 0; i < (size_t)out * (size_t)ksize; i++)
    w[i] = (int32_t)(pre[i] * fxp + (pre[i] < 0 ? -0.5 : 0.5));
  free(pre);
  *bounds_out = bounds;
  *w_out = w;
  return ksize;
}

static uint8_t clip8(int32_t v) {
  return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

static void horizontal(const uint8_t *src, int in_nx, int ny, uint8_t *dst,
                       int out_nx, int ksize, const int *bounds,
                       const int32_t *w) {
  for (int yy = 0; yy < ny; yy++) {
    const uint8_t *row = src + (size_t)yy * in_nx * 3;
    uint8_t *drow = dst + (size_t)yy * out_nx * 3;
    for (int xx = 0; xx < out_nx; xx++) {
      const int xmin = bounds[xx * 2], xcnt = bounds[xx * 2 + 1];
      const int32_t *k = w + (size_t)xx * ksize;
      const uint8_t *p = row + (size_t)xmin * 3;
      int32_t s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;
      for (int x = 0; x < xcnt; x++, p += 3) {
        s0 += p[0] * k[x];
        s1 += p[1] * k[x];
        s2 += p[2] * k[x];
      }
      drow[xx * 3] = clip8(s0 >> PRECISION_BITS);
      drow[xx * 3 + 1] = clip8(s1 >> PRECISION_BITS);
      drow[xx * 3 + 2] = clip8(s2 >> PRECISION_BITS);
    }
  }
}

static nc_code vertical(const uint8_t *src, int nx, uint8_t *dst, int out_ny,
                        int ksize, const int *bounds, const int32_t *w,
                        nc_error *err) {
  const size_t n = (size_t)nx * 3;
  int32_t *acc = malloc(n * sizeof *acc);
  if (!acc) return nc_fail(err, NC_ERR_NOMEM, "image resize: out of memory");
  for (int yy = 0; yy < out_ny; yy++) {
    const int ymin = bounds[yy * 2], ycnt = bounds[yy * 2 + 1];
    const int32_t *k = w + (size_t)yy * ksize;
    for (size_t i = 0; i < n; i++)
      acc[i] = 1 << (PRECISION_BITS - 1);
    for (int y = 0; y < ycnt; y++) {
      const uint8_t *row = src + (size_t)(ymin + y) * n;
      for (size_t i = 0; i < n; i++)
        acc[i] += row[i] * k[y];
    }
    uint8_t *drow = dst + (size_t)yy * n;
    for (size_t i = 0; i < n; i++)
      drow[i] = clip8(acc[i] >> PRECISION_BITS);
  }
  free(acc);
  return NC_OK;
}

nc_code nc_image_resize(const uint8_t *src, int32_t sw, int32_t sh,
                        uint8_t *dst, int32_t dw, int32_t dh,
                        nc_resize_filter filter, nc_error *err) {
  if (sw == dw && sh == dh) {
    memcpy(dst, src, (size_t)3 * (size_t)sw * (size_t)sh);
    return NC_OK;
  }
  int *bh = NULL, *bv = NULL;
  int32_t *wh = NULL, *wv = NULL;
  int kh = 0, kv = 0;
  nc_code rc = NC_OK;
  uint8_t *tmp = NULL;
  if (sw != dw && !(kh = weights_of(filter, sw, dw, &bh, &wh)))
    rc = nc_fail(err, NC_ERR_NOMEM, "image resize: out of memory");
  if (rc == NC_OK && sh != dh && !(kv = weights_of(filter, sh, dh, &bv, &wv)))
    rc = nc_fail(err, NC_ERR_NOMEM, "image resize: out of memory");
  if (rc == NC_OK && sw != dw && sh != dh) {
    tmp = malloc((size_t)3 * (size_t)dw * (size_t)sh);
    if (!tmp) rc = nc_fail(err, NC_ERR_NOMEM, "image resize: out of memory");
    if (rc == NC_OK) {
      horizontal(src, sw, sh, tmp, dw, kh, bh, wh);
      rc = vertical(tmp, dw, dst, dh, kv, bv, wv, err);
    }
  } else if (rc == NC_OK && sw != dw) {
    horizontal(src, sw, sh, dst, dw, kh, bh, wh);
  } else if (rc == NC_OK) {
    rc = vertical(src, sw, dst, dh, kv, bv, wv, err);
  }
  free(tmp);
  free(bh);
  free(bv);
  free(wh);
  free(wv);
  return rc;
}

nc_code nc_image_fit(const uint8_t *src, int32_t sw, int32_t sh, uint8_t *dst,
                     int32_t dw, int32_t dh, nc_resize_filter filter,
                     nc_error *err) {
  if (sw == dw && sh == dh)
    return nc_image_resize(src, sw, sh, dst, dw, dh, filter, err);
  const float scale_w = (float)dw / (float)sw;
  const float scale_h = (float)dh / (float)sh;
  const float scale = scale_w < scale_h ? scale_w : scale_h;
  int32_t nw = (int32_t)ceilf((float)sw * scale);
  int32_t nh = (int32_t)ceilf((float)sh * scale);
  if (nw > dw) nw = dw;
  if (nh > dh) nh = dh;
  uint8_t *fit = malloc((size_t)3 * (size_t)nw * (size_t)nh);
  if (!fit) return nc_fail(err, NC_ERR_NOMEM, "image resize: out of memory");
  nc_code rc = nc_image_resize(src, sw, sh, fit, nw, nh, filter, err);
  if (rc == NC_OK) {
    memset(dst, 0, (size_t)3 * (size_t)dw * (size_t)dh);
    const int32_t ox = (dw - nw) / 2, oy = (dh - nh) / 2;
    for (int32_t y = 0; y < nh; y++)
      memcpy(dst + ((size_t)(y + oy) * dw + ox) * 3, fit + (size_t)y * nw * 3,
             (size_t)nw * 3);
  }
  free(fit);
  return rc;
}

nc_code nc_image_fit_square(const uint8_t *src, int32_t sw, int32_t sh,
                            uint8_t *dst, int32_t size, nc_resize_filter filter,
                            nc_error *err) {
  return nc_image_fit(src, sw, sh, dst, size, size, filter, err);
}

void nc_image_normalize(const uint8_t *src, int64_t n_pixels,
                        const float mean[3], const float std[3], float *dst) {
  for (int64_t i = 0; i < n_pixels * 3; i++) {
    const int c = (int)(i % 3);
    dst[i] = ((float)src[i] / 255.0f - mean[c]) / std[c];
  }
}
