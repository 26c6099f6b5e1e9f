#!/usr/bin/env python3
"""Writes the projector fuzzer's seeds (fuzz/corpus/mmproj/): small
random-weight mmproj files from scripts/make_mmproj_gguf.py at tiny widths,
one or two of each encoder kind, F32, F16 and Q8_0 (ok_*: they load), and variants whose keys
or tensors a hostile file could get wrong (bad_*: each refused, with the
message tests/unit/test_mmproj_fuzz.c expects). A variant is the kind's
file written through a GGUFWriter that replaces, adds or leaves out keys
and tensors on the way (so the rest of the file stays well formed).

Usage: scripts/gen_mmproj_seeds.py [OUT_DIR]"""
import pathlib
import sys
import types

import numpy as np

import gguf

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import make_arch_gguf  # noqa: E402
import make_mmproj_gguf  # noqa: E402

TEXT = 8  # the made-up language model's width (the fuzzer reads it back)
# Tiny widths: heads of 4 and 8 (Qwen's 2-D RoPE wants a multiple of 4).
TINY = {
    "gemma3": dict(image_size=16, patch_size=4, n_embd=8, n_head=2, n_ff=16,
                   n_layer=1, n_merge=2),
    "qwen3vl": dict(image_size=16, patch_size=4, n_embd=8, n_head=1,
                    n_ff=16, n_layer=2, deepstack=[True, False]),
    "qwen2vl": dict(patch_size=4, n_embd=8, n_head=1, n_ff=16, n_layer=1),
    "qwen25vl": dict(patch_size=4, n_embd=8, n_head=1, n_ff=16, n_layer=2,
                     n_wa_pattern=2),
    # patches of 2, 3 x 3 pooling: the harness's 5 x 3 and 2 x 19 images
    # scaled up to the 70 rows' minimum (66 x 42, 18 x 156 pixels), within
    # 96 positions a side
    "gemma4v": dict(image_size=8, patch_size=2, n_embd=8, n_head=2, n_ff=16,
                    n_layer=1, pos_size=96),
}


def mutating_writer(keys=None, drop_keys=(), add_keys=None, drop_tensors=(),
                    f16_tensors=()):
    """A GGUFWriter factory: keys {key: value} replace values (any type the
    value's Python type writes), add_keys are written too, drop_keys and
    drop_tensors left out, f16_tensors written as F16."""
    keys, add_keys = keys or {}, add_keys or {}

    def put(w, key, value):
        if isinstance(value, bool):
            gguf.GGUFWriter.add_bool(w, key, value)
        elif isinstance(value, int):
            gguf.GGUFWriter.add_uint32(w, key, value) if 0 <= value < 2**32 \
                else gguf.GGUFWriter.add_int64(w, key, value)
        elif isinstance(value, float):
            gguf.GGUFWriter.add_float32(w, key, value)
        elif isinstance(value, str):
            gguf.GGUFWriter.add_string(w, key, value)
        else:
            gguf.GGUFWriter.add_array(w, key, value)

    class Writer(gguf.GGUFWriter):
        def __init__(self, path, arch):
            super().__init__(path, arch)
            for k, v in add_keys.items():
                put(self, k, v)

        def _kv(self, base, key, value):
            if key in drop_keys:
                return
            if key in keys:
                put(self, key, keys[key])
            else:
                base(self, key, value)

        def add_uint32(self, key, value):
            self._kv(gguf.GGUFWriter.add_uint32, key, value)

        def add_float32(self, key, value):
            self._kv(gguf.GGUFWriter.add_float32, key, value)

        def add_bool(self, key, value):
            self._kv(gguf.GGUFWriter.add_bool, key, value)

        def add_string(self, key, value):
            self._kv(gguf.GGUFWriter.add_string, key, value)

        def add_array(self, key, value):
            self._kv(gguf.GGUFWriter.add_array, key, value)

        def add_tensor(self, name, tensor, *args, **kwargs):
            if name in drop_tensors:
                return
            if name in f16_tensors:
                tensor = tensor.astype(np.float16)
            super().add_tensor(name, tensor, *args, **kwargs)

    return Writer


