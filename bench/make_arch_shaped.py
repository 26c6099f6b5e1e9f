#!/usr/bin/env python3
"""Random-weight GGUF files shaped like the hybrid, MoE, gpt-oss and Gemma 4
models people run, for bench/speed.py's rows of issues 41 and 42.

Each is scripts/make_arch_gguf.py's file of that architecture (every piece
the fidelity tests cover, the same keys and tensor names llama.cpp reads)
at a real model's widths, with fewer layers so that it is a few hundred MB
once quantized: larger than any cache, so decode is memory-bound. Speed
depends on shapes and types, not on values. The vocabulary is the default
model's (SmolLM2, 49152 tokens; gpt-oss adds the harmony tokens), smaller
than the real ones (151k to 262k).

  qwen35     Qwen3.5-2B-like dense hybrid: 8 layers, the real 3:1 pattern
             (gated DeltaNet, DeltaNet, DeltaNet, gated attention, twice),
             2048 wide, DeltaNet 16 k and 16 v heads of 128 (conv 4),
             attention 8 heads of 256 over 2 KV heads (RoPE on a quarter,
             sections 11/11/10), FFN 6144, tied output
  qwen35moe  Qwen3.6-35B-A3B-like: 4 layers (3 DeltaNet, 1 attention),
             2048 wide, DeltaNet 16 k and 32 v heads of 128, attention 16
             heads of 256 over 2 KV heads, 32 experts of 512 (8 used; the
             real one has 256) beside a shared expert of 512, own output
  gptoss     gpt-oss-20b-like: 4 layers, windows of 128 on the even ones,
             2880 wide, 64 heads of 64 over 8 KV heads, sinks, biases, 8
             experts of 2880 (4 used; the real one has 32) in MXFP4, the
             other matrices Q8_0 (as gpt-oss ships: written here directly,
             no quantizer needed), YaRN factor 32 over 4096
  gemma4     Gemma-4-E2B-like: 10 layers (4 sliding of window 512 then 1
             full, twice), the last 5 reading the K/V of the last sliding
             and the last full layer before them (llama.cpp takes those two,
             so the layers with own K/V end on a sliding and a full one, as
             in E2B), 1536 wide, 8 heads of 256 on sliding and of 512 on
             full layers over 1 KV head, per-layer embeddings of 256, FFN
             6144 (12288 on the shared-KV layers), tied output

  gemma3vl   Gemma-3-4B-like language model for the vision bench: 4
             layers, 2560 wide, 8 heads of 256 over 4 KV heads, FFN 10240;
             --mmproj: its SigLIP tower at the real widths (image 896,
             patches of 14: 4,096 patches, 1152 wide, 16 heads, FFN 4304,
             the 4 x 4 pool to 256 rows) with 6 of its 27 layers, F16
  qwen3vl    Qwen3-VL-2B-like language model: 4 layers, 2048 wide, 16 heads
             of 128 over 8 KV heads, FFN 6144, M-RoPE sections 24/20/20,
             3 DeepStack layers; --mmproj: its tower (patches of 16,
             learned positions for 48 x 48, 1024 wide, 16 heads, FFN 4096)
             with 6 of its 24 layers, DeepStack taps after layers 1, 3, 5,
             F16 (bench/vision.py)

qwen35, qwen35moe, gemma4, gemma3vl and qwen3vl are written in F16 for
llama-quantize (scripts/make_bench_models.sh makes their Q4_K_M files;
bench/vision.py its own); gptoss is final.

usage: bench/make_arch_shaped.py SHAPE OUT.gguf [--mmproj MMPROJ.gguf]
       bench/make_arch_shaped.py --list
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import make_arch_gguf  # noqa: E402

# shape name -> (make_arch_gguf arch, the entries replacing its config)
SHAPES = {
    "qwen35": ("qwen35", dict(
        n_layer=8, attn_interval=4, n_embd=2048, n_head=8, n_head_kv=2,
        head_dim=256, n_ff=6144, tied=True, f32=False,
        sections=[11, 11, 10, 0],
        ssm=dict(d_conv=4, d_state=128, n_k=16, n_v=16))),
    "qwen35moe": ("qwen35moe", dict(
        n_layer=4, attn_interval=4, n_embd=2048, n_head=16, n_head_kv=2,
        head_dim=256, tied=False, f32=False, sections=[11, 11, 10, 0],
        n_expert=32, n_expert_used=8, n_ff_exp=512, n_ff_shexp=512,
        ssm=dict(d_conv=4, d_state=128, n_k=16, n_v=32))),
    "gptoss": ("gptoss", dict(
        n_layer=4, n_embd=2880, n_head=64, n_head_kv=8, head_dim=64,
        window=128, n_expert=8, n_expert_used=4, n_ff_exp=2880,
        scaling=("yarn", 32.0), orig_ctx=4096)),
    "gemma4": ("gemma4", dict(
        n_layer=10, swa=[1, 1, 1, 1, 0] * 2, n_embd=1536, n_head=8,
        head_dim=256, head_dim_full=512, n_head_kv_swa=1, n_head_kv_full=1,
        n_kv_shared=5, n_embd_per_layer=256, n_ff=6144, double_wide=True,
        window=512)),
    "gemma3vl": ("gemma3", dict(
        n_layer=4, n_embd=2560, n_head=8, n_head_kv=4, head_dim=256,
        n_ff=10240)),
    "qwen3vl": ("qwen3vl", dict(
        n_layer=4, n_embd=2048, n_head=16, n_head_kv=8, head_dim=128,
        n_ff=6144, sections=[24, 20, 20, 0], deepstack=3)),
}

# shape -> (scripts/make_mmproj_gguf.py kind, the entries replacing its
# configuration): the vision towers of the VL shapes
MMPROJ = {
    "gemma3vl": ("gemma3", dict(
        image_size=896, patch_size=14, n_embd=1152, n_head=16, n_ff=4304,
        n_layer=6, n_merge=4, f16=True)),
    "qwen3vl": ("qwen3vl", dict(
        image_size=768, patch_size=16, n_embd=1024, n_head=16, n_ff=4096,
        n_layer=6, deepstack=[False, True] * 3, f16=True)),
}


def main(argv):
    if argv == ["--list"]:
        print(" ".join(SHAPES))
        return 0
    mmproj = None
    if len(argv) == 4 and argv[2] == "--mmproj":
        mmproj = argv[3]
        argv = argv[:2]
    if len(argv) != 2 or argv[0] not in SHAPES or (
            mmproj and argv[0] not in MMPROJ):
        print(__doc__, file=sys.stderr)
        print(f"make_arch_shaped.py: SHAPE must be one of {' '.join(SHAPES)}",
              file=sys.stderr)
        return 2
    arch, overrides = SHAPES[argv[0]]
    make_arch_gguf.build(arch, argv[1], overrides=overrides)
    if mmproj:
        from make_mmproj_gguf import build_mmproj
        kind, cfg = MMPROJ[argv[0]]
        build_mmproj(kind, mmproj, 0, overrides["n_embd"],
                     make_arch_gguf.randn, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
