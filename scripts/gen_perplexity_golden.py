#!/usr/bin/env python3
"""llama.cpp perplexity golden for tests/e2e/test_perplexity.py.

llama-perplexity's method reproduced in Python over llama-cpp-python
(llama.cpp's own logits): the text is tokenized by llama.cpp (BOS added when
the model asks), cut into non-overlapping windows of N tokens; each window is
decoded from an empty KV cache (first token replaced by BOS when the model
adds one) and its second half scored: NLL of token j+1 under the logits of
position j for j in [N/2, N-1). PPL = exp(mean NLL). llama.cpp settings:
flash attention off, no weight repacking, F16 KV cache, one window per batch.

Writes tests/data/perplexity/gpl3_smollm2_q4_1.json (or OUT).
Usage: scripts/gen_perplexity_golden.py [--amx] [--fa] [MODEL] [TEXT] [OUT]
(Gemma 3 270M: ... models/gemma-3-270m-q4_k_m.gguf
 /usr/share/common-licenses/GPL-3 tests/data/perplexity/gpl3_gemma3_270m.json)

--amx: weight repacking on, for llama.cpp's AMX build (the order of
nucleus's amx kernel table): run it on a CPU with AMX with
LLAMA_CPP_LIB_PATH pointing at the AMX build of the peer's llama.cpp, as
scripts/gen_amx_golden.sh does; writes gpl3_smollm2_q4_1_amx.json.
--fa: flash attention on (llama.cpp's CPU default; each window is one
micro-batch of 64+ rows, so its tiled path); writes ..._fa.json.
"""
import json
import math
import os
import sys

import llama_cpp as L
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AMX = "--amx" in sys.argv[1:]
FA = "--fa" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if a not in ("--amx", "--fa")]
MODEL = ARGS[0] if len(ARGS) > 0 else os.path.join(
    ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TEXT = ARGS[1] if len(ARGS) > 1 else "/usr/share/common-licenses/GPL-3"
OUT = ARGS[2] if len(ARGS) > 2 else os.path.join(
    ROOT, "tests", "data", "perplexity",
    "gpl3_smollm2_q4_1" + ("_amx" if AMX else "") + ("_fa" if FA else "") +
    ".json")
CONFIGS = [(256, 8), (512, None)]  # (window, chunks or None = all)


def main():
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = AMX  # repacking: llama.cpp's AMX path
    model = L.llama_model_load_from_file(MODEL.encode(), mp)
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    add_bos = L.llama_vocab_get_add_bos(vocab)
    bos = L.llama_vocab_bos(vocab)
    data = open(TEXT, "rb").read()
    buf = (L.llama_token * (len(data) + 16))()
    n = L.llama_tokenize(vocab, data, len(data), buf, len(buf), True, False)
    tokens = list(buf[:n])
    results = []
    for n_ctx, chunks in CONFIGS:
        cp = L.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = n_ctx
        cp.n_threads = cp.n_threads_batch = 2
        cp.flash_attn_type = (L.LLAMA_FLASH_ATTN_TYPE_ENABLED if FA else
                              L.LLAMA_FLASH_ATTN_TYPE_DISABLED)
        ctx = L.llama_init_from_model(model, cp)
        n_chunk = len(tokens) // n_ctx
        if chunks:
            n_chunk = min(n_chunk, chunks)
        first = n_ctx // 2
        nll, count = 0.0, 0
        for c in range(n_chunk):
            win = tokens[c * n_ctx:(c + 1) * n_ctx]
            if add_bos:
                win[0] = bos
            L.llama_memory_clear(L.llama_get_memory(ctx), True)
            batch = L.llama_batch_init(n_ctx, 0, 1)
            batch.n_tokens = n_ctx
            for i, t in enumerate(win):
                batch.token[i] = t
                batch.pos[i] = i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = 1 if i >= first else 0
            if L.llama_decode(ctx, batch) != 0:
                raise SystemExit("decode failed")
            for j in range(first, n_ctx - 1):
                row = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, j),
                                            shape=(n_vocab,))
                mx = row.max()
                s = np.exp((row - mx).astype(np.float32)).astype(np.float64).sum()
                tok = tokens[c * n_ctx + j + 1]
                nll += -(float(row[tok] - mx) - math.log(s))
                count += 1
            L.llama_batch_free(batch)
        L.llama_free(ctx)
        ppl = math.exp(nll / count)
        print(f"n_ctx {n_ctx} chunks {n_chunk}: PPL = {ppl:.4f}")
        results.append({"n_ctx": n_ctx, "chunks": n_chunk, "scored": count,
                        "ppl": round(ppl, 6)})
    L.llama_model_free(model)
    out = {
        "generator": "scripts/gen_perplexity_golden.py (llama-perplexity's "
                     "method over llama-cpp-python " + L.__version__ +
                     " logits; flash attention " + ("on" if FA else "off") +
                     ", " +
                     ("repacking on, AMX build)" if AMX else "no repack)"),
        "model": os.path.basename(MODEL),
        "text": TEXT,
        "n_tokens": len(tokens),
        "add_bos": bool(add_bos),
        "results": results,
    }
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
