#!/usr/bin/env python3
"""llama.cpp's greedy continuations for the e2e tests.

For each prompt: tokenized by llama.cpp (BOS as the model asks, special
tokens parsed), decoded in one batch, then one token per llama_decode, each
the argmax of the last logits, until N tokens or an end-of-generation token.
Records the token ids and their text.

Default mode (tests/e2e/test_gemma.py): settings as gen_logits_golden.py
(flash attention off, no repack, F16 KV cache, n_ctx = n_batch = n_ubatch
= 512, 2 threads), 24 tokens for each of 3 prompts.

--defaults (tests/e2e/test_greedy_defaults.py): llama.cpp's defaults, as
llama-cli and llama-server run: flash attention on (what its -fa auto
picks on the CPU), n_ctx 4096, n_batch 2048, n_ubatch 512 (a prompt under
512 tokens is one micro-batch: its tiled flash path from 64 rows on, the
per-row path below and for every generated token), F16 KV cache; weight
repacking still off (use_extra_bufts = false: the matmul order of llama.cpp
--no-repack, nucleus's --no-repack), 2 threads. 10 prompts of 3 to 237
tokens (plain text, code, a paragraph, the model's chat template), 32
tokens each. Default OUT: tests/data/greedy/<model>_defaults.json with
<model> smollm2 or gemma3_270m.

Usage: scripts/gen_greedy_golden.py [--defaults] [MODEL] [OUT]
(default: models/gemma-3-270m-q4_k_m.gguf, tests/data/greedy/gemma3_270m.json;
tests/e2e/test_arch_greedy.py's: build/arch/gemma4.gguf
tests/data/greedy/arch_gemma4.json, and the same for gemma4moe, qwen2vl,
qwen3vl, qwen3vlmoe and qwen3next)
"""
import json
import os
import sys

import llama_cpp as L
import numpy as np

from gen_logits_golden import PROMPTS as LOGITS_PROMPTS
from gen_logits_golden import context_params, tokenize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULTS = "--defaults" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if a != "--defaults"]
MODEL = ARGS[0] if len(ARGS) > 0 else os.path.join(
    ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
GEMMA = "gemma" in os.path.basename(MODEL).lower()
OUT = ARGS[1] if len(ARGS) > 1 else os.path.join(
    ROOT, "tests", "data", "greedy",
    ("gemma3_270m" if GEMMA else "smollm2") + "_defaults.json"
    if DEFAULTS else "gemma3_270m.json")
N = 32 if DEFAULTS else 24
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n",
    "<start_of_turn>user\nWrite one sentence about the sea.<end_of_turn>\n"
    "<start_of_turn>model\n",
]

PARAGRAPH = (
    "The history of the printing press begins in the fifteenth century, "
    "when Johannes Gutenberg combined movable metal type, oil-based ink and "
    "a wooden screw press adapted from those used to make wine. Within fifty "
    "years, presses were operating in more than two hundred cities across "
    "Europe, and the number of books in circulation rose from tens of "
    "thousands to millions.")
# gen_logits_golden.py's code prompt, up to its last two lines
CODE = next(p for p in LOGITS_PROMPTS if p.startswith("def merge_sort"))
CODE = CODE[:CODE.index("    out.extend(left[i:])")]
LONG = PARAGRAPH + (
    " Scholars argue about how much this changed the Reformation, the "
    "scientific revolution and the rise of literacy, but few doubt that "
    "cheap copies of texts altered how ideas spread, who could read them, "
    "and how quickly an argument could travel from one country to the next. "
    "Before the press, a book was copied by hand, often by monks working in "
    "a scriptorium, and a single Bible could take a scribe more than a year. "
    "Paper mills, which had spread from China through the Islamic world to "
    "Spain and Italy, made the raw material cheap enough for printers to "
    "sell pamphlets, calendars and indulgences by the thousand. Venice soon "
    "became the capital of the new trade, with its printers publishing Greek "
    "classics in small, portable formats, and the first newspapers appeared "
    "in German cities in the early seventeenth century. In short, the most "
    "important consequence of printing was")


def chat(user):
    if GEMMA:
        return (f"<start_of_turn>user\n{user}<end_of_turn>\n"
                "<start_of_turn>model\n")
    return ("<|im_start|>system\nYou are a helpful AI assistant named "
            "SmolLM, trained by Hugging Face<|im_end|>\n"
            f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")


# under 64 tokens (the per-row flash order for the prompt too) and 64-300
PROMPTS_DEFAULTS = [
    "The capital of France is",
    "The sky is blue because",
    "Water boils at",
    "def fibonacci(n):\n",
    "Once upon a time, in a small village by the sea, there lived",
    chat("Name three primary colors."),
    PARAGRAPH + " The most important consequence of printing was",
    chat("Give me three tips for keeping houseplants alive during winter, "
         "and explain why each one works. Keep the answer short, use a "
         "numbered list, and mention light, water and temperature. " * 2),
    CODE,
    LONG,
]


def piece(vocab, t):
    buf = (L.ctypes.c_char * 256)()
    n = L.llama_token_to_piece(vocab, t, buf, len(buf), 0, False)
    return buf.raw[:n]


def greedy_context_params():
    cp = context_params()
    if DEFAULTS:
        cp.n_ctx = 4096
        cp.n_batch = 2048
        cp.n_ubatch = 512
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED
    return cp


def greedy(model, vocab, n_vocab, toks):
    ctx = L.llama_init_from_model(model, greedy_context_params())
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
    for p in PROMPTS_DEFAULTS if DEFAULTS else PROMPTS:
        toks = tokenize(vocab, p)
        ids = greedy(model, vocab, n_vocab, toks)
        text = b"".join(piece(vocab, t) for t in ids
                        if not L.llama_vocab_is_eog(vocab, t))
        cases.append({"prompt": p, "prompt_ids": toks, "ids": ids,
                      "text": text.decode("utf-8", errors="replace")})
        print(f"{len(toks)} prompt tokens -> {len(ids)} generated")
    L.llama_model_free(model)
    how = ("flash attention on, n_ctx 4096, n_batch 2048, n_ubatch 512, "
           "no repack" if DEFAULTS else "flash attention off, no repack")
    with open(OUT, "w") as f:
        json.dump({"generator": "scripts/gen_greedy_golden.py"
                   + (" --defaults" if DEFAULTS else "")
                   + " (llama-cpp-python " + L.__version__ + ", " + how + ")",
                   "model": os.path.basename(MODEL), "n_predict": N,
                   "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
