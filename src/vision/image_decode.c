/* Picks the decoder from the file's signature; names the formats that are
 * not taken. */
#include "vision/image_decode.h"

#include <string.h>

#include "vision/image_formats.h"

static int starts(const uint8_t *b, size_t n, size_t at, const char *sig,
                  size_t len) {
  return n >= at + len && !memcmp(b + at, sig, len);
}

/* Formats that stb_image or a browser knows and we do not take. */
static const char *refused_format(const uint8_t *b, size_t n) {
  if (starts(b, n, 0, "GIF87a", 6) || starts(b, n, 0, "GIF89a", 6))
    return "GIF";
  if (starts(b, n, 0, "BM", 2)) return "BMP";
  if (starts(b, n, 0, "II*\0", 4) || starts(b, n, 0, "MM\0*", 4)) return "TIFF";
  if (starts(b, n, 4, "ftypavif", 8) || starts(b, n, 4, "ftypavis", 8))
    return "AVIF";
  if (starts(b, n, 4, "ftyphei", 7) || starts(b, n, 4, "ftypmif1", 8) ||
      starts(b, n, 4, "ftyphev", 7))
    return "HEIF";
  if (starts(b, n, 0, "\0\0\1\0", 4)) return "ICO";
  if (starts(b, n, 0, "8BPS", 4)) return "PSD";
  if (starts(b, n, 0, "\xff\x0a", 2) ||
      starts(b, n, 0, "\0\0\0\x0cJXL \r\n\x87\n", 12))
    return "JPEG XL";
  if (starts(b, n, 0, "\0\0\0\x0cjP  \r\n\x87\n", 12)) return "JPEG 2000";
  if (starts(b, n, 0, "#?RADIANCE", 10) || starts(b, n, 0, "#?RGBE", 6))
    return "Radiance HDR";
  if (starts(b, n, 0, "<svg", 4) || starts(b, n, 0, "<?xml", 5)) return "SVG";
  if (n >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7') return "PNM";
  return NULL;
}

nc_code nc_image_decode(const uint8_t *bytes, size_t n,
                        const nucleus_image_limits *limits,
                        struct nucleus_image **out, nc_error *err) {
  *out = NULL;
  nc_code rc = nc_image_limits_check(limits, err);
  if (rc != NC_OK) return rc;
  if (!bytes || n == 0)
    return nc_fail(err, NC_ERR_FORMAT, "an empty image (0 bytes)");
  if (starts(bytes, n, 0, "\x89PNG\r\n\x1a\n", 8))
    return nc_image_decode_png(bytes, n, limits, out, err);
  if (starts(bytes, n, 0, "\xff\xd8\xff", 3))
    return nc_image_decode_jpeg(bytes, n, limits, out, err);
  if (starts(bytes, n, 0, "RIFF", 4) && starts(bytes, n, 8, "WEBP", 4))
    return nc_image_decode_webp(bytes, n, limits, out, err);
  const char *name = refused_format(bytes, n);
  if (name)
    return nc_fail(err, NC_ERR_UNSUPPORTED,
                   "a %s image: the formats taken are PNG, JPEG and WebP",
                   name);
  unsigned char first[4] = {0};
  memcpy(first, bytes, n < 4 ? n : 4);
  return nc_fail(err, NC_ERR_UNSUPPORTED,
                 "not a PNG, JPEG or WebP image (its first bytes are %02x %02x "
                 "%02x %02x)",
                 first[0], first[1], first[2], first[3]);
}
