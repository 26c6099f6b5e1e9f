#!/usr/bin/env python3
"""llama.cpp's greedy continuations for tests/e2e/test_gemma.py.

For each prompt: tokenized by llama.cpp (BOS as the model asks, special
tokens parsed), decoded in one batch, then one token per llama_decode, each
the argmax of the last logits, until N tokens or an end-of-generation token.
Records the token ids and their text. Settings as gen_logits_golden.py
(flash attention off, no repack, F16 KV cache, 2 threads).

Usage: scripts/gen_greedy_golden.py [MODEL] [OUT]
(default: models/gemma-3-270m-q4_k_m.gguf, tests/data/greedy/gemma3_270m.json)
"""
import json
import os
import sys

import llama_cpp as L
import numpy as np

from gen_logits_golden import context_params, tokenize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    ROOT, "tests", "data", "greedy", "gemma3_270m.json")
N = 24
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n",
    "<start_of_turn>user\nWrite one sentence about the sea.<end_of_turn>\n"
    "<start_of_turn>model\n",
]


def piece(vocab, t):
    buf = (L.ctypes.c_char * 256)()
    n = L.llama_token_to_piece(vocab, t, buf, len(buf), 0, False)
    return buf.raw[:n]


def greedy(model, vocab, n_vocab, toks):
    ctx = L.llama_init_from_model(model, context_params())
    batch = L.llama_batch_init(len(toks), 0, 1)
    out, cur, pos = [], list(toks), 0
    while len(out) < N:
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
        t = int(np.argmax(lg))
        out.append(t)
        if L.llama_vocab_is_eog(vocab, t):
            break
        cur = [t]
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    return out


def main():
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = False
    model = L.llama_model_load_from_file(MODEL.encode(), mp)
    if not model:
        raise SystemExit(f"cannot load {MODEL}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    cases = []
    for p in PROMPTS:
        toks = tokenize(vocab, p)
        ids = greedy(model, vocab, n_vocab, toks)
        text = b"".join(piece(vocab, t) for t in ids
                        if not L.llama_vocab_is_eog(vocab, t))
        cases.append({"prompt": p, "prompt_ids": toks, "ids": ids,
                      "text": text.decode("utf-8", errors="replace")})
    L.llama_model_free(model)
    with open(OUT, "w") as f:
        json.dump({"generator": "scripts/gen_greedy_golden.py (llama-cpp-python "
                   + L.__version__ + ", flash attention off, no repack)",
                   "model": os.path.basename(MODEL), "n_predict": N,
                   "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
