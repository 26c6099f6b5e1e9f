#!/usr/bin/env python3
"""A model at (nearly) its full context: does it run, what does it cost.

Prefills a prompt of N tokens (Debian's /usr/share/common-licenses texts,
concatenated, tokenized by `nucleus tokenize`, cut to N) with `nucleus run
--tokens ... -c CTX -n GEN --ignore-eos`, then reports: that it finished
(finish: length, the prompt and generated counts), the wall time, nucleus's
own prefill and decode rates, its peak RSS (ru_maxrss of the child) against
the model file + the KV cache of the positions held + 64 MiB, and the KV
cache's bytes per position and in all. With --llama it also runs
llama-cpp-python on the same ids (n_ctx CTX, flash attention off, no
repack) and compares the greedy tokens (nucleus then runs with -fa off and
--no-repack, the same float orders).

This is a check with a cost report, not a speed benchmark: one run, on
whatever machine it is.

usage: bench/long_context.py [--model gemma3|default|PATH] [--tokens N]
                             [--ctx CTX] [--gen 16] [--threads 2] [--llama]
  Gemma 3 at 32k: bench/long_context.py --model gemma3 --tokens 32000 --ctx 32768
  The default model at 8k: bench/long_context.py --tokens 8000 --ctx 8192
  Quick check that it runs: bench/long_context.py --tokens 200 --ctx 256 --gen 4
"""
import argparse
import glob
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = {
    "default": ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": ROOT / "models/gemma-3-270m-q4_k_m.gguf",
}
NUCLEUS = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
MIB = 1 << 20
SLACK = 64 * MIB
KV_BLOCK_TOKENS = 16
KV_ELEM_BYTES = 2  # F16 K and V

