#!/usr/bin/env python3
"""CPU seconds of one prefill and one decode run, nucleus against llama.cpp,
on one model: the comparison that holds on a shared machine.

Wall-clock speed (bench/speed.py) needs a quiet machine; the CPU time a
process spends (perf stat's task-clock: the time its threads ran, not the
time they waited for a core) changes far less when other jobs share the
cores. For each engine this runs its bench twice, with 1 and with 1 + N
repetitions of a test, and takes the difference over N: the CPU time of
one repetition, without loading the file or warming up. Tests: prefill of
--pp tokens (nucleus bench -p PP -g 0; llama-bench -p PP -n 0) and decode
of --tg tokens (nucleus bench -p 0 -g TG: TG forward passes of one token,
the first the one-token prompt's; llama-bench -p 0 -n TG: TG passes). Printed: seconds per run and tokens per
CPU second of each engine, and their ratio nucleus / llama.cpp (above 1:
nucleus needs less CPU for the same work). llama-bench runs with its
defaults but -lm none (the file read into memory, as nucleus's default)
and --no-warmup (the difference takes the warm-up out).

Single-threaded by default: with more threads, spinning workers count as
CPU time, so the ratio then also measures how each engine waits.

usage: bench/cpu_time.py --model GGUF [--threads 1] [--pp 512] [--tg 128]
                         [--reps 2] [--only pp|tg] [--nucleus BIN]
                         [--peer-dir /opt/peer/llama.cpp] [-- NUCLEUS_ARGS]
"""
import argparse
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


class CpuTimeError(RuntimeError):
    pass


def task_clock(cmd, result):
    """CPU seconds (perf stat task-clock) of cmd, which must succeed and
    print the regular expression result (its test's speed: a bench that
    aborts may still leave perf stat an exit status of 0)."""
    p = subprocess.run(["perf", "stat", "-x", ",", "-e", "task-clock", "--",
                        *map(str, cmd)], capture_output=True, text=True)
    if p.returncode != 0 or not re.search(result, p.stdout):
        raise CpuTimeError(f"{' '.join(map(str, cmd))} failed (exit "
                           f"{p.returncode}):\n{p.stderr[-2000:]}")
    for line in p.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2].startswith("task-clock"):
            return float(f[0]) / 1000.0  # msec
    raise CpuTimeError(f"perf stat printed no task-clock:\n{p.stderr[-2000:]}")


def per_run(make_cmd, reps, result):
    """CPU seconds of one repetition: (T(1 + reps) - T(1)) / reps."""
    one = task_clock(make_cmd(1), result)
    more = task_clock(make_cmd(1 + reps), result)
    return (more - one) / reps


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--reps", type=int, default=2,
                    help="extra repetitions the difference spans (default 2)")
    ap.add_argument("--only", choices=("pp", "tg"))
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    ap.add_argument("--peer-dir", default="/opt/peer/llama.cpp")
    ap.add_argument("nucleus_args", nargs="*",
                    help="after --: more options of nucleus bench")
    a = ap.parse_args()
    if a.threads < 1 or a.reps < 1 or a.pp < 1 or a.tg < 1:
        ap.error("--threads, --reps, --pp and --tg must be >= 1")
    peer = pathlib.Path(a.peer_dir) / "build/bin/llama-bench"
    if not peer.is_file():
        ap.error(f"no llama-bench at {peer} (bench/build_peer.sh builds it)")
    tests = [("pp", a.pp), ("tg", a.tg)]
    if a.only:
        tests = [t for t in tests if t[0] == a.only]
    t = str(a.threads)
    print(f"model {a.model}, {a.threads} thread(s), CPU seconds per run "
          f"(perf stat task-clock, difference of 1 and {1 + a.reps} runs)")
    try:
        for kind, n in tests:
            if kind == "pp":
                nuc = lambda r: [a.nucleus, "bench", "-m", a.model, "-t", t,
                                 "-p", n, "-g", 0, "-r", r, *a.nucleus_args]
                pr = lambda r: [peer, "-m", a.model, "-t", t, "-p", n, "-n", 0,
                                "-r", r, "-lm", "none", "--no-warmup",
                                "-o", "json"]
            else:
                nuc = lambda r: [a.nucleus, "bench", "-m", a.model, "-t", t,
                                 "-p", 0, "-g", n, "-r", r,
                                 *a.nucleus_args]
                pr = lambda r: [peer, "-m", a.model, "-t", t, "-p", 0, "-n", n,
                                "-r", r, "-lm", "none", "--no-warmup",
                                "-o", "json"]
            s_peer = per_run(pr, a.reps, r'"avg_ts"')
            s_nuc = per_run(nuc, a.reps, rf"(?m)^{kind}{n} [0-9.]+ tok/s")
            print(f"{kind}{n}: llama.cpp {s_peer:.3f} s ({n / s_peer:.1f} "
                  f"tok/CPU-s), nucleus {s_nuc:.3f} s ({n / s_nuc:.1f} "
                  f"tok/CPU-s), ratio {s_peer / s_nuc:.2f}", flush=True)
    except CpuTimeError as e:
        print(f"bench/cpu_time.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
