#!/usr/bin/env python3
"""Goldens of the Gemma 3 vision path from llama.cpp's multimodal CLI
(llama-mtmd-cli, the peer build), on the random pair of `make arch-models`
(build/arch/gemma3.gguf + gemma3-mmproj.gguf, seed 17) and three synthetic
images (tests/data/vision/README.md):

- tests/data/vision/gemma3_emb_<name>.bin: the image's embedding rows as
  llama.cpp's encoder gives them (MTMD_DEBUG_EMBEDDINGS=PATH: int32
  n_tokens, int32 n_embd, then the floats), encoder attention without flash
  (-fa off, F32 throughout); gemma3_emb_<name>_fa.bin: the same with flash
  attention (-fa on: K and V cast to F16, ggml's flash path);
- tests/data/vision/gemma3_greedy.txt: llama-mtmd-cli's greedy text (16
  tokens, -fa off) for the prompt "Describe the two images." with the
  images wide then tall (one user turn of the file's chat template, a
  marker per image before the text), without the newline the CLI prints
  before it and the two after.

- with --qwen3vl instead: tests/data/vision/qwen3vl_emb_<name>.bin, the
  rows of three images (QWEN_IMAGES) through the random Qwen3-VL pair
  (build/arch/qwen3vl.gguf + qwen3vl-mmproj.gguf, seed 17): each row the
  merger's 256 values, then the two DeepStack taps' (_fa.bin: -fa on);
  and
  tests/data/vision/qwen3vl_greedy.txt, llama-mtmd-cli's greedy text for
  the images square then wide, as gemma3_greedy.txt.

- with --qwen2vl: tests/data/vision/{qwen2vl,qwen25vl}_emb_<name>.bin, the
  rows of the images of QWEN2_IMAGES through the random Qwen2-VL and
  Qwen2.5-VL projectors (build/arch/qwen2vl-mmproj.gguf,
  qwen25vl-mmproj.gguf, seed 17), both beside build/arch/qwen2vl.gguf
  (_fa.bin: -fa on); and tests/data/vision/qwen25vl_greedy.txt,
  llama-mtmd-cli's greedy text through the Qwen2.5-VL pair for the images
  wide then tall.

- with --gemma4v: tests/data/vision/gemma4v_emb_<name>.bin, the rows of
  the images of GEMMA4V_IMAGES through the random Gemma 4 pair
  (build/arch/gemma4.gguf + gemma4v-mmproj.gguf, seed 17; _fa.bin: -fa
  on), and tests/data/vision/gemma4v_greedy.txt, llama-mtmd-cli's greedy
  text for the images wide then tall (its default rendering: the legacy
  chatml template, no system message), gemma4v_greedy_jinja.txt the same
  with --jinja (the file's template, as `nucleus run` renders it).

Usage: scripts/gen_vision_goldens.py [--llama-bin DIR] [--qwen3vl | --qwen2vl
                                      | --gemma4v]
The images are a pure function of (width, height) (pixel() below; the unit
test computes the same), written to PNG (lossless) for llama.cpp.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "vision")
# name: (width, height): wider than tall, taller than wide (both
# letterboxed), and exactly the encoder's size (no resize)
IMAGES = {"wide": (80, 60), "tall": (45, 100), "square": (64, 64)}


def pixels(w, h):
    """RGB8 [h, w, 3]: ((x * 37 + y * 91 + c * 53 + (x * y) % 17) * 7) & 255
    smoothed by a diagonal gradient, so resizing averages differing values."""
    y, x, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(3), indexing="ij")
    v = (x * 37 + y * 91 + c * 53 + (x * y) % 17) * 7 + (x + 2 * y) * 3
    return (v & 255).astype(np.uint8)


# Qwen3-VL (build/arch/qwen3vl.gguf + qwen3vl-mmproj.gguf): its own size
# (8 x 8 patches: the learned positions as they are), a grid other than
# the positions' (10 x 6: their bilinear resize) and one the smart resize
# changes (100 x 70 -> 96 x 64: Pillow's bicubic filter)
QWEN_IMAGES = {"square": (64, 64), "wide": (80, 48), "odd": (100, 70)}


def qwen3vl(cli, tmp):
    lm = os.path.join(ROOT, "build", "arch", "qwen3vl.gguf")
    mm = os.path.join(ROOT, "build", "arch", "qwen3vl-mmproj.gguf")
    for f in (lm, mm):
        if not os.path.exists(f):
            raise SystemExit(f"{f} is missing: make arch-models")
    for name, (w, h) in QWEN_IMAGES.items():
        png = os.path.join(tmp, "q" + name + ".png")
        Image.fromarray(pixels(w, h)).save(png)
        for fa, suffix in (("off", ""), ("on", "_fa")):
            dst = os.path.join(OUT, f"qwen3vl_emb_{name}{suffix}.bin")
            env = dict(os.environ, MTMD_DEBUG_EMBEDDINGS=dst)
            subprocess.run([cli, "-m", lm, "--mmproj", mm, "--image", png,
                            "-p", "x", "-n", "1", "--temp", "0", "-t", "1",
                            "-fa", fa], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(dst, os.path.getsize(dst))
    pngs = [os.path.join(tmp, "q" + n + ".png") for n in ("square", "wide")]
    out = subprocess.run([cli, "-m", lm, "--mmproj", mm, "--image", pngs[0],
                          "--image", pngs[1], "-p", "Describe the two images.",
                          "-n", "16", "--temp", "0", "-t", "1", "-fa", "off"],
                         check=True, capture_output=True).stdout
    assert out.startswith(b"\n") and out.endswith(b"\n\n"), out
    dst = os.path.join(OUT, "qwen3vl_greedy.txt")
    with open(dst, "wb") as f:
        f.write(out[1:-2])
    print(dst, out[1:-2])


# Qwen2-VL / Qwen2.5-VL (windows of 7 x 7 blocks of 2 x 2 patches of 8):
# one window (64 x 64: 4 x 4 blocks), windows split across (144 x 96: 9 x 6
# blocks, windows 7 and 2 wide) and down (100 x 130 -> 96 x 128 by the
# bicubic smart resize: 6 x 8 blocks), and a strip under 64 patches (128
# x 16: 8 x 1 blocks, 32 patches: ggml's one-row flash path, windows of 7
# and 1 blocks)
QWEN2_IMAGES = {"square": (64, 64), "wide": (144, 96), "tall": (100, 130),
                "strip": (128, 16)}


def qwen2vl(cli, tmp):
    lm = os.path.join(ROOT, "build", "arch", "qwen2vl.gguf")
    mms = {k: os.path.join(ROOT, "build", "arch", k + "-mmproj.gguf")
           for k in ("qwen2vl", "qwen25vl")}
    for f in [lm] + list(mms.values()):
        if not os.path.exists(f):
            raise SystemExit(f"{f} is missing: make arch-models")
    for name, (w, h) in QWEN2_IMAGES.items():
        png = os.path.join(tmp, "q2" + name + ".png")
        Image.fromarray(pixels(w, h)).save(png)
        for kind, mm in mms.items():
            for fa, suffix in (("off", ""), ("on", "_fa")):
                dst = os.path.join(OUT, f"{kind}_emb_{name}{suffix}.bin")
                env = dict(os.environ, MTMD_DEBUG_EMBEDDINGS=dst)
                subprocess.run([cli, "-m", lm, "--mmproj", mm, "--image", png,
                                "-p", "x", "-n", "1", "--temp", "0", "-t", "1",
                                "-fa", fa], env=env, check=True,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                print(dst, os.path.getsize(dst))
    pngs = [os.path.join(tmp, "q2" + n + ".png") for n in ("wide", "tall")]
    out = subprocess.run([cli, "-m", lm, "--mmproj", mms["qwen25vl"],
                          "--image", pngs[0], "--image", pngs[1],
                          "-p", "Describe the two images.",
                          "-n", "16", "--temp", "0", "-t", "1", "-fa", "off"],
                         check=True, capture_output=True).stdout
    assert out.startswith(b"\n") and out.endswith(b"\n\n"), out
    dst = os.path.join(OUT, "qwen25vl_greedy.txt")
    with open(dst, "wb") as f:
        f.write(out[1:-2])
    print(dst, out[1:-2])


# Gemma 4 (patches of 4, 3 x 3 pooling: sides multiples of 12, 70 .. 1120
# rows): its own size (108 x 108: 9 x 9 rows, no resize), wide (200 x 90
# -> 204 x 96 by the bicubic fit, letterboxed: 17 x 8), tall (70 x 150 ->
# 72 x 156: 6 x 13) and small (40 x 30, scaled up to the 70 rows' minimum:
# 120 x 96, 10 x 8)
GEMMA4V_IMAGES = {"square": (108, 108), "wide": (200, 90), "tall": (70, 150),
                  "small": (40, 30)}


def gemma4v(cli, tmp):
    lm = os.path.join(ROOT, "build", "arch", "gemma4.gguf")
    mm = os.path.join(ROOT, "build", "arch", "gemma4v-mmproj.gguf")
    for f in (lm, mm):
        if not os.path.exists(f):
            raise SystemExit(f"{f} is missing: make arch-models")
    for name, (w, h) in GEMMA4V_IMAGES.items():
        png = os.path.join(tmp, "g4" + name + ".png")
        Image.fromarray(pixels(w, h)).save(png)
        for fa, suffix in (("off", ""), ("on", "_fa")):
            dst = os.path.join(OUT, f"gemma4v_emb_{name}{suffix}.bin")
            env = dict(os.environ, MTMD_DEBUG_EMBEDDINGS=dst)
            subprocess.run([cli, "-m", lm, "--mmproj", mm, "--image", png,
                            "-p", "x", "-n", "1", "--temp", "0", "-t", "1",
                            "-fa", fa], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(dst, os.path.getsize(dst))
    pngs = [os.path.join(tmp, "g4" + n + ".png") for n in ("wide", "tall")]
    for extra, suffix in (([], ""), (["--jinja"], "_jinja")):
        out = subprocess.run([cli, "-m", lm, "--mmproj", mm, "--image",
                              pngs[0], "--image", pngs[1], "-p",
                              "Describe the two images.", "-n", "16", "--temp",
                              "0", "-t", "1", "-fa", "off", *extra],
                             check=True, capture_output=True).stdout
        assert out.startswith(b"\n") and out.endswith(b"\n\n"), out
        dst = os.path.join(OUT, f"gemma4v_greedy{suffix}.txt")
        with open(dst, "wb") as f:
            f.write(out[1:-2])
        print(dst, out[1:-2])


def main(argv):
    bindir = "/opt/peer/llama.cpp/build/bin"
    if "--llama-bin" in argv:
        bindir = argv[argv.index("--llama-bin") + 1]
    cli = os.path.join(bindir, "llama-mtmd-cli")
    if "--qwen2vl" in argv:
        os.makedirs(OUT, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            qwen2vl(cli, tmp)
        return
    if "--gemma4v" in argv:
        os.makedirs(OUT, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            gemma4v(cli, tmp)
        return
    if "--qwen3vl" in argv:
        os.makedirs(OUT, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            qwen3vl(cli, tmp)
        return
    lm = os.path.join(ROOT, "build", "arch", "gemma3.gguf")
    mm = os.path.join(ROOT, "build", "arch", "gemma3-mmproj.gguf")
    for f in (lm, mm):
        if not os.path.exists(f):
            raise SystemExit(f"{f} is missing: make arch-models")
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (w, h) in IMAGES.items():
            png = os.path.join(tmp, name + ".png")
            Image.fromarray(pixels(w, h)).save(png)
            for fa, suffix in (("off", ""), ("on", "_fa")):
                dst = os.path.join(OUT, f"gemma3_emb_{name}{suffix}.bin")
                env = dict(os.environ, MTMD_DEBUG_EMBEDDINGS=dst)
                subprocess.run([cli, "-m", lm, "--mmproj", mm, "--image", png,
                                "-p", "x", "-n", "1", "--temp", "0", "-t", "1",
                                "-fa", fa], env=env, check=True,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                print(dst, os.path.getsize(dst))
        pngs = [os.path.join(tmp, n + ".png") for n in ("wide", "tall")]
        out = subprocess.run([cli, "-m", lm, "--mmproj", mm, "--image", pngs[0],
                              "--image", pngs[1], "-p", "Describe the two images.",
                              "-n", "16", "--temp", "0", "-t", "1", "-fa", "off"],
                             check=True, capture_output=True).stdout
        assert out.startswith(b"\n") and out.endswith(b"\n\n"), out
        dst = os.path.join(OUT, "gemma3_greedy.txt")
        with open(dst, "wb") as f:
            f.write(out[1:-2])
        print(dst, out[1:-2])


if __name__ == "__main__":
    main(sys.argv[1:])
