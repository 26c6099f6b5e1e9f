#!/usr/bin/env python3
"""Images in, text out: nucleus against llama.cpp on the same vision pairs
(issue 46's speed row). For each pair, thread count and image size:

- encode: one image through the projector, best of --reps (nucleus:
  bench/vision_encode.c, nucleus_mmproj_encode after a warm-up; llama.cpp:
  llama-mtmd-cli's "mtmd batch encoding done in N ms", one process per
  rep, the image already preprocessed as mtmd does before it);
- TTFT: time to the first streamed token of a chat completion holding the
  image and a short question (encode + prefill), client side, nucleus
  serve against llama-server on the same port scheme, best of --reps;
- decode: tokens per second after the first, over --tokens tokens
  (ignore_eos), best of --reps.
Every timed request carries a fresh image (same size, other pixels), so no
prefix cache (nucleus keys images by content, llama-server by hash) skips
the encode; llama-server also gets cache_prompt false. One warm-up request
per server first. Both tools run their defaults otherwise (flash attention
auto in both).

Pairs (bench/make_arch_shaped.py, made here under --dir when missing; the
language model quantized to Q4_K_M by the peer's llama-quantize):
  gemma3vl  Gemma-3-4B-like: SigLIP at its widths (896 px, 4,096 patches,
            6 of 27 layers), 256 rows an image whatever its size
  qwen3vl   Qwen3-VL-2B-like: its tower at its widths (patches of 16, 6 of
            24 layers, 3 DeepStack taps), images at their own size: 448 x
            448 -> 784 patches (196 rows), 1024 x 768 -> 3,072 (768 rows)
The towers have fewer layers than the real ones (the encode time scales
with them; the ratio between the tools does not depend on the depth).

usage: bench/vision.py [--pairs gemma3vl,qwen3vl] [--threads 1,2]
                       [--sizes 448x448,1024x768] [--tokens 64] [--reps 3]
                       [--dir models/vision-bench] [--nucleus BIN]
                       [--peer-dir /opt/peer/llama.cpp]
Needs `make build/release/nucleus bench-vision` and the peer's
llama-server, llama-mtmd-cli and llama-quantize. Prints a markdown table.
"""
import argparse
import base64
import io
import json
import pathlib
import re
import signal
import subprocess
import sys
import time

import numpy as np
import requests
from PIL import Image

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_server import free_port, start  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUESTION = "Describe the image."


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()


