#!/usr/bin/env python3
"""Prefill and decode speed of nucleus against llama.cpp, in one run.

One command does it all: builds nucleus (make), builds the peer when it is
missing (bench/build_peer.sh: llama.cpp from the PyPI sdist of
llama-cpp-python, clang, native, with its AMX path), makes the Q8_0 and
Q4_K_M versions of the default model with the peer's llama-quantize
(scripts/make_bench_models.sh), then for each model and thread count runs
llama-bench and `nucleus bench` interleaved (peer, nucleus, peer, nucleus,
...; one run of each test per call, so that load changes on a shared machine
hit both engines alike) and prints one table of medians: prefill tok/s for a
512-token prompt (pp512), decode tok/s for 128 tokens (tg128), and the ratio
nucleus / llama.cpp. Both engines run with their defaults (llama-bench: flash
attention auto, weight repacking on; nucleus: its default kernel table, amx
on AMX CPUs, or with --no-repack the fastest table in the float order of
llama.cpp --no-repack, or the table NUCLEUS_KERNELS names), but for loading
the file: nucleus reads it into memory in 2 MiB pages (its default,
--load-mode auto), and each llama-bench call runs every test both with the
file mapped (its default) and read into memory (-lm mmap,none), the mode
with the higher median of the rounds counting, per test.

usage: bench/speed.py [--rounds 5] [--models Q4_1,Q8_0,Q4_K_M,MOE_Q4_K_M,gemma3]
                      (also IQ4_XS, IQ4_NL, IQ3_S, IQ2_XS, MOE_MXFP4, QWEN35,
                      QWEN35MOE, GPTOSS, GEMMA4)
                      [--threads 1,2] [--pp 512] [--tg 128] [--depth 0]
                      [--no-repack] [--cache-type q8_0] [--row-orders split]
                      [--markdown] [--json bench/results/speed.json]
       bench/speed.py --show bench/results/speed.json [--run -1]
  --markdown: print only the table (with a line naming the command, the
  CPU, the commit and the date), as docs/PERFORMANCE.md holds it.
  --json FILE: append the run (date, commit, CPU, command, medians and
  samples) to FILE, a JSON list of runs (bench/results/speed.json).
  --show FILE: print the Markdown table of a recorded run (the last one, or
  --run N), without running anything.
  --depth 0,4096,8192: each test also after that many tokens already in the
  KV cache (llama-bench -d; nucleus bench -d, which takes them from its
  prefix cache, computed once before the timed runs).
  --cache-type T: both engines with K and V caches of type T (f16, bf16,
  q8_0, q4_0: llama-bench -ctk T -ctv T, nucleus bench -ctk T -ctv T).
  --row-orders R: nucleus bench --row-orders R (split: flash attention's
  keys in chunks over the threads, docs/forward.md; rows labelled so).
  --models takes the names above (also MOE_Q8_0) or paths to .gguf files.
  Issue 40's rows: --models IQ4_XS,IQ4_NL,IQ3_S,IQ2_XS,MOE_MXFP4 (IQ2_XS:
  nucleus quantize --imatrix with a `nucleus imatrix` matrix; llama.cpp
  runs the same bytes).
  MOE_*: a Qwen3-MoE-shaped random-weight model (bench/make_moe_shaped.py,
  8 experts of 1024, 2 used per token, 1024 wide), made by
  scripts/make_bench_models.sh. gemma3 is Gemma 3 270M Q4_K_M
  (models/gemma-3-270m-q4_k_m.gguf, fetched when missing).
  Issues 41 and 42's rows: --models QWEN35,QWEN35MOE,GPTOSS,GEMMA4, random
  weights at real widths with fewer layers (bench/make_arch_shaped.py, made
  by scripts/make_bench_models.sh, a few hundred MB each): a Qwen3.5-2B-like
  dense hybrid and a Qwen3.6-35B-A3B-like MoE hybrid (Q4_K_M), a
  gpt-oss-20b-like MoE (MXFP4 experts, Q8_0 elsewhere) and a Gemma-4-E2B-
  like model (Q4_K_M). Under the table: each model's KV cache bytes per
  position as `nucleus info` reports them (sliding windows, shared-KV
  layers and recurrent state included).
  Quick development run: bench/speed.py --rounds 1 --models Q4_1 --threads 2
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shlex
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_MODEL = ROOT / "models/gemma-3-270m-q4_k_m.gguf"  # scripts/fetch_gemma.sh
# made by scripts/make_bench_models.sh (IQ4_XS, IQ4_NL, IQ3_S, IQ2_XS:
# issue 40's rows; IQ2_XS by nucleus quantize with a nucleus imatrix)
MADE_TYPES = ("Q8_0", "Q4_K_M", "IQ4_XS", "IQ4_NL", "IQ3_S", "IQ2_XS")
# and the Qwen3-MoE-shaped random-weight model it makes (bench/make_moe_shaped.py:
# 8 experts of 1024, 2 used, 1024 wide, 8 layers): MOE_Q8_0, MOE_Q4_K_M,
# MOE_MXFP4 (llama-quantize MXFP4_MOE: MXFP4 experts)
MOE_TYPES = ("MOE_Q8_0", "MOE_Q4_K_M", "MOE_MXFP4")
MOE_NAME = "qwen3moe-bench"  # make_bench_models.sh's MOE_NAME
# name -> (make_bench_models.sh's BENCH_MODELS family, the file it writes,
# models/FAMILY-bench.TYPE.gguf): bench/make_arch_shaped.py's shapes
SHAPED = {"QWEN35": ("qwen35", "Q4_K_M"), "QWEN35MOE": ("qwen35moe", "Q4_K_M"),
          "GPTOSS": ("gptoss", "MXFP4"), "GEMMA4": ("gemma4", "Q4_K_M")}
# llama-bench runs each test in both of its ways of loading the file, and
# the mode with the higher median counts: mmap (its default) and none (read
# into memory, as nucleus's default load; decode ran 1.1-1.25x faster so)
PEER_LOAD_MODES = ("mmap", "none")
MIN_ROUNDS = 5  # fewer is a quick run, and the table says so


class BenchError(RuntimeError):
    pass


def run(cmd, what, env=None):
    """Runs cmd; returns stdout, or raises with its stderr on failure."""
    try:
        p = subprocess.run([str(c) for c in cmd], capture_output=True,
                           text=True, env=env)
    except OSError as e:
        raise BenchError(f"{what}: cannot run {cmd[0]}: {e}") from e
    if p.returncode != 0:
        raise BenchError(
            f"{what} failed (exit {p.returncode}): {shlex.join(map(str, cmd))}"
            f"\n{p.stderr[-3000:]}")
    return p.stdout


def cpu_name():
    """The model name, with family/model/stepping (VMs often show a generic
    name)."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            if ":" not in line:
                if info:
                    break  # the first processor is enough
                continue
            k, v = (x.strip() for x in line.split(":", 1))
            info.setdefault(k, v)
    name = info.get("model name") or platform.processor() or "unknown CPU"
    ids = [f"{k} {info[k]}" for k in ("cpu family", "model", "stepping")
           if k in info]
    return f"{name} ({', '.join(ids)})" if ids else name


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return [x for x in ("avx2", "avx512f", "avx512_vnni",
                                    "avx512_bf16", "avx512_fp16", "amx_int8")
                        if x in have]
    return []


