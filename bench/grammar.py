#!/usr/bin/env python3
"""Structured-output cost (one command; run on a quiet machine):

1. the token mask's CPU time per step (CLOCK_THREAD_CPUTIME_ID, so load
   does not inflate it much) on the 10-property schema's grammar
   (bench/data/person10.gbnf, the schema converter's output for SCHEMA10
   below; regenerate it if the converter changes) and the default model's
   vocabulary, from build/release/tests/grammar_mask_bench: replaying a
   realistic output (bench/data/person10.json, as the tokenizer splits
   it) memoized and by the plain trie walk (the cost before the memo), and
   random walks through the grammar memoized;
2. decode tokens/s of a request constrained by the 10-property JSON schema
   against the same request without it (ignore_eos, the same number of
   tokens), from the streamed chunks' arrival times (first token to last),
   at the server's threads; the same against llama-server (its json_schema
   field), started from --peer-bin with the same model and threads unless
   --no-peer (or --peer-url for a running one);
3. grammar compile time per corpus schema (tests/data/schemas): the
   time to the first token of a 1-token request with the schema minus the
   same without it, each the least of --compile-repeat tries (p50/p99 over the
   corpus; includes the JSON Schema -> GBNF conversion and the GBNF
   compile, and noise of one prefill).

  bench/grammar.py [--url http://127.0.0.1:8080 | --model FILE] [--threads 2]
                   [--tokens 256] [--repeat 3] [--schemas N]
                   [--mask-steps 2000] [--peer-bin FILE | --peer-url URL |
                   --no-peer] [--compile-repeat 5]
Starts `build/release/nucleus serve` itself unless --url is given; tiny
sizes for a check that it runs: --tokens 16 --repeat 1 --schemas 3
--mask-steps 50 --compile-repeat 1."""
import argparse
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
PEER_BIN = "/opt/peer/llama.cpp/build/bin/llama-server"

SCHEMA10 = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "email": {"type": "string", "format": "email"},
        "city": {"type": "string", "maxLength": 30},
        "country": {"type": "string", "enum": ["US", "FR", "DE", "JP"]},
        "active": {"type": "boolean"},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string",
                                            "maxLength": 12},
                 "maxItems": 4},
        "joined": {"type": "string", "format": "date"},
        "bio": {"type": "string", "maxLength": 200},
    },
    "required": ["name", "age", "email", "city", "country", "active",
                 "score", "tags", "joined", "bio"],
    "additionalProperties": False,
}

MESSAGES = [{"role": "user", "content": "Describe a fictional person."}]


def stream(url, body):
    """(token count, seconds from the first token to the last, ttft)."""
    t0 = time.perf_counter()
    times = []
    usage = None
    with requests.post(url + "/v1/chat/completions",
                       json={**body, "stream": True,
                             "stream_options": {"include_usage": True}},
                       stream=True, timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            if chunk.get("choices") and chunk["choices"][0]["delta"].get(
                    "content"):
                times.append(time.perf_counter())
    n = usage["completion_tokens"] if usage else len(times)
    span = times[-1] - times[0] if len(times) > 1 else float("nan")
    ttft = times[0] - t0 if times else float("nan")
    return n, span, ttft


def decode_speed(url, tokens, repeat, schema_field):
    rates_g, rates_f = [], []
    for seed in range(repeat):
        body = {"messages": MESSAGES, "max_tokens": tokens, "temperature": 1,
                "seed": seed, **schema_field}
        n, span, _ = stream(url, body)
        if n < 3:
            continue
        rates_g.append((n - 1) / span)
        n2, span2, _ = stream(url, {"messages": MESSAGES, "max_tokens": n,
                                    "temperature": 1, "seed": seed,
                                    "ignore_eos": True})
        rates_f.append((n2 - 1) / span2)
    return statistics.median(rates_g), statistics.median(rates_f)


def compile_times(url, paths, repeat):
    out = []
    for p in paths:
        schema = json.loads(p.read_text())
        base = {"messages": MESSAGES, "max_tokens": 1, "temperature": 0}
        plain, constrained = float("inf"), float("inf")
        for _ in range(repeat):  # the least of each: the noise-free times
            plain = min(plain, stream(url, base)[2])
            constrained = min(constrained, stream(url, {
                **base, "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": schema}}})[2])
        out.append(max(0.0, constrained - plain) * 1e3)
    return out


