#!/usr/bin/env python3
"""Serving benchmark: nucleus serve against llama.cpp's llama-server on the
same model in the same run.

For each level of concurrent streaming chat clients (default 1, 8, 32 and
64; llama-server gets as many slots, -np, with --cont-batching) it measures
aggregate generation throughput (all completion tokens / wall time), time
to first token and inter-token latency (p50 and p99 over all streams), and
starvation: per stream the largest gap between two tokens over its median
gap, the worst stream's ratio printed (the issue's bound: under 4). Each
token is timed by its chunk: the requests ask for logprobs, so that a token
whose text is empty still comes as a chunk (with ignore_eos the model
writes <|im_end|> and <|im_start|>, which render as no text: timed by
content alone, the gap around them spans two or three steps).

Workloads (--workload):
  mix    (default) each client one request of a fixed-seed mix: a prompt
         of 200..2000 tokens (licence texts from /usr/share/common-licenses,
         about 4 characters a token; the usage's prompt_tokens are
         reported) and 128..512 generated tokens (ignore_eos, greedy);
  short  the old check: four short questions, --max-tokens tokens each.
The prompt cache is on in both servers (cache_prompt true, nucleus's prefix
cache) unless --no-prompt-cache; both run the same threads.

    python3 bench/server_bench.py                      # nucleus only
    python3 bench/server_bench.py --peer-bin /opt/peer/llama.cpp/build/bin/llama-server
    python3 bench/server_bench.py --levels 8 --workload short   # quick
"""

import argparse
import json
import os
import pathlib
import random
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


TEXTS = ["GPL-3", "GPL-2", "LGPL-3", "Apache-2.0", "MPL-2.0", "GFDL-1.3",
         "Artistic", "LGPL-2.1"]
CHARS_PER_TOKEN = 4


def licence_text():
    parts = []
    for name in TEXTS:
        path = pathlib.Path("/usr/share/common-licenses") / name
        if path.exists():
            parts.append(" ".join(path.read_text(errors="replace").split()))
    if not parts:
        sys.exit("no texts in /usr/share/common-licenses for the mix")
    return " ".join(parts)


def workload(kind, clients, max_tokens, seed):
    """[(prompt, max_tokens)] for one level: the same for both servers."""
    if kind == "short":
        return [(f"{PROMPTS[i % len(PROMPTS)]} ({clients}.{i})", max_tokens)
                for i in range(clients)]
    rng = random.Random(seed * 1000 + clients)
    text = licence_text()
    out = []
    for i in range(clients):
        n_tok = rng.randint(200, 2000)
        n_chars = n_tok * CHARS_PER_TOKEN
        start = rng.randrange(0, max(1, len(text) - n_chars))
        body = text[start:start + n_chars]
        out.append((f"Request {clients}.{i}. Summarize this text:\n\n{body}",
                    rng.randint(128, 512)))
    return out


def one_stream(url, prompt, max_tokens, cache, out):
    body = {"model": "bench", "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True},
            "cache_prompt": cache, "logprobs": True}
    t0 = time.monotonic()
    stamps = []
    usage = None
    with requests.post(url + "/v1/chat/completions", json=body, stream=True,
                       timeout=3600) as r:
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
                if ((ch.get("delta") or {}).get("content") or
                        (ch.get("logprobs") or {}).get("content")):
                    stamps.append(time.monotonic())
    t1 = time.monotonic()
    tokens = usage["completion_tokens"] if usage else len(stamps)
    out.append({"ttft": stamps[0] - t0 if stamps else None,
                "itl": [b - a for a, b in zip(stamps, stamps[1:])],
                "tokens": tokens,
                "prompt_tokens": usage.get("prompt_tokens") if usage else None,
                "start": t0, "end": t1, "stamps": stamps})


