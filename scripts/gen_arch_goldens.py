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

--fa: flash attention ON (gen_logits_golden.py --fa), and the first two
prompts of gen_logits_golden.py cut to N_TOKENS_FA (96) tokens: at 64 rows
or more llama.cpp runs a batch through its tiled flash path
(ggml_compute_forward_flash_attn_ext_tiled), so each prompt in one batch
takes it, and the gemma windows (16) are far shorter than the prompt.
Writes arch_<arch>_fa.txt. --fa --decode: the same tokens one per
llama_decode (teacher-forced), llama.cpp's per-row flash path
(..._f16_one_chunk, the order of every generated token):
arch_<arch>_fa_decode.txt.

It also checks every golden: all logits finite, and the top-1 prediction not
the same at every position (a degenerate model would be useless as a test).

Usage: scripts/gen_arch_goldens.py [--fa [--decode]] [--seed N] [--keep DIR]
           [ARCH ...]
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
N_TOKENS_FA = 96  # >= 64: llama.cpp's tiled flash path for the batch
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


def golden(arch, path, seed, out, fa=False, decode=False):
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = False  # no weight repacking
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise SystemExit(f"{arch}: llama.cpp cannot load {path}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    G.FA, G.DECODE = fa, decode  # read by context_params and prompt_lines
    cp = G.context_params()
    flags = ("--fa " if fa else "") + ("--decode " if decode else "")
    prompts, n_tokens = (G.PROMPTS[:2], N_TOKENS_FA) if fa else (PROMPTS,
                                                                N_TOKENS)
    lines = [
        "# nucleus logits golden v1 (scripts/gen_arch_goldens.py): llama.cpp "
        f"{L.__version__} via llama-cpp-python, flash attention "
        + ("on" if fa else "off") + ", no repack, F16 KV cache"
        + (", one token per decode" if decode else ""),
        f"# file: scripts/make_arch_gguf.py {arch} OUT.gguf --seed {seed}",
        f"# seed {seed}",
        f"# gguf sha256 {sha}",
        f"# regenerate: scripts/gen_arch_goldens.py {flags}--seed {seed} "
        f"{arch}",
        f"model arch_{arch}.gguf",
        f"n_vocab {n_vocab}",
        f"topk {TOPK}",
        f"prompts {len(prompts)}",
    ]
    top1 = []
    for text in prompts:
        toks = G.tokenize(vocab, text)
        if len(toks) < n_tokens:
            raise SystemExit(f"prompt too short: {len(toks)} tokens")
        toks = toks[:n_tokens]
        more, tops = G.prompt_lines(model, cp, n_vocab, toks)
        lines += more
        top1 += tops
    L.llama_model_free(model)
    distinct = len(set(top1))
    # the 96-token prompts: qwen2's random weights repeat a few tokens on
    # long prose (40 distinct of 192), still far from one constant answer
    if distinct < len(top1) // (6 if fa else 4):
        raise SystemExit(f"{arch}: degenerate: {distinct} distinct top-1 "
                         f"over {len(top1)} positions")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}: {len(prompts)} prompts of {n_tokens} tokens, "
          f"{distinct}/{len(top1)} distinct top-1")


def main(argv):
    seed, keep, archs, fa, decode = SEED, None, [], False, False
    it = iter(argv)
    for a in it:
        if a == "--fa":
            fa = True
        elif a == "--decode":
            decode = True
        elif a == "--seed":
            seed = int(next(it))
        elif a == "--keep":
            keep = next(it)
        else:
            archs.append(a)
    if decode and not fa:
        raise SystemExit("--decode needs --fa (the FA-off goldens are one "
                         "batch)")
    # (the K-quant variants have no golden: random blocks, for invariance)
    archs = archs or [a for a, c in make_arch_gguf.ARCHS.items()
                      if not c.get("kquant")]
    suffix = ("_fa" if fa else "") + ("_decode" if decode else "")
    L.llama_backend_init()
    with tempfile.TemporaryDirectory() as tmp:
        d = keep or tmp
        os.makedirs(d, exist_ok=True)
        for arch in archs:
            path = os.path.join(d, f"arch_{arch}.gguf")
            # the same command the C test will run
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_arch_gguf.py"),
                            arch, path, "--seed", str(seed)], check=True)
            out = os.path.join(OUTDIR, f"arch_{arch}{suffix}.txt")
            golden(arch, path, seed, out, fa, decode)


if __name__ == "__main__":
    main(sys.argv[1:])
