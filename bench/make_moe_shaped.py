#!/usr/bin/env python3
"""A Qwen3-MoE-shaped GGUF with random weights, for measuring the
mixture-of-experts path (issue 17's speed rows): `qwen3moe` with the
default model's tokenizer (SmolLM2, 49152 tokens), per-head Q/K norms, a
router and 3-D expert tensors. Default shape: 8 layers, 1024 wide, 8 heads
of 128 (q width 1024), 2 KV heads, 8 experts of width 1024, 2 used per
token: about 230M weights (8 x 3 x 1024 x 1024 per layer in experts),
far more than any cache, so decode is memory-bound; each token reads 2 of
the 8 experts. Speed depends on shapes and types, not on values (normal,
sigma 0.02; norms 1; router sigma 1 so routing varies by token).

--type f16 (default) writes F16 matrices, to be quantized by the peer's
llama-quantize (scripts/make_bench_models.sh makes Q4_K_M); --type q8_0
writes Q8_0 matrices directly (gguf's quantizer), no llama.cpp needed.
Norms and the router stay F32 (as llama.cpp's converter writes them).

usage: bench/make_moe_shaped.py OUT.gguf [--layers 8] [--embd 1024]
         [--heads 8] [--kv-heads 2] [--head-dim 128] [--experts 8]
         [--used 2] [--ff-exp 1024] [--type f16|q8_0]
"""
import argparse
import pathlib
import sys

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import make_arch_gguf  # noqa: E402  (its fast tokenizer copy)

SOURCE = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--embd", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--used", type=int, default=2)
    ap.add_argument("--ff-exp", type=int, default=1024)
    ap.add_argument("--type", choices=("f16", "q8_0"), default="f16")
    a = ap.parse_args()
    if a.heads % a.kv_heads or not 1 <= a.used <= a.experts:
        ap.error("--heads must divide by --kv-heads; --used in [1, --experts]")
    if a.embd % 32 or a.ff_exp % 32 or a.head_dim % 32:
        ap.error("--embd, --ff-exp and --head-dim must be multiples of 32")
    tok = make_arch_gguf.read_tokenizer_kv(str(SOURCE))
    n_vocab = next(len(v) for k, v, _, _ in tok if k == "tokenizer.ggml.tokens")
    arch = "qwen3moe"
    w = gguf.GGUFWriter(a.out, arch)
    w.add_name("nucleus MoE bench, random weights")
    w.add_file_type(7 if a.type == "q8_0" else 1)
    w.add_context_length(4096)
    w.add_embedding_length(a.embd)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff_exp * a.used)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_key_length(a.head_dim)
    w.add_value_length(a.head_dim)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1000000.0)
    w.add_expert_count(a.experts)
    w.add_expert_used_count(a.used)
    w.add_expert_feed_forward_length(a.ff_exp)
    for k, v, t, sub in tok:
        w.add_key_value(k, v, t, sub)
    rng = np.random.default_rng(1)

    def mat(name, shape, std=0.02):
        x = (rng.standard_normal(shape, dtype=np.float32) * std)
        if a.type == "q8_0":
            q = gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, x.astype(np.float16))

    def vec(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    q, kv = a.heads * a.head_dim, a.kv_heads * a.head_dim
    mat("token_embd.weight", (n_vocab, a.embd))
    vec("output_norm.weight", a.embd)
    for layer in range(a.layers):
        p = f"blk.{layer}."
        vec(p + "attn_norm.weight", a.embd)
        mat(p + "attn_q.weight", (q, a.embd))
        mat(p + "attn_k.weight", (kv, a.embd))
        mat(p + "attn_v.weight", (kv, a.embd))
        vec(p + "attn_q_norm.weight", a.head_dim)
        vec(p + "attn_k_norm.weight", a.head_dim)
        mat(p + "attn_output.weight", (a.embd, q))
        vec(p + "ffn_norm.weight", a.embd)
        r = rng.standard_normal((a.experts, a.embd), dtype=np.float32)
        w.add_tensor(p + "ffn_gate_inp.weight", r)
        mat(p + "ffn_gate_exps.weight", (a.experts, a.ff_exp, a.embd))
        mat(p + "ffn_up_exps.weight", (a.experts, a.ff_exp, a.embd))
        mat(p + "ffn_down_exps.weight", (a.experts, a.embd, a.ff_exp))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