def git_commit():
    p = subprocess.run(["git", "-C", str(ROOT), "describe", "--always",
                        "--dirty"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "unknown"


def loadavg():
    return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])


def cache_args(cache_type):
    return ["-ctk", cache_type, "-ctv", cache_type] if cache_type else []


def peer_bench(bin_dir, model, threads, pp, tg, depth=0, cache_type=None):
    """One llama-bench run of each test in each load mode:
    {mode: {"pp": tok/s, "tg": tok/s}}."""
    out = run([bin_dir / "llama-bench", "-m", model, "-t", threads, "-p", pp,
               "-n", tg, "-d", depth, "-r", 1, "-o", "json",
               "-lm", ",".join(PEER_LOAD_MODES), *cache_args(cache_type)],
              "llama-bench")
    try:
        rows = json.loads(out)
    except json.JSONDecodeError as e:
        raise BenchError(f"llama-bench printed no JSON ({e}):\n{out[:2000]}")
    res = {}
    for row in rows:
        if row.get("n_depth", 0) != depth:
            continue
        n_prompt, n_gen = row.get("n_prompt"), row.get("n_gen")
        key = ("pp" if n_prompt == pp and n_gen == 0 else
               "tg" if n_prompt == 0 and n_gen == tg else None)
        mode = row.get("load_mode", PEER_LOAD_MODES[0])
        if key:
            res.setdefault(mode, {})[key] = float(row["avg_ts"])
    if set(res) != set(PEER_LOAD_MODES):
        raise BenchError(f"llama-bench ran load modes {sorted(res)}, not "
                         f"{list(PEER_LOAD_MODES)}:\n{out[:2000]}")
    return {m: check_tests(r, pp, tg, "llama-bench", out)
            for m, r in res.items()}