def mask_cost(model, steps):
    """[(what, grammar_mask_bench's line)]: replaying a realistic output
    (bench/data/person10.json) memoized and by the plain walk, and random
    walks memoized."""
    exe = ROOT / "build/release/tests/grammar_mask_bench"
    if not exe.exists():
        sys.exit(f"{exe} is not built (make)")
    gbnf = ROOT / "bench/data/person10.gbnf"
    text = ["--text", str(ROOT / "bench/data/person10.json")]
    runs = [("memoized, realistic output", steps, text),
            # the plain walk costs ~30x more: fewer steps, the same tokens
            ("plain walk, realistic output", max(20, steps // 10),
             ["--reference", *text]),
            ("memoized, random walks", steps, [])]
    out = []
    for what, n, extra in runs:
        r = subprocess.run([str(exe), model, str(gbnf), str(n), "1", *extra],
                           capture_output=True, text=True, check=True)
        out.append((what, r.stdout.strip()))
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ready(proc, url, what):
    for _ in range(900):
        if proc.poll() is not None:
            sys.exit(f"{what} exited ({proc.returncode})")
        try:
            if requests.get(url + "/health", timeout=1).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    proc.kill()
    sys.exit(f"{what} did not start")


def start_server(model, threads):
    port = free_port()
    args = [str(ROOT / "build/release/nucleus"), "serve", "--port", str(port),
            "-t", str(threads), "-c", "2048"]
    if model:
        args += ["-m", model]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_ready(proc, url, "nucleus serve")
    return proc, url


def start_peer(binary, model, threads):
    port = free_port()
    proc = subprocess.Popen(
        [binary, "-m", model, "--port", str(port), "-t", str(threads),
         "-tb", str(threads), "-c", "2048", "-np", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_ready(proc, url, "llama-server")
    return proc, url


def stop(proc):
    if proc:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--model", default=str(
        ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--schemas", type=int, default=0,
                    help="corpus schemas to time (0: all)")
    ap.add_argument("--compile-repeat", type=int, default=5)
    ap.add_argument("--mask-steps", type=int, default=2000)
    ap.add_argument("--peer-bin", default=PEER_BIN)
    ap.add_argument("--peer-url", help="a running llama-server instead")
    ap.add_argument("--no-peer", action="store_true")
    a = ap.parse_args()

    for what, line in mask_cost(a.model, a.mask_steps):
        print(f"mask CPU time ({what}): {line}")

    rf = {"response_format": {"type": "json_schema", "json_schema": {
        "name": "person", "schema": SCHEMA10}}}
    proc = None
    url = a.url
    try:
        if not url:
            proc, url = start_server(a.model, a.threads)
        g, f = decode_speed(url, a.tokens, a.repeat, rf)
        print(f"nucleus decode tok/s: schema {g:.1f}, free {f:.1f}, "
              f"ratio {g / f:.3f} (forward + sampling {1e3 / f:.2f} ms/token "
              f"free)")
        paths = sorted((ROOT / "tests/data/schemas").glob("*.json"))
        if a.schemas:
            paths = paths[:a.schemas]
        ms = sorted(compile_times(url, paths, max(1, a.compile_repeat)))
        p99 = ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
        print(f"compile ms over {len(ms)} schemas: p50 "
              f"{statistics.median(ms):.2f}, p99 {p99:.2f}, max {ms[-1]:.2f}")
    finally:
        stop(proc)

    if a.no_peer:
        return
    peer = None
    peer_url = a.peer_url
    try:
        if not peer_url:
            if not os.access(a.peer_bin, os.X_OK):
                print(f"llama-server: {a.peer_bin} not found (--no-peer to "
                      "skip)")
                return
            peer, peer_url = start_peer(a.peer_bin, a.model, a.threads)
        pg, pf = decode_speed(peer_url, a.tokens, a.repeat,
                              {"json_schema": SCHEMA10})
        print(f"llama-server decode tok/s: schema {pg:.1f}, free "
              f"{pf:.1f}, ratio {pg / pf:.3f}")
    finally:
        stop(peer)


if __name__ == "__main__":
    main()
