#!/usr/bin/env python3
"""Aggregate generation throughput with many concurrent requests: nucleus
(continuous batching) against llama.cpp's llama-batched-bench, same model,
same run. Each request has a 128-token prompt and generates 128 tokens; the
figure is generated tokens per second of wall time (prefill included), for
1, 4, 16 and 64 concurrent requests, with peak RSS of nucleus.

usage: bench/batched.py [--model GGUF] [--threads 2] [--concurrency 1,4,16,64]
                        [--no-repack]
--no-repack runs nucleus in the float order of llama.cpp --no-repack (not
its default amx kernels on AMX CPUs); llama.cpp keeps its defaults.
"""
import argparse
import pathlib
import re
import resource
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def peer(bin_dir, model, threads, npp, ntg, npl):
    out = subprocess.run(
        [str(bin_dir / "llama-batched-bench"), "-m", model, "-t",
         str(threads), "-npp", str(npp), "-ntg", str(ntg), "-npl",
         ",".join(map(str, npl)), "-c", str(max(npl) * (npp + ntg) + 64),
         "-b", "2048", "-ub", "512"],
        capture_output=True, text=True, check=True).stdout
    res = {}
    # | PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 10 and cells[2].isdigit():
            b, t_total = int(cells[2]), float(cells[8])
            res[b] = b * ntg / t_total
    return res


def ours(nucleus, model, threads, npp, ntg, npl, extra):
    cmd = ["/usr/bin/time", "-f", "maxrss_kb %M", nucleus, "bench", "-m",
           model, "-t", str(threads), "-p", "0", "-g", "0", "--concurrency",
           ",".join(map(str, npl)), "--batch-prompt", str(npp), "--batch-gen",
           str(ntg), "--kv-tokens", str(max(npl) * (npp + ntg) + 64),
           "--parallel", str(max(max(npl), 1)), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    res = {}
    for line in p.stdout.splitlines():
        m = re.match(r"batched(\d+) ([\d.]+)", line)
        if m:
            res[int(m.group(1))] = float(m.group(2))
    rss = re.search(r"maxrss_kb (\d+)", p.stderr)
    kernels = re.search(r"^kernels: (\S+)$", p.stdout, re.M)
    return (res, int(rss.group(1)) // 1024 if rss else None,
            kernels.group(1) if kernels else "?")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model",
                    default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--concurrency", default="1,4,16,64")
    ap.add_argument("--npp", type=int, default=128)
    ap.add_argument("--ntg", type=int, default=128)
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    ap.add_argument("--peer-dir", default="/opt/peer/llama.cpp")
    ap.add_argument("--no-repack", action="store_true",
                    help="nucleus in llama.cpp --no-repack's float order")
    a = ap.parse_args()
    npl = [int(x) for x in a.concurrency.split(",")]
    subprocess.run(["make", "-C", str(ROOT), "-s"], check=True)
    bin_dir = pathlib.Path(subprocess.run(
        [str(ROOT / "bench/build_peer.sh"), a.peer_dir], capture_output=True,
        text=True, check=True).stdout.strip().splitlines()[-1])
    p = peer(bin_dir, a.model, a.threads, a.npp, a.ntg, npl)
    n, rss, kernels = ours(a.nucleus, a.model, a.threads, a.npp, a.ntg, npl,
                           ["--no-repack"] if a.no_repack else [])
    print(f"{a.npp}-token prompts, {a.ntg} generated each, {a.threads} "
          f"threads; generated tokens per second of wall time; nucleus "
          f"kernels {kernels}")
    print("| concurrent | llama.cpp tok/s | nucleus tok/s | ratio |")
    print("|---:|---:|---:|---:|")
    for b in npl:
        print(f"| {b} | {p.get(b, float('nan')):.1f} | "
              f"{n.get(b, float('nan')):.1f} | "
              f"{n.get(b, 0) / p[b] if p.get(b) else float('nan'):.2f} |")
    print(f"nucleus peak RSS over the run: {rss} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
