#!/usr/bin/env python3
"""CPU seconds of embedding bench/embed.py's texts, nucleus against
llama-cpp-python: the comparison that holds on a shared machine.

The texts are bench/embed.py's (tests/data/embed/texts.jsonl, each cut to
--ctx - 16 tokens of the model's tokenizer). nucleus: `nucleus serve -m
MODEL -t T`, a warm-up request, then the texts in requests of
--per-request, the server process's user + system time (/proc/PID/stat)
over those requests (tokenizing, the forward passes, pooling, the JSON).
llama-cpp-python: Llama(MODEL, embedding=True, flash_attn=True, n_ctx=8C,
n_batch=U, n_ubatch=U, n_threads=T, n_threads_batch=T) in a child process,
a warm-up embed of 8 texts, then embed(texts), the child's CPU time
(time.process_time) over that call, for each U of --ubatch: 8C is
bench/embed.py's llama-cpp-python leg (its embed packs up to U tokens of
texts into one micro-batch, every row's attention over all of them,
masked); C is llama-server's -ub C of bench/embed.py, the micro-batches
its requests are split into: the closer stand-in for the server. Each
engine runs --runs times; printed per thread count and engine: the median
CPU seconds and wall seconds, texts per CPU second, and the ratio of
llama-cpp-python's CPU seconds to nucleus's (above 1: nucleus needs less
CPU for the same texts). With more than one thread, spinning workers count
as CPU time on both sides.

usage: bench/embed_cpu.py --model GGUF [--threads 1,2] [--runs 3]
                          [--texts 1000] [--per-request 64] [--ctx 512]
                          [--ubatch 512,4096] [--only nucleus|python]
                          [--nucleus BIN] [--baseline BIN]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import embed as eb  # noqa: E402  (bench/embed.py: fit, start, stop)

TICK = os.sysconf("SC_CLK_TCK")

PEER = r"""
import json, sys, time
import llama_cpp
model, t, ctx, ub, path = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                           int(sys.argv[4]), sys.argv[5])
texts = json.load(open(path))
llm = llama_cpp.Llama(model, embedding=True, flash_attn=True, n_ctx=ctx * 8,
                      n_batch=ub, n_ubatch=ub, n_threads=t,
                      n_threads_batch=t, verbose=False)
llm.embed(texts[:8])
c0, w0 = time.process_time(), time.perf_counter()
llm.embed(texts)
print(json.dumps([time.process_time() - c0, time.perf_counter() - w0]))
"""


def proc_cpu(pid):
    """User + system seconds of process pid, all its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def run_nucleus(a, t, texts, binary):
    port = eb.free_port()
    p, url = eb.start([binary, "serve", "-m", a.model, "-t", str(t),
                       "--port", str(port)], port)

    def ask(chunk):
        r = requests.post(url + "/v1/embeddings", timeout=3600,
                          json={"input": chunk, "encoding_format": "float"})
        if not r.ok:
            raise SystemExit(f"nucleus: {r.status_code} {r.text[:300]}")

    try:
        ask(texts[:a.per_request])  # warm-up
        c0, w0 = proc_cpu(p.pid), time.perf_counter()
        for i in range(0, len(texts), a.per_request):
            ask(texts[i:i + a.per_request])
        return proc_cpu(p.pid) - c0, time.perf_counter() - w0
    finally:
        eb.stop(p)


def run_python(a, t, ub, path):
    out = subprocess.run([sys.executable, "-c", PEER, a.model, str(t),
                          str(a.ctx), str(ub), path], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"llama-cpp-python failed:\n{out.stderr[-2000:]}")
    cpu, wall = json.loads(out.stdout.strip().splitlines()[-1])
    return cpu, wall


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--texts", type=int, default=1000)
    ap.add_argument("--per-request", type=int, default=64)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--ubatch", default=None,
                    help="llama-cpp-python's micro-batch sizes (default "
                         "C,8C)")
    ap.add_argument("--only", choices=["nucleus", "python"])
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    ap.add_argument("--baseline", default=None,
                    help="another nucleus binary, run in turn with the "
                         "others (a before / after comparison)")
    a = ap.parse_args()
    texts = [json.loads(l) for l in
             (ROOT / "tests/data/embed/texts.jsonl").read_text().splitlines()]
    texts = eb.fit(a.model, texts[:a.texts], a.ctx - 16)
    path = f"/tmp/embed_cpu_{os.getpid()}.json"
    with open(path, "w") as f:
        json.dump(texts, f)
    ubs = [int(x) for x in (a.ubatch or f"{a.ctx},{8 * a.ctx}").split(",")]
    print(f"{len(texts)} texts, model {pathlib.Path(a.model).name}, "
          f"{a.runs} runs each, medians")
    print("threads  engine                      cpu s  wall s  texts/cpu-s  "
          "its cpu / nucleus cpu   (cpu s of each run)")

    def row(t, name, runs, ours):
        cpu = statistics.median(x[0] for x in runs)
        wall = statistics.median(x[1] for x in runs)
        ratio = f"{cpu / ours:8.2f}x" if ours else "         "
        print(f"{t:7d}  {name:26s} {cpu:6.2f}  {wall:6.1f}  "
              f"{len(texts) / cpu:11.1f}  {ratio}              "
              f"{[round(x[0], 2) for x in runs]}")
        sys.stdout.flush()
        return cpu

    try:
        for t in [int(x) for x in a.threads.split(",")]:
            ours, before, peer = [], [], {ub: [] for ub in ubs}
            for _ in range(a.runs):  # the engines in turn, run after run
                if a.only != "python":
                    ours.append(run_nucleus(a, t, texts, a.nucleus))
                if a.only != "python" and a.baseline:
                    before.append(run_nucleus(a, t, texts, a.baseline))
                for ub in ubs if a.only != "nucleus" else []:
                    peer[ub].append(run_python(a, t, ub, path))
            base = row(t, "nucleus serve", ours, None) if ours else None
            if before:
                row(t, "nucleus serve (baseline)", before, base)
            for ub in ubs if a.only != "nucleus" else []:
                row(t, f"llama-cpp-python ub {ub}", peer[ub], base)
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
