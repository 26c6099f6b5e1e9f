#!/usr/bin/env python3
"""Tiny gemma3 GGUF files (valid GGUF, bad models) for the GGUF fuzzer's seed
corpus: a one-layer gemma3 (n_embd 16, 2 heads of 8, vocab 4) missing its
attn_q_norm tensor, with a sliding window of 0, and with a post-attention
norm of the wrong width. tests/unit/test_forward_arch.c checks the loader's
errors for the same faults on full-size files.

Usage: scripts/gen_gemma_seeds.py [DIR]   (default fuzz/corpus/gguf)
"""
import os
import sys

import gguf
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    ROOT, "fuzz", "corpus", "gguf")
E, H, D, F, V = 16, 2, 8, 32, 4


def write(name, window=4, skip=(), widths=None):
    w = gguf.GGUFWriter(os.path.join(DIR, name), "gemma3")
    w.add_context_length(64)
    w.add_embedding_length(E)
    w.add_block_count(1)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(1)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_sliding_window(window)
    w.add_tokenizer_model("llama")
    w.add_token_list([b"<pad>", b"<eos>", b"<bos>", b"a"])
    w.add_token_scores([0.0] * V)
    w.add_token_types([3, 3, 3, 1])
    shapes = {"token_embd.weight": (V, E), "output_norm.weight": (E,),
              "blk.0.attn_norm.weight": (E,), "blk.0.attn_q.weight": (H * D, E),
              "blk.0.attn_k.weight": (D, E), "blk.0.attn_v.weight": (D, E),
              "blk.0.attn_output.weight": (E, H * D),
              "blk.0.attn_q_norm.weight": (D,), "blk.0.attn_k_norm.weight": (D,),
              "blk.0.post_attention_norm.weight": (E,),
              "blk.0.ffn_norm.weight": (E,), "blk.0.ffn_gate.weight": (F, E),
              "blk.0.ffn_up.weight": (F, E), "blk.0.ffn_down.weight": (E, F),
              "blk.0.post_ffw_norm.weight": (E,)}
    shapes.update(widths or {})
    for t, shape in shapes.items():
        if t not in skip:
            w.add_tensor(t, np.full(shape, 0.5, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


write("seed_gemma3_no_q_norm.gguf", skip=("blk.0.attn_q_norm.weight",))
write("seed_gemma3_window_0.gguf", window=0)
write("seed_gemma3_post_norm_width.gguf",
      widths={"blk.0.post_attention_norm.weight": (E // 2,)})
print("wrote 3 seeds to", DIR)
