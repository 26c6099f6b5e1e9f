#!/usr/bin/env python3
"""Where nucleus spends its time: decode and prefill profiles, grouped.

Records `perf record` of `nucleus bench` for decode (-p 0 -g 128) and for
prefill (-p 512 -g 0) at 2 threads on the default model, and prints for each
a table of the share of CPU samples per group, with the top symbols of each:

  matmul           the dot/gemm kernels (src/kernels/), the matmul driver and
                   the quantization of activations
  attention        scores, softmax and value accumulation, KV writes
  elementwise      rmsnorm, rope, swiglu, add, expf
  sampling/logits  the sampler
  thread pool/sync workers waiting or spinning, futexes, the scheduler
  other            everything else (engine, tokenizer, model load, kernel)

Each sample goes to the group of the first frame, from the leaf up, that
belongs to one; helpers (expf, fmaf, fp16 conversion, memcpy, PLT stubs)
count for their caller, so the exp of attention's softmax is attention and
the exp of swiglu elementwise. nucleus is built without frame pointers, so
the call graphs are recorded with DWARF unwinding (--call-graph dwarf; the
frame-pointer chains of `perf record -g` stop at the leaf here). Shares are
of on-CPU samples of all the process's threads (cpu-clock): a spinning
worker counts, a sleeping one does not.

usage: bench/profile.py [--model GGUF] [--threads 2] [--reps 3]
                        [--only decode|prefill] [--freq 250] [--top 4]
"""
import argparse
import collections
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"

GROUPS = ["matmul", "attention", "elementwise", "sampling/logits",
          "thread pool/sync", "other"]
# Tried in this order on each frame, from the leaf up; the first match
# decides the sample's group.
RULES = [
    ("thread pool/sync", re.compile(
        r"^(worker_main|nc_threadpool_\w*|pthread_\w*|__pthread\w*|"
        r"__GI___pthread\w*|__GI___lll\w*|__lll_\w*|\w*futex\w*|"
        r"__schedule|schedule\w*|finish_task_switch\S*|sched_\w*|"
        r"__sched_\w*|\w*_spin_(un)?lock\w*|sem_\w*|nc_spin\w*|"
        r"nc_barrier\w*)$")),
    ("sampling/logits", re.compile(
        r"(sampler|^nc_cand_|logprob|^nc_sample|^nc_top_|^nc_argmax|"
        r"penalt|^nc_logit)")),
    ("matmul", re.compile(
        r"(^nc_(avx2|avx512|ref|amx|vnni)_\w+|_dot_|^dot_|gemm|^mm_worker$|"
        r"^nc_fwd_matmul|^nc_matmul|quant_q8|^nc_quantize_row|"
        r"^quantize_row|^nc_kernels_)")),
    ("attention", re.compile(
        r"(^att_|^attn_|^nc_attn|scores|accum_v|^nc_fwd_attention|^nc_kv_|"
        r"^nc_fwd_kv|^kv_write)")),
    ("elementwise", re.compile(
        r"(rmsnorm|rope|swiglu|silu|^nc_add\w*|^nc_mul\w*|softmax|"
        r"^nc_expf\w*|^expf|^__expf\w*|gelu|^nc_scale\w*)")),
]
# Frames that count for their caller; they decide only when no caller does.
HELPERS = re.compile(
    r"(^nc_expf\w*|^expf|^__expf\w*|fmaf|^nc_sum16_tree|^nc_fp32_to_fp16|"
    r"^nc_fp16_to_fp32|^nc_bf16_to_fp32|^_*mem(cpy|set|move)\w*|@plt$|"
    r"^\[unknown\]$|^__\w+_(evex|avx2|avx512|erms|fma3?)\w*$)")
# User stack bytes copied per sample: deep enough for the engine thread
# (main -> engine step -> forward -> thread pool -> kernel).
STACK_BYTES = 4096
FRAME = re.compile(r"^\s*([0-9a-f]+)\s+(.+?)\s+\(([^()]*)\)\s*$")


class ProfileError(RuntimeError):
    pass


def classify_symbol(sym):
    for group, rx in RULES:
        if rx.search(sym):
            return group
    return None


def classify(frames):
    """frames: (symbol, inlined) from the leaf up -> group."""
    fallback = None
    for sym, _ in frames:
        group = classify_symbol(sym)
        if HELPERS.search(sym):
            if fallback is None and group is not None:
                fallback = group
            continue
        if group is not None:
            return group
    return fallback or "other"


