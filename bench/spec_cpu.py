#!/usr/bin/env python3
"""Speculative decoding's cost in CPU time: one process, one thread.

On a shared machine wall-clock tok/s means little; the user CPU time of a
`nucleus run` at one thread does not count the time other processes take.
For each task of bench/speculative.py (quote, code, file) and temperature, this
runs --spec off, ngram and (code, file) prediction (with --draft FILE: --spec
off and the draft model, --model-draft FILE), interleaved, --rounds times,
and prints each mode's median generation CPU time (the run's user+sys time
less that of the same prompt with -n 1, the load and prefill: with the
draft model's load for its rows) and its
ratio to --spec off's (above 1: drafting is cheaper than plain decoding).
--bin may be given twice (before/after builds): each gets its own rows.

usage: bench/spec_cpu.py [--bin build/release/nucleus]... [--rounds 3]
                         [--seeds 7] [--temps 0,0.7,1.5,2] [--tokens 128]
                         [--tasks quote,code] [--draft-max 16]
                         [--template chatml|gemma]
                         [--extra "--spec-row-cost 0.2"]
                         [--draft FILE]
"""
import argparse
import os
import pathlib
import shlex
import statistics
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import speculative as spec  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def cpu_of(cmd):
    """The user + sys CPU seconds of one run of cmd (its children's)."""
    before = os.times()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    after = os.times()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ...: {p.stderr[-2000:]}")
    used = (after.children_user - before.children_user +
            after.children_system - before.children_system)
    d = spec.DRAFTS.search(p.stderr)
    return used, p.stdout, (int(d.group(1)), int(d.group(2))) if d else (0, 0)


def command(args, binary, task, temp, mode, n, seed=7):
    prompt = spec.prompt_of(task, args.template)
    cmd = [binary, "run", "-p", prompt, "-n", str(n), "--ignore-eos", "-t",
           "1", "--seed", str(seed), "--draft-max", str(args.draft_max),
           "--row-orders", args.row_orders]
    if args.model:
        cmd += ["-m", args.model]
    if temp > 0:
        cmd += ["--temp", str(temp)]
    if mode == "prediction":
        cmd += ["--prediction", spec.ASKS[task][2]]
    elif mode == "draft":
        cmd += ["--model-draft", args.draft]
    else:
        cmd += ["--spec", mode]
    return cmd + shlex.split(args.extra)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--temps", default="0,0.7,1.5,2")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--tasks", default="quote,code")
    ap.add_argument("--row-orders", default="reuse",
                    choices=["reuse", "llama"],
                    help="as bench/speculative.py's")
    ap.add_argument("--draft-max", type=int, default=16)
    ap.add_argument("--model", default=str(
        ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--template", default="chatml",
                    choices=sorted(spec.TEMPLATES),
                    help="the prompts' chat template (gemma for Gemma 3)")
    ap.add_argument("--extra", default="")
    ap.add_argument("--seeds", default="7",
                    help="round r runs seed number r mod their count (at "
                         "T > 0 each seed samples another text)")
    ap.add_argument("--draft", default=None, metavar="FILE",
                    help="the draft model's rows instead of n-gram's "
                         "(--model the target: bench/speculative.py's pair)")
    args = ap.parse_args()
    bins = args.bin or [str(ROOT / "build/release/nucleus")]
    seeds = [int(x) for x in args.seeds.split(",")]
    print(f"{'binary':<28} {'task':<6} {'mode':<11} {'T':>4} "
          f"{'gen CPU s':>9} {'x off':>6} {'kept':>9}")
    for task in args.tasks.split(","):
        modes = ["off", "ngram"] + (["prediction"] if spec.ASKS[task][2]
                                    else [])
        if args.draft:
            modes = ["off", "draft"]
        for temp in [float(t) for t in args.temps.split(",")]:
            for b in bins:
                # the load and prefill: a draft model's run loads it too
                base = {m: statistics.median(
                    cpu_of(command(args, b, task, temp, m, 1))[0]
                    for _ in range(args.rounds))
                    for m in (["off", "draft"] if args.draft else ["off"])}
                cpu = {m: [] for m in modes}
                kept = {m: [0, 0] for m in modes}
                text = None
                for r in range(args.rounds):
                    seed = seeds[r % len(seeds)]
                    for m in modes:
                        used, out, (acc, dr) = cpu_of(
                            command(args, b, task, temp, m, args.tokens,
                                    seed))
                        if m == "off":
                            text = out
                        elif out != text and (m != "draft" or temp == 0):
                            sys.exit(f"{task} T={temp} {m}: the text differs "
                                     "from --spec off's")
                        cpu[m].append(used - base.get(m, base["off"]))
                        kept[m][0] += acc
                        kept[m][1] += dr
                off = statistics.median(cpu["off"])
                for m in modes:
                    t = statistics.median(cpu[m])
                    k = f"{kept[m][0]}/{kept[m][1]}" if kept[m][1] else "-"
                    print(f"{b[-28:]:<28} {task:<6} {m:<11} {temp:>4.1f} "
                          f"{t:>9.3f} {off / t:>6.2f} {k:>9}", flush=True)


if __name__ == "__main__":
    main()