def write(path, kind, cfg=None, **mutation):
    writer = mutating_writer(**mutation)
    make_mmproj_gguf.gguf = types.SimpleNamespace(
        **{**vars(gguf), "GGUFWriter": writer})
    try:
        make_mmproj_gguf.build_mmproj(kind, str(path), 17, TEXT,
                                      make_arch_gguf.randn,
                                      {**TINY[kind], **(cfg or {})})
    finally:
        make_mmproj_gguf.gguf = gguf


V = "clip.vision."
# name: (kind, cfg, mutation); tests/unit/test_mmproj_fuzz.c lists the
# message each bad_ seed is refused with.
SEEDS = {
    "ok_gemma3": ("gemma3", {}, {}),
    "ok_gemma3_f16": ("gemma3", {"f16": True}, {}),
    "ok_qwen3vl": ("qwen3vl", {}, {}),
    "ok_qwen3vl_f16": ("qwen3vl", {"f16": True}, {}),
    # Q8_0 matrices where rows are whole blocks (Gemma 3's layers at width
    # 32; Qwen3-VL's merger and DeepStack taps, 4 x 8 wide)
    "ok_gemma3_q8": ("gemma3", {"q8": True, "n_embd": 32, "n_head": 4,
                                "n_ff": 32}, {}),
    "ok_qwen3vl_q8": ("qwen3vl", {"q8": True}, {}),
    "ok_qwen2vl": ("qwen2vl", {}, {}),
    "ok_qwen25vl": ("qwen25vl", {}, {}),
    "ok_qwen25vl_no_windows": ("qwen25vl", {}, {"keys": {V + "n_wa_pattern": 0}}),
    "ok_gemma4v": ("gemma4v", {}, {}),
    "ok_gemma4v_f16": ("gemma4v", {"f16": True}, {}),
    "ok_gemma4v_merge2": ("gemma4v", {}, {"add_keys": {V + "projector.scale_factor": 2}}),
    "bad_gemma4v_head_size": ("gemma4v", {"n_embd": 12, "n_head": 2}, {}),
    "bad_gemma4v_merge_zero": ("gemma4v", {}, {"add_keys": {V + "projector.scale_factor": 0}}),
    "bad_gemma4v_positions": ("gemma4v", {}, {"drop_tensors": ["v.position_embd.weight"]}),
    "bad_gemma4v_clamp_f16": ("gemma4v", {}, {"f16_tensors": ["v.blk.0.attn_q.input_min"]}),
    "bad_gemma4v_std_half": ("gemma4v", {}, {"drop_tensors": ["v.std_scale"]}),
    "bad_gemma4v_proj_missing": ("gemma4v", {}, {"drop_tensors": ["mm.input_projection.weight"]}),
    "bad_architecture": ("gemma3", {}, {"keys": {"general.architecture": "llama"}}),
    "bad_no_vision": ("gemma3", {}, {"keys": {"clip.has_vision_encoder": False}}),
    "bad_projector": ("gemma3", {}, {"keys": {"clip.projector_type": "llava"}}),
    "bad_embd_zero": ("gemma3", {}, {"keys": {V + "embedding_length": 0}}),
    "bad_embd_huge": ("gemma3", {}, {"keys": {V + "embedding_length": 1 << 31}}),
    "bad_heads": ("gemma3", {}, {"keys": {V + "attention.head_count": 3}}),
    "bad_layers_huge": ("gemma3", {}, {"keys": {V + "block_count": 100000}}),
    "bad_layers_missing": ("qwen2vl", {}, {"keys": {V + "block_count": 3}}),
    "bad_ff_string": ("gemma3", {}, {"keys": {V + "feed_forward_length": "16"}}),
    "bad_image_size_huge": ("gemma3", {}, {"keys": {V + "image_size": 1 << 20}}),
    "bad_patch_zero": ("gemma3", {}, {"keys": {V + "patch_size": 0}}),
    "bad_patch_over_image": ("gemma3", {}, {"keys": {V + "patch_size": 32}}),
    "bad_patch_not_dividing": ("gemma3", {}, {"keys": {V + "patch_size": 5}}),
    "bad_patch_shape": ("gemma3", {}, {"keys": {V + "patch_size": 2}}),
    "bad_merge_zero": ("gemma3", {}, {"keys": {V + "projector.scale_factor": 0}}),
    "bad_merge_not_dividing": ("gemma3", {}, {"keys": {V + "projector.scale_factor": 3}}),
    "bad_qwen_merge": ("qwen3vl", {}, {"keys": {V + "spatial_merge_size": 4}}),
    "bad_qwen_head_size": ("qwen2vl", {"n_embd": 12, "n_head": 2}, {}),
    "bad_eps_zero": ("gemma3", {}, {"keys": {V + "attention.layer_norm_epsilon": 0.0}}),
    "bad_eps_nan": ("qwen2vl", {}, {"keys": {V + "attention.layer_norm_epsilon": float("nan")}}),
    "bad_std_zero": ("gemma3", {}, {"keys": {V + "image_std": [0.5, 0.0, 0.5]}}),
    "bad_mean_short": ("qwen3vl", {}, {"keys": {V + "image_mean": [0.5, 0.5]}}),
    "bad_gelu_and_silu": ("qwen25vl", {}, {"add_keys": {"clip.use_gelu": True}}),
    "bad_gemma3_silu": ("gemma3", {}, {"drop_keys": ["clip.use_gelu"],
                                       "add_keys": {"clip.use_silu": True}}),
    "bad_gemma3_quick_gelu": ("gemma3", {}, {"drop_keys": ["clip.use_gelu"]}),
    "bad_qwen2vl_windows": ("qwen2vl", {}, {"add_keys": {V + "n_wa_pattern": 2}}),
    "bad_qwen25vl_no_pattern": ("qwen25vl", {}, {"drop_keys": [V + "n_wa_pattern"]}),
    "bad_qwen25vl_pattern_huge": ("qwen25vl", {}, {"keys": {V + "n_wa_pattern": 1 << 30}}),
    "bad_qwen25vl_window_patch": ("qwen25vl", {}, {"keys": {V + "patch_size": 64}}),
    "bad_deepstack_count": ("qwen3vl", {}, {"keys": {V + "is_deepstack_layers": [True, False, True]}}),
    "bad_deepstack_value": ("qwen3vl", {}, {"keys": {V + "is_deepstack_layers": [2, 0]}}),
    "bad_deepstack_unmarked": ("qwen3vl", {}, {"keys": {V + "is_deepstack_layers": [False, False]}}),
    "bad_tensor_missing": ("gemma3", {}, {"drop_tensors": ["v.blk.0.attn_q.weight"]}),
    "bad_qwen3vl_no_bias": ("qwen3vl", {}, {"drop_tensors": ["v.patch_embd.bias"]}),
    "bad_qwen2vl_second_kernel": ("qwen2vl", {}, {"drop_tensors": ["v.patch_embd.weight.1"]}),
    "bad_merger_missing": ("qwen25vl", {}, {"drop_tensors": ["mm.2.bias"]}),
    "bad_positions_missing": ("gemma3", {}, {"drop_tensors": ["v.position_embd.weight"]}),
}


def main(argv):
    out = pathlib.Path(argv[0]) if argv else ROOT / "fuzz" / "corpus" / "mmproj"
    out.mkdir(parents=True, exist_ok=True)
    for name, (kind, cfg, mutation) in SEEDS.items():
        write(out / f"{name}.gguf", kind, cfg, **mutation)
    # a file cut short inside its tensor data
    full = (out / "ok_qwen2vl.gguf").read_bytes()
    (out / "bad_truncated.gguf").write_bytes(full[: len(full) * 2 // 3])


if __name__ == "__main__":
    main(sys.argv[1:])
