#!/usr/bin/env python3
"""Small random-weight projector files (llama.cpp's mmproj: general.architecture
"clip") to pair with scripts/make_arch_gguf.py's language models.

Usage: scripts/make_arch_gguf.py gemma3 LM.gguf --seed N --mmproj MMPROJ.gguf
       scripts/make_mmproj_gguf.py KIND MMPROJ.gguf --seed N [--n-embd-text 256]
                                   [--q8] [--f16]
       (the second: the projector alone, for make_arch_gguf's LM of that seed;
       KIND gemma3, qwen3vl, qwen2vl / qwen25vl for the qwen2vl LM, or
       gemma4v for the gemma4 LM;
       --q8: the matrices Q8_0 where llama.cpp's converter writes them so;
       --f16: the matrices F16, as the real files ship them)

gemma3: a SigLIP tower as llama.cpp's clip.cpp loads it for projector_type
gemma3 (tools/mtmd/models/siglip.cpp): image_size 64, patch_size 8 (8 x 8
patches), 2 layers of width 128 (4 heads, FFN 256, tanh GELU: clip.use_gelu),
LayerNorm eps 1e-6, post_ln, then a 2 x 2 average pool
(clip.vision.projector.scale_factor 2: 16 rows an image), the soft-emb RMS
norm and mm.input_projection [128 -> the LM's n_embd]. Matrices F32 (so the
goldens are float-order noise only), norms 1 + 0.1 z, biases 0.1 z, positions
0.2 z, matrices std 1/sqrt(fan_in); weights from make_arch_gguf's
counter-based generator (same seed, same bytes everywhere).
"""
import os
import sys

import numpy as np

import gguf
from gguf import quants

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GEMMA3 = dict(image_size=64, patch_size=8, n_embd=128, n_head=4, n_ff=256,
              n_layer=2, n_merge=2, eps=1e-6,
              mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
# Qwen3-VL's tower (projector_type qwen3vl_merger, llama.cpp's
# models/qwen3vl.cpp): patches of 8 from two temporal kernels (a still
# image takes both), learned positions for an 8 x 8 grid (image_size 64),
# 3 layers of width 64 (4 heads of 16: 2-D RoPE on the heads' quarters),
# FFN 128 with tanh GELU, DeepStack taps after layers 0 and 2
# (is_deepstack_layers; the LM's n_deepstack_layers 2), the merger (post_ln
# per patch, 2 x 2 patches -> mm.0 -> GELU -> mm.2) into the LM's width.
QWEN3VL = dict(image_size=64, patch_size=8, n_embd=64, n_head=4, n_ff=128,
               n_layer=3, n_merge=2, eps=1e-6, deepstack=[True, False, True],
               mean=[0.48145466, 0.4578275, 0.40821073],
               std=[0.26862954, 0.26130258, 0.27577711])


# Qwen2-VL's tower (projector_type qwen2vl_merger, llama.cpp's
# models/qwen2vl.cpp): patches of 8 from two temporal kernels, no patch
# bias and no learned positions, 2 layers of width 64 (4 heads of 16: the
# 2-D RoPE), LayerNorm with biases, Q K V apart (biased), FFN 128 with the
# quick GELU (neither clip.use_gelu nor use_silu), post_ln, the merger.
QWEN2VL = dict(patch_size=8, n_embd=64, n_head=4, n_ff=128, n_layer=2,
               eps=1e-6, mean=[0.48145466, 0.4578275, 0.40821073],
               std=[0.26862954, 0.26130258, 0.27577711])
# Qwen2.5-VL's (qwen2.5vl_merger): the same, with RMS norms (weights only),
# a gated SiLU MLP (clip.use_silu; ffn_gate, biased) and window attention
# (clip.vision.n_wa_pattern 2: layers 1 and 3 attend over the whole image,
# 0 and 2 within windows of 112 / 8 / 2 = 7 x 7 blocks of 2 x 2 patches).
QWEN25VL = dict(QWEN2VL, n_layer=4, n_ff=96, n_wa_pattern=2)


# Gemma 4's tower (projector_type gemma4v, llama.cpp's models/gemma4v.cpp):
# patches of 4 (no bias), 3 x 3 pooling (llama.cpp's default, no
# scale_factor key), images at their own aspect ratio within 70 .. 1120
# rows; learned positions as two tables (column, row) of 64 entries; 2
# layers of width 64 (4 heads of 16: 2-D NEOX RoPE, base 100, the first
# half of each head by the column, the second by the row), RMS norms
# (ln1, per-head Q/K norms, V normed without weight, attn_post_norm, ln2,
# ffn_post_norm), attention unscaled, a gated MLP (no clip.use_gelu: the
# quick GELU, as the converter writes the real files), a scalar out_scale
# per layer; every linear clamped (Gemma4ClippableLinear: scalar
# .input_min/max, .output_min/max tensors); the pooled rows x sqrt(64),
# (x - std_bias) x std_scale, RMS norm, mm.input_projection.
GEMMA4V = dict(image_size=48, patch_size=4, n_embd=64, n_head=4, n_ff=128,
               n_layer=2, pos_size=64, eps=1e-6,
               mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])


