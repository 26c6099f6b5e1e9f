#!/usr/bin/env python3
"""Speculative decoding's speed and acceptance against temperature.

For each task and temperature, `nucleus run` generates the same tokens
without drafts (--spec off), with n-gram drafts (--spec ngram) and, for the
code edit, with the original code as the prediction (--prediction); the runs
are interleaved (off, ngram, prediction, off, ...) so that load changes on a
shared machine hit them alike, and the median generation tok/s of each is
printed with its ratio to --spec off and the share of drafted tokens kept.
Every run with drafts must print the text of the run without (same seed):
the script checks it. Tasks:

  quote  a passage, then "Quote its first two sentences exactly."
  code   a Python function, then "Rewrite it with total renamed to acc."

Drafts are point masses, so strict verification (llama.cpp's server) and
exact rejection sampling accept the same tokens: one column covers both.

usage: bench/speculative.py [--rounds 3] [--temps 0,0.3,0.7,1.0,1.5]
                            [--tokens 128] [--model FILE] [--threads 2]
                            [--draft-max 8] [--markdown]
"""
import argparse
import datetime
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
NUCLEUS = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))

PASSAGE = (
    "The lighthouse at Point Arden was built in 1871 from granite quarried "
    "on the island itself. Its lamp burned whale oil until 1902, when a "
    "kerosene burner replaced it, and electricity arrived only in 1954. The "
    "last keeper, Margaret Hale, left in 1987, and the light has run "
    "automatically ever since. Visitors can climb its 114 steps on summer "
    "weekends.")
CODE = '''def summarize(values):
    total = 0
    count = 0
    for v in values:
        if v is None:
            continue
        total += v
        count += 1
    if count == 0:
        return 0.0
    mean = total / count
    print("total:", total, "count:", count, "mean:", mean)
    return mean
'''
TASKS = {
    "quote": ("<|im_start|>user\n" + PASSAGE +
              "\n\nQuote its first two sentences exactly.<|im_end|>\n"
              "<|im_start|>assistant\n", None),
    "code": ("<|im_start|>user\n```python\n" + CODE + "```\n\nRewrite it "
             "with total renamed to acc.<|im_end|>\n<|im_start|>assistant\n"
             "```python\n", CODE.replace("total", "acc")),
}

GEN = re.compile(r"generation: (\d+) tokens, ([\d.]+) tok/s")
DRAFTS = re.compile(r"drafts: (\d+) of (\d+) accepted")


def run(args, prompt, temp, mode, prediction):
    cmd = [NUCLEUS, "run", "-p", prompt, "-n", str(args.tokens),
           "--ignore-eos", "-t", str(args.threads), "--seed", "7",
           "--draft-max", str(args.draft_max)]
    if args.model:
        cmd += ["-m", args.model]
    if temp > 0:
        cmd += ["--temp", str(temp)]
    if mode == "prediction":
        cmd += ["--prediction", prediction]
    else:
        cmd += ["--spec", mode]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ...: {p.stderr[-2000:]}")
    g = GEN.search(p.stderr)
    d = DRAFTS.search(p.stderr)
    return (p.stdout, float(g.group(2)),
            (int(d.group(1)), int(d.group(2))) if d else (0, 0))


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--temps", default="0,0.3,0.7,1.0,1.5")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    temps = [float(t) for t in args.temps.split(",")]
    rows = []
    for task, (prompt, prediction) in TASKS.items():
        modes = ["off", "ngram"] + (["prediction"] if prediction else [])
        for temp in temps:
            speed = {m: [] for m in modes}
            kept = {m: [0, 0] for m in modes}
            text = None
            for _ in range(args.rounds):
                for m in modes:
                    out, tps, (acc, drafted) = run(args, prompt, temp, m,
                                                   prediction)
                    if text is None:
                        text = out
                    elif out != text:
                        sys.exit(f"{task} T={temp} {m}: the text differs "
                                 "from --spec off's")
                    speed[m].append(tps)
                    kept[m][0] += acc
                    kept[m][1] += drafted
            base = statistics.median(speed["off"])
            for m in modes:
                med = statistics.median(speed[m])
                acc, drafted = kept[m]
                rows.append((task, m, temp, med, med / base,
                             acc / drafted if drafted else None))
                if not args.markdown:
                    print(f"{task:6} {m:10} T={temp:<4} {med:8.1f} tok/s "
                          f"x{med / base:.2f}", flush=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short",
                             "HEAD"], capture_output=True, text=True).stdout
    print(f"\n`bench/speculative.py {' '.join(sys.argv[1:])}` on {cpu_name()}"
          f" ({os.cpu_count()} CPUs), commit {commit.strip()}, "
          f"{datetime.date.today()}: median generation tok/s of "
          f"{args.rounds} interleaved runs of {args.tokens} tokens\n")
    print("| task | drafter | T | tok/s | vs off | drafts kept |")
    print("|---|---|---:|---:|---:|---:|")
    for task, m, temp, med, ratio, acc in rows:
        a = "" if acc is None else f"{100 * acc:.0f}%"
        print(f"| {task} | {m} | {temp:g} | {med:.1f} | {ratio:.2f}x | {a} |")


if __name__ == "__main__":
    main()
