#!/usr/bin/env python3
"""Embedding and rerank goldens from llama.cpp for the random-weight files of
scripts/make_arch_gguf.py (issue 44): qwen3emb (last pooling), qwen3rank
(rank pooling over the yes / no head, softmax), gemmaemb
(gemma-embedding: non-causal, symmetric windows, mean pooling, dense_2 and
dense_3), bert (mean), bertrank (a cross-encoder: rank pooling over the
CLS row through cls and cls.output, the query and document in one input)
and nomicbert (nomic-bert: RoPE, SwiGLU, fused QKV).

For each KIND it writes the file with a fixed seed, loads it with llama.cpp
through llama-cpp-python (embeddings on, the file's pooling, flash attention
off, n_ctx = n_batch = n_ubatch = 512, 2 threads), runs each input alone as
sequence 0 with every row an output, and writes the pooled vector
llama_get_embeddings_seq gives (not normalised; rank: the n_cls_out scores)
to tests/data/embed/arch_<kind>.txt:

    # comments (the generator command, seed, the file's sha256)
    model <kind>.gguf
    pooling <name>
    width <floats per vector>
    inputs <N>
    input <n_tokens> <token ids>
    vector <width floats>
    ...

Inputs: TEXTS tokenized by llama.cpp (special tokens parsed, none added),
of 1 to about 60 tokens (the gemma windows are 16, so the longer ones see a
window on both sides); for the reranker, the file's rerank template filled
with a query and each document, as llama-server's format_prompt_rerank.

Usage: scripts/gen_embed_goldens.py [--seed N] [--keep DIR] [KIND ...]
"""
import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np

import llama_cpp as L

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTDIR = os.path.join(ROOT, "tests", "data", "embed")
SEED = 17
KINDS = ["qwen3emb", "qwen3rank", "gemmaemb", "bert", "bertrank", "nomicbert"]
POOLING = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}

TEXTS = [
    "Hi",
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings map text to vectors; similar texts land near each other.",
    "def add(a, b):\n    return a + b\n",
    "La tour Eiffel a été construite pour l'Exposition universelle de 1889 "
    "à Paris, et elle reste aujourd'hui l'un des monuments les plus "
    "visités du monde.",
    "日本の首都は東京です。",
    "Retrieval-augmented generation needs an embedder, a reranker and a "
    "chat model behind one base URL; the embedder finds candidates, the "
    "reranker orders them, the chat model reads the best ones and answers "
    "the question.",
    "42",
]
QUERY = "What is the capital of France?"
DOCUMENTS = [
    "Paris is the capital and largest city of France.",
    "The mitochondria is the powerhouse of the cell.",
    "France's capital, Paris, lies on the Seine.",
]


def tokenize(vocab, text):
    b = text.encode("utf-8")
    buf = (L.llama_token * (len(b) + 16))()
    n = L.llama_tokenize(vocab, b, len(b), buf, len(buf), False, True)
    if n < 0:
        raise SystemExit("tokenize failed")
    return list(buf[:n])


def rerank_template(path):
    """The file's rerank prompt template, or None (a cross-encoder)."""
    import gguf
    r = gguf.GGUFReader(path)
    f = r.fields.get("tokenizer.chat_template.rerank")
    return bytes(f.parts[f.data[0]]).decode("utf-8") if f else None


def golden(kind, path, seed, out):
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = False
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise SystemExit(f"{kind}: llama.cpp cannot load {path}")
    vocab = L.llama_model_get_vocab(model)
    cp = L.llama_context_default_params()
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 512
    cp.n_threads = cp.n_threads_batch = 2
    cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
    cp.embeddings = True
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        raise SystemExit(f"{kind}: llama.cpp refused the context")
    pooling = L.llama_pooling_type(ctx)
    if pooling == 4:
        template = rerank_template(path)
        if template:
            texts = [template.replace("{query}", QUERY).replace("{document}", d)
                     for d in DOCUMENTS]
        else:  # a cross-encoder (bertrank): query and document in one input
            texts = [QUERY + " " + d for d in DOCUMENTS]
        width = L.llama_model_n_cls_out(model)
    else:
        texts = TEXTS
        width = L.llama_model_n_embd(model)
    lines = [
        "# nucleus embedding golden v1 (scripts/gen_embed_goldens.py): "
        f"llama.cpp {L.__version__} via llama-cpp-python, flash attention "
        "off, each input alone",
        f"# file: scripts/make_arch_gguf.py {kind} OUT.gguf --seed {seed}",
        f"# gguf sha256 {sha}",
        f"# regenerate: scripts/gen_embed_goldens.py --seed {seed} {kind}",
        f"model {kind}.gguf",
        f"pooling {POOLING[pooling]}",
        f"width {width}",
        f"inputs {len(texts)}",
    ]
    vecs = []
    for text in texts:
        toks = tokenize(vocab, text)
        batch = L.llama_batch_init(len(toks), 0, 1)
        batch.n_tokens = len(toks)
        for i, t in enumerate(toks):
            batch.token[i] = t
            batch.pos[i] = i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1
        if L.llama_decode(ctx, batch) != 0:
            raise SystemExit(f"{kind}: decode failed")
        ptr = L.llama_get_embeddings_seq(ctx, 0)
        v = np.ctypeslib.as_array(ptr, shape=(width,)).astype(np.float64)
        if not np.all(np.isfinite(v)):
            raise SystemExit(f"{kind}: non-finite vector")
        L.llama_batch_free(batch)
        L.llama_memory_clear(L.llama_get_memory(ctx), True)
        lines.append(f"input {len(toks)} " + " ".join(map(str, toks)))
        lines.append("vector " + " ".join(f"{x:.9g}" for x in v))
        vecs.append(v)
    L.llama_free(ctx)
    L.llama_model_free(model)
    # distinct inputs must give distinct vectors (a degenerate model would
    # test nothing)
    for i in range(len(vecs)):
        for j in range(i):
            c = vecs[i] @ vecs[j] / np.linalg.norm(vecs[i]) / np.linalg.norm(vecs[j])
            if pooling != 4 and c > 0.999:
                raise SystemExit(f"{kind}: inputs {i} and {j} give the same "
                                 f"vector (cosine {c})")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}: {len(texts)} inputs, width {width}")


def main(argv):
    seed, keep, kinds = SEED, None, []
    it = iter(argv)
    for a in it:
        if a == "--seed":
            seed = int(next(it))
        elif a == "--keep":
            keep = next(it)
        else:
            kinds.append(a)
    L.llama_backend_init()
    os.makedirs(OUTDIR, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        d = keep or tmp
        os.makedirs(d, exist_ok=True)
        for kind in kinds or KINDS:
            path = os.path.join(d, f"{kind}.gguf")
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "scripts", "make_arch_gguf.py"),
                            kind, path, "--seed", str(seed)], check=True)
            golden(kind, path, seed, os.path.join(OUTDIR, f"arch_{kind}.txt"))


if __name__ == "__main__":
    main(sys.argv[1:])