def add_matrix(w, name, x, c):
    """A matrix in the file's type: F32, F16 (c["f16"]) or Q8_0 (c["q8"]:
    as llama.cpp's converter writes a q8_0 mmproj, the patch embedding and
    Gemma 3's input projection stay F16, and so do rows that are not whole
    blocks of 32)."""
    if not c.get("q8"):
        w.add_tensor(name, x.astype(np.float16 if c.get("f16") else
                                    np.float32))
    elif "patch_embd" in name or "input_projection" in name or \
            x.shape[-1] % 32:
        w.add_tensor(name, x.astype(np.float16))
    else:
        q = quants.quantize(x.astype(np.float32),
                            gguf.GGMLQuantizationType.Q8_0)
        w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)


def start(out, kind, seed):
    """The writer of a projector file with the keys every kind begins with."""
    w = gguf.GGUFWriter(out, "clip")
    w.add_name("nucleus random projector")
    w.add_string("nucleus.gen", f"scripts/make_mmproj_gguf.py {kind} --seed {seed}")
    w.add_file_type(0)
    w.add_bool("clip.has_vision_encoder", True)
    return w


def add_tower_keys(w, c, image_size, n_embd_text):
    """The vision tower's shape (c: the kind's configuration)."""
    w.add_uint32("clip.vision.image_size", image_size)
    w.add_uint32("clip.vision.patch_size", c["patch_size"])
    w.add_uint32("clip.vision.embedding_length", c["n_embd"])
    w.add_uint32("clip.vision.feed_forward_length", c["n_ff"])
    w.add_uint32("clip.vision.block_count", c["n_layer"])
    w.add_uint32("clip.vision.projection_dim", n_embd_text)
    w.add_uint32("clip.vision.attention.head_count", c["n_head"])
    w.add_float32("clip.vision.attention.layer_norm_epsilon", c["eps"])


def add_image_norm_keys(w, c):
    w.add_array("clip.vision.image_mean", c["mean"])
    w.add_array("clip.vision.image_std", c["std"])


