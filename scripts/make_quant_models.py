#!/usr/bin/env python3
"""Test files for issue 40's quant types: the default model requantized, and
llama.cpp's teacher-forced logits for each (never committed; `make
quant-models` keeps them in build/quant/).

Cases (CASE -> OUTDIR/smollm2_CASE.gguf and OUTDIR/smollm2_CASE.txt, but
for the gemma3_ ones):
  iq4_nl, iq4_xs, tq1_0, tq2_0, q2_0
      llama.cpp's own quantizer (llama_cpp.llama_model_quantize, ftype
      LLAMA_FTYPE_MOSTLY_<CASE>, allow_requantize) on the default Q4_1 model.
      Its recipes fall back where a row is not a whole number of 256-blocks
      (SmolLM2's 576 columns): iq4_xs holds IQ4_XS (ffn_down) beside IQ4_NL,
      Q5_K and Q8_0; tq1_0 / tq2_0 hold the ternary type in ffn_down beside
      Q4_0 (a requantized ternary model is nonsense as a language model, but
      its logits are still llama.cpp's to match); q2_0 (64-blocks) covers
      every matrix.
  nvfp4, q1_0
      this llama.cpp's llama_model_quantize refuses both (NVFP4: "invalid
      output file type"; Q1_0 has no fallback for 576 columns), so:
      llama.cpp's Q8_0 of the model with the matrices replaced by ggml's own
      quantizer's blocks (ggml_quantize_chunk in llama-cpp-python's
      libggml-base) of the same weights: every attention and FFN matrix for
      NVFP4, the ffn_down (1536 columns, whole 128-blocks) for Q1_0.
  iq3_s
      llama.cpp's quantizer as above (IQ3_S needs no importance matrix):
      IQ3_S in ffn_down beside IQ4_NL in the 576-column matrices (its IQ3_XXS
      recipe puts Q3_K in ffn_down here, so IQ3_XXS is in iq_lattice only).
  iq_lattice
      the IQ1/IQ2/IQ3 types together, as the dynamic low-bit uploads mix
      them: llama.cpp's Q8_0 of the model with each layer's ffn_down (the
      only matrices of whole 256-blocks) replaced by ggml's own quantizer's
      blocks (ggml_quantize_chunk) of one of IQ2_XXS, IQ2_XS, IQ2_S,
      IQ3_XXS, IQ3_S, IQ1_S, IQ1_M in turn. IQ2_XXS, IQ2_XS and IQ1_S need
      an importance matrix in ggml (llama_model_quantize refuses them
      without one and takes none from python): a uniform one (every column
      weighs 1) for every type.
  mixed
      a "dynamic" mix as the uploads make them: llama.cpp's Q4_K_M of the
      model (ffn_down Q4_K or Q6_K, the 576-column matrices Q5_0 and Q8_0)
      with the ffn_down of the even layers where it is Q4_K replaced by the
      IQ4_XS blocks llama.cpp made for the iq4_xs case: IQ4_XS beside Q4_K
      and Q6_K.
  mxfp4
      llama.cpp's quantizer writes MXFP4 only for MoE experts, so: llama.cpp's
      Q8_0 of the model with every attention and FFN matrix replaced by
      MXFP4 blocks of the same (dequantized) weights, quantized by gguf-py's
      reference quantizer (gguf.quants.quantize).
  moe_mxfp4 (smollm2_moe_mxfp4: the default model's tokenizer only)
      a small Qwen3-MoE-shaped file with random weights
      (bench/make_moe_shaped.py: 2 layers, 256 wide, 4 experts of 256, 2
      used) quantized by llama.cpp with LLAMA_FTYPE_MOSTLY_MXFP4_MOE: MXFP4
      experts beside Q8_0, as gpt-oss ships them.
  gemma3_iq4_nl, gemma3_iq4_xs (OUTDIR/CASE.gguf and .txt, no smollm2_)
      Gemma 3 270M (models/gemma-3-270m-q4_k_m.gguf, requantized) by
      llama.cpp's quantizer: its 640-column matrices are not whole
      256-blocks, so iq4_xs holds IQ4_XS in ffn_down beside IQ4_NL.
The golden is scripts/gen_logits_golden.py's (4 prompts x 128 tokens, no
repack, flash attention off), written next to the file. A case is skipped
when both files exist and are newer than this script and the model.

Usage: scripts/make_quant_models.py OUTDIR [CASE ...]
"""
import ctypes
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA3 = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
CASES = ["iq4_nl", "iq4_xs", "tq1_0", "tq2_0", "mixed", "mxfp4",
         "moe_mxfp4", "nvfp4", "q1_0", "q2_0", "gemma3_iq4_nl",
         "gemma3_iq4_xs", "iq3_s", "iq_lattice"]
