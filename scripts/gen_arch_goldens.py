#!/usr/bin/env python3
"""Teacher-forced logits goldens from llama.cpp for the random-weight files of
scripts/make_arch_gguf.py (issue 17).

For each ARCH (default: all of them) it writes the file with a fixed seed to a
temporary directory, loads it with llama.cpp through llama-cpp-python, decodes
each of the PROMPTS (tokenized by llama.cpp, cut to N_TOKENS) in one batch with
logits for every position, and writes tests/data/logits/arch_<arch>.txt in the
format of tests/data/logits/smollm2_q4_1.txt (see scripts/gen_logits_golden.py),
with '#' lines recording the generator command, seed and the sha256 of the GGUF
so a test can check that it regenerated the same file.

llama.cpp settings exactly as scripts/gen_logits_golden.py: flash attention
OFF, weight repacking OFF (use_extra_bufts = false), default F16 K/V cache,
n_ctx = n_batch = n_ubatch = 512, 2 threads.

It also checks every golden: all logits finite, and the top-1 prediction not
the same at every position (a degenerate model would be useless as a test).

Usage: scripts/gen_arch_goldens.py [--seed N] [--keep DIR] [ARCH ...]
"""
import hashlib
import os
import subprocess
import sys
import tempfile

import llama_cpp as L

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gen_logits_golden as G  # noqa: E402
import make_arch_gguf  # noqa: E402

OUTDIR = os.path.join(ROOT, "tests", "data", "logits")
TOPK = G.TOPK
N_TOKENS = 48  # > 2 x the sliding window (16) of the gemma files
SEED = 17

PROMPTS = [
    "The history of the printing press begins in the fifteenth century, "
    "when Johannes Gutenberg combined movable metal type, oil-based ink and "
    "a wooden screw press adapted from those used to make wine. Within fifty "
    "years, presses were operating in more than two hundred cities.",
    "def merge_sort(items):\n"
    "    if len(items) <= 1:\n"
    "        return list(items)\n"
    "    mid = len(items) // 2\n"
    "    left = merge_sort(items[:mid])\n"
    "    right = merge_sort(items[mid:])\n"
    "    return merge(left, right)\n",
]


def golden(arch, path, seed, out):
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = False  # no weight repacking
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise SystemExit(f"{arch}: llama.cpp cannot load {path}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    cp = G.context_params()
    lines = [
        "# nucleus logits golden v1 (scripts/gen_arch_goldens.py): llama.cpp "
        f"{L.__version__} via llama-cpp-python, flash attention off, "
        "no repack, F16 KV cache",
        f"# file: scripts/make_arch_gguf.py {arch} OUT.gguf --seed {seed}",
        f"# seed {seed}",
        f"# gguf sha256 {sha}",
        f"# regenerate: scripts/gen_arch_goldens.py --seed {seed} {arch}",
        f"model arch_{arch}.gguf",
        f"n_vocab {n_vocab}",
        f"topk {TOPK}",
        f"prompts {len(PROMPTS)}",
    ]
    top1 = []
    for text in PROMPTS:
        toks = G.tokenize(vocab, text)
        if len(toks) < N_TOKENS:
            raise SystemExit(f"prompt too short: {len(toks)} tokens")
        toks = toks[:N_TOKENS]
        more, tops = G.prompt_lines(model, cp, n_vocab, toks)
        lines += more
        top1 += tops
    L.llama_model_free(model)
    distinct = len(set(top1))
    if distinct < len(top1) // 4:
        raise SystemExit(f"{arch}: degenerate: {distinct} distinct top-1 "
                         f"over {len(top1)} positions")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}: {len(PROMPTS)} prompts of {N_TOKENS} tokens, "
          f"{distinct}/{len(top1)} distinct top-1")


def main(argv):
    seed, keep, archs = SEED, None, []
    it = iter(argv)
    for a in it:
        if a == "--seed":
            seed = int(next(it))
        elif a == "--keep":
            keep = next(it)
        else:
            archs.append(a)
    archs = archs or list(make_arch_gguf.ARCHS)
    L.llama_backend_init()
    with tempfile.TemporaryDirectory() as tmp:
        d = keep or tmp
        os.makedirs(d, exist_ok=True)
        for arch in archs:
            path = os.path.join(d, f"arch_{arch}.gguf")
            # the same command the C test will run
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_arch_gguf.py"),
                            arch, path, "--seed", str(seed)], check=True)
            golden(arch, path, seed, os.path.join(OUTDIR, f"arch_{arch}.txt"))


if __name__ == "__main__":
    main(sys.argv[1:])