def tensor_makers(w, seed, c, randn):
    """mat(name, shape, std): a random matrix (numpy order: ggml ne
    reversed) in the file's type (add_matrix); vec(name, n, kind): a vector
    of n, a norm 1 + 0.1 z, a bias 0.1 z or positions 0.2 z, F32."""
    def mat(name, shape, std):
        x = randn(seed, name, int(np.prod(shape))).reshape(shape) * std
        add_matrix(w, name, x, c)

    def vec(name, n, kind):
        z = randn(seed, name, n)
        x = {"norm": 1.0 + 0.1 * z, "bias": 0.1 * z, "pos": 0.2 * z}[kind]
        w.add_tensor(name, x.astype(np.float32))

    return mat, vec


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def build_qwen2vl(kind, out, seed, n_embd_text, randn, cfg=None):
    v25 = kind == "qwen25vl"
    c = {**(QWEN25VL if v25 else QWEN2VL), **(cfg or {})}
    E, F, P = c["n_embd"], c["n_ff"], c["patch_size"]
    M = E * 4
    w = start(out, kind, seed)
    w.add_string("clip.projector_type",
                 "qwen2.5vl_merger" if v25 else "qwen2vl_merger")
    if v25:
        w.add_bool("clip.use_silu", True)
        w.add_uint32("clip.vision.n_wa_pattern", c["n_wa_pattern"])
    add_tower_keys(w, c, 64, n_embd_text)
    add_image_norm_keys(w, c)
    mat, vec = tensor_makers(w, seed, c, randn)

    def norm(name):
        vec(name + ".weight", E, "norm")
        if not v25:
            vec(name + ".bias", E, "bias")

    mat("v.patch_embd.weight", (E, 3, P, P), 1.0 / np.sqrt(6 * P * P))
    mat("v.patch_embd.weight.1", (E, 3, P, P), 1.0 / np.sqrt(6 * P * P))
    for i in range(c["n_layer"]):
        p = f"v.blk.{i}."
        norm(p + "ln1")
        for t in ("attn_q", "attn_k", "attn_v", "attn_out"):
            mat(p + t + ".weight", (E, E), 1.0 / np.sqrt(E))
            vec(p + t + ".bias", E, "bias")
        norm(p + "ln2")
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        vec(p + "ffn_up.bias", F, "bias")
        if v25:
            mat(p + "ffn_gate.weight", (F, E), 1.0 / np.sqrt(E))
            vec(p + "ffn_gate.bias", F, "bias")
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
        vec(p + "ffn_down.bias", E, "bias")
    norm("v.post_ln")
    mat("mm.0.weight", (M, M), 1.0 / np.sqrt(M))
    vec("mm.0.bias", M, "bias")
    mat("mm.2.weight", (n_embd_text, M), 1.0 / np.sqrt(M))
    vec("mm.2.bias", n_embd_text, "bias")
    finish(w)


def build_qwen3vl(out, seed, n_embd_text, randn, cfg=None):
    c = {**QWEN3VL, **(cfg or {})}
    E, F, P = c["n_embd"], c["n_ff"], c["patch_size"]
    M = E * c["n_merge"] ** 2
    side = c["image_size"] // P
    w = start(out, "qwen3vl", seed)
    w.add_string("clip.projector_type", "qwen3vl_merger")
    w.add_bool("clip.use_gelu", True)
    add_tower_keys(w, c, c["image_size"], n_embd_text)
    w.add_uint32("clip.vision.spatial_merge_size", c["n_merge"])
    w.add_array("clip.vision.is_deepstack_layers", c["deepstack"])
    add_image_norm_keys(w, c)
    mat, vec = tensor_makers(w, seed, c, randn)
    mat("v.patch_embd.weight", (E, 3, P, P), 1.0 / np.sqrt(6 * P * P))
    mat("v.patch_embd.weight.1", (E, 3, P, P), 1.0 / np.sqrt(6 * P * P))
    vec("v.patch_embd.bias", E, "bias")
    pos = randn(seed, "v.position_embd.weight", side * side * E) * 0.2
    w.add_tensor("v.position_embd.weight",
                 pos.reshape(side * side, E).astype(np.float32))
    for i in range(c["n_layer"]):
        p = f"v.blk.{i}."
        vec(p + "ln1.weight", E, "norm")
        vec(p + "ln1.bias", E, "bias")
        mat(p + "attn_qkv.weight", (3 * E, E), 1.0 / np.sqrt(E))
        vec(p + "attn_qkv.bias", 3 * E, "bias")
        mat(p + "attn_out.weight", (E, E), 1.0 / np.sqrt(E))
        vec(p + "attn_out.bias", E, "bias")
        vec(p + "ln2.weight", E, "norm")
        vec(p + "ln2.bias", E, "bias")
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        vec(p + "ffn_up.bias", F, "bias")
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
        vec(p + "ffn_down.bias", E, "bias")
        if c["deepstack"][i]:
            d = f"v.deepstack.{i}."
            vec(d + "norm.weight", M, "norm")
            vec(d + "norm.bias", M, "bias")
            mat(d + "fc1.weight", (M, M), 1.0 / np.sqrt(M))
            vec(d + "fc1.bias", M, "bias")
            mat(d + "fc2.weight", (n_embd_text, M), 1.0 / np.sqrt(M))
            vec(d + "fc2.bias", n_embd_text, "bias")
    vec("v.post_ln.weight", E, "norm")
    vec("v.post_ln.bias", E, "bias")
    mat("mm.0.weight", (M, M), 1.0 / np.sqrt(M))
    vec("mm.0.bias", M, "bias")
    mat("mm.2.weight", (n_embd_text, M), 1.0 / np.sqrt(M))
    vec("mm.2.bias", n_embd_text, "bias")
    finish(w)