def kv_per_position(model):
    """(K + V bytes per position over all layers, context_length), from
    `nucleus info` (gguf's reader is slow on a 262k vocabulary)."""
    info = subprocess.run([NUCLEUS, "info", str(model)], capture_output=True,
                          text=True, check=True).stdout
    kv = dict(re.findall(r"^\s+(\S+)\s+(?:UINT32|INT32|UINT64)\s+(\d+)\s*$",
                         info, flags=re.MULTILINE))
    arch = re.search(r"general\.architecture\s+STRING\s+\"?([^\"\s]+)", info).group(1)

    def field(key, default=None):
        v = kv.get(f"{arch}.{key}")
        if v is None:
            if default is None:
                raise KeyError(f"{arch}.{key}")
            return default
        return int(v)

    n_head = field("attention.head_count")
    hd = field("attention.key_length", field("embedding_length") // n_head)
    hdv = field("attention.value_length", hd)
    return (field("block_count") * field("attention.head_count_kv", n_head)
            * (hd + hdv) * KV_ELEM_BYTES, field("context_length"))


def tokenize(model, text):
    out = subprocess.run([NUCLEUS, "tokenize", "-m", str(model), "--ids",
                          "--stdin"], input=text.encode(), capture_output=True,
                         check=True).stdout
    return json.loads(out)


def prompt_text(model, n):
    """A prefix of the license texts of about n tokens (at most n), and its
    ids. (A text file, not --tokens: 32k ids overflow one argument.)"""
    text = "\n".join(open(p, encoding="utf-8", errors="replace").read()
                     for p in sorted(glob.glob("/usr/share/common-licenses/*"))
                     if os.path.isfile(p))
    ids = tokenize(model, text)
    if len(ids) < n:
        raise SystemExit(f"only {len(ids)} tokens of text, asked for {n}")
    cut = int(len(text) * n / len(ids))
    for _ in range(8):
        part = text[:cut]
        ids = tokenize(model, part)
        if n * 0.98 <= len(ids) <= n:
            break
        cut = int(cut * n / len(ids) * (0.995 if len(ids) > n else 1.0))
    if len(ids) > n:
        raise SystemExit(f"cannot cut the text to {n} tokens")
    return part, ids


def run_nucleus(args):
    with tempfile.TemporaryDirectory() as d:
        rss, log = os.path.join(d, "rss"), os.path.join(d, "log")
        launcher = ("import os, subprocess, sys\n"
                    "p = subprocess.Popen(sys.argv[3:], stdout=open(sys.argv[2], 'w'),"
                    " stderr=subprocess.STDOUT)\n"
                    "_, status, usage = os.wait4(p.pid, 0)\n"
                    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
                    "sys.exit(os.waitstatus_to_exitcode(status))\n")
        t0 = time.time()
        rc = subprocess.run([sys.executable, "-S", "-c", launcher, rss, log,
                             *args]).returncode
        wall = time.time() - t0
        return rc, open(log).read(), int(open(rss).read() or 0) * 1024, wall


def run_llama(model, ids, ctx, gen, threads):
    import llama_cpp as L
    import numpy as np

    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = False
    m = L.llama_model_load_from_file(str(model).encode(), mp)
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(m))
    cp = L.llama_context_default_params()
    cp.n_ctx = ctx
    cp.n_batch = ctx
    cp.n_ubatch = 512
    cp.n_threads = cp.n_threads_batch = threads
    cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
    c = L.llama_init_from_model(m, cp)
    batch = L.llama_batch_init(len(ids), 0, 1)
    out, cur, pos = [], list(ids), 0
    t0 = time.time()
    while len(out) < gen:
        batch.n_tokens = len(cur)
        for i, t in enumerate(cur):
            batch.token[i], batch.pos[i] = t, pos + i
            batch.n_seq_id[i], batch.seq_id[i][0] = 1, 0
            batch.logits[i] = 1 if i == len(cur) - 1 else 0
        if L.llama_decode(c, batch) != 0:
            raise SystemExit("llama.cpp: decode failed")
        pos += len(cur)
        lg = np.ctypeslib.as_array(L.llama_get_logits_ith(c, len(cur) - 1),
                                   shape=(n_vocab,))
        cur = [int(np.argmax(lg))]
        out.append(cur[0])
    wall = time.time() - t0
    L.llama_batch_free(batch)
    L.llama_free(c)
    L.llama_model_free(m)
    return out, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--tokens", type=int, default=8000)
    ap.add_argument("--ctx", type=int, default=0,
                    help="context size (default: the model's)")
    ap.add_argument("--gen", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--llama", action="store_true",
                    help="compare the greedy tokens with llama.cpp's")
    a = ap.parse_args()
    model = pathlib.Path(MODELS.get(a.model, a.model))
    per_pos, n_ctx_train = kv_per_position(model)
    ctx = a.ctx or n_ctx_train
    if a.tokens + a.gen > ctx:
        raise SystemExit(f"{a.tokens} + {a.gen} tokens do not fit in {ctx}")
    text, ids = prompt_text(model, a.tokens)
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as pf:
        pf.write(text)
        pf.flush()
        args = [NUCLEUS, "run", "-m", str(model), "-f", pf.name, "-n",
                str(a.gen), "--ignore-eos", "--logprobs", "1", "-t",
                str(a.threads), "-c", str(ctx)]
        if a.llama:
            args += ["-fa", "off", "--no-repack"]
        rc, out, peak, wall = run_nucleus(args)
    if rc != 0:
        raise SystemExit(f"nucleus failed ({rc}):\n{out[-2000:]}")
    got = [int(m.group(1)) for m in
           re.finditer(r"^(\d+)\s+'", out, flags=re.MULTILINE)]
    summary = re.search(r"finish: (\w+)\nprompt: (\d+) tokens, ([\d.]+) tok/s"
                        r" \| generation: (\d+) tokens, ([\d.]+) tok/s", out)
    if not summary or summary.group(1) != "length":
        raise SystemExit(f"no finish: length summary:\n{out[-2000:]}")
    n_prompt = int(summary.group(2))
    if n_prompt != len(ids):
        raise SystemExit(f"nucleus run read {n_prompt} prompt tokens, "
                         f"tokenize gave {len(ids)}")
    positions = n_prompt + a.gen
    kv_used = -(-positions // KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS * per_pos
    file_bytes = model.stat().st_size
    bound = file_bytes + kv_used + SLACK
    print(f"model {model.name}: {n_prompt} prompt + {a.gen} generated = "
          f"{positions} positions of a {ctx}-position context "
          f"(training context {n_ctx_train})")
    print(f"nucleus: finish {summary.group(1)}, wall {wall:.1f} s; prefill "
          f"{summary.group(3)} tok/s, decode {summary.group(5)} tok/s "
          f"(one run, {a.threads} threads)")
    print(f"KV cache (F16 K and V, every layer): {per_pos} bytes per "
          f"position, {kv_used / MIB:.1f} MiB for {positions} positions, "
          f"{per_pos * ctx / MIB:.1f} MiB for the whole context")
    print(f"peak RSS {peak / MIB:.1f} MiB <= file {file_bytes / MIB:.1f} + KV "
          f"{kv_used / MIB:.1f} + 64 = {bound / MIB:.1f} MiB: "
          f"{'yes' if peak <= bound else 'NO'}")
    beyond = peak - file_bytes
    print(f"peak RSS beyond the file: {beyond / MIB:.1f} MiB (KV held and "
          f"scratch), {100 * beyond / kv_used:.0f}% of the full cache of "
          f"{positions} positions (sliding-window layers hold one window)")
    ok = peak <= bound
    if a.llama:
        ref, lwall = run_llama(model, ids, ctx, a.gen, a.threads)
        same = got == ref
        print(f"llama.cpp (n_ctx {ctx}, -fa off, no repack): {lwall:.1f} s; "
              f"greedy tokens {'identical' if same else 'DIFFER'}"
              + ("" if same else f":\n  nucleus   {got}\n  llama.cpp {ref}"))
        ok = ok and same
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
