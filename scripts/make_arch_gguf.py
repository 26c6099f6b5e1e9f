#!/usr/bin/env python3
"""Small random-weight GGUF files of the llama-family architectures nucleus
runs besides llama (qwen2: Q/K/V biases; qwen3: per-head Q/K norms; both
NEOX RoPE), for tests against llama.cpp on the same file.

The vocabulary (and tokenizer metadata) is the default model's, so token ids
are real; the weights come from a splitmix64 stream of the seed mapped to
uniform values, written out here so that a file depends only on the seed
(not on numpy's generator, whose streams may change between versions).
Shapes: 256 wide, 3 layers, 4 heads of 64 (2 KV heads), FFN 512; F32.

usage: scripts/make_arch_gguf.py ARCH OUT.gguf [--seed N]   (ARCH: qwen2, qwen3)
"""
import os
import sys

import gguf
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB_FROM = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
ARCHS = ("qwen2", "qwen3")
E, N_LAYER, N_HEAD, N_KV, HEAD, FF = 256, 3, 4, 2, 64, 512


class Stream:
    """splitmix64, vectorised: uniform floats in [-1, 1)."""

    def __init__(self, seed):
        self.state = np.uint64(seed)

    def uniform(self, n):
        with np.errstate(over="ignore"):
            idx = np.arange(1, n + 1, dtype=np.uint64)
            z = self.state + idx * np.uint64(0x9E3779B97F4A7C15)
            self.state = z[-1] if n else self.state
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        return ((z >> np.uint64(40)).astype(np.float64) / float(1 << 23) -
                1.0).astype(np.float32)


def field_str(f):
    return bytes(f.parts[f.data[0]]).decode()


def main():
    args = sys.argv[1:]
    seed = 1
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2 or args[0] not in ARCHS:
        raise SystemExit(__doc__)
    arch, out = args
    src = gguf.GGUFReader(VOCAB_FROM)
    f = src.fields
    tokens = [bytes(f["tokenizer.ggml.tokens"].parts[i])
              for i in f["tokenizer.ggml.tokens"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0])
             for i in f["tokenizer.ggml.token_type"].data]
    merges = [bytes(f["tokenizer.ggml.merges"].parts[i])
              for i in f["tokenizer.ggml.merges"].data]
    V = len(tokens)
    w = gguf.GGUFWriter(out, arch)
    w.add_name(f"random {arch} (seed {seed})")
    w.add_context_length(2048)
    w.add_embedding_length(E)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV)
    w.add_key_length(HEAD)
    w.add_value_length(HEAD)
    w.add_rope_dimension_count(HEAD)
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(0)  # all F32
    w.add_tokenizer_model(field_str(f["tokenizer.ggml.model"]))
    w.add_tokenizer_pre(field_str(f["tokenizer.ggml.pre"]))
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(int(f["tokenizer.ggml.bos_token_id"].parts[-1][0]))
    w.add_eos_token_id(int(f["tokenizer.ggml.eos_token_id"].parts[-1][0]))
    rng = Stream(seed)

    def tensor(name, shape, scale, center=0.0):
        n = int(np.prod(shape))
        data = rng.uniform(n).reshape(shape) * np.float32(scale)
        w.add_tensor(name, data + np.float32(center))

    tensor("token_embd.weight", (V, E), 0.8)
    tensor("output_norm.weight", (E,), 0.2, 1.0)
    tensor("output.weight", (V, E), 0.08)
    for l in range(N_LAYER):
        p = f"blk.{l}."
        tensor(p + "attn_norm.weight", (E,), 0.2, 1.0)
        tensor(p + "attn_q.weight", (N_HEAD * HEAD, E), 0.1)
        tensor(p + "attn_k.weight", (N_KV * HEAD, E), 0.1)
        tensor(p + "attn_v.weight", (N_KV * HEAD, E), 0.1)
        tensor(p + "attn_output.weight", (E, N_HEAD * HEAD), 0.1)
        if arch == "qwen2":
            tensor(p + "attn_q.bias", (N_HEAD * HEAD,), 0.8)
            tensor(p + "attn_k.bias", (N_KV * HEAD,), 0.8)
            tensor(p + "attn_v.bias", (N_KV * HEAD,), 0.8)
        if arch == "qwen3":
            tensor(p + "attn_q_norm.weight", (HEAD,), 0.2, 1.0)
            tensor(p + "attn_k_norm.weight", (HEAD,), 0.2, 1.0)
        tensor(p + "ffn_norm.weight", (E,), 0.2, 1.0)
        tensor(p + "ffn_gate.weight", (FF, E), 0.1)
        tensor(p + "ffn_up.weight", (FF, E), 0.1)
        tensor(p + "ffn_down.weight", (E, FF), 0.1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
