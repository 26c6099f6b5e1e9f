#!/usr/bin/env python3
"""Scale-out benchmark: one nucleus replica using every core, against
three replicas sharing the same cores behind sglang-router
(scripts/cluster.sh), with the cache_aware and the round_robin policy.

The load is the e2e test's (tests/e2e/test_scale_out.py) at a chosen
size: C conversations side by side, each with its own long system prompt,
T turns each, every turn carrying the whole history, streamed, greedy, a
fixed number of tokens per answer. Per setup it prints aggregate generated
tokens/s, p50/p99 time to first token, and the summed
usage.prompt_tokens_details.cached_tokens over the summed prompt tokens
(the prefix-cache hit ratio the routing policy gets).

    python3 bench/scale_out.py                         # 6 x 8, 16 tokens
    python3 bench/scale_out.py --tiny                  # a quick check that it runs
    python3 bench/scale_out.py --conversations 12 --turns 10 --replicas 4

Run it on a quiet machine: the numbers are only worth anything there. On a
machine with few cores, expect no throughput gain from more replicas; the
point is the mechanism (and cache_aware's hit ratio).
"""

import argparse
import concurrent.futures as cf
import json
import os
import pathlib
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_BIN = ROOT / "build/release/nucleus"
DEFAULT_MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"
TOPICS = ["astronomy", "gardening", "railways", "cooking", "sailing", "chess",
          "geology", "music", "weaving", "pottery", "cycling", "baking"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_health(url, proc, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            if requests.get(url + "/health", timeout=1).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not become ready")


class Single:
    """One replica on every core, no router."""

    def __init__(self, args):
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = tempfile.NamedTemporaryFile(prefix="scale-single-",
                                               suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [str(args.bin), "serve", "-m", str(args.model), "--port",
             str(port), "-t", str(os.cpu_count() or 1), *args.serve_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_health(self.url, self.proc)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


class Cluster:
    """scripts/cluster.sh N --policy P."""

    def __init__(self, args, policy):
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.out = tempfile.NamedTemporaryFile(prefix="scale-cluster-",
                                               suffix=".log", delete=False)
        env = {**os.environ, "NUCLEUS_BIN": str(args.bin)}
        self.proc = subprocess.Popen(
            [str(ROOT / "scripts/cluster.sh"), str(args.replicas), "--port",
             str(port), "--policy", policy, "--", "-m", str(args.model),
             *args.serve_args],
            stdout=self.out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("cluster.sh exited:\n" +
                                   pathlib.Path(self.out.name).read_text())
            if "behind sglang-router" in pathlib.Path(self.out.name).read_text():
                return
            time.sleep(0.2)
        raise RuntimeError("cluster.sh did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)


def system_prompt(c, words):
    topic = TOPICS[c % len(TOPICS)]
    base = (f"You are assistant {c}, the {topic} expert. Answer questions "
            f"about {topic} briefly and never change the subject. ")
    filler = " ".join(f"{topic}-rule-{i}" for i in range(words))
    return base + filler


def one_turn(url, messages, max_tokens):
    """(ttft seconds, completion tokens, prompt tokens, cached tokens, text)."""
    body = {"model": "nucleus", "messages": messages, "max_tokens": max_tokens,
            "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    t0 = time.monotonic()
    ttft = None
    text = []
    usage = {}
    with requests.post(url + "/v1/chat/completions", json=body, stream=True,
                       timeout=(10, 600)) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith(b"data: {"):
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for ch in chunk.get("choices", []):
                piece = ch.get("delta", {}).get("content")
                if piece:
                    if ttft is None:
                        ttft = time.monotonic() - t0
                    text.append(piece)
    details = usage.get("prompt_tokens_details") or {}
    return (ttft if ttft is not None else time.monotonic() - t0,
            usage.get("completion_tokens", 0), usage.get("prompt_tokens", 0),
            details.get("cached_tokens"), "".join(text))


def run_load(url, args):
    def conversation(c):
        messages = [{"role": "system",
                     "content": system_prompt(c, args.system_words)}]
        rows = []
        for t in range(args.turns):
            messages.append({"role": "user", "content":
                             f"Question {t}: tell me about "
                             f"{TOPICS[c % len(TOPICS)]}, part {t}."})
            row = one_turn(url, messages, args.max_tokens)
            rows.append(row)
            messages.append({"role": "assistant", "content": row[4]})
        return rows

    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(args.conversations) as ex:
        rows = [r for rs in ex.map(conversation, range(args.conversations))
                for r in rs]
    elapsed = time.monotonic() - t0
    ttfts = sorted(r[0] for r in rows)
    generated = sum(r[1] for r in rows)
    prompt = sum(r[2] for r in rows)
    cached = [r[3] for r in rows]
    return {
        "requests": len(rows),
        "seconds": elapsed,
        "tokens_per_s": generated / elapsed if elapsed > 0 else 0.0,
        "ttft_p50": statistics.median(ttfts),
        "ttft_p99": ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))],
        "prompt_tokens": prompt,
        "cached_tokens": None if None in cached else sum(cached),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", type=pathlib.Path, default=DEFAULT_BIN)
    ap.add_argument("--model", type=pathlib.Path, default=DEFAULT_MODEL)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--conversations", type=int, default=6)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--system-words", type=int, default=200)
    ap.add_argument("--tiny", action="store_true",
                    help="2 conversations x 2 turns, 4 tokens: checks it runs")
    ap.add_argument("--json", action="store_true", help="print JSON rows too")
    ap.add_argument("serve_args", nargs="*", default=["-c", "2048"],
                    help="after --: extra `nucleus serve` arguments "
                         "for every replica (default -c 2048)")
    args = ap.parse_args()
    if args.tiny:
        args.conversations, args.turns, args.max_tokens = 2, 2, 4
        args.system_words = 40
    setups = [("1 replica, all cores", lambda: Single(args))]
    for policy in ("cache_aware", "round_robin"):
        setups.append((f"{args.replicas} replicas + router, {policy}",
                       lambda p=policy: Cluster(args, p)))
    results = []
    for name, start in setups:
        target = start()
        try:
            res = run_load(target.url, args)
        finally:
            target.stop()
        res["setup"] = name
        results.append(res)
        print(f"{name}: done in {res['seconds']:.1f} s", file=sys.stderr)
    print(f"load: {args.conversations} conversations x {args.turns} turns, "
          f"{args.max_tokens} tokens per answer, system prompt "
          f"~{args.system_words} words; {os.cpu_count()} cores")
    print(f"| setup | tokens/s | TTFT p50 (s) | TTFT p99 (s) | cached / prompt tokens |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        ratio = ("n/a" if r["cached_tokens"] is None else
                 f"{r['cached_tokens']} / {r['prompt_tokens']} = "
                 f"{r['cached_tokens'] / max(1, r['prompt_tokens']):.2f}")
        print(f"| {r['setup']} | {r['tokens_per_s']:.1f} | "
              f"{r['ttft_p50']:.3f} | {r['ttft_p99']:.3f} | {ratio} |")
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
