#!/usr/bin/env python3
"""Teacher-forced logits golden from llama.cpp (through llama-cpp-python).

Writes tests/data/logits/smollm2_q4_1.txt: for each prompt its token ids
(tokenized by llama.cpp, so the C test needs no tokenizer) and, for every
position, the log-sum-exp of all logits and the 32 largest logits with their
ids. tests/unit/test_forward.c compares nucleus against it.

llama.cpp settings: flash attention OFF (flash_attn_type = disabled), weight
repacking OFF (model param use_extra_bufts = false), default F16 K/V cache,
every prompt decoded in one batch with logits for every position.

--amx: weight repacking ON instead, for a llama.cpp built with its AMX path
on a CPU with AMX (scripts/gen_amx_golden.sh builds one and runs this): its Q4_0/Q4_1/Q8_0 matmuls then add in block
order (one float conversion per 32-block), the order of nucleus's amx
kernel table. Default OUT is then tests/data/logits/smollm2_q4_1_amx.txt.

--decode: every prompt decoded one token per llama_decode call (llama.cpp's
single-row matmuls: ggml_vec_dot, whose K-quant order differs from its
multi-row one) instead of in one batch; the header says so.


--fa: flash attention ON (llama.cpp's CPU default, flash_attn_type =
enabled). Default OUT tests/data/logits/smollm2_q4_1_fa.txt. With --fa,
--decode runs each prompt one token per decode call (teacher-forced, a
logit row per call), which takes llama.cpp's per-row flash path
(ggml_compute_forward_flash_attn_ext_f16_one_chunk: F16 Q, F16 value
accumulator), the order nucleus follows for every row; without --decode the
prompt is one batch, which llama.cpp runs through its tiled flash path
(F32 Q and values) from 64 rows on. Default OUT with --decode:
tests/data/logits/smollm2_q4_1_fa_decode.txt.

--ctk TYPE / --ctv TYPE (f16, bf16, q8_0, q4_0): the K / V cache types
(context params type_k / type_v, llama.cpp's --cache-type-k/-v; a quantized
V needs --fa). Any type but f16 makes llama.cpp take its per-row flash path
for a whole batch too (its tiled and split-key paths are for F16/F32 caches
only). Default OUT then ends in _k<TYPE>_v<TYPE> (e.g.
smollm2_q4_1_fa_kq8_0_vq8_0.txt).

Usage: scripts/gen_logits_golden.py [--amx] [--fa] [--decode]
           [--ctk TYPE] [--ctv TYPE] [MODEL] [OUT]
"""
import ctypes
import os
import sys

import llama_cpp as L
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AMX = "--amx" in sys.argv[1:]
FA = "--fa" in sys.argv[1:]
DECODE = "--decode" in sys.argv[1:]
# ggml type ids of the KV cache types (ggml.h's enum ggml_type)
CACHE_TYPES = {"f16": 1, "bf16": 30, "q8_0": 8, "q4_0": 2}


def cache_type_arg(flag):
    if flag not in sys.argv[1:]:
        return "f16"
    i = sys.argv.index(flag)
    if i + 1 >= len(sys.argv) or sys.argv[i + 1] not in CACHE_TYPES:
        raise SystemExit(f"{flag} needs one of {', '.join(CACHE_TYPES)}")
    return sys.argv[i + 1]


CTK = cache_type_arg("--ctk")
CTV = cache_type_arg("--ctv")
_SKIP = set()
for _f in ("--ctk", "--ctv"):
    if _f in sys.argv[1:]:
        _i = sys.argv.index(_f)
        _SKIP |= {_i, _i + 1}
ARGS = [a for i, a in enumerate(sys.argv) if i > 0 and i not in _SKIP
        and a not in ("--amx", "--fa", "--decode")]