def samples(script_text):
    """perf script output (-F tid,ip,sym,dso) -> one list per sample of
    (symbol, inlined) frames from the leaf up. DWARF unwinding lists inlined
    calls (intrinsics included) as frames of their own."""
    out, cur = [], None
    for line in script_text.splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur = None
            continue
        m = FRAME.match(line)
        if m:
            if cur is None:
                cur = []
            cur.append((m.group(2).split("+0x")[0], m.group(3) == "inlined"))
        else:
            if cur:
                out.append(cur)
            cur = []  # a sample header (the thread id)
    if cur:
        out.append(cur)
    return [s for s in out if s]


def run(cmd, what):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise ProfileError(f"{what} failed (exit {p.returncode}): "
                           f"{shlex.join(map(str, cmd))}\n{p.stderr[-3000:]}")
    return p


def profile(nucleus, model, threads, pp, tg, reps, freq, workdir):
    data = pathlib.Path(workdir) / f"perf-p{pp}-g{tg}.data"
    bench = [nucleus, "bench", "-m", model, "-t", threads, "-p", pp, "-g", tg,
             "-r", reps]
    rec = run(["perf", "record", "-e", "cpu-clock", "-F", freq,
               "--call-graph", f"dwarf,{STACK_BYTES}", "-q", "-o", data, "--",
               *bench],
              "perf record")
    speed = " ".join(line.strip() for line in rec.stdout.splitlines()
                     if "tok/s" in line)
    script = run(["perf", "script", "-i", data, "-F", "tid,ip,sym,dso"],
                 "perf script").stdout
    data.unlink()
    got = samples(script)
    if not got:
        raise ProfileError("perf recorded no samples")
    return shlex.join(map(str, bench)), speed, got


def summarize(got, top):
    by_group = collections.Counter()
    by_sym = collections.defaultdict(collections.Counter)
    for frames in got:
        group = classify(frames)
        by_group[group] += 1
        # The function the sample is in, as perf report names it (not an
        # intrinsic or helper inlined into it).
        func = next((sym for sym, inl in frames if not inl), frames[0][0])
        by_sym[group][func] += 1
    n = len(got)
    rows = []
    for g in GROUPS:
        syms = ", ".join(f"{s} {100 * c / n:.1f}%"
                         for s, c in by_sym[g].most_common(top))
        rows.append((g, 100 * by_group[g] / n, syms))
    return rows


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3,
                    help="nucleus bench -r (runs of each test)")
    ap.add_argument("--only", choices=["decode", "prefill"])
    ap.add_argument("--freq", type=int, default=250, help="samples/s/thread")
    ap.add_argument("--top", type=int, default=4,
                    help="top symbols (by self samples) shown per group")
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    ap.add_argument("--no-make", action="store_true")
    a = ap.parse_args()
    if not shutil.which("perf"):
        print("bench/profile.py: error: perf is not installed (Debian: "
              "apt-get install linux-perf)", file=sys.stderr)
        return 1
    runs = [("decode", 0, 128), ("prefill", 512, 0)]
    if a.only:
        runs = [r for r in runs if r[0] == a.only]
    try:
        if not a.no_make:
            run(["make", "-C", ROOT, "-s", f"-j{os.cpu_count() or 1}"],
                "make (nucleus)")
        if not os.path.isfile(a.model):
            raise ProfileError(f"model {a.model} is missing (make model)")
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        with tempfile.TemporaryDirectory(prefix="nucleus-profile-") as tmp:
            for name, pp, tg in runs:
                cmd, speed, got = profile(a.nucleus, a.model, a.threads, pp,
                                          tg, a.reps, a.freq, tmp)
                print(f"## {name}: {cmd}")
                print(f"{speed or '(no speed line)'} under perf (slower "
                      f"than without: DWARF stack copies); "
                      f"{len(got)} samples (cpu-clock, {a.freq} Hz, DWARF "
                      f"call graphs); load average before: {load}")
                print()
                print("| group | share of CPU samples | top symbols (self) |")
                print("|---|---:|---|")
                for g, pct, syms in summarize(got, a.top):
                    print(f"| {g} | {pct:.1f}% | {syms} |")
                print()
    except ProfileError as e:
        print(f"bench/profile.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