def build_gemma4v(out, seed, n_embd_text, randn, cfg=None):
    c = {**GEMMA4V, **(cfg or {})}
    E, F, P, dh = c["n_embd"], c["n_ff"], c["patch_size"], \
        c["n_embd"] // c["n_head"]
    w = start(out, "gemma4v", seed)
    w.add_string("clip.vision.projector_type", "gemma4v")
    add_tower_keys(w, c, c["image_size"], n_embd_text)
    add_image_norm_keys(w, c)
    plain_mat, vec = tensor_makers(w, seed, c, randn)

    def mat(name, shape, std):
        plain_mat(name, shape, std)
        # Gemma4ClippableLinear's bounds: scalars (1-element tensors)
        base = name[:-len(".weight")]
        z = randn(seed, base + ".clamp", 4)
        bounds = {"input_min": -1.5 - 0.5 * abs(z[0]),
                  "input_max": 1.5 + 0.5 * abs(z[1]),
                  "output_min": -1.5 - 0.5 * abs(z[2]),
                  "output_max": 1.5 + 0.5 * abs(z[3])}
        for k, v in bounds.items():
            w.add_tensor(f"{base}.{k}", np.array([v], dtype=np.float32))

    # the patch embedding takes 2 x - 1 of pixels in [0, 1]: std as SigLIP
    w.add_tensor("v.patch_embd.weight",
                 (randn(seed, "v.patch_embd.weight", E * 3 * P * P)
                  .reshape(E, 3, P, P) / np.sqrt(3 * P * P)).astype(np.float32))
    pos = randn(seed, "v.position_embd.weight", 2 * c["pos_size"] * E) * 0.2
    w.add_tensor("v.position_embd.weight",
                 pos.reshape(2, c["pos_size"], E).astype(np.float32))
    for i in range(c["n_layer"]):
        p = f"v.blk.{i}."
        vec(p + "ln1.weight", E, "norm")
        for t in ("attn_q", "attn_k", "attn_v"):
            mat(p + t + ".weight", (E, E), 1.0 / np.sqrt(E))
        vec(p + "attn_q_norm.weight", dh, "norm")
        vec(p + "attn_k_norm.weight", dh, "norm")
        mat(p + "attn_out.weight", (E, E), 1.0 / np.sqrt(E))
        vec(p + "attn_post_norm.weight", E, "norm")
        vec(p + "ln2.weight", E, "norm")
        mat(p + "ffn_gate.weight", (F, E), 1.0 / np.sqrt(E))
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
        vec(p + "ffn_post_norm.weight", E, "norm")
        z = randn(seed, p + "out_scale.weight", 1)
        w.add_tensor(p + "out_scale.weight",
                     (0.8 + 0.1 * z).astype(np.float32))
    vec("v.std_bias", E, "bias")
    vec("v.std_scale", E, "norm")
    mat("mm.input_projection.weight", (n_embd_text, E), 1.0 / np.sqrt(E))
    finish(w)


