#!/usr/bin/env python3
"""Structured-output cost through the server (run on a quiet machine):

1. decode tokens/s of a request constrained by a 10-property JSON schema
   against the same request without it (ignore_eos, the same number of
   tokens), from the streamed chunks' arrival times (first token to last),
   at the server's threads; optionally the same against llama-server
   (--peer-url, its json_schema field);
2. grammar compile time per corpus schema (tests/data/schemas): the
   time to the first token of a 1-token request with the schema minus the
   same without it (p50/p99 over the corpus; includes the JSON Schema ->
   GBNF conversion and the GBNF compile, and noise of one prefill).

  bench/grammar.py [--url http://127.0.0.1:8080 | --model FILE] [--threads 2]
                   [--tokens 256] [--repeat 3] [--schemas N] [--peer-url URL]
Starts `build/release/nucleus serve` itself unless --url is given."""
import argparse
import json
import pathlib
import socket
import statistics
import subprocess
import sys
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]

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


def compile_times(url, paths):
    out = []
    for p in paths:
        schema = json.loads(p.read_text())
        base = {"messages": MESSAGES, "max_tokens": 1, "temperature": 0}
        _, _, t_plain = stream(url, base)
        _, _, t_schema = stream(url, {**base, "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": schema}}})
        out.append(max(0.0, t_schema - t_plain) * 1e3)
    return out


def start_server(model, threads):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    args = [str(ROOT / "build/release/nucleus"), "serve", "--port", str(port),
            "-t", str(threads), "-c", "2048"]
    if model:
        args += ["-m", model]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if requests.get(url + "/health", timeout=1).ok:
                return proc, url
        except requests.RequestException:
            pass
        time.sleep(0.2)
    proc.kill()
    sys.exit("the server did not start")


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
    ap.add_argument("--peer-url", help="llama-server for the same schema")
    a = ap.parse_args()
    proc = None
    url = a.url
    if not url:
        proc, url = start_server(a.model, a.threads)
    try:
        rf = {"response_format": {"type": "json_schema", "json_schema": {
            "name": "person", "schema": SCHEMA10}}}
        g, f = decode_speed(url, a.tokens, a.repeat, rf)
        print(f"nucleus decode tok/s: schema {g:.1f}, free {f:.1f}, "
              f"ratio {g / f:.3f}")
        if a.peer_url:
            pg, pf = decode_speed(a.peer_url, a.tokens, a.repeat,
                                  {"json_schema": SCHEMA10})
            print(f"llama-server decode tok/s: schema {pg:.1f}, free "
                  f"{pf:.1f}, ratio {pg / pf:.3f}")
        paths = sorted((ROOT / "tests/data/schemas").glob("*.json"))
        if a.schemas:
            paths = paths[:a.schemas]
        ms = sorted(compile_times(url, paths))
        p99 = ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
        print(f"compile ms over {len(ms)} schemas: p50 "
              f"{statistics.median(ms):.2f}, p99 {p99:.2f}, max {ms[-1]:.2f}")
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