def image(w, h, salt):
    """A PNG of w x h: smooth gradients plus noise, other pixels per salt."""
    rng = np.random.default_rng(salt)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)),
                     ((x + y) * 127 // max(w + h - 2, 1))], axis=-1)
    px = (base + rng.integers(0, 64, size=(h, w, 3))) % 256
    buf = io.BytesIO()
    Image.fromarray(px.astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def make_pair(shape, d, bin_dir):
    lm = d / f"{shape}.Q4_K_M.gguf"
    mm = d / f"{shape}-mmproj.gguf"
    if lm.exists() and mm.exists():
        return lm, mm
    d.mkdir(parents=True, exist_ok=True)
    f16 = d / f"{shape}.f16.gguf"
    print(f"making {lm.name} and {mm.name} ...", file=sys.stderr)
    subprocess.run([sys.executable, str(ROOT / "bench/make_arch_shaped.py"),
                    shape, str(f16), "--mmproj", str(mm)], check=True)
    subprocess.run([str(bin_dir / "llama-quantize"), str(f16), str(lm),
                    "Q4_K_M"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    f16.unlink()
    return lm, mm


def encode_nucleus(tool, lm, mm, png, threads, reps):
    r = subprocess.run([str(tool), str(lm), str(mm), str(png), str(threads),
                        str(reps)], check=True, capture_output=True, text=True)
    m = re.match(r"rows (\d+) ms ([\d.]+) ([\d.]+)", r.stdout)
    if not m:
        raise SystemExit(f"{tool}: {r.stdout} {r.stderr}")
    return float(m.group(2)), int(m.group(1))


def encode_llama(cli, lm, mm, png, threads, reps):
    best = None
    for _ in range(reps):
        r = subprocess.run([str(cli), "-m", str(lm), "--mmproj", str(mm),
                            "--image", str(png), "-p", "x", "-n", "1",
                            "--temp", "0", "-t", str(threads), "-c", "8192"],
                           capture_output=True, text=True)
        m = re.search(r"mtmd batch encoding done in (\d+) ms", r.stderr)
        if r.returncode != 0 or not m:
            raise SystemExit(f"{cli}: {r.stderr[-2000:]}")
        ms = float(m.group(1))
        best = ms if best is None else min(best, ms)
    return best


def chat(url, png, tokens, extra):
    """(seconds to the first token, decode tokens per second)."""
    uri = "data:image/png;base64," + base64.b64encode(png).decode()
    body = {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": uri}},
        {"type": "text", "text": QUESTION}]}],
        "max_tokens": tokens, "temperature": 0, "stream": True,
        "ignore_eos": True, **extra}
    t0 = time.perf_counter()
    first = last = None
    n = 0
    with requests.post(url + "/v1/chat/completions", json=body, stream=True,
                       timeout=3600) as r:
        if not r.ok:
            raise SystemExit(f"{url}: {r.status_code} {r.text[:300]}")
        for line in r.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            d = json.loads(line[6:])
            ch = d.get("choices") or []
            if ch and (ch[0].get("delta") or {}).get("content"):
                now = time.perf_counter()
                first = first or now
                last = now
                n += 1
    if first is None or n < 2:
        raise SystemExit(f"{url}: {n} tokens streamed")
    return first - t0, (n - 1) / (last - first)


def serve_rows(cmd, sizes, tokens, reps, extra, salt):
    """{(w, h): (best TTFT in ms, best decode tok/s)} of the server cmd
    (its port given as --port PORT)."""
    port = free_port()
    p, url = start([str(port) if c == "PORT" else c for c in cmd], port,
                   timeout=600)
    try:
        chat(url, image(64, 64, 999), 4, extra)  # warm-up
        out = {}
        for (w, h) in sizes:
            ttft, tps = [], []
            for r in range(reps):
                t, s = chat(url, image(w, h, salt + 10 * r), tokens, extra)
                ttft.append(t)
                tps.append(s)
            out[(w, h)] = (min(ttft) * 1e3, max(tps))
        return out
    finally:
        stop(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", default="gemma3vl,qwen3vl")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--sizes", default="448x448,1024x768")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir", default=str(ROOT / "models/vision-bench"))
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    ap.add_argument("--encoder",
                    default=str(ROOT / "build/release/bench/vision_encode"))
    ap.add_argument("--peer-dir", default="/opt/peer/llama.cpp")
    a = ap.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in a.sizes.split(",")]
    threads = [int(t) for t in a.threads.split(",")]
    for f in (a.nucleus, a.encoder):
        if not pathlib.Path(f).exists():
            raise SystemExit(f"{f} is missing: make build/release/nucleus "
                             "bench-vision")
    bin_dir = pathlib.Path(subprocess.run(
        [str(ROOT / "bench/build_peer.sh"), a.peer_dir], capture_output=True,
        text=True, check=True).stdout.strip().splitlines()[-1])
    cli = bin_dir / "llama-mtmd-cli"
    if not cli.exists():
        raise SystemExit(f"{cli} is missing (build the peer's mtmd tools)")
    d = pathlib.Path(a.dir)
    rows = []
    for shape in a.pairs.split(","):
        lm, mm = make_pair(shape, d, bin_dir)
        pngs = {}
        for (w, h) in sizes:
            pngs[(w, h)] = d / f"bench-{w}x{h}.png"
            pngs[(w, h)].write_bytes(image(w, h, 1))
        for t in threads:
            enc_n, enc_l, n_rows = {}, {}, {}
            for s in sizes:
                enc_n[s], n_rows[s] = encode_nucleus(a.encoder, lm, mm,
                                                     pngs[s], t, a.reps)
                enc_l[s] = encode_llama(cli, lm, mm, pngs[s], t, a.reps)
            # an image's rows go through one forward in both: a batch
            # that holds the largest image
            batch = str(max(4096, 2 * max(n_rows.values())))
            ours = serve_rows([a.nucleus, "serve", "-m", str(lm), "--mmproj",
                               str(mm), "-t", str(t), "--batch-tokens", batch,
                               "--port", "PORT"],
                              sizes, a.tokens, a.reps, {}, 100 + t)
            peer = serve_rows([str(bin_dir / "llama-server"), "-m", str(lm),
                               "--mmproj", str(mm), "-t", str(t), "-tb",
                               str(t), "-c", "8192", "-b", batch, "-ub", batch,
                               "--port", "PORT"],
                              sizes, a.tokens, a.reps,
                              {"cache_prompt": False}, 100 + t)
            for s in sizes:
                rows.append((shape, t, s, n_rows[s], enc_n[s], enc_l[s],
                             ours[s][0], peer[s][0], ours[s][1], peer[s][1]))
                print(rows[-1], file=sys.stderr)
    print("| pair | threads | image | rows | encode ms nucleus / llama.cpp "
          "(x) | TTFT ms nucleus / llama.cpp (x) | decode tok/s nucleus / "
          "llama.cpp (x) |")
    print("|---|---|---|---|---|---|---|")
    for (shape, t, (w, h), n, en, el, tn, tl, dn, dl) in rows:
        print(f"| {shape} | {t} | {w}x{h} | {n} | {en:.0f} / {el:.0f} "
              f"({el / en:.2f}x) | {tn:.0f} / {tl:.0f} ({tl / tn:.2f}x) | "
              f"{dn:.1f} / {dl:.1f} ({dn / dl:.2f}x) |")


if __name__ == "__main__":
    main()
