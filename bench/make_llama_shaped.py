#!/usr/bin/env python3
"""A Llama-shaped GGUF with random weights, for measuring kernels on shapes
the default model lacks (its 576-wide rows are not a multiple of 256, so
llama-quantize leaves most of its tensors out of the K-quants).

It copies the tokenizer and hyperparameters of the default model
(SmolLM2-135M-Instruct) and sets the shape: by default 8 layers, 1024 wide,
FFN 2816, 16 heads of 64, 4 KV heads; F16 weights (normal, sigma 0.02), F32
norms, the output tied to token_embd. Quantize it with the peer's
llama-quantize (for example `llama-quantize OUT.f16.gguf OUT.q4km.gguf
Q4_K_M`, or with --pure for one type throughout), then run bench/speed.py
--models OUT.q4km.gguf. Speed depends on shapes and types, not on values.

usage: bench/make_llama_shaped.py OUT.gguf [--layers 8] [--embd 1024]
                                  [--ff 2816] [--heads 16] [--kv-heads 4]
                                  [--vocab N] [--untied]

--vocab N keeps the first N tokens (and drops the merges): a smaller token
embedding for quantizer tests, a file not meant to be run. --untied: an
output.weight of its own instead of the tied token embeddings.
"""
import argparse
import pathlib

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCE = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"


TOKEN_ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                "tokenizer.ggml.scores")


def copy_metadata(src, w, shape, n_vocab=None):
    for key, field in src.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if n_vocab is not None and key == "tokenizer.ggml.merges":
            continue
        if key in shape:
            w.add_uint32(key, shape[key])
            continue
        vt, val = field.types[0], field.contents()
        if vt == gguf.GGUFValueType.ARRAY:
            if n_vocab is not None and key in TOKEN_ARRAYS:
                val = val[:n_vocab]
            w.add_array(key, val)
        elif vt == gguf.GGUFValueType.STRING:
            w.add_string(key, val)
        elif vt == gguf.GGUFValueType.UINT32:
            w.add_uint32(key, val)
        elif vt == gguf.GGUFValueType.FLOAT32:
            w.add_float32(key, val)
        elif vt == gguf.GGUFValueType.BOOL:
            w.add_bool(key, val)
        else:
            raise SystemExit(f"{key}: value type {vt} not copied")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--embd", type=int, default=1024)
    ap.add_argument("--ff", type=int, default=2816)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=None)
    ap.add_argument("--untied", action="store_true")
    a = ap.parse_args()
    if a.embd % a.heads or a.heads % a.kv_heads:
        ap.error("--embd must divide by --heads, --heads by --kv-heads")
    src = gguf.GGUFReader(str(SOURCE))
    n_vocab = len(src.fields["tokenizer.ggml.tokens"].contents())
    if a.vocab is not None:
        if not 1 <= a.vocab <= n_vocab:
            ap.error(f"--vocab {a.vocab} is outside [1, {n_vocab}]")
        n_vocab = a.vocab
    head_dim = a.embd // a.heads
    w = gguf.GGUFWriter(a.out, "llama")
    copy_metadata(src, w, {
        "llama.block_count": a.layers, "llama.embedding_length": a.embd,
        "llama.feed_forward_length": a.ff,
        "llama.attention.head_count": a.heads,
        "llama.attention.head_count_kv": a.kv_heads,
        "llama.rope.dimension_count": head_dim, "general.file_type": 1},
        n_vocab if a.vocab is not None else None)
    rng = np.random.default_rng(1)

    def tensor(name, shape, dtype=np.float16):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(dtype))

    kv = head_dim * a.kv_heads
    tensor("token_embd.weight", (n_vocab, a.embd))
    tensor("output_norm.weight", (a.embd,), np.float32)
    if a.untied:
        tensor("output.weight", (n_vocab, a.embd))
    for layer in range(a.layers):
        p = f"blk.{layer}."
        tensor(p + "attn_norm.weight", (a.embd,), np.float32)
        tensor(p + "attn_q.weight", (a.embd, a.embd))
        tensor(p + "attn_k.weight", (kv, a.embd))
        tensor(p + "attn_v.weight", (kv, a.embd))
        tensor(p + "attn_output.weight", (a.embd, a.embd))
        tensor(p + "ffn_norm.weight", (a.embd,), np.float32)
        tensor(p + "ffn_gate.weight", (a.ff, a.embd))
        tensor(p + "ffn_up.weight", (a.ff, a.embd))
        tensor(p + "ffn_down.weight", (a.embd, a.ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(a.out)


if __name__ == "__main__":
    main()
