#!/usr/bin/env python3
"""Prefill and decode speed of nucleus against llama.cpp, in one run.

Builds the peer (bench/build_peer.sh: llama.cpp from the PyPI sdist of
llama-cpp-python, clang, native, with its AMX path), then for each thread
count runs llama-bench and `nucleus bench` interleaved, several rounds, and
prints one table of medians: prefill tok/s for a 512-token prompt, decode
tok/s for 128 tokens, and the ratio nucleus / llama.cpp.

usage: bench/speed.py [--model GGUF] [--threads 1,2] [--rounds 5]
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def cpu_name():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def peer_bench(bin_dir, model, threads, pp, tg, reps):
    out = subprocess.run(
        [str(bin_dir / "llama-bench"), "-m", model, "-t", str(threads), "-p",
         str(pp), "-n", str(tg), "-r", str(reps), "-o", "json"],
        capture_output=True, text=True, check=True).stdout
    res = {}
    for row in json.loads(out):
        key = "pp" if row["n_prompt"] > 0 else "tg"
        res[key] = row["avg_ts"]
    return res


def nucleus_bench(nucleus, model, threads, pp, tg, reps):
    out = subprocess.run(
        [nucleus, "bench", "-m", model, "-t", str(threads), "-p", str(pp),
         "-g", str(tg), "-r", str(reps)],
        capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        name, value = line.split()[:2]
        res["pp" if name.startswith("pp") else "tg"] = float(value)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model",
                    default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    ap.add_argument("--peer-dir", default="/opt/peer/llama.cpp")
    a = ap.parse_args()

    subprocess.run(["make", "-C", str(ROOT), "-s"], check=True)
    bin_dir = pathlib.Path(subprocess.run(
        [str(ROOT / "bench/build_peer.sh"), a.peer_dir], capture_output=True,
        text=True, check=True).stdout.strip().splitlines()[-1])

    rows = []
    for t in [int(x) for x in a.threads.split(",")]:
        samples = {("peer", "pp"): [], ("peer", "tg"): [],
                   ("nucleus", "pp"): [], ("nucleus", "tg"): []}
        for _ in range(a.rounds):  # interleave the two engines
            for k, v in peer_bench(bin_dir, a.model, t, a.pp, a.tg, 1).items():
                samples[("peer", k)].append(v)
            for k, v in nucleus_bench(a.nucleus, a.model, t, a.pp, a.tg,
                                      1).items():
                samples[("nucleus", k)].append(v)
        med = {k: statistics.median(v) for k, v in samples.items()}
        rows.append((t, med))

    print(f"model: {os.path.basename(a.model)}; CPU: {cpu_name()}; "
          f"medians of {a.rounds} interleaved rounds")
    print(f"| test | threads | llama.cpp tok/s | nucleus tok/s | ratio |")
    print(f"|---|---:|---:|---:|---:|")
    for t, med in rows:
        for k, name in (("pp", f"pp{a.pp}"), ("tg", f"tg{a.tg}")):
            p, n = med[("peer", k)], med[("nucleus", k)]
            print(f"| {name} | {t} | {p:.1f} | {n:.1f} | {n / p:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