def build_mmproj(kind, out, seed, n_embd_text, randn, cfg=None):
    """cfg: entries replacing the kind's configuration above (the bench's
    real widths: bench/make_arch_shaped.py), and f16: True for matrices in
    F16 as the real files ship them, q8: True for Q8_0 ones (add_matrix)."""
    if kind == "qwen3vl":
        return build_qwen3vl(out, seed, n_embd_text, randn, cfg)
    if kind in ("qwen2vl", "qwen25vl"):
        return build_qwen2vl(kind, out, seed, n_embd_text, randn, cfg)
    if kind in ("gemma4v", "gemma4"):
        return build_gemma4v(out, seed, n_embd_text, randn, cfg)
    if kind != "gemma3":
        raise SystemExit(f"--mmproj: no projector for {kind!r} (gemma3, "
                         "gemma4v, qwen2vl, qwen25vl, qwen3vl)")
    c = {**GEMMA3, **(cfg or {})}
    E, F, P = c["n_embd"], c["n_ff"], c["patch_size"]
    side = c["image_size"] // P
    w = start(out, kind, seed)
    w.add_bool("clip.has_text_encoder", False)
    w.add_string("clip.projector_type", "gemma3")
    w.add_bool("clip.use_gelu", True)
    add_tower_keys(w, c, c["image_size"], n_embd_text)
    w.add_uint32("clip.vision.projector.scale_factor", c["n_merge"])
    add_image_norm_keys(w, c)
    mat, vec = tensor_makers(w, seed, c, randn)
    mat("v.patch_embd.weight", (E, 3, P, P), 1.0 / np.sqrt(3 * P * P))
    vec("v.patch_embd.bias", E, "bias")
    pos = randn(seed, "v.position_embd.weight", side * side * E) * 0.2
    w.add_tensor("v.position_embd.weight",
                 pos.reshape(side * side, E).astype(np.float32))
    for i in range(c["n_layer"]):
        p = f"v.blk.{i}."
        vec(p + "ln1.weight", E, "norm")
        vec(p + "ln1.bias", E, "bias")
        for t in ("attn_q", "attn_k", "attn_v", "attn_out"):
            mat(p + t + ".weight", (E, E), 1.0 / np.sqrt(E))
            vec(p + t + ".bias", E, "bias")
        vec(p + "ln2.weight", E, "norm")
        vec(p + "ln2.bias", E, "bias")
        mat(p + "ffn_up.weight", (F, E), 1.0 / np.sqrt(E))
        vec(p + "ffn_up.bias", F, "bias")
        mat(p + "ffn_down.weight", (E, F), 1.0 / np.sqrt(F))
        vec(p + "ffn_down.bias", E, "bias")
    vec("v.post_ln.weight", E, "norm")
    vec("v.post_ln.bias", E, "bias")
    vec("mm.soft_emb_norm.weight", E, "norm")
    # ggml ne [n_embd_text, E]: llama.cpp multiplies its transpose
    mat("mm.input_projection.weight", (E, n_embd_text), 1.0 / np.sqrt(E))
    finish(w)


def main(argv):
    from make_arch_gguf import N_EMBD, randn
    args, seed, n_text, cfg = [], 0, N_EMBD, {}
    it = iter(argv)
    for a in it:
        if a == "--seed":
            seed = int(next(it))
        elif a == "--q8":
            cfg["q8"] = True
        elif a == "--f16":
            cfg["f16"] = True
        elif a == "--n-embd-text":
            n_text = int(next(it))
        else:
            args.append(a)
    if len(args) != 2:
        raise SystemExit(__doc__)
    build_mmproj(args[0], args[1], seed, n_text, randn, cfg)


if __name__ == "__main__":
    main(sys.argv[1:])
