#!/usr/bin/env python3
"""llama.cpp's greedy continuation of an ~8,000-token prompt on the default
model at its full context (n_ctx 8192 = its n_ctx_train), for
tests/e2e/test_long_context.py.

The prompt: the GPL-3 text, then the GPL-2 text (Debian's
/usr/share/common-licenses, present on every Debian system), tokenized by
llama.cpp (BOS as the model asks, special tokens parsed) and cut to
N_PROMPT tokens. Decoded in ubatches of 512 (one llama_decode of the whole
prompt, n_batch 8192), then one token per llama_decode, each the argmax of
the last logits, N_GEN tokens (an end-of-generation token is kept and
decoding goes on, as `nucleus run --ignore-eos`). Flash attention off, no
weight repacking (use_extra_bufts false: llama.cpp --no-repack, whose float
order nucleus --no-repack follows), F16 KV cache, 2 threads.

Writes tests/data/greedy/smollm2_long_8k.json: the source files, N_PROMPT,
the sha256 of the prompt's ids (the test tokenizes the same text with
nucleus and checks it), and the continuation's ids.

Usage: scripts/gen_long_context_golden.py [MODEL] [OUT]
"""
import hashlib
import json
import os
import sys
import time

import llama_cpp as L
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_logits_golden import tokenize  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    ROOT, "tests", "data", "greedy", "smollm2_long_8k.json")
SOURCES = ["/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/GPL-2"]
N_PROMPT = 8000
N_GEN = 32
N_CTX = 8192


def prompt_text():
    parts = []
    for p in SOURCES:
        with open(p, encoding="utf-8") as f:
            parts.append(f.read())
    return "\n".join(parts)


def ids_sha(ids):
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()


def main():
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = False  # no weight repacking
    model = L.llama_model_load_from_file(MODEL.encode(), mp)
    if not model:
        raise SystemExit(f"cannot load {MODEL}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    toks = tokenize(vocab, prompt_text())
    if len(toks) < N_PROMPT:
        raise SystemExit(f"prompt too short: {len(toks)} tokens")
    toks = toks[:N_PROMPT]
    cp = L.llama_context_default_params()
    cp.n_ctx = N_CTX
    cp.n_batch = N_CTX
    cp.n_ubatch = 512
    cp.n_threads = cp.n_threads_batch = 2
    cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
    ctx = L.llama_init_from_model(model, cp)
    batch = L.llama_batch_init(N_PROMPT, 0, 1)
    out, cur, pos = [], list(toks), 0
    t0 = time.time()
    while len(out) < N_GEN:
        batch.n_tokens = len(cur)
        for i, t in enumerate(cur):
            batch.token[i] = t
            batch.pos[i] = pos + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1 if i == len(cur) - 1 else 0
        if L.llama_decode(ctx, batch) != 0:
            raise SystemExit("decode failed")
        pos += len(cur)
        lg = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, len(cur) - 1),
                                   shape=(n_vocab,))
        top2 = np.sort(lg)[-2:]
        t = int(np.argmax(lg))
        out.append(t)
        print(f"pos {pos}: {t} (margin over the second {top2[1] - top2[0]:.4f})")
        cur = [t]
    print(f"{time.time() - t0:.1f} s")
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    with open(OUT, "w") as f:
        json.dump({
            "generator": "scripts/gen_long_context_golden.py: llama.cpp "
                         f"{L.__version__} via llama-cpp-python, n_ctx {N_CTX}, "
                         "ubatch 512, flash attention off, no repack, F16 KV "
                         "cache, 2 threads",
            "model": os.path.basename(MODEL),
            "sources": SOURCES,
            "n_prompt": N_PROMPT,
            "prompt_sha256": ids_sha(toks),
            "n_ctx": N_CTX,
            "tokens": out,
        }, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {N_PROMPT} prompt tokens, {len(out)} generated")


if __name__ == "__main__":
    main()
