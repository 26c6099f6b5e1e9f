#!/usr/bin/env python3
"""Where nucleus spends its time: decode and prefill profiles, grouped.

Records `perf record` of `nucleus bench` for decode (-p 0 -g 128) and for
prefill (-p 512 -g 0) at 2 threads on the default model, and prints for each
a table of the share of CPU samples per group, with the top symbols of each:

  matmul           the dot/gemm kernels (src/kernels/), the matmul driver and
                   the quantization of activations, for the layers
  output head      the same for the matmul of n_vocab rows (the logits)
  attention        scores, softmax and value accumulation, KV writes
  elementwise      rmsnorm, rope, swiglu, add, expf
  sampling/logits  the sampler
  thread pool/sync workers waiting or spinning, futexes, the scheduler
  model load       reading and parsing the file before the timed runs (the
                   kernel's zeroing of the pages read into included)
  other            everything else (engine, tokenizer, kernel)

Each sample goes to the group of the first frame, from the leaf up, that
has one. A function's group comes from its source file, read from the
binary's debug info (`nm -l`): src/kernels/attn_*.c (flash attention's
kernels too), src/model/forward_flash.c and src/kv/kv_cache.c attention, src/sampler*.c and src/kernels/sampler*.c
sampling, src/base/threadpool.c sync, src/kernels/ops*.c elementwise, the rest of
src/kernels/ matmul; otherwise from its name (src/model/forward.c's mm_worker
and att_worker, libc's and the kernel's futex and scheduler functions).
Helpers (expf, fmaf, F16 conversion, memcpy, intrinsics, PLT stubs) and the
src/kernels/ops*.c functions count for their caller when it has a group: attention's
softmax is attention, swiglu's exp elementwise. A thread-pool frame counts
as sync only when the sample is in the pool itself (waiting or spinning),
not when a worker runs a task below it. nucleus is built without frame pointers, so
the call graphs are recorded with DWARF unwinding (--call-graph dwarf; the
frame-pointer chains of `perf record -g` stop at the leaf here). Shares are
of on-CPU samples of all the process's threads (cpu-clock): a spinning
worker counts, a sleeping one does not.

usage: bench/profile.py [--model GGUF] [--threads 2] [--reps 3]
                        [--only decode|prefill] [--freq 250] [--top 4]
                        [--depth N] [--row-orders split]
  --depth N: both tests after N tokens in the KV cache (nucleus bench -d;
  the N tokens' prefill, once before the timed runs, is among the samples:
  raise --reps to weigh the tests). --row-orders: nucleus bench's.
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

GROUPS = ["matmul", "output head", "attention", "elementwise",
          "sampling/logits", "thread pool/sync", "model load", "other"]
HEAD = "output head"
# src/model/forward.c runs the matmul of n_vocab rows (the output head) under
# this name: its samples are the head's, whatever kernel runs below.
HEAD_FRAME = "mm_head_rows"
SYNC = "thread pool/sync"
LOAD = "model load"

# Source files of nucleus -> group (symbols are mapped to files with the
# binary's debug info, `nm -l`). Functions of src/kernels/ops*.c are "weak": they
# count for their caller when it has a group (attention's softmax and F16
# conversions are attention), elementwise otherwise.
FILE_RULES = [
    # reading the file (and the kernel zeroing the pages it reads into),
    # parsing it, building the vocabulary: before the timed runs
    (re.compile(r"^src/(base/mapped_file|gguf/\w+|model/model|"
                r"tokenizer/vocab\w*)\.c$"), "model load", True),
    (re.compile(r"^src/(kernels/attn_\w*|model/forward_flash|kv/kv_cache)"
                r"\.c$"), "attention", True),
    (re.compile(r"^src/(kernels/sampler\w*|sampling/\w+)\.c$"),
     "sampling/logits", True),
    (re.compile(r"^src/base/threadpool\.c$"), SYNC, True),
    (re.compile(r"^src/kernels/ops\w*\.c$"), "elementwise", False),
    (re.compile(r"^src/kernels/"), "matmul", True),
]
# By name, for what the files do not settle (mixed files such as
# src/model/forward.c, inlined frames, libc and the kernel); tried in this order.
NAME_RULES = [
    (SYNC, re.compile(
        r"^(worker_main|run_share|nc_threadpool_\w*|pthread_\w*|__pthread\w*|"
        r"__GI___pthread\w*|__GI___lll\w*|__lll_\w*|\w*futex\w*|"
        r"__schedule|schedule\w*|finish_task_switch\S*|sched_\w*|"
        r"__sched_\w*|do_sched_yield|__x64_sys_sched_yield|cpu_relax|"
        r"\w*_spin_(un)?lock\w*|sem_\w*|nc_spin\w*|"
        r"nc_barrier\w*)$")),
    ("sampling/logits", re.compile(
        r"(sampler|^nc_cand_|logprob|^nc_sample|^nc_top_|^nc_argmax|"
        r"penalt|^nc_logit)")),
    ("matmul", re.compile(
        r"(^nc_(avx2|avx512|ref|amx|vnni)_\w+|_dot_|^dot_|gemm|^mm_worker$|"
        r"^quant_worker$|^nc_fwd_matmul|^nc_matmul|quant_q8|"
        r"^nc_quantize_row|^quantize_row|^nc_kernels_)")),
    ("attention", re.compile(
        r"(^att_|^attn_|^nc_attn|scores|accum_v|^nc_fwd_attention|^nc_kv_|"
        r"^nc_fwd_kv|^kv_write)")),
    ("elementwise", re.compile(
        r"(rmsnorm|rope|swiglu|silu|^nc_add\w*|^nc_mul\w*|softmax|"
        r"^nc_\w*expf\w*|^expf|^__expf\w*|gelu|^nc_scale\w*)")),
]
# Helpers count for their caller; they decide only when no caller does.
HELPERS = re.compile(
    r"(^nc_\w*expf\w*|^expf|^__expf\w*|fmaf|^nc_sum16_tree|"
    r"^nc_fp32_to_fp16|^nc_fp16_to_fp32|^nc_bf16_to_fp32|"
    r"^_*mem(cpy|set|move)\w*|@plt$|^\[unknown\]$|"
    r"^__\w+_(evex|avx2|avx512|erms|fma3?)\w*$|^_mm\w*)")
# User stack bytes copied per sample: deep enough for the engine thread
# (main -> engine step -> forward -> thread pool -> kernel).
STACK_BYTES = 4096
FRAME = re.compile(r"^\s*([0-9a-f]+)\s+(.+?)\s+\(([^()]*)\)\s*$")


class ProfileError(RuntimeError):
    pass


def source_files(binary):
    """{symbol: source path relative to the repository} from `nm -l`."""
    if not shutil.which("nm"):
        raise ProfileError("nm (binutils) is not installed")
    p = subprocess.run(["nm", "-l", "--defined-only", str(binary)],
                       capture_output=True, text=True)
    files = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1] in "tTwW":
            path = parts[3].rsplit(":", 1)[0]
            try:
                path = str(pathlib.Path(path).resolve().relative_to(ROOT))
            except ValueError:
                pass
            files.setdefault(parts[2], path)
    return files


def classify_frame(sym, files):
    """-> (group or None, strong)."""
    path = files.get(sym)
    if path:
        for rx, group, strong in FILE_RULES:
            if rx.search(path):
                return group, strong and not HELPERS.search(sym)
    for group, rx in NAME_RULES:
        if rx.search(sym):
            return group, not HELPERS.search(sym)
    return None, False


def classify(frames, files=None):
    """frames: (symbol, dso) from the leaf up -> group.

    The first frame with a strong group decides. A thread-pool frame above
    other code (a worker running a task) is not waiting: the task decides,
    or the sample is "other"."""
    files = files or {}
    if any(sym == HEAD_FRAME for sym, _ in frames):
        return HEAD
    fallback, below = None, False
    for sym, dso in frames:
        group, strong = classify_frame(sym, files)
        if strong and group == SYNC and (fallback or below):
            break
        if strong:
            return group
        if group and fallback is None:
            fallback = group
        if group is None and sym in files and dso != "inlined":
            below = True  # a nucleus function with no group (a task)
    return fallback or "other"


def samples(script_text):
    """perf script output (-F tid,ip,sym,dso) -> one list per sample of
    (symbol, dso) frames from the leaf up; dso is "inlined" for inlined
    calls (intrinsics included), which DWARF unwinding lists as frames."""
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
            cur.append((m.group(2).split("+0x")[0], m.group(3)))
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


def profile(nucleus, model, threads, pp, tg, reps, freq, workdir, extra=()):
    data = pathlib.Path(workdir) / f"perf-p{pp}-g{tg}.data"
    bench = [nucleus, "bench", "-m", model, "-t", threads, "-p", pp, "-g", tg,
             "-r", reps, *extra]
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


def summarize(got, top, files=None):
    by_group = collections.Counter()
    by_sym = collections.defaultdict(collections.Counter)
    for frames in got:
        group = classify(frames, files)
        by_group[group] += 1
        # The function the sample is in, as perf report names it (not an
        # intrinsic or helper inlined into it).
        func = next((sym for sym, dso in frames if dso != "inlined"),
                    frames[0][0])
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
    ap.add_argument("--depth", type=int, default=0,
                    help="tokens already in the KV cache (nucleus bench -d)")
    ap.add_argument("--row-orders", choices=("reuse", "split"), default=None)
    a = ap.parse_args()
    extra = (["-d", a.depth] if a.depth else []) + \
        (["--row-orders", a.row_orders] if a.row_orders else [])
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
        files = source_files(a.nucleus)
        if not files:
            raise ProfileError(f"nm -l found no symbols in {a.nucleus}")
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        with tempfile.TemporaryDirectory(prefix="nucleus-profile-") as tmp:
            for name, pp, tg in runs:
                cmd, speed, got = profile(a.nucleus, a.model, a.threads, pp,
                                          tg, a.reps, a.freq, tmp, extra)
                print(f"## {name}: {cmd}")
                print(f"{speed or '(no speed line)'} under perf (slower "
                      f"than without: DWARF stack copies); "
                      f"{len(got)} samples (cpu-clock, {a.freq} Hz, DWARF "
                      f"call graphs); load average before: {load}")
                print()
                rows = summarize(got, a.top, files)
                loading = next(p for g, p, _ in rows if g == LOAD)
                print("| group | share of CPU samples | share without model "
                      "load | top symbols (self) |")
                print("|---|---:|---:|---|")
                for g, pct, syms in rows:
                    rest = "" if g == LOAD or loading >= 100 else \
                        f"{100 * pct / (100 - loading):.1f}%"
                    print(f"| {g} | {pct:.1f}% | {rest} | {syms} |")
                print()
    except ProfileError as e:
        print(f"bench/profile.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