# `nucleus bench` prints one line per test: "pp512 93.12 tok/s", with -d
# "pp512 @ d4096 41.2 tok/s".
NUCLEUS_LINE = re.compile(
    r"^\s*(pp|tg)(\d+)(?:\s*@\s*d(\d+))?\s*[:=]?\s*"
    r"([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?\d+)?)\s*tok/s\b")


def parse_nucleus(out, pp, tg, depth=0):
    res = {}
    for line in out.splitlines():
        m = NUCLEUS_LINE.match(line)
        if not m:
            continue
        kind, n, value = m.group(1), int(m.group(2)), float(m.group(4))
        if int(m.group(3) or 0) != depth:
            continue
        if (kind == "pp" and n == pp) or (kind == "tg" and n == tg):
            res[kind] = value
    return check_tests(res, pp, tg, "nucleus bench", out)


def nucleus_bench(nucleus, model, threads, pp, tg, extra=(), depth=0):
    out = run([nucleus, "bench", "-m", model, "-t", threads, "-p", pp, "-g",
               tg, "-r", 1, *(["-d", depth] if depth else []), *extra],
              "nucleus bench")
    return parse_nucleus(out, pp, tg, depth)


def nucleus_kernels(nucleus, model, extra=()):
    """The kernel table `nucleus bench` reports ("kernels: amx")."""
    out = run([nucleus, "bench", "-m", model, "-p", 1, "-g", 0, "-r", 1,
               *extra], "nucleus bench")
    m = re.search(r"^kernels: (\S+)$", out, re.M)
    return m.group(1) if m else "?"


def nucleus_kv(nucleus, model):
    """What `nucleus info` says of the model's KV cache ("2048 bytes per
    position; recurrent state ...": windows, shared-KV layers and recurrent
    state included)."""
    out = run([nucleus, "info", model], "nucleus info")
    m = re.search(r"^KV cache \([^)]*\): (.+)$", out, re.M)
    if not m:
        raise BenchError(f"nucleus info {model} printed no 'KV cache' line")
    return m.group(1).strip()


def nucleus_ctx(nucleus, model):
    """The model's training context (`nucleus info`'s {arch}.context_length),
    or None when the file names none."""
    out = run([nucleus, "info", model], "nucleus info")
    m = re.search(r"\.context_length\s+\S+\s+(\d+)", out)
    return int(m.group(1)) if m else None


def check_depths(nucleus, models, depths, pp, tg):
    """Refuses, before any run, a depth whose test does not fit a model's
    context (nucleus holds n_ctx to it; llama.cpp would run past it)."""
    for label, path in models:
        ctx = nucleus_ctx(nucleus, path)
        need = max(depths) + max(pp, tg) + 1
        if ctx is not None and need > ctx:
            raise BenchError(
                f"{label}: depth {max(depths)} + {max(pp, tg)} tokens + 1 "
                f"need {need} positions, the model's context is {ctx} (the "
                f"deepest that fits: {ctx - max(pp, tg) - 1})")


