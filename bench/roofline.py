#!/usr/bin/env python3
"""Decode against the memory roofline: bytes read per generated token over
time per token, as a fraction of this machine's streaming read bandwidth.

Bandwidth: build/release/bench/stream (make bench-stream), a STREAM-like
read of a 512 MiB buffer at each thread count, best of 10 passes.
Decode: `nucleus bench -p 0 -g G -d D -t T` (flash attention on, the
engine's defaults) per model, thread count and depth.
Bytes per token, from the GGUF file: every weight tensor once, but the
token embeddings one row (unless the output shares them), and the experts
of a MoE only n_expert_used of n_expert; plus the KV cache the token reads:
per layer K and V of every position it sees (F16; a sliding-window layer at
most its window: Gemma 3's pattern, 5 local layers of 6, Gemma 2's, every
other), at the test's mean depth D + G / 2.
Where the rest goes: bench/profile.py (perf, per function).

usage: bench/roofline.py [--models Q4_1,gemma3,MOE_Q4_K_M] [--threads 1,2]
                         [--depths 0,2048,4096,8192] [--gen 64]
                         [--row-orders split]
  --models as bench/speed.py (names or .gguf paths); depths past a model's
  context are skipped. A busy machine shares its memory bus and cores:
  measure on a quiet one.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys

import gguf

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import speed  # noqa: E402  (model names, nucleus bench runs)

STREAM = ROOT / "build/release/bench/stream"
NUCLEUS = ROOT / "build/release/nucleus"


def field(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    v = f.parts[f.data[0]]
    return v.tolist()[0] if hasattr(v, "tolist") else v


def model_bytes(path):
    """(weight bytes read per token, KV bytes per position per layer list
    function) from the GGUF header."""
    r = gguf.GGUFReader(str(path))
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    n_layer = field(r, f"{arch}.block_count")
    n_head = field(r, f"{arch}.attention.head_count")
    n_kv = field(r, f"{arch}.attention.head_count_kv", n_head)
    n_embd = field(r, f"{arch}.embedding_length")
    hk = field(r, f"{arch}.attention.key_length", n_embd // n_head)
    hv = field(r, f"{arch}.attention.value_length", hk)
    n_exp = field(r, f"{arch}.expert_count", 0)
    n_used = field(r, f"{arch}.expert_used_count", 0)
    window = field(r, f"{arch}.attention.sliding_window", 0)
    names = {t.name for t in r.tensors}
    tied = "output.weight" not in names
    weights = 0
    for t in r.tensors:
        b = int(t.n_bytes)
        if t.name == "token_embd.weight" and not tied:
            b = b // int(t.shape[-1])  # one row
        elif "_exps" in t.name and n_exp:
            b = b * n_used // n_exp
        weights += b
    # which layers slide: llama.cpp's patterns for the archs that have one
    period = {"gemma3": 6, "gemma2": 2}.get(arch, 0) if window else 0
    local = [period and (il % period) != period - 1 for il in range(n_layer)]
    per_pos = n_kv * (hk + hv) * 2  # F16 K and V of one layer

    def kv_bytes(depth):
        return sum(per_pos * (min(depth, window) if loc else depth)
                   for loc in local)
    return weights, kv_bytes, arch


def bandwidth(threads):
    if not STREAM.exists():
        subprocess.run(["make", "-C", str(ROOT), "bench-stream"], check=True,
                       stdout=subprocess.DEVNULL)
    out = subprocess.run([str(STREAM), "512", "10",
                          ",".join(str(t) for t in threads)],
                         check=True, capture_output=True, text=True).stdout
    return {int(m.group(1)): float(m.group(2))
            for m in re.finditer(r"^\| (\d+) \| ([\d.]+) \|$", out, re.M)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", default="Q4_1,gemma3,MOE_Q4_K_M")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--depths", default="0,2048,4096,8192")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--peer-dir", default="/opt/peer/llama.cpp",
                    help="for the MOE_* models (bench/speed.py makes them)")
    ap.add_argument("--row-orders", choices=("reuse", "split"), default=None,
                    help="nucleus's --row-orders (split: flash attention's "
                    "keys over the threads)")
    a = ap.parse_args()
    threads = [int(x) for x in a.threads.split(",")]
    depths = [int(x) for x in a.depths.split(",")]
    bw = bandwidth(threads)
    models = speed.resolve_models(a.models, a.peer_dir)
    rows = []
    for label, path in models:
        weights, kv_bytes, arch = model_bytes(path)
        r = gguf.GGUFReader(str(path))
        n_ctx = field(r, f"{arch}.context_length", 0)
        for t in threads:
            for d in depths:
                if n_ctx and d + a.gen + 1 > n_ctx:
                    continue
                extra = ["--row-orders", a.row_orders] if a.row_orders \
                    else []
                res = speed.nucleus_bench(NUCLEUS, path, t, 0, a.gen, extra,
                                          depth=d)
                tok_s = res["tg"]
                per_tok = weights + kv_bytes(d + a.gen // 2)
                gbs = per_tok * tok_s / 1e9
                rows.append((label, t, d, tok_s, weights / 1e6,
                             kv_bytes(d + a.gen // 2) / 1e6, gbs, bw[t],
                             gbs / bw[t]))
    print(f"\nread bandwidth (bench/stream, 512 MiB, best of 10): " +
          ", ".join(f"{t} thread{'s' * (t > 1)} {bw[t]:.2f} GB/s"
                    for t in threads) +
          f"; load average {os.getloadavg()[0]:.1f}\n")
    print(f"| model | threads | depth | tg{a.gen} tok/s | weights MB/token "
          "| KV MB/token | GB/s read | stream GB/s | roofline |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {r[4]:.1f} | "
              f"{r[5]:.1f} | {r[6]:.2f} | {r[7]:.2f} | {100 * r[8]:.0f}% |")


if __name__ == "__main__":
    try:
        main()
    except speed.BenchError as e:
        sys.exit(f"roofline: {e}")