LATTICE = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"]


def stem(case):
    """A case's file name without extension."""
    return case if case.startswith("gemma3_") else "smollm2_" + case
MOE_SHAPE = ["--layers", "2", "--embd", "256", "--heads", "2", "--head-dim",
             "128", "--kv-heads", "1", "--experts", "4", "--used", "2",
             "--ff-exp", "256"]


def quantize(L, src, dst, ftype):
    p = L.llama_model_quantize_default_params()
    p.ftype = getattr(L, "LLAMA_FTYPE_MOSTLY_" + ftype)
    p.allow_requantize = True
    p.nthread = 2
    if L.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p)):
        raise SystemExit(f"llama.cpp could not quantize {src} to {ftype}")


def rewrite(base, dst, replace):
    """Copies the GGUF base to dst with the tensors replace(name, tensor)
    returns (raw uint8 blocks, GGMLQuantizationType) swapped in."""
    import gguf
    r = gguf.GGUFReader(base)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue
        sub = f.types[1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, f.contents(), f.types[0], sub)
    for t in r.tensors:
        new = replace(t.name, t)
        data, qtype = new if new else (t.data, t.tensor_type)
        if qtype == gguf.GGMLQuantizationType.F32:
            shape = [int(x) for x in reversed(t.shape)]  # numpy order
            w.add_tensor(t.name, np.asarray(data, dtype=np.float32).reshape(
                shape))
        else:  # rows of raw bytes: gguf-py derives the element shape
            w.add_tensor(t.name, np.asarray(data, dtype=np.uint8),
                         raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def is_ffn_down(name):
    return name.endswith("ffn_down.weight")


def make_mixed(L, out, tmp):
    import gguf
    q4km, iq4xs = tmp + "_q4km.gguf", tmp + "_iq4xs.gguf"
    quantize(L, MODEL, q4km, "Q4_K_M")
    quantize(L, MODEL, iq4xs, "IQ4_XS")
    src = {t.name: t for t in gguf.GGUFReader(iq4xs).tensors}

    T = gguf.GGMLQuantizationType

    def repl(name, t):
        if (not is_ffn_down(name) or t.tensor_type != T.Q4_K
                or int(name.split(".")[1]) % 2):
            return None
        s = src[name]
        return (s.data, s.tensor_type) if s.tensor_type == T.IQ4_XS else None
    rewrite(q4km, out, repl)
    os.remove(q4km)
    os.remove(iq4xs)


def make_mxfp4(L, out, tmp):
    import gguf
    from gguf import quants
    q8 = tmp + "_q8.gguf"
    quantize(L, MODEL, q8, "Q8_0")
    T = gguf.GGMLQuantizationType

    def repl(name, t):
        if not name.startswith("blk.") or t.tensor_type == T.F32:
            return None
        f = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        return quants.quantize(f, T.MXFP4), T.MXFP4
    rewrite(q8, out, repl)
    os.remove(q8)


def make_moe_mxfp4(L, out, tmp):
    f16 = tmp + "_f16.gguf"
    subprocess.run([sys.executable,
                    os.path.join(ROOT, "bench", "make_moe_shaped.py"), f16,
                    "--type", "f16"] + MOE_SHAPE, check=True,
                   stdout=subprocess.DEVNULL)
    quantize(L, f16, out, "MXFP4_MOE")
    os.remove(f16)


def ggml_quantizer():
    """ggml_quantize_chunk of llama-cpp-python's libggml-base: (type id,
    f32 rows) -> uint8 rows of blocks."""
    import llama_cpp
    lib = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    base = ctypes.CDLL(os.path.join(lib, "libggml-base.so"))
    base.ggml_row_size.restype = ctypes.c_size_t
    base.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    base.ggml_quantize_chunk.restype = ctypes.c_size_t
    base.ggml_quantize_chunk.argtypes = [
        ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]

    def run(tid, rows, imatrix=None):
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        nrows, ncols = rows.shape
        rb = base.ggml_row_size(tid, ncols)
        out = np.zeros((nrows, rb), dtype=np.uint8)
        im = None
        if imatrix is not None:
            imatrix = np.ascontiguousarray(imatrix, dtype=np.float32)
            im = imatrix.ctypes.data
        base.ggml_quantize_chunk(tid, rows.ctypes.data, out.ctypes.data, 0,
                                 nrows, ncols, im)
        return out
    return run


def make_ggml_requant(L, out, tmp, qtype, pick):
    """Q8_0 of the model, the tensors pick(name, ncols) chooses quantized to
    qtype by ggml's quantizer."""
    import gguf
    from gguf import quants
    q8 = tmp + "_q8.gguf"
    quantize(L, MODEL, q8, "Q8_0")
    T = gguf.GGMLQuantizationType
    run = ggml_quantizer()

    def repl(name, t):
        if not name.startswith("blk.") or t.tensor_type == T.F32:
            return None
        if not pick(name, int(t.shape[0])):
            return None
        f = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        return run(int(qtype), f.reshape(-1, int(t.shape[0]))), qtype
    rewrite(q8, out, repl)
    os.remove(q8)


def make_iq_lattice(L, out, tmp):
    """Q8_0 of the model, layer i's ffn_down in LATTICE[i % 7] by ggml's
    quantizer with a uniform importance matrix."""
    import gguf
    from gguf import quants
    q8 = tmp + "_q8.gguf"
    quantize(L, MODEL, q8, "Q8_0")
    T = gguf.GGMLQuantizationType
    run = ggml_quantizer()

    def repl(name, t):
        if not is_ffn_down(name):
            return None
        qtype = T[LATTICE[int(name.split(".")[1]) % len(LATTICE)]]
        ncols = int(t.shape[0])
        f = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        return run(int(qtype), f.reshape(-1, ncols),
                   np.ones(ncols, dtype=np.float32)), qtype
    rewrite(q8, out, repl)
    os.remove(q8)


def up_to_date(case, outdir):
    base = os.path.join(outdir, stem(case))
    deps = [os.path.abspath(__file__),
            GEMMA3 if case.startswith("gemma3_") else MODEL,
            os.path.join(ROOT, "scripts", "gen_logits_golden.py"),
            os.path.join(ROOT, "bench", "make_moe_shaped.py")]
    try:
        made = min(os.path.getmtime(base + ext) for ext in (".gguf", ".txt"))
    except OSError:
        return False
    return all(os.path.getmtime(d) < made for d in deps)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    outdir = sys.argv[1]
    cases = sys.argv[2:] or CASES
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"unknown case {c!r} (cases: {', '.join(CASES)})")
    try:
        import llama_cpp as L
    except ImportError:
        print("make_quant_models: llama-cpp-python is not installed; "
              "no quant test files made", file=sys.stderr)
        return
    os.makedirs(outdir, exist_ok=True)
    for c in cases:
        if up_to_date(c, outdir):
            continue
        gguf_path = os.path.join(outdir, stem(c) + ".gguf")
        tmp = os.path.join(outdir, ".tmp_" + c)
        if c == "mixed":
            make_mixed(L, gguf_path + ".part", tmp)
        elif c == "mxfp4":
            make_mxfp4(L, gguf_path + ".part", tmp)
        elif c == "moe_mxfp4":
            make_moe_mxfp4(L, gguf_path + ".part", tmp)
        elif c == "nvfp4":
            import gguf
            make_ggml_requant(L, gguf_path + ".part", tmp,
                              gguf.GGMLQuantizationType.NVFP4,
                              lambda name, ncols: True)
        elif c == "q1_0":
            import gguf
            make_ggml_requant(L, gguf_path + ".part", tmp,
                              gguf.GGMLQuantizationType.Q1_0,
                              lambda name, ncols: is_ffn_down(name))
        elif c == "iq_lattice":
            make_iq_lattice(L, gguf_path + ".part", tmp)
        elif c.startswith("gemma3_"):
            quantize(L, GEMMA3, gguf_path + ".part", c[len("gemma3_"):].upper())
        else:
            quantize(L, MODEL, gguf_path + ".part", c.upper())
        os.replace(gguf_path + ".part", gguf_path)
        golden = os.path.join(outdir, stem(c) + ".txt")
        subprocess.run([sys.executable,
                        os.path.join(ROOT, "scripts", "gen_logits_golden.py"),
                        gguf_path, golden + ".part"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.replace(golden + ".part", golden)
        print(f"made {gguf_path} and its golden")


if __name__ == "__main__":
    main()