def check_tests(res, pp, tg, who, out):
    want = [k for k, n in (("pp", pp), ("tg", tg)) if n > 0]
    missing = [k for k in want if k not in res or not res[k] > 0]
    if missing:
        raise BenchError(f"{who}: no positive result for "
                         f"{', '.join(missing)} in its output:\n{out[-2000:]}")
    return res


def shaped_model(name, peer_dir):
    """The file of a SHAPED name, made by scripts/make_bench_models.sh when
    missing."""
    family, qtype = SHAPED[name]
    out = run([ROOT / "scripts/make_bench_models.sh"],
              "scripts/make_bench_models.sh",
              env={**os.environ, "PEER_DIR": str(peer_dir),
                   "BENCH_MODELS": family})
    path = next((pathlib.Path(p) for p in out.split()
                 if pathlib.Path(p).name == f"{family}-bench.{qtype}.gguf"),
                None)
    if path is None:
        raise BenchError(f"make_bench_models.sh made no {name} file")
    return f"{name} {qtype}", path


def resolve_models(spec, peer_dir):
    """Model names (Q4_1, Q8_0, Q4_K_M, gemma3, ...) or .gguf paths ->
    [(label, path)]."""
    made = None
    models = []
    for item in [s.strip() for s in spec.split(",") if s.strip()]:
        if item.upper() in SHAPED:
            models.append(shaped_model(item.upper(), peer_dir))
        elif item.upper() == "Q4_1":
            if not DEFAULT_MODEL.exists():
                run([ROOT / "scripts/fetch_model.sh"], "fetching the model")
            models.append(("Q4_1", DEFAULT_MODEL))
        elif item.lower() == "gemma3":
            if not GEMMA3_MODEL.exists():
                run([ROOT / "scripts/fetch_gemma.sh"], "fetching Gemma 3 270M")
            models.append(("Gemma 3 270M Q4_K_M", GEMMA3_MODEL))
        elif item.upper() in MADE_TYPES + MOE_TYPES:
            if made is None:
                out = run([ROOT / "scripts/make_bench_models.sh"],
                          "scripts/make_bench_models.sh",
                          env={**os.environ, "PEER_DIR": str(peer_dir),
                               "MOE_NAME": MOE_NAME})
                made = [pathlib.Path(p) for p in out.split()]
            moe = item.upper() in MOE_TYPES
            base = MOE_NAME if moe else DEFAULT_MODEL.name.split(".")[0]
            qtype = item.upper()[4:] if moe else item.upper()
            path = next((p for p in made if p.name.startswith(base + ".")
                         and f".{qtype}." in p.name), None)
            if path is None:
                raise BenchError(f"make_bench_models.sh made no {item} file")
            label = item.upper()
            if ".from-" in path.name:
                label += " (requant. " + path.name.split(".from-")[1].split(
                    ".gguf")[0] + ")"
            models.append((label, path))
        elif item.endswith(".gguf"):
            if not pathlib.Path(item).is_file():
                raise BenchError(f"model file {item} does not exist")
            models.append((pathlib.Path(item).name, pathlib.Path(item)))
        else:
            raise BenchError(f"--models: '{item}' is neither Q4_1, "
                             f"{', '.join(MADE_TYPES + MOE_TYPES)}, "
                             f"{', '.join(SHAPED)}, gemma3 nor a .gguf path")
    if not models:
        raise BenchError("--models: no model given")
    return models


def fmt(x):
    return f"{x:.1f}" if x is not None and x == x else "-"


def make_record(command, date, load_before, load_after, cpu, commit, kernels,
                rounds, pp, tg, rows, kv=None):
    """One run as data (the element bench/results/speed.json lists): rows
    of (label, threads, medians {(engine, test): tok/s}, samples)."""
    out = []
    for label, t, med, samples in rows:
        row = {"model": label, "threads": t,
               "llama.cpp": {}, "nucleus": {}, "samples": {}}
        for k in ("pp", "tg"):
            for who, key in (("llama.cpp", "peer"), ("nucleus", "nucleus")):
                v = med.get((key, k))
                if v is not None and v == v:
                    row[who][k] = round(v, 2)
        for (e, k), v in samples.items():
            if v:
                row["samples"][f"{e} {k}"] = [round(x, 2) for x in v]
        out.append(row)
    return {"date": date, "commit": commit, "cpu": cpu, "command": command,
            "kernels": kernels, "load_before": load_before,
            "load_after": load_after, "rounds": rounds, "pp": pp, "tg": tg,
            "rows": out, "kv": kv or {}}


