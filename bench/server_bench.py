#!/usr/bin/env python3
"""Serving benchmark: nucleus serve against llama.cpp's llama-server on the
same model in the same run.

For 1, 8 and 32 concurrent streaming chat clients (greedy, ignore_eos, a
fixed number of tokens) it measures time to first token, inter-token latency
and aggregate generation throughput, and prints a table with the ratio
nucleus / llama-server for each (lower is better for latencies, higher for
throughput).

    python3 bench/server_bench.py                      # nucleus only
    python3 bench/server_bench.py --peer-bin /opt/peer/llama.cpp/build/bin/llama-server
"""

import argparse
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_BIN = ROOT / "build/release/nucleus"
DEFAULT_PEER = "/opt/peer/llama.cpp/build/bin/llama-server"
DEFAULT_MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"

PROMPTS = [
    "Explain how a bicycle works.",
    "Write a short poem about the ocean.",
    "What are the three primary colors?",
    "Describe your favourite city in a few sentences.",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name, argv, port):
        self.name = name
        self.url = f"http://127.0.0.1:{port}"
        self.log = tempfile.NamedTemporaryFile(prefix=f"bench-{name}-",
                                               suffix=".log", delete=False)
        self.proc = subprocess.Popen(argv, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"{name} exited early; see {self.log.name}")
            try:
                if requests.get(self.url + "/health", timeout=1).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.stop()
        sys.exit(f"{name} did not become ready; see {self.log.name}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def one_stream(url, prompt, max_tokens, out):
    body = {"model": "bench", "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True},
            # equal work: neither server reuses an earlier request's KV
            # (nucleus runs with --no-prefix-cache; bench/prefix_cache.py
            # measures the reuse)
            "cache_prompt": False}
    t0 = time.monotonic()
    stamps = []
    usage = None
    with requests.post(url + "/v1/chat/completions", json=body, stream=True,
                       timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith(b"data: "):
                continue
            if line == b"data: [DONE]":
                break
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for ch in chunk.get("choices") or []:
                if (ch.get("delta") or {}).get("content"):
                    stamps.append(time.monotonic())
    t1 = time.monotonic()
    tokens = usage["completion_tokens"] if usage else len(stamps)
    out.append({"ttft": stamps[0] - t0 if stamps else None,
                "itl": [b - a for a, b in zip(stamps, stamps[1:])],
                "tokens": tokens, "start": t0, "end": t1})


def run_level(url, clients, max_tokens):
    results = []
    threads = [threading.Thread(
        target=one_stream,
        args=(url, f"{PROMPTS[i % len(PROMPTS)]} ({clients}.{i})",
              max_tokens, results))
        for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    ttfts = [r["ttft"] for r in results if r["ttft"] is not None]
    itls = [x for r in results for x in r["itl"]]
    tokens = sum(r["tokens"] for r in results)
    return {"ttft_ms": statistics.median(ttfts) * 1e3 if ttfts else float("nan"),
            "itl_ms": statistics.median(itls) * 1e3 if itls else float("nan"),
            "tok_s": tokens / wall if wall > 0 else 0.0,
            "ok": len(results)}


def bench(server, levels, max_tokens):
    run_level(server.url, 1, 4)  # warm-up
    return {c: run_level(server.url, c, max_tokens) for c in levels}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", default=str(DEFAULT_BIN))
    ap.add_argument("--peer-bin", default=None,
                    help=f"llama-server binary (e.g. {DEFAULT_PEER})")
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--levels", default="1,8,32")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--ctx", type=int, default=512,
                    help="context per sequence")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    slots = max(levels)

    runs = {}
    port = free_port()
    nucleus = Server("nucleus", [
        args.bin, "serve", "-m", args.model, "--port", str(port),
        "-t", str(args.threads), "-c", str(args.ctx),
        "--parallel", str(slots), "--kv-tokens", str(args.ctx * slots),
        "--no-prefix-cache"], port)
    try:
        runs["nucleus"] = bench(nucleus, levels, args.max_tokens)
    finally:
        nucleus.stop()
    if args.peer_bin:
        port = free_port()
        peer = Server("llama-server", [
            args.peer_bin, "-m", args.model, "--host", "127.0.0.1",
            "--port", str(port), "-t", str(args.threads),
            "-c", str(args.ctx * slots), "-np", str(slots)], port)
        try:
            runs["llama-server"] = bench(peer, levels, args.max_tokens)
        finally:
            peer.stop()

    print(f"\nstreaming chat, {args.max_tokens} tokens per request, greedy, "
          f"{args.threads} threads, model {pathlib.Path(args.model).name}; "
          f"medians of TTFT and ITL, tok/s = all tokens / wall time; "
          f"load average {os.getloadavg()[0]:.1f}")
    header = f"{'clients':>7} {'server':>13} {'TTFT ms':>9} {'ITL ms':>8} " \
             f"{'tok/s':>8}"
    print(header)
    print("-" * len(header))
    for c in levels:
        for name, res in runs.items():
            r = res[c]
            print(f"{c:>7} {name:>13} {r['ttft_ms']:>9.1f} {r['itl_ms']:>8.2f} "
                  f"{r['tok_s']:>8.1f}")
        if "llama-server" in runs:
            a, b = runs["nucleus"][c], runs["llama-server"][c]
            print(f"{c:>7} {'ratio n/l':>13} {a['ttft_ms'] / b['ttft_ms']:>9.2f} "
                  f"{a['itl_ms'] / b['itl_ms']:>8.2f} "
                  f"{a['tok_s'] / b['tok_s']:>8.2f}")


if __name__ == "__main__":
    main()
