#!/usr/bin/env python3
"""Writes the image decoder's seeds (fuzz/corpus/image/): small pictures in
every form nucleus_image_decode takes or refuses, each named for what
tests/unit/test_image.c expects of it. Every picture is PATTERN's W x H
pixels (or its gray / palette form), so the test can check the decoded
bytes. Pillow writes most; the few forms it cannot (16-bit RGB, interlaced
PNG, headers that claim a huge picture) are written here by hand.

Usage: scripts/gen_image_seeds.py [OUT_DIR]"""
import io
import pathlib
import struct
import sys
import zlib

from PIL import Image

W, H = 16, 12
ROOT = pathlib.Path(__file__).resolve().parents[1]


def pattern(x, y):
    """Smooth (so lossy codecs keep it close) and different in each channel:
    tests/unit/test_image.c computes the same."""
    return (x * 255 // (W - 1), y * 255 // (H - 1), (x + y) * 255 // (W + H - 2))


def gray(x, y):
    return (x * 16 + y * 5) % 256


def rgb_image():
    im = Image.new("RGB", (W, H))
    im.putdata([pattern(x, y) for y in range(H) for x in range(W)])
    return im


def rgba_image():
    im = Image.new("RGBA", (W, H))
    im.putdata([pattern(x, y) + ((x * 17 + y) % 256,)
                for y in range(H) for x in range(W)])
    return im


def gray_image():
    im = Image.new("L", (W, H))
    im.putdata([gray(x, y) for y in range(H) for x in range(W)])
    return im


def palette_image():
    """PATTERN exactly: a palette of its distinct colours (fewer than 256)."""
    pixels = [pattern(x, y) for y in range(H) for x in range(W)]
    colors = sorted(set(pixels))
    im = Image.new("P", (W, H))
    im.putpalette([c for rgb in colors for c in rgb])
    im.putdata([colors.index(p) for p in pixels])
    return im


def save(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def chunk(kind, data):
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png(width, height, depth, color, raw, interlace=0):
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, interlace)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def rgb16_png():
    """16-bit RGB: each channel's high byte the pattern, the low byte 0x5a
    (the decoder keeps the high byte, as stb_image does)."""
    raw = b""
    for y in range(H):
        raw += b"\0" + b"".join(struct.pack(">HHH", *(c * 256 + 0x5a
                                                       for c in pattern(x, y)))
                                for x in range(W))
    return png(W, H, 16, 2, raw)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
         (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def interlaced_png():
    raw = b""
    for x0, y0, dx, dy in ADAM7:
        xs = range(x0, W, dx)
        for y in range(y0, H, dy):
            if xs:
                raw += b"\0" + bytes(c for x in xs for c in pattern(x, y))
    return png(W, H, 8, 2, raw, interlace=1)


def claimed_png(width, height):
    """A valid-looking PNG whose header claims width x height: refused
    before its (tiny) data is read."""
    return png(width, height, 8, 2, b"\0" * 4)


def jpeg_with_size(data, width, height):
    """The JPEG with its frame header (SOF0/SOF2) claiming another size."""
    b = bytearray(data)
    i = 2
    while i + 4 < len(b):
        marker, length = b[i + 1], struct.unpack(">H", b[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC2):
            b[i + 5:i + 9] = struct.pack(">HH", height, width)
            return bytes(b)
        i += 2 + length
    raise SystemExit("no frame header")


def webp_lossless_with_size(width, height):
    """A VP8L header claiming width x height (14 bits each), no picture."""
    bits = (width - 1) | ((height - 1) << 14)
    vp8l = b"\x2f" + struct.pack("<I", bits) + b"\0" * 8
    body = b"WEBP" + b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l
    return b"RIFF" + struct.pack("<I", len(body)) + body


def seeds():
    rgb, rgba, g = rgb_image(), rgba_image(), gray_image()
    pal = palette_image()
    out = {
        "ok_rgb.png": save(rgb, "PNG"),
        "ok_rgba.png": save(rgba, "PNG"),
        "ok_gray.png": save(g, "PNG"),
        "ok_gray_alpha.png": save(g.convert("LA"), "PNG"),
        "ok_gray1.png": save(g.point(lambda v: 255 if v >= 128 else 0)
                             .convert("1"), "PNG"),
        "ok_gray16.png": save(Image.frombytes(
            "I;16", (W, H), b"".join(struct.pack("<H", gray(x, y) * 256 + 7)
                                     for y in range(H) for x in range(W))),
            "PNG"),
        "ok_palette.png": save(pal, "PNG"),
        "ok_palette_trns.png": save(pal, "PNG", transparency=3),
        "ok_rgb16.png": rgb16_png(),
        "ok_interlaced.png": interlaced_png(),
        "ok_rgb.jpg": save(rgb, "JPEG", quality=95, subsampling=0),
        "ok_rgb_420.jpg": save(rgb, "JPEG", quality=90),
        "ok_progressive.jpg": save(rgb, "JPEG", quality=95, subsampling=0,
                                   progressive=True),
        "ok_gray.jpg": save(g, "JPEG", quality=95),
        "ok_lossless.webp": save(rgb, "WEBP", lossless=True),
        "ok_alpha.webp": save(rgba, "WEBP", lossless=True, exact=True),
        "ok_lossy.webp": save(rgb, "WEBP", quality=95),
        "unsupported_cmyk.jpg": save(rgb.convert("CMYK"), "JPEG", quality=90),
        "unsupported_animated.png": save(rgb, "PNG", save_all=True,
                                         append_images=[g.convert("RGB")]),
        "unsupported_animated.webp": save(rgb, "WEBP", save_all=True,
                                          append_images=[g.convert("RGB")],
                                          lossless=True),
        "unsupported.gif": save(rgb, "GIF"),
        "unsupported.bmp": save(rgb, "BMP"),
        "unsupported.tiff": save(rgb, "TIFF"),
        "limit_side.png": claimed_png(100000, 2),
        "limit_pixels.png": claimed_png(8000, 8000),
        "limit_side.jpg": jpeg_with_size(save(rgb, "JPEG"), 60000, 60000),
        "limit_side.webp": webp_lossless_with_size(16000, 16000),
    }
    for name in ("ok_rgb.png", "ok_rgb.jpg", "ok_progressive.jpg",
                 "ok_lossy.webp", "ok_lossless.webp"):
        data = out[name]
        stem, ext = name[3:].rsplit(".", 1)
        out[f"format_truncated_{stem}.{ext}"] = data[:len(data) * 2 // 3]
    flipped = bytearray(out["ok_rgb.png"])
    flipped[len(flipped) // 2] ^= 0xFF  # inside IDAT: a CRC or zlib error
    out["format_corrupt.png"] = bytes(flipped)
    return out


def main():
    out_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else \
        ROOT / "fuzz" / "corpus" / "image"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in sorted(seeds().items()):
        (out_dir / name).write_bytes(data)
    print(f"{len(seeds())} seeds in {out_dir}")


if __name__ == "__main__":
    main()