def ratio(row, k):
    """nucleus / llama.cpp for test k of a recorded row (or the ratio the
    row records when it lacks the speeds)."""
    p, n = row.get("llama.cpp", {}).get(k), row.get("nucleus", {}).get(k)
    if p and n:
        return n / p
    return row.get("ratio", {}).get(k)


def table(record):
    """The Markdown table of a recorded run: model, threads, then for
    prefill and decode llama.cpp's and nucleus's tok/s and their ratio."""
    pp, tg = f"pp{record['pp']}", f"tg{record['tg']}"
    lines = [f"| model | threads | {pp} llama.cpp | {pp} nucleus | ratio "
             f"| {tg} llama.cpp | {tg} nucleus | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in record["rows"]:
        cells = []
        for k in ("pp", "tg"):
            r = ratio(row, k)
            cells += [fmt(row.get("llama.cpp", {}).get(k)),
                      fmt(row.get("nucleus", {}).get(k)),
                      f"{r:.2f}" if r is not None else "-"]
        lines.append(f"| {row['model']} | {row['threads']} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(record):
    """What docs/PERFORMANCE.md holds for a run: the command, the CPU, the
    commit and the date in one line, then the table."""
    parts = [f"`{record['command']}`", record["cpu"],
             f"commit {record['commit']}", f"{record['date']} UTC"]
    if record.get("kernels"):
        parts.append(f"kernels {record['kernels']}")
    if record.get("load_before"):
        parts.append(f"load average before {record['load_before']}")
    rounds = record.get("rounds")
    if rounds:
        quick = "" if rounds >= MIN_ROUNDS else " (a quick run)"
        parts.append(f"medians of {rounds} interleaved runs, tok/s{quick}")
    return ", ".join(parts) + ".\n\n" + table(record) + kv_lines(record)


def kv_lines(record):
    """The models' KV cache per position (`nucleus info`), a list under the
    table; empty for runs recorded without it."""
    kv = record.get("kv") or {}
    if not kv:
        return ""
    return "\n\nKV cache (nucleus info):\n" + "\n".join(
        f"- {label}: {text}" for label, text in kv.items())


def load_records(path):
    p = pathlib.Path(path)
    if not p.exists():
        return []
    data = json.loads(p.read_text())
    if not isinstance(data, list):
        raise BenchError(f"{path}: not a JSON list of runs")
    return data


def append_record(path, record):
    runs = load_records(path)
    runs.append(record)
    pathlib.Path(path).write_text(json.dumps(runs, indent=1) + "\n")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models",
                    default=",".join(("Q4_1",) + MADE_TYPES + MOE_TYPES[1:] +
                                     ("gemma3",)),
                    help="comma list of Q4_1, Q8_0, Q4_K_M, MOE_Q8_0, "
                    "MOE_Q4_K_M, gemma3 or .gguf paths (default: all but "
                    "MOE_Q8_0)")
    ap.add_argument("--model", help="one .gguf file (same as --models PATH)")
    ap.add_argument("--threads", default="1,2",
                    help="comma list of thread counts (default: 1,2)")
    ap.add_argument("--rounds", type=int, default=MIN_ROUNDS,
                    help=f"interleaved runs of each engine (default "
                    f"{MIN_ROUNDS}; fewer only for quick checks)")
    ap.add_argument("--pp", type=int, default=512, help="prompt tokens")
    ap.add_argument("--tg", type=int, default=128, help="generated tokens")
    ap.add_argument("--depth", default="0",
                    help="comma list of KV depths (llama-bench -d; default 0)")
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    ap.add_argument("--peer-dir", default="/opt/peer/llama.cpp")
    ap.add_argument("--no-repack", action="store_true",
                    help="run nucleus in the float order of llama.cpp "
                    "--no-repack (llama.cpp keeps its defaults)")
    ap.add_argument("--row-orders", choices=("reuse", "split", "llama"),
                    default=None,
                    help="nucleus's --row-orders (default: its own, reuse); "
                    "split: flash attention's keys over the threads "
                    "(docs/forward.md)")
    ap.add_argument("--cache-type", choices=("f16", "bf16", "q8_0", "q4_0"),
                    help="K and V cache type of both engines (default: "
                         "their default, f16)")
    ap.add_argument("--no-make", action="store_true",
                    help="do not run make first (use --nucleus as it is)")
    ap.add_argument("--markdown", action="store_true",
                    help="print only the table, as docs/PERFORMANCE.md "
                    "holds it")
    ap.add_argument("--json", metavar="FILE",
                    help="append the run to FILE (a JSON list of runs, "
                    "e.g. bench/results/speed.json)")
    ap.add_argument("--show", metavar="FILE",
                    help="print the Markdown table of a run recorded in FILE "
                    "and exit (runs nothing)")
    ap.add_argument("--run", type=int, default=-1,
                    help="with --show: which run of the list (default -1, "
                    "the last)")
    a = ap.parse_args()
    if a.show:
        try:
            if not pathlib.Path(a.show).is_file():
                raise BenchError("no such file")
            runs = load_records(a.show)
            if not -len(runs) <= a.run < len(runs):
                raise BenchError(f"--run {a.run}: the file holds "
                                 f"{len(runs)} run(s)")
            print(markdown(runs[a.run]))
        except (BenchError, IndexError, KeyError, ValueError) as e:
            print(f"bench/speed.py: error: --show {a.show}: {e}",
                  file=sys.stderr)
            return 1
        return 0
    command = shlex.join(["bench/speed.py", *sys.argv[1:]])
    try:
        threads = [int(x) for x in a.threads.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--threads: expected numbers like 1,2, got '{a.threads}'")
    if not threads or min(threads) < 1:
        ap.error("--threads: thread counts must be >= 1")
    try:
        depths = [int(x) for x in a.depth.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--depth: expected numbers like 0,4096, got '{a.depth}'")
    if not depths or min(depths) < 0:
        ap.error("--depth: depths must be >= 0")
    if a.rounds < 1 or a.pp < 0 or a.tg < 0 or a.pp + a.tg == 0:
        ap.error("--rounds must be >= 1, --pp/--tg >= 0 and not both 0")

    try:
        if not a.no_make:
            run(["make", "-C", ROOT, "-s", f"-j{os.cpu_count() or 1}"],
                "make (nucleus)")
        if not os.access(a.nucleus, os.X_OK):
            raise BenchError(f"{a.nucleus} is not an executable")
        out = run([ROOT / "bench/build_peer.sh", a.peer_dir],
                  "bench/build_peer.sh")
        bin_dir = pathlib.Path(out.strip().splitlines()[-1])
        models = resolve_models(a.model or a.models, a.peer_dir)
        extra = (["--no-repack"] if a.no_repack else []) + \
            cache_args(a.cache_type) + \
            (["--row-orders", a.row_orders] if a.row_orders else [])
        check_depths(a.nucleus, models, depths, a.pp, a.tg)
        kernels = nucleus_kernels(a.nucleus, models[0][1], extra)
        kv = {label: nucleus_kv(a.nucleus, path) for label, path in models}

        load_before = loadavg()
        started = datetime.datetime.now(datetime.timezone.utc)
        rows = []
        for label, path in models:
            for t in threads:
                for d in depths:
                    engines = [f"peer {m}" for m in PEER_LOAD_MODES] + \
                        ["nucleus"]
                    s = {(e, k): [] for e in engines for k in ("pp", "tg")}
                    for r in range(a.rounds):  # interleave the two engines
                        print(f"[{label}, {t} thread(s), depth {d}, round "
                              f"{r + 1}/{a.rounds}]", file=sys.stderr, flush=True)
                        by_mode = peer_bench(bin_dir, path, t, a.pp, a.tg, d,
                                             a.cache_type)
                        for m, res in by_mode.items():
                            for k, v in res.items():
                                s[(f"peer {m}", k)].append(v)
                        for k, v in nucleus_bench(a.nucleus, path, t, a.pp,
                                                  a.tg, extra, d).items():
                            s[("nucleus", k)].append(v)
                    med = {k: statistics.median(v) if v else float("nan")
                           for k, v in s.items()}
                    # llama.cpp at its best: the load mode of the higher
                    # median, per test (not the better sample of each
                    # round, which would favour it by the noise alone)
                    for k in ("pp", "tg"):
                        meds = [med[(f"peer {m}", k)] for m in PEER_LOAD_MODES
                                if s[(f"peer {m}", k)]]
                        med[("peer", k)] = max(meds) if meds else float("nan")
                    label_d = label if d == 0 else f"{label} @ d{d}"
                    if a.cache_type:
                        label_d += f" (KV {a.cache_type})"
                    if a.row_orders:
                        label_d += f" ({a.row_orders})"
                    rows.append((label_d, t, med, s))
        load_after = loadavg()
    except BenchError as e:
        print(f"bench/speed.py: error: {e}", file=sys.stderr)
        return 1

    forced = os.environ.get("NUCLEUS_KERNELS")
    record = make_record(
        command=command, date=f"{started:%Y-%m-%d %H:%M}",
        load_before=load_before, load_after=load_after,
        cpu=f"{cpu_name()} ({os.cpu_count()} logical cores; "
            f"{' '.join(cpu_flags())})",
        commit=git_commit(),
        kernels=kernels + (f" (NUCLEUS_KERNELS={forced})" if forced else "")
        + (" (--no-repack)" if a.no_repack else ""),
        rounds=a.rounds, pp=a.pp, tg=a.tg, rows=rows, kv=kv)
    if a.json:
        append_record(a.json, record)
    quick = "" if a.rounds >= MIN_ROUNDS else \
        f" (quick run: fewer than {MIN_ROUNDS} rounds, not for the record)"
    busy = float(load_before.split()[0])
    warning = None
    if busy > 0.5:
        warning = (f"warning: load average {busy} before the run on "
                   f"{os.cpu_count()} cores: other jobs shared the CPUs, so "
                   f"the multi-thread figures (llama.cpp's spinning threads "
                   f"most) are not representative")
    if a.markdown:
        if warning:
            print(warning, file=sys.stderr)
        print(markdown(record))
        return 0
    print(f"command: {command}")
    print(f"date: {record['date']} UTC; load average (1/5/15 min) "
          f"before {load_before}, after {load_after}")
    print(f"CPU: {record['cpu']}")
    print(f"llama.cpp: {bin_dir} (llama-cpp-python sdist, clang, native); "
          f"nucleus: {a.nucleus} (commit {record['commit']}), kernels "
          f"{record['kernels']}")
    print(f"medians of {a.rounds} interleaved runs per engine, tok/s{quick}; "
          f"llama.cpp per test at the -lm mode of the higher median of "
          f"{' and '.join(PEER_LOAD_MODES)}, nucleus at its default load "
          f"(the file read into 2 MiB pages)")
    if warning:
        print(warning)
    if any("requant." in label for label, _ in models):
        print("requant. Q4_1: made by llama-quantize --allow-requantize from "
              "the Q4_1 file's dequantized weights (no F16 GGUF of the model "
              "at hand); scripts/make_bench_models.sh")
    print()
    print(table(record) + kv_lines(record))
    print()
    print("samples (tok/s, in run order):")
    for label, t, _, s in rows:
        for e in [f"peer {m}" for m in PEER_LOAD_MODES] + ["nucleus"]:
            for k in ("pp", "tg"):
                if s[(e, k)]:
                    print(f"  {label} t={t} {e:10s} {k}: "
                          + " ".join(f"{v:.1f}" for v in s[(e, k)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
