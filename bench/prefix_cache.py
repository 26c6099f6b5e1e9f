#!/usr/bin/env python3
"""Prefix-cache benchmark (issue 18): the three targets in one run.

1. Multi-turn chat: a conversation grown to about --turn-tokens tokens gets
   one more user turn. Warm: the previous turn was just answered, so its KV is
   cached; cold: the same request under a fresh cache_salt (nothing cached).
   Prints the median time to first token of each and the ratio cold / warm
   (target: >= 10x on the default model at 2 threads).
2. Shared system prompt: --system-tokens of system prompt, --clients
   concurrent requests with different questions, twice (round 1 finds the
   system prompt uncached, round 2 cached). Aggregate throughput and p50 TTFT
   for nucleus, nucleus --no-prefix-cache and, when its binary exists,
   llama-server (cache_prompt, its slots reused between rounds).
3. No sharing: prompts that never repeat, one at a time; prefill (prompt
   tokens / TTFT) and decode speed with the cache on and --no-prefix-cache,
   interleaved --repeats times (should be within noise).

    python3 bench/prefix_cache.py -t 2                       # full sizes
    python3 bench/prefix_cache.py --tiny                     # a smoke run
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
import uuid

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_BIN = ROOT / "build/release/nucleus"
DEFAULT_PEER = "/opt/peer/llama.cpp/build/bin/llama-server"
DEFAULT_MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"

WORDS = ("river stone bread window garden copper lantern violet harbor "
         "meadow thunder pencil orchard silver candle marble forest engine "
         "velvet island basket mirror saddle cobalt ladder pepper falcon "
         "glacier tunnel harvest compass quartz anchor ribbon canyon").split()


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


def nucleus_server(args, name, *extra, parallel=8):
    port = free_port()
    return Server(name, [args.bin, "serve", "-m", args.model, "--port",
                         str(port), "-t", str(args.threads), "-c",
                         str(args.ctx), "--parallel", str(parallel),
                         "--kv-tokens", str(args.ctx * parallel), *extra],
                  port)


def peer_server(args, parallel):
    port = free_port()
    return Server("llama-server", [
        args.peer_bin, "-m", args.model, "--host", "127.0.0.1", "--port",
        str(port), "-t", str(args.threads), "-c", str(args.ctx * parallel),
        "-np", str(parallel)], port)


def sentence(rng, n_words):
    return " ".join(rng.choice(WORDS) for _ in range(n_words)) + "."


def chat(url, messages, max_tokens, salt=None, extra=None):
    """One streamed chat request: (ttft s, reply text, usage)."""
    body = {"model": "bench", "messages": messages, "max_tokens": max_tokens,
            "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, **(extra or {})}
    if salt is not None:
        body["cache_salt"] = salt
    t0 = time.monotonic()
    ttft, parts, usage = None, [], None
    with requests.post(url + "/v1/chat/completions", json=body, stream=True,
                       timeout=900) as r:
        if r.status_code >= 400:
            sys.exit(f"chat request: HTTP {r.status_code}: {r.text[:500]}")
        for line in r.iter_lines():
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for ch in chunk.get("choices") or []:
                text = (ch.get("delta") or {}).get("content")
                if text:
                    if ttft is None:
                        ttft = time.monotonic() - t0
                    parts.append(text)
    t1 = time.monotonic()
    return {"ttft": ttft if ttft is not None else t1 - t0,
            "text": "".join(parts), "usage": usage or {}, "end": t1,
            "start": t0}


def n_tokens(url, messages):
    r = requests.post(url + "/tokenize", json={"messages": messages},
                      timeout=60)
    r.raise_for_status()
    return len(r.json()["tokens"])


def cached_tokens(res):
    return ((res["usage"].get("prompt_tokens_details") or {})
            .get("cached_tokens", 0))


# ---------------------------------------------------------- 1. multi-turn

def grow_conversation(url, target, rng):
    """Messages (without the last user turn) of about target tokens."""
    msgs = [{"role": "system", "content": "You are a helpful assistant."}]
    while n_tokens(url, msgs) < target:
        msgs.append({"role": "user", "content": sentence(rng, 40)})
        msgs.append({"role": "assistant", "content": sentence(rng, 60)})
    return msgs


def multi_turn(args):
    srv = nucleus_server(args, "nucleus", parallel=2)
    rng = random.Random(1)
    try:
        chat(srv.url, [{"role": "user", "content": "hi"}], 2)  # warm-up
        cold, warm, hits, sizes = [], [], [], []
        for rep in range(args.repeats):
            history = grow_conversation(srv.url, args.turn_tokens, rng)
            salt = f"conversation-{rep}-{uuid.uuid4()}"
            turn = history + [{"role": "user", "content": sentence(rng, 20)}]
            prev = chat(srv.url, turn, args.reply_tokens, salt)  # last turn
            turn = turn + [{"role": "assistant", "content": prev["text"]},
                           {"role": "user", "content": sentence(rng, 20)}]
            w = chat(srv.url, turn, 1, salt)  # the next turn: warm
            c = chat(srv.url, turn, 1, f"cold-{uuid.uuid4()}")  # same, cold
            warm.append(w["ttft"])
            cold.append(c["ttft"])
            hits.append(cached_tokens(w))
            sizes.append(w["usage"].get("prompt_tokens", 0))
    finally:
        srv.stop()
    c, w = statistics.median(cold), statistics.median(warm)
    print(f"\n1. multi-turn chat: prompt {statistics.median(sizes):.0f} tokens "
          f"({statistics.median(hits):.0f} cached when warm), "
          f"{args.threads} threads, medians of {args.repeats}")
    print(f"   TTFT cold {c * 1e3:9.1f} ms | warm {w * 1e3:8.1f} ms | "
          f"cold / warm {c / w:6.1f}x (target >= 10x)")


# ------------------------------------------------ 2. shared system prompt

def system_prompt(url, target, rng):
    text = "You answer questions about this catalogue. "
    while n_tokens(url, [{"role": "system", "content": text}]) < target:
        text += sentence(rng, 30) + " "
    return text


def one_round(url, system, questions, max_tokens, extra):
    results = []

    def run(q):
        results.append(chat(url, [{"role": "system", "content": system},
                                  {"role": "user", "content": q}],
                            max_tokens, extra=extra))

    threads = [threading.Thread(target=run, args=(q,)) for q in questions]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    toks = sum(r["usage"].get("completion_tokens", 0) for r in results)
    return {"tok_s": toks / wall, "ttft_ms":
            statistics.median(r["ttft"] for r in results) * 1e3,
            "cached": sum(cached_tokens(r) for r in results), "wall": wall}


def shared_system(args):
    rng = random.Random(2)
    ctx_need = args.system_tokens + 64 + args.gen_tokens
    if ctx_need > args.ctx:
        sys.exit(f"--ctx {args.ctx} is below {ctx_need} (system + question "
                 "+ reply)")
    configs = [("nucleus", lambda: nucleus_server(
        args, "nucleus", parallel=args.clients), {}),
               ("nucleus --no-prefix-cache", lambda: nucleus_server(
                   args, "nucleus-nocache", "--no-prefix-cache",
                   parallel=args.clients), {})]
    if args.peer_bin and os.access(args.peer_bin, os.X_OK):
        configs.append(("llama-server", lambda: peer_server(args,
                                                            args.clients),
                        {"cache_prompt": True}))
    system = None
    rows = []
    for name, start, extra in configs:
        srv = start()
        try:
            if system is None:
                system = system_prompt(srv.url, args.system_tokens, rng)
            chat(srv.url, [{"role": "user", "content": "hi"}], 2, extra=extra)
            for rnd in (1, 2):
                qs = [f"Question {rnd}.{i}: {sentence(rng, 12)}"
                      for i in range(args.clients)]
                r = one_round(srv.url, system, qs, args.gen_tokens, extra)
                rows.append((name, rnd, r))
        finally:
            srv.stop()
    print(f"\n2. shared system prompt of ~{args.system_tokens} tokens x "
          f"{args.clients} concurrent requests, {args.gen_tokens} tokens "
          f"each, {args.threads} threads (round 1: system prompt not yet "
          f"cached; round 2: cached)")
    print(f"   {'server':<26} {'round':>5} {'tok/s':>8} {'p50 TTFT ms':>12} "
          f"{'cached':>8} {'wall s':>7}")
    for name, rnd, r in rows:
        print(f"   {name:<26} {rnd:>5} {r['tok_s']:>8.1f} {r['ttft_ms']:>12.1f} "
              f"{r['cached']:>8} {r['wall']:>7.2f}")


# -------------------------------------------------------- 3. no sharing

def no_sharing(args):
    rng = random.Random(3)
    servers = [("cache on", nucleus_server(args, "nucleus", parallel=2)),
               ("--no-prefix-cache", nucleus_server(
                   args, "nucleus-nocache", "--no-prefix-cache", parallel=2))]
    speeds = {name: {"prefill": [], "decode": []} for name, _ in servers}
    try:
        for _, srv in servers:
            chat(srv.url, [{"role": "user", "content": "hi"}], 2)
        for rep in range(args.repeats):
            for name, srv in servers:  # interleaved
                # A fresh salt: nothing is ever shared (not even the chat
                # template's opening), but every lookup and index is done.
                words = max(8, args.unique_tokens * 3 // 5)
                msg = sentence(rng, words)
                res = chat(srv.url, [{"role": "user", "content": msg}],
                           args.gen_tokens, salt=str(uuid.uuid4()),
                           extra={"ignore_eos": True})
                assert cached_tokens(res) == 0
                pt = res["usage"].get("prompt_tokens", 0)
                ct = res["usage"].get("completion_tokens", 0)
                speeds[name]["prefill"].append(pt / res["ttft"])
                gen = res["end"] - res["start"] - res["ttft"]
                if ct > 1 and gen > 0:
                    speeds[name]["decode"].append((ct - 1) / gen)
    finally:
        for _, srv in servers:
            srv.stop()
    print(f"\n3. prompts that never repeat (~{args.unique_tokens} tokens, "
          f"{args.gen_tokens} generated), one at a time, medians of "
          f"{args.repeats} interleaved runs")
    for name, s in speeds.items():
        pre = statistics.median(s["prefill"])
        dec = statistics.median(s["decode"]) if s["decode"] else float("nan")
        print(f"   {name:<18} prefill {pre:8.1f} tok/s | decode {dec:7.1f} "
              "tok/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", default=str(DEFAULT_BIN))
    ap.add_argument("--peer-bin", default=DEFAULT_PEER,
                    help="llama-server binary (skipped when absent)")
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--turn-tokens", type=int, default=2500)
    ap.add_argument("--reply-tokens", type=int, default=32)
    ap.add_argument("--system-tokens", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--gen-tokens", type=int, default=32)
    ap.add_argument("--unique-tokens", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["turns", "system", "unique"])
    ap.add_argument("--tiny", action="store_true",
                    help="small sizes: checks that the script runs")
    args = ap.parse_args()
    if args.tiny:
        args.turn_tokens, args.reply_tokens = 120, 4
        args.system_tokens, args.clients, args.gen_tokens = 60, 3, 4
        args.unique_tokens, args.repeats, args.ctx = 40, 1, 512
    print(f"model {pathlib.Path(args.model).name}, load average "
          f"{os.getloadavg()[0]:.1f}")
    if args.only in (None, "turns"):
        multi_turn(args)
    if args.only in (None, "system"):
        shared_system(args)
    if args.only in (None, "unique"):
        no_sharing(args)


if __name__ == "__main__":
    main()
