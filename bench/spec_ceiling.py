#!/usr/bin/env python3
"""How fast can prompt lookup make a given text at best?

Drafts that are point masses (n-gram, predicted outputs) keep the plain
draw, so a run's text does not depend on its drafts: the text of a plain
run (same seed) is the text every drafting run emits. For each task of
bench/speculative.py, temperature and seed, this takes that text (`nucleus
run --spec off`, then `nucleus tokenize` of the prompt and of prompt +
reply) and replays it against the best any lookup drafter could do, one
that knows the future:

  copyable  the reply's tokens that follow some earlier occurrence of the
            last 2 or more tokens before them (in the prompt and reply so
            far): the only tokens a lookup can draft;
  ceiling   the reply's tokens per cost when each step drafts exactly the
            longest run (up to --draft-max) that continues some such
            occurrence and will be kept, and a step of k drafts costs
            c(k) plain steps (--costs: c(1) .. c(draft_max), e.g. from
            `make bench-rows`, build/release/bench/forward_rows MODEL; by
            default the default model's and Gemma 3's at stop 56).

A drafter's speed-up on that text cannot exceed the ceiling (it does not
know the future, and pays for the drafts it loses), so a goal above it is
out of reach for lookup drafting on that text, whatever the policy.

usage: bench/spec_ceiling.py [--model FILE] [--template chatml|gemma]
                             [--tasks quote,code] [--temps 0,0.3,0.7]
                             [--seeds 7,8,9] [--tokens 128]
                             [--draft-max 8] [--costs 1.10,1.19,...]
"""
import argparse
import ast
import pathlib
import statistics
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import speculative as spec  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
# c(k), k = 1..8: a forward call of k + 1 rows against one (docs/
# SPECULATIVE.md "How long a draft is", bench/forward_rows, stop 56)
COSTS = {"chatml": [1.10, 1.19, 1.27, 1.45, 1.56, 1.70, 1.78, 2.10],
         "gemma": [1.11, 1.19, 1.29, 1.47, 1.57, 1.68, 1.76, 1.96]}


def tokens(args, text):
    p = subprocess.run([spec.NUCLEUS, "tokenize", "-m", args.model, "--ids",
                        "--stdin"], input=text, capture_output=True,
                       text=True, check=True)
    return ast.literal_eval(p.stdout.strip())


def reply(args, prompt, temp, seed):
    cmd = [spec.NUCLEUS, "run", "-m", args.model, "-p", prompt, "-n",
           str(args.tokens), "--ignore-eos", "-t", "1", "--seed", str(seed),
           "--spec", "off", "--row-orders", args.row_orders]
    if temp > 0:
        cmd += ["--temp", str(temp)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    full = tokens(args, p.stdout)
    head = tokens(args, prompt)
    if full[:len(head)] != head:  # the reply's first token merged back
        sys.exit("the prompt's tokens are not a prefix of prompt + reply's")
    return head, full[len(head):]


def longest_run(hist, future, cap):
    """The longest prefix of future (up to cap) that continues an earlier
    occurrence of hist's last 2+ tokens; 0 where none does."""
    n, best = len(hist), 0
    for e in range(2, n):  # the continuation starts at e (e < n)
        if hist[e - 1] != hist[-1] or hist[e - 2] != hist[-2]:
            continue
        k = 0
        while k < cap and k < len(future):
            t = hist[e + k] if e + k < n else future[e + k - n]
            if t != future[k]:
                break
            k += 1
        best = max(best, k)
    return best


def replay(prompt, out, costs, cap):
    """(copyable tokens, ceiling speed-up) of one reply."""
    hist, copyable = list(prompt) + out[:1], 0
    for i in range(1, len(out)):
        copyable += longest_run(hist, out[i:], 1)
        hist.append(out[i])
    hist, total, i = list(prompt) + out[:1], 0.0, 1
    while i < len(out):
        k = longest_run(hist, out[i:], min(cap, len(out) - i - 1))
        total += costs[k - 1] if k > 0 else 1
        hist += out[i:i + k + 1]
        i += k + 1
    return copyable, (len(out) - 1) / total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(
        ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--template", default="chatml",
                    choices=sorted(spec.TEMPLATES))
    ap.add_argument("--tasks", default="quote,code")
    ap.add_argument("--row-orders", default="reuse",
                    choices=["reuse", "llama"],
                    help="as bench/speculative.py's (the text may differ)")
    ap.add_argument("--temps", default="0,0.3,0.7")
    ap.add_argument("--seeds", default="7,8,9")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--costs", default=None)
    args = ap.parse_args()
    costs = ([float(c) for c in args.costs.split(",")] if args.costs
             else COSTS[args.template])
    if len(costs) < args.draft_max:
        sys.exit(f"--costs: {args.draft_max} values (c(1) .. c(draft_max))")
    print(f"{'task':<6} {'T':>4} {'seed':>4} {'tokens':>6} {'copyable':>8} "
          f"{'ceiling':>8}")
    for task in args.tasks.split(","):
        prompt = spec.prompt_of(task, args.template)
        for temp in [float(t) for t in args.temps.split(",")]:
            ceil = []
            for seed in ([7] if temp == 0 else
                         [int(s) for s in args.seeds.split(",")]):
                head, out = reply(args, prompt, temp, seed)
                c, x = replay(head, out, costs, args.draft_max)
                ceil.append(x)
                print(f"{task:<6} {temp:>4g} {seed:>4} {len(out):>6} "
                      f"{c:>8} {x:>7.2f}x", flush=True)
            print(f"{task:<6} {temp:>4g} median ceiling "
                  f"{statistics.median(ceil):.2f}x", flush=True)


if __name__ == "__main__":
    main()
