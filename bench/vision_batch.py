#!/usr/bin/env python3
"""Several requests' images at once (issue 46, batching across requests:
docs/VISION.md "Encoding in the steps"): N concurrent chat requests, each
with an image of its own (same size, other pixels), through `nucleus
serve` on a vision pair, their vision layers batched (the default) and
with --no-image-batch.

The N requests are admitted in one step, as tests/e2e/test_vision_batch.py
does: a blocker (one streaming request of N completions) holds the
--parallel N slots until /metrics shows the N waiting, then its client
leaves. Timed from that moment: the first token of the slowest request
(all N encoded and prefilled), the mean over the N and the server's CPU
time until the last answer (user + system, every thread: less moved by
a busy machine than the wall times), best of --reps by the slowest;
/metrics' nucleus_image_rows_batched_total tells the rows that were
batched. Each round's images are fresh (no prefix cache hit skips an
encode), after a warm-up request.

usage: bench/vision_batch.py [--pair qwen3vl] [--dir models/vision-bench]
                             [--n 2,4] [--size 448x448] [--threads 1]
                             [--reps 2] [--tokens 4] [--nucleus BIN]
Needs `make build/release/nucleus` and the pair (bench/vision.py makes
it). Prints a markdown table.
"""
import argparse
import base64
import json
import os
import pathlib
import re
import sys
import threading
import time

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_server import free_port, start  # noqa: E402
from vision import QUESTION, image, stop  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def metric(url, name):
    text = requests.get(url + "/metrics", timeout=30).text
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    if not m:
        raise SystemExit(f"{name} missing from /metrics")
    return float(m.group(1))


def first_token(url, png, tokens, t0, out, i):
    """Streams a chat completion about png; out[i]: seconds from t0[0] to
    its first token."""
    uri = "data:image/png;base64," + base64.b64encode(png).decode()
    body = {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": uri}},
        {"type": "text", "text": QUESTION}]}],
        "max_tokens": tokens, "temperature": 0, "stream": True,
        "ignore_eos": True}
    with requests.post(url + "/v1/chat/completions", json=body, stream=True,
                       timeout=3600) as r:
        if not r.ok:
            raise SystemExit(f"{url}: {r.status_code} {r.text[:300]}")
        for line in r.iter_lines():
            if not line.startswith(b"data: {") or i in out:
                continue
            ch = json.loads(line[6:]).get("choices") or []
            if ch and (ch[0].get("delta") or {}).get("content"):
                out[i] = time.perf_counter() - t0[0]


def cpu_s(pid):
    """The CPU seconds (user + system, all threads) process pid has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def round_(url, pid, pngs, tokens):
    """(slowest, mean) seconds to the first token of the N requests, all
    admitted in one step, the server's CPU seconds meanwhile; and whether
    they were admitted together."""
    n = len(pngs)
    first, leave = threading.Event(), threading.Event()

    def blocker():
        body = {"prompt": "Count to ten thousand.", "max_tokens": 1000,
                "n": n, "stream": True, "ignore_eos": True,
                "temperature": 0}
        with requests.post(url + "/v1/completions", json=body, stream=True,
                           timeout=3600) as r:
            for line in r.iter_lines():
                if line.startswith(b"data: {"):
                    first.set()
                if leave.is_set() or line == b"data: [DONE]":
                    return

    b = threading.Thread(target=blocker)
    b.start()
    if not first.wait(600):
        raise SystemExit("the blocker never streamed")
    t0, out = [0.0], {}
    ts = [threading.Thread(target=first_token,
                           args=(url, p, tokens, t0, out, i))
          for i, p in enumerate(pngs)]
    for t in ts:
        t.start()
    forced = False
    while b.is_alive():
        if metric(url, "nucleus_queue_length") == n:
            forced = True
            break
        time.sleep(0.005)
    c0 = cpu_s(pid)
    t0[0] = time.perf_counter()
    leave.set()
    for t in ts + [b]:
        t.join()
    return max(out.values()), sum(out.values()) / n, cpu_s(pid) - c0, forced


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pair", default="qwen3vl")
    ap.add_argument("--dir", default=str(ROOT / "models/vision-bench"))
    ap.add_argument("--n", default="2,4")
    ap.add_argument("--size", default="448x448")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    a = ap.parse_args()
    d = pathlib.Path(a.dir)
    lm, mm = d / f"{a.pair}.Q4_K_M.gguf", d / f"{a.pair}-mmproj.gguf"
    w, h = (int(x) for x in a.size.split("x"))
    ns = [int(x) for x in a.n.split(",")]
    rows = []
    for n in ns:
        for mode in ("batched", "alone"):
            port = free_port()
            cmd = [a.nucleus, "serve", "-m", str(lm), "--mmproj", str(mm),
                   "--port", str(port), "-t", str(a.threads),
                   "--parallel", str(n)]
            if mode == "alone":
                cmd.append("--no-image-batch")
            p, url = start(cmd, port, timeout=600)
            try:
                first_token(url, image(64, 64, 999), 2, [time.perf_counter()],
                            {}, 0)  # warm-up
                best = None
                for r in range(a.reps):
                    pngs = [image(w, h, 1000 * n + 100 * r + i)
                            for i in range(n)]
                    before = metric(url, "nucleus_image_rows_batched_total")
                    slow, mean, cpu, forced = round_(url, p.pid, pngs,
                                                     a.tokens)
                    got = metric(url, "nucleus_image_rows_batched_total")
                    if not forced:
                        print(f"n={n} {mode} rep {r}: not admitted together",
                              file=sys.stderr)
                    if best is None or slow < best[0]:
                        best = (slow, mean, int(got - before), cpu)
            finally:
                stop(p)
            rows.append((n, mode, *best))
    print(f"| requests | images' layers | slowest TTFT (ms) | mean TTFT (ms) "
          f"| server CPU (s) | rows batched |")
    print("|---|---|---|---|---|---|")
    for n, mode, slow, mean, batched, cpu in rows:
        print(f"| {n} x {a.size} | {mode} | {slow * 1e3:.0f} | "
              f"{mean * 1e3:.0f} | {cpu:.2f} | {batched} |")


if __name__ == "__main__":
    main()