def pct(xs, p):
    """Nearest-rank percentile of xs (p in 0..100); NaN when empty."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def stream_record(r, t0):
    """One stream for --dump: its times from the level's start (s), its
    largest gap, where it fell and its median gap."""
    itl = r["itl"]
    worst = max(range(len(itl)), key=itl.__getitem__) if itl else None
    return {"prompt_tokens": r["prompt_tokens"], "tokens": r["tokens"],
            "start": r["start"] - t0, "end": r["end"] - t0,
            "stamps": [round(x - t0, 4) for x in r["stamps"]],
            "max_gap": itl[worst] if itl else None, "max_gap_at": worst,
            "median_gap": statistics.median(itl) if itl else None}


def run_level(url, jobs, cache, dump=False):
    results = []
    threads = [threading.Thread(target=one_stream,
                                args=(url, prompt, n, cache, results))
               for prompt, n in jobs]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    ttfts = [r["ttft"] for r in results if r["ttft"] is not None]
    itls = [x for r in results for x in r["itl"]]
    tokens = sum(r["tokens"] for r in results)
    # starvation: the worst stream's largest gap over its own median gap
    gap = max((max(r["itl"]) / statistics.median(r["itl"])
               for r in results if len(r["itl"]) >= 2
               and statistics.median(r["itl"]) > 0), default=float("nan"))
    prompts = [r["prompt_tokens"] for r in results if r["prompt_tokens"]]
    streams = ({"t0": t0, "streams": [stream_record(r, t0) for r in results]}
               if dump else None)
    return {"ttft_p50_ms": pct(ttfts, 50) * 1e3,
            "ttft_p99_ms": pct(ttfts, 99) * 1e3,
            "itl_p50_ms": pct(itls, 50) * 1e3,
            "itl_p99_ms": pct(itls, 99) * 1e3,
            "max_gap_ratio": gap,
            "tok_s": tokens / wall if wall > 0 else 0.0,
            "tokens": tokens, "wall_s": wall,
            "prompt_tokens": [min(prompts), max(prompts)] if prompts else None,
            "ok": len(results), "streams": streams}


def bench(server, levels, args):
    run_level(server.url, workload("short", 1, 4, args.seed), False)  # warm-up
    return {c: run_level(server.url,
                         workload(args.workload, c, args.max_tokens, args.seed),
                         not args.no_prompt_cache, bool(args.dump))
            for c in levels}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", default=str(DEFAULT_BIN))
    ap.add_argument("--peer-bin", default=None,
                    help=f"llama-server binary (e.g. {DEFAULT_PEER})")
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--levels", default="1,8,32,64")
    ap.add_argument("--workload", choices=("mix", "short"), default="mix")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=64,
                    help="tokens per request of the short workload")
    ap.add_argument("--ctx", type=int, default=3072,
                    help="context per sequence (mix: 2,000 prompt tokens, "
                         "the template and 512 generated fit)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-prompt-cache", action="store_true",
                    help="cache_prompt false, nucleus --no-prefix-cache")
    ap.add_argument("--json", default=None,
                    help="append the run (settings and results) to this file")
    ap.add_argument("--dump", default=None,
                    help="write every stream's token times (s from the "
                         "level's start), largest and median gap to this "
                         "file (JSON, by server and level)")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="one more argument for nucleus serve (repeat it: "
                         "--server-arg=--decode-stall --server-arg=2)")
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    slots = max(levels)

    runs = {}
    port = free_port()
    argv = [args.bin, "serve", "-m", args.model, "--port", str(port),
            "-t", str(args.threads), "-c", str(args.ctx),
            "--parallel", str(slots), "--kv-tokens", str(args.ctx * slots)]
    if args.no_prompt_cache:
        argv.append("--no-prefix-cache")
    argv += args.server_arg
    nucleus = Server("nucleus", argv, port)
    try:
        runs["nucleus"] = bench(nucleus, levels, args)
    finally:
        nucleus.stop()
    if args.peer_bin:
        port = free_port()
        peer = Server("llama-server", [
            args.peer_bin, "-m", args.model, "--host", "127.0.0.1",
            "--port", str(port), "-t", str(args.threads),
            "-c", str(args.ctx * slots), "-np", str(slots),
            "--cont-batching"], port)
        try:
            runs["llama-server"] = bench(peer, levels, args)
        finally:
            peer.stop()

    what = ("a mix of 200..2000-token prompts and 128..512 generated tokens "
            f"(seed {args.seed})" if args.workload == "mix" else
            f"short prompts, {args.max_tokens} tokens each")
    print(f"\nstreaming chat, {what}, greedy, {args.threads} threads, model "
          f"{pathlib.Path(args.model).name}, prompt cache "
          f"{'off' if args.no_prompt_cache else 'on'}; tok/s = completion "
          f"tokens / wall time; gap = the worst stream's max / median "
          f"inter-token gap; load average {os.getloadavg()[0]:.1f}\n")
    print("| clients | server | tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms "
          "| ITL p99 ms | gap |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    keys = ("tok_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms",
            "max_gap_ratio")
    for c in levels:
        for name, res in runs.items():
            r = res[c]
            print(f"| {c} | {name} | " +
                  " | ".join(f"{r[k]:.1f}" for k in keys) + " |")
        if "llama-server" in runs:
            a, b = runs["nucleus"][c], runs["llama-server"][c]
            print(f"| {c} | ratio n/l | " +
                  " | ".join(f"{a[k] / b[k]:.2f}" if b[k] else "-"
                             for k in keys) + " |")
    if args.dump:
        pathlib.Path(args.dump).write_text(json.dumps(
            {n: {str(c): r["streams"] for c, r in res.items()}
             for n, res in runs.items()}) + "\n")
    for res in runs.values():
        for r in res.values():
            del r["streams"]
    if args.json:
        rec = {"date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
               "argv": sys.argv[1:], "load": os.getloadavg()[0],
               "runs": {n: {str(c): r for c, r in res.items()}
                        for n, res in runs.items()}}
        path = pathlib.Path(args.json)
        data = json.loads(path.read_text()) if path.exists() else []
        data.append(rec)
        path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
