#!/usr/bin/env python3
"""Tokenizer benchmark (not a test): nucleus vs llama.cpp (llama-cpp-python)
in the same run, on the default model's vocab.

  1. 1 MB of mixed text (prose, code, CJK, emoji, numbers, whitespace, from
     the tokenizer corpus): throughput of both and the ratio.
  2. 10 KB, 100 KB and 1 MB without any space (one huge word for the
     pre-tokenizer): nucleus's time must grow about linearly.

usage: make bench-tokenizer   (or python3 bench/tokenizer.py [MODEL])
"""
import os
import pathlib
import random
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "bench/out"
MODEL = sys.argv[1] if len(sys.argv) > 1 else str(
    ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf")
BIN = os.environ.get("TOKENIZER_BENCH", str(ROOT / "build/release/bench/tokenizer"))


def texts():
    OUT.mkdir(parents=True, exist_ok=True)
    corpus = []
    for line in (ROOT / "tests/data/tokenizer/corpus.hex").read_text().split():
        b = bytes.fromhex(line)
        try:
            b.decode()
            corpus.append(b)
        except UnicodeDecodeError:
            pass
    rng = random.Random(7)
    mixed = bytearray()
    while len(mixed) < 1 << 20:
        mixed += rng.choice(corpus) + b" "
    files = {"mixed_1MB": bytes(mixed[:1 << 20])}
    letters = "abcdefghijklmnopqrstuvwxyz"
    for name, n in [("nospace_10KB", 10 << 10), ("nospace_100KB", 100 << 10),
                    ("nospace_1MB", 1 << 20)]:
        files[name] = "".join(rng.choice(letters) for _ in range(n)).encode()
    paths = {}
    for name, data in files.items():
        p = OUT / f"tok_{name}.txt"
        p.write_bytes(data)
        paths[name] = p
    return files, paths


GEMMA = ROOT / "models/gemma-3-270m-q4_k_m.gguf"


def nucleus(paths, names, reps, model=MODEL):
    r = subprocess.run([BIN, str(model), str(reps)] + [str(paths[n]) for n in names],
                       capture_output=True, text=True, check=True)
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts[0] == "load":
            continue
        out[pathlib.Path(parts[0]).stem[4:]] = (float(parts[5]), int(parts[3]))
    return out


def llama(files, names, reps, model=MODEL):
    from llama_cpp import Llama
    m = Llama(model_path=str(model), vocab_only=True, verbose=False)
    out = {}
    for n in names:
        best = 1e30
        for _ in range(reps):
            t = time.process_time()
            ids = m.tokenize(files[n], add_bos=False, special=False)
            best = min(best, time.process_time() - t)
        out[n] = (best, len(ids))
    return out


def main():
    files, paths = texts()
    ours = nucleus(paths, list(files), 3)
    ref = llama(files, ["mixed_1MB", "nospace_10KB", "nospace_100KB"], 3)
    t, n = ours["mixed_1MB"]
    rt, rn = ref["mixed_1MB"]
    print(f"mixed 1 MB: nucleus {t * 1e3:.1f} ms ({1 / t:.2f} MB/s, {n} tokens)"
          f", llama.cpp {rt * 1e3:.1f} ms ({1 / rt:.2f} MB/s, {rn} tokens)")
    print(f"  ratio nucleus/llama.cpp throughput: {rt / t:.2f}x"
          f"  (same token count: {n == rn}; ids are checked by the unit tests)")
    if GEMMA.exists():  # SentencePiece (scripts/fetch_gemma.sh)
        t, n = nucleus(paths, ["mixed_1MB"], 3, GEMMA)["mixed_1MB"]
        rt, rn = llama(files, ["mixed_1MB"], 1, GEMMA)["mixed_1MB"]
        print(f"Gemma 3 (SPM) mixed 1 MB: nucleus {t * 1e3:.1f} ms, llama.cpp "
              f"{rt * 1e3:.1f} ms: {rt / t:.2f}x (same token count: {n == rn})")
    print("no spaces (one word):")
    base = ours["nospace_10KB"][0]
    for name in ["nospace_10KB", "nospace_100KB", "nospace_1MB"]:
        t, n = ours[name]
        extra = ""
        if name in ref:
            extra = f", llama.cpp {ref[name][0] * 1e3:.1f} ms"
        print(f"  {name:14s} nucleus {t * 1e3:8.2f} ms ({t / base:6.1f}x the "
              f"10 KB time, {n} tokens){extra}")


if __name__ == "__main__":
    main()
