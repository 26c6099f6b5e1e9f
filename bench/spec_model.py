#!/usr/bin/env python3
"""Speculative decoding's speedup, modelled without wall-clock noise.

Runs bench/speculative.py's prompts through `nucleus run` with the draft
policy's row cost fixed (--spec-row-cost BETA, so its choices do not
depend on timings), reads the steps' row counts from NUCLEUS_STEP_TRACE,
and costs each decode step of k rows at c(k) one-row steps from --costs
(c(1) .. c(N), e.g. bench/forward_rows' "x min_rows" column; past N,
c(N) * k / N). Prints, per task, temperature and drafter, 128-token runs'
modelled speedup over plain decode (tokens / summed step costs) and the
drafts kept. Several --config NAME:BETA:COSTS compare cost tables (two
builds' kernels, two CPUs) on the same texts. Not a test.

  bench/spec_model.py --model models/SmolLM2-135M-Instruct.Q4_1.gguf \\
      --config before:0.25:1,1.14,1.31,... --config after:0.16:1,1.15,...
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speculative as spec  # noqa: E402  (the prompts and the parsers)


def parse_config(text):
    name, beta, costs = text.split(":", 2)
    table = [float(c) for c in costs.split(",")]
    if not table or table[0] != 1:
        sys.exit(f"--config {name}: c(1) must be 1")
    return name, float(beta), table


def step_cost(table, rows):
    if rows <= len(table):
        return table[rows - 1]
    return table[-1] * rows / len(table)


def run_one(args, trace, prompt, temp, mode, seed, beta):
    """One run's (modelled cost, kept, drafted)."""
    cmd = [spec.NUCLEUS, "run", "-p", prompt, "-n", str(args.tokens),
           "--ignore-eos", "-t", "1", "--seed", str(seed), "--draft-max",
           str(args.draft_max), "--row-orders", "reuse", "-m", args.model,
           "--spec-row-cost", str(beta)]
    if temp > 0:
        cmd += ["--temp", str(temp)]
    if mode == "prediction":
        cmd += ["--prediction", spec.ASKS[args.task_now][2]]
    else:
        cmd += ["--spec", mode]
    env = dict(os.environ, NUCLEUS_STEP_TRACE=trace)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=600)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ...: {p.stderr[-2000:]}")
    return p.stderr, trace


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--template", choices=["chatml", "gemma"],
                    default="chatml")
    ap.add_argument("--tasks", default="file,code,quote")
    ap.add_argument("--temps", default="0,0.7,1.5")
    ap.add_argument("--modes", default="ngram,prediction")
    ap.add_argument("--seeds", default="7,8,9",
                    help="at T > 0 (T = 0 runs the first)")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--draft-max", type=int, default=16)
    ap.add_argument("--config", action="append", required=True,
                    help="NAME:BETA:c(1),c(2),...")
    args = ap.parse_args()
    configs = [parse_config(c) for c in args.config]
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "steps.tsv")
        for task in args.tasks.split(","):
            args.task_now = task
            prompt = spec.prompt_of(task, args.template)
            for temp in (float(t) for t in args.temps.split(",")):
                for mode in args.modes.split(","):
                    if mode == "prediction" and not spec.ASKS[task][2]:
                        continue
                    cells = []
                    for name, beta, table in configs:
                        cost = kept = drafted = 0
                        runs = seeds if temp > 0 else seeds[:1]
                        for seed in runs:
                            err, _ = run_one(args, trace, prompt, temp, mode,
                                             seed, beta)
                            with open(trace) as f:
                                for r in csv.DictReader(f, delimiter="\t"):
                                    n = int(r["decode_rows"])
                                    if int(r["prompt_rows"]) == 0 and n > 0:
                                        cost += step_cost(table, n)
                            d = spec.DRAFTS.search(err)
                            if d:
                                kept += int(d.group(1))
                                drafted += int(d.group(2))
                        speed = args.tokens * len(runs) / cost if cost else 0
                        cells.append(f"{name} {speed:.2f}x {kept}/{drafted}")
                    print(f"{task:6} T={temp:<4} {mode:10} " +
                          " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