TYPED = (CTK, CTV) != ("f16", "f16")
MODEL = ARGS[0] if len(ARGS) > 0 else os.path.join(
    ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
OUT = ARGS[1] if len(ARGS) > 1 else os.path.join(
    ROOT, "tests", "data", "logits",
    "smollm2_q4_1" + ("_amx" if AMX else "") + ("_fa" if FA else "")
    + ("_decode" if DECODE else "")
    + (f"_k{CTK}_v{CTV}" if TYPED else "") + ".txt")
TOPK = 32
N_TOKENS = 128  # every prompt is cut to exactly this many tokens

PROMPTS = [
    # English prose
    "The history of the printing press begins in the fifteenth century, "
    "when Johannes Gutenberg combined movable metal type, oil-based ink and "
    "a wooden screw press adapted from those used to make wine. Within fifty "
    "years, presses were operating in more than two hundred cities across "
    "Europe, and the number of books in circulation rose from tens of "
    "thousands to millions. Scholars argue about how much this changed the "
    "Reformation, the scientific revolution and the rise of literacy, but "
    "few doubt that cheap copies of texts altered how ideas spread, who could "
    "read them, and how quickly an argument could travel from one country to "
    "the next. Historians of technology still debate these claims today.",
    # Code
    "def merge_sort(items):\n"
    "    \"\"\"Return a new sorted list.\"\"\"\n"
    "    if len(items) <= 1:\n"
    "        return list(items)\n"
    "    mid = len(items) // 2\n"
    "    left = merge_sort(items[:mid])\n"
    "    right = merge_sort(items[mid:])\n"
    "    out = []\n"
    "    i = j = 0\n"
    "    while i < len(left) and j < len(right):\n"
    "        if left[i] <= right[j]:\n"
    "            out.append(left[i]); i += 1\n"
    "        else:\n"
    "            out.append(right[j]); j += 1\n"
    "    out.extend(left[i:])\n"
    "    out.extend(right[j:])\n"
    "    return out\n\n"
    "if __name__ == '__main__':\n"
    "    print(merge_sort([5, 3, 9, 1, 4, 8, 2, 7, 6, 0]))\n"
    "    print(merge_sort([]), merge_sort([1]))\n",
    # Chat-formatted text with special tokens
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained "
    "by Hugging Face<|im_end|>\n<|im_start|>user\nGive me three tips for "
    "keeping houseplants alive during winter, and explain why each one "
    "works.<|im_end|>\n<|im_start|>assistant\n1. Reduce watering: plants grow "
    "more slowly in winter, so they need less water and soggy soil invites "
    "root rot.\n2. Move them closer to a window: the days are short and the "
    "light is weak, so every extra hour of sunlight helps them keep "
    "photosynthesizing.\n3. Keep them away from radiators and cold drafts: "
    "sudden temperature swings stress the leaves.<|im_end|>\n",
    # Numbers, lists, another language
    "Liste de courses pour la semaine : 3 kg de pommes de terre, 12 oeufs, "
    "2 litres de lait, 500 g de farine, 250 g de beurre, 1 poulet entier, "
    "4 poireaux, 6 yaourts nature.\nTotal estime : 42,75 EUR (TVA 5,5 % "
    "incluse).\nTable 7: 7, 14, 21, 28, 35, 42, 49, 56, 63, 70.\n"
    "Primes: 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53.\n"
    "1999-12-31T23:59:59Z -> 2000-01-01T00:00:00Z (+1 s).\n"
    "Le lendemain matin, nous sommes partis tot vers la montagne, sous un "
    "ciel gris qui promettait de la neige avant midi.",
]


def tokenize(vocab, text):
    b = text.encode("utf-8")
    buf = (L.llama_token * (len(b) + 16))()
    n = L.llama_tokenize(vocab, b, len(b), buf, len(buf), True, True)
    if n < 0:
        raise SystemExit("tokenize failed")
    return list(buf[:n])


def context_params():
    """llama.cpp's context for a golden: one batch of up to 512 positions,
    2 threads, flash attention off (the K/V cache is F16 by default)."""
    cp = L.llama_context_default_params()
    cp.n_ctx = 512
    cp.n_batch = 512
    cp.n_ubatch = 512
    cp.n_threads = cp.n_threads_batch = 2
    cp.flash_attn_type = (L.LLAMA_FLASH_ATTN_TYPE_ENABLED if FA else
                          L.LLAMA_FLASH_ATTN_TYPE_DISABLED)
    cp.type_k = CACHE_TYPES[CTK]
    cp.type_v = CACHE_TYPES[CTV]
    return cp


def prompt_lines(model, cp, n_vocab, toks):
    """One prompt decoded in one batch with logits for every position: its
    golden lines ("prompt", "tokens", then "pos P lse X" and the TOPK
    largest logits per position) and the top-1 id of every position."""
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        raise SystemExit(f"llama.cpp refused the context (K {CTK}, V {CTV})")
    rows = []
    for i0, n in ([(i, 1) for i in range(len(toks))] if DECODE
                  else [(0, len(toks))]):
        batch = L.llama_batch_init(n, 0, 1)
        batch.n_tokens = n
        for i in range(n):
            batch.token[i] = toks[i0 + i]
            batch.pos[i] = i0 + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1
        if L.llama_decode(ctx, batch) != 0:
            raise SystemExit("decode failed")
        for i in range(n):
            ptr = L.llama_get_logits_ith(ctx, i)
            rows.append(np.ctypeslib.as_array(ptr, shape=(n_vocab,)).astype(
                np.float64))
        L.llama_batch_free(batch)
    lines = [f"prompt {len(toks)}", "tokens " + " ".join(map(str, toks))]
    top1 = []
    for i in range(len(toks)):
        lg = rows[i]
        if not np.all(np.isfinite(lg)):
            raise SystemExit(f"non-finite logits at position {i}")
        mx = lg.max()
        lse = mx + np.log(np.exp(lg - mx).sum())
        top = np.argsort(-lg, kind="stable")[:TOPK]
        top1.append(int(top[0]))
        lines.append(f"pos {i} lse {lse:.9g}")
        lines.append(" ".join(f"{int(t)}:{lg[t]:.8g}" for t in top))
    L.llama_free(ctx)
    return lines, top1


def main():
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = AMX  # weight repacking: llama.cpp's AMX path
    model = L.llama_model_load_from_file(MODEL.encode(), mp)
    if not model:
        raise SystemExit(f"cannot load {MODEL}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    cp = context_params()
    lines = [
        "# nucleus logits golden v1 (scripts/gen_logits_golden.py): llama.cpp "
        f"{L.__version__} via llama-cpp-python, flash attention "
        + ("on" if FA else "off") + ", "
        + ("repack on (AMX build)" if AMX else "no repack")
        + (f", KV cache K {CTK} V {CTV}" if TYPED else ", F16 KV cache")
        + (", one token per decode" if DECODE else ""),
        f"model {os.path.basename(MODEL)}",
        f"n_vocab {n_vocab}",
        f"topk {TOPK}",
        f"prompts {len(PROMPTS)}",
    ]
    for text in PROMPTS:
        toks = tokenize(vocab, text)
        if len(toks) < N_TOKENS:
            raise SystemExit(f"prompt too short: {len(toks)} tokens")
        lines += prompt_lines(model, cp, n_vocab, toks[:N_TOKENS])[0]
    L.llama_model_free(model)
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(PROMPTS)} prompts of {N_TOKENS} tokens")


if __name__ == "__main__":
    main()
