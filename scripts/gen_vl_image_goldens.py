#!/usr/bin/env python3
"""llama.cpp's logits for the vision-language Qwens' language models
(scripts/make_arch_gguf.py qwen2vl, qwen3vl, qwen3vlmoe, seed 17) on a
sequence of text, an image's rows and text, as llama-mtmd-cli decodes one:

- text A: the first N_A tokens of the prompt at positions 0 .. N_A - 1 (a
  token batch: llama.cpp turns position p into (p, p, p, 0));
- the image: NX x NY rows of input embeddings (the model's n_embd_inp
  wide: n_embd x (1 + n_deepstack_layers), DeepStack's slices after the
  first n_embd), row i at M-RoPE position (t, h, w, e) = (p0, p0 + i / NX,
  p0 + i % NX, 0) with p0 = N_A (mtmd_image_tokens_get_decoder_pos,
  MTMD_POS_TYPE_MROPE), one embedding batch;
- text B: the next N_B tokens from p0 + max(NX, NY) on (mtmd advances
  n_past by max(nx, ny) after an image).

The image's values are a pure function of (row, column), exact in float:
((((row * width + col) * 2654435761) mod 2^32) >> 16) - 32768) / 131072,
so the C test (tests/unit/test_forward_vl.c) makes the same rows. Settings
as gen_arch_goldens.py (flash attention off, no repack, F16 K/V, 2
threads). Writes tests/data/logits/vl_image_<arch>.txt in the logits
golden format (tokens: -1 for an image row, every row's logits), with a
"# image P0 NX NY" line.

Usage: scripts/gen_vl_image_goldens.py [ARCH ...]
"""
import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile

import llama_cpp as L
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gen_logits_golden as G  # noqa: E402

OUTDIR = os.path.join(ROOT, "tests", "data", "logits")
ARCHS = ["qwen2vl", "qwen3vl", "qwen3vlmoe"]
SEED = 17
N_A, N_B, NX, NY = 12, 12, 4, 3
TOPK = G.TOPK
PROMPT = G.PROMPTS[0]


def image_rows(n, width):
    idx = np.arange(n * width, dtype=np.uint64)
    h = ((idx * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)) >> np.uint64(16)
    return ((h.astype(np.float64) - 32768.0) / 131072.0).astype(
        np.float32).reshape(n, width)


def run(arch, path):
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    mp = L.llama_model_default_params()
    mp.use_extra_bufts = False
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        raise SystemExit(f"{arch}: llama.cpp cannot load {path}")
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    width = L.llama_model_n_embd_inp(model)
    G.FA, G.DECODE = False, False
    ctx = L.llama_init_from_model(model, G.context_params())
    toks = G.tokenize(vocab, PROMPT)[:N_A + N_B]
    p0, n_img = N_A, NX * NY
    rows = []

    def logits_of(n):
        for i in range(n):
            ptr = L.llama_get_logits_ith(ctx, i)
            rows.append(np.ctypeslib.as_array(ptr, shape=(n_vocab,)).astype(
                np.float64))

    def text(ids, pos0):
        b = L.llama_batch_init(len(ids), 0, 1)
        b.n_tokens = len(ids)
        for i, t in enumerate(ids):
            b.token[i], b.pos[i] = t, pos0 + i
            b.n_seq_id[i], b.seq_id[i][0], b.logits[i] = 1, 0, 1
        if L.llama_decode(ctx, b) != 0:
            raise SystemExit(f"{arch}: decode failed")
        logits_of(len(ids))
        L.llama_batch_free(b)

    text(toks[:N_A], 0)
    emb = image_rows(n_img, width)
    b = L.llama_batch_init(n_img, width, 1)
    b.n_tokens = n_img
    ctypes.memmove(b.embd, emb.ctypes.data, emb.nbytes)
    # M-RoPE: n_img x 4 positions, component-major (t..., h..., w..., e...)
    pos = (L.llama_pos * (4 * n_img))()
    for i in range(n_img):
        pos[i] = p0
        pos[n_img + i] = p0 + i // NX
        pos[2 * n_img + i] = p0 + i % NX
        pos[3 * n_img + i] = 0
    own_pos = ctypes.cast(b.pos, ctypes.c_void_p).value  # freed by llama.cpp
    b.pos = ctypes.cast(pos, ctypes.POINTER(L.llama_pos))
    for i in range(n_img):
        b.n_seq_id[i], b.seq_id[i][0], b.logits[i] = 1, 0, 1
    if L.llama_decode(ctx, b) != 0:
        raise SystemExit(f"{arch}: image decode failed")
    logits_of(n_img)
    b.pos = ctypes.cast(own_pos, ctypes.POINTER(L.llama_pos))
    L.llama_batch_free(b)
    text(toks[N_A:], p0 + max(NX, NY))
    L.llama_free(ctx)
    L.llama_model_free(model)

    ids = toks[:N_A] + [-1] * n_img + toks[N_A:]
    lines = [
        "# nucleus logits golden v1 (scripts/gen_vl_image_goldens.py): "
        f"llama.cpp {L.__version__} via llama-cpp-python, flash attention "
        "off, no repack, F16 KV cache; text, an image's embedding rows "
        "(M-RoPE positions), text",
        f"# file: scripts/make_arch_gguf.py {arch} OUT.gguf --seed {SEED}",
        f"# gguf sha256 {sha}",
        f"# regenerate: scripts/gen_vl_image_goldens.py {arch}",
        f"# image {p0} {NX} {NY} {width}",
        f"model arch_{arch}.gguf",
        f"n_vocab {n_vocab}",
        f"topk {TOPK}",
        "prompts 1",
        f"prompt {len(ids)}",
        "tokens " + " ".join(map(str, ids)),
    ]
    for i, lg in enumerate(rows):
        if not np.all(np.isfinite(lg)):
            raise SystemExit(f"{arch}: non-finite logits at row {i}")
        mx = lg.max()
        lse = mx + np.log(np.exp(lg - mx).sum())
        top = np.argsort(-lg, kind="stable")[:TOPK]
        lines.append(f"pos {i} lse {lse:.9g}")
        lines.append(" ".join(f"{int(t)}:{lg[t]:.8g}" for t in top))
    out = os.path.join(OUTDIR, f"vl_image_{arch}.txt")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}: {len(ids)} rows ({n_img} of the image, "
          f"{width} wide)")


def main(argv):
    L.llama_backend_init()
    with tempfile.TemporaryDirectory() as d:
        for arch in argv or ARCHS:
            path = os.path.join(d, f"{arch}.gguf")
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "scripts", "make_arch_gguf.py"),
                            arch, path, "--seed", str(SEED)], check=True)
            run(arch, path)


if __name__ == "__main__":
    main(sys.argv[1:])
