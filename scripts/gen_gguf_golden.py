#!/usr/bin/env python3
"""Writes tests/data/gguf/gguf_py_all_types.gguf with gguf-py (the writer
behind llama.cpp's convert scripts), an independent check of our reader:
tests/unit/test_gguf.c (test_gguf_py_golden) asserts these exact values.
With --seeds it also writes small valid files to fuzz/corpus/gguf/, among them
model-shaped files that the model loader must refuse (seed_bad_*.gguf:
tests/unit/test_model_load.c checks each message). --bad-model-seeds and
--quant-seeds (issue 40's) write only those seeds."""
import os
import sys

import numpy as np
import gguf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_seeds() -> None:
    """Small valid files for the fuzz seed corpus (fuzz/corpus/gguf/)."""
    d = os.path.join(ROOT, "fuzz", "corpus", "gguf")
    os.makedirs(d, exist_ok=True)
    T = gguf.GGUFValueType
    # 1: metadata only
    w = gguf.GGUFWriter(os.path.join(d, "seed_meta_only.gguf"), "llama")
    w.add_uint32("llama.block_count", 2)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "b"])
    w.add_key_value("tokenizer.ggml.token_type", [3, 3, 1, 1], T.ARRAY, T.INT32)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    # 2: a tiny model-shaped file with custom alignment
    w = gguf.GGUFWriter(os.path.join(d, "seed_align64.gguf"), "llama")
    w.add_custom_alignment(64)  # sets the key and pads to it
    w.add_tensor("token_embd.weight", np.ones((4, 32), dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(32, dtype=np.float16))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    # 3: one quantized tensor (Q4_1 block: d, m, 16 bytes)
    w = gguf.GGUFWriter(os.path.join(d, "seed_q4_1.gguf"), "llama")
    w.add_tensor("blk.0.attn_q.weight", np.zeros((1, 20), dtype=np.uint8),
                 raw_dtype=gguf.GGMLQuantizationType.Q4_1)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    write_bad_model_seeds(d)
    write_quant_seeds(d)


def _tiny_model(path, arch, extra, tensors, raw=None, n_ff=64):
    """A one-layer model-shaped file (n_embd 32, 2 heads of 16, 1 KV head,
    n_ff 64 unless given, vocab 8) with zero weights (F32 vectors, F16
    matrices): tensors is [(name, numpy shape)]; raw maps a name to (uint8
    rows of blocks, quant type) written instead."""
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(8)
    for k, v in extra:
        w.add_uint32(f"{arch}.{k}", v)
    for name, shape in tensors:
        if raw and name in raw:
            w.add_tensor(name, raw[name][0], raw_dtype=raw[name][1])
            continue
        w.add_tensor(name, np.zeros(shape, dtype=np.float32 if len(shape) == 1 else np.float16))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def write_bad_model_seeds(d) -> None:
    """Issue 17's bad files: a MoE with expert_used_count > expert_count, a
    phi3 fused attn_qkv of the wrong width, phi3 rope factors of the wrong
    length."""
    base = [("token_embd.weight", (8, 32)), ("output_norm.weight", (32,)),
            ("blk.0.attn_norm.weight", (32,)), ("blk.0.attn_output.weight", (32, 32)),
            ("blk.0.ffn_norm.weight", (32,))]
    moe = base + [("blk.0.attn_q.weight", (32, 32)), ("blk.0.attn_k.weight", (16, 32)),
                  ("blk.0.attn_v.weight", (16, 32)), ("blk.0.attn_q_norm.weight", (16,)),
                  ("blk.0.attn_k_norm.weight", (16,)), ("blk.0.ffn_gate_inp.weight", (4, 32)),
                  ("blk.0.ffn_gate_exps.weight", (4, 16, 32)),
                  ("blk.0.ffn_up_exps.weight", (4, 16, 32)),
                  ("blk.0.ffn_down_exps.weight", (4, 32, 16))]
    _tiny_model(os.path.join(d, "seed_bad_moe_used.gguf"), "qwen3moe",
                [("expert_count", 4), ("expert_used_count", 5),
                 ("expert_feed_forward_length", 16)], moe)

    def phi3(qkv, rope):
        return base + [("rope_factors_short.weight", (8,)), ("rope_factors_long.weight", (rope,)),
                       ("blk.0.attn_qkv.weight", (qkv, 32)), ("blk.0.ffn_up.weight", (128, 32)),
                       ("blk.0.ffn_down.weight", (32, 64))]
    _tiny_model(os.path.join(d, "seed_bad_phi3_qkv.gguf"), "phi3", [], phi3(48, 8))
    _tiny_model(os.path.join(d, "seed_bad_phi3_rope.gguf"), "phi3", [], phi3(64, 5))


def write_quant_seeds(d) -> None:
    """Issue 40's bad files: a llama whose IQ4_NL ffn_up has a block with an
    infinite scale (refused naming the tensor and block), and one whose
    IQ4_XS ffn_down has 256 columns where the model has n_ff 64."""
    Q = gguf.GGMLQuantizationType
    llama = [("token_embd.weight", (8, 32)), ("output_norm.weight", (32,)),
             ("blk.0.attn_norm.weight", (32,)), ("blk.0.attn_q.weight", (32, 32)),
             ("blk.0.attn_k.weight", (16, 32)), ("blk.0.attn_v.weight", (16, 32)),
             ("blk.0.attn_output.weight", (32, 32)), ("blk.0.ffn_norm.weight", (32,)),
             ("blk.0.ffn_gate.weight", (64, 32)), ("blk.0.ffn_up.weight", (64, 32)),
             ("blk.0.ffn_down.weight", (32, 64))]
    up = np.zeros((64, 18), dtype=np.uint8)  # 64 rows of one IQ4_NL block
    up[5, 0:2] = np.array([np.inf], dtype=np.float16).view(np.uint8)
    _tiny_model(os.path.join(d, "seed_bad_iq4_nl_scale.gguf"), "llama", [],
                llama, {"blk.0.ffn_up.weight": (up, Q.IQ4_NL)})
    down = np.zeros((32, 136), dtype=np.uint8)  # 32 rows of one IQ4_XS block
    _tiny_model(os.path.join(d, "seed_bad_iq4_xs_width.gguf"), "llama", [],
                llama, {"blk.0.ffn_down.weight": (down, Q.IQ4_XS)})
    write_lattice_seeds(d, llama)


def write_lattice_seeds(d, llama) -> None:
    """The IQ1/IQ2/IQ3 types' bad files: an IQ1_M ffn_down (n_ff 256) whose
    block 5 has an infinite half scale (IQ1_M spreads it over the top
    nibbles of its four scale words), and an IQ2_XXS ffn_down of 256
    columns where the model has n_ff 64."""
    Q = gguf.GGMLQuantizationType
    wide = [(n, (256, 32) if n in ("blk.0.ffn_gate.weight",
                                   "blk.0.ffn_up.weight") else
             (32, 256) if n == "blk.0.ffn_down.weight" else s)
            for n, s in llama]
    down = np.zeros((32, 56), dtype=np.uint8)  # 32 rows of one IQ1_M block
    inf = int(np.array([np.inf], dtype=np.float16).view(np.uint16)[0])
    for k in range(4):  # nibble k of the half in the top of scale word k
        down[5, 48 + 2 * k + 1] = ((inf >> 4 * k) & 15) << 4
    _tiny_model(os.path.join(d, "seed_bad_iq1_m_scale.gguf"), "llama", [],
                wide, {"blk.0.ffn_down.weight": (down, Q.IQ1_M)}, n_ff=256)
    down = np.zeros((32, 66), dtype=np.uint8)  # 32 rows of one IQ2_XXS block
    _tiny_model(os.path.join(d, "seed_bad_iq2_xxs_width.gguf"), "llama", [],
                llama, {"blk.0.ffn_down.weight": (down, Q.IQ2_XXS)})


def main() -> int:
    if "--seeds" in sys.argv:
        write_seeds()
    if "--bad-model-seeds" in sys.argv:  # only those (the others stay as they are)
        write_bad_model_seeds(os.path.join(ROOT, "fuzz", "corpus", "gguf"))
        return 0
    if "--quant-seeds" in sys.argv:  # only issue 40's
        write_quant_seeds(os.path.join(ROOT, "fuzz", "corpus", "gguf"))
        return 0
    out = os.path.join(ROOT, "tests", "data", "gguf", "gguf_py_all_types.gguf")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    w = gguf.GGUFWriter(out, "llama")
    T = gguf.GGUFValueType
    w.add_uint8("test.u8", 250)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 65535)
    w.add_int16("test.i16", -32768)
    w.add_uint32("test.u32", 4294967295)
    w.add_int32("test.i32", -2147483648)
    w.add_uint64("test.u64", 2**64 - 1)
    w.add_int64("test.i64", -(2**63))
    w.add_float32("test.f32", 0.25)
    w.add_float64("test.f64", -1e300)
    w.add_bool("test.bool", False)
    w.add_string("test.str", "héllo wörld")
    w.add_array("test.arr_str", ["a", "", "ünï", "<s>"])
    w.add_key_value("test.arr_i32", [0, -1, 2, -3, -4], T.ARRAY, T.INT32)
    w.add_key_value("test.arr_f32", [1.0, 2.5], T.ARRAY, T.FLOAT32)
    w.add_tensor("tok.weight", np.arange(24, dtype=np.float32).reshape(3, 8) * 0.5)
    q = np.zeros((2, 4 * 34 // 2), dtype=np.uint8)  # 2 rows of 64 Q8_0 values
    for r in range(2):
        for blk in range(2):
            o = blk * 34
            q[r, o:o + 2] = np.frombuffer(np.float16(0.5).tobytes(), np.uint8)
            q[r, o + 2:o + 34] = np.arange(32, dtype=np.int8).view(np.uint8) - r
    w.add_tensor("q.weight", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("h.weight", np.linspace(-1, 1, 32, dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(out, os.path.getsize(out), "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
