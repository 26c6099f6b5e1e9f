#!/usr/bin/env python3
"""Regenerates tests/data/quant/: small golden files for test_quant and
test_kernels.

Oracles:
  * dequantization: the PyPI package gguf (gguf.quants.dequantize), checked
    against llama.cpp's own dequantize_row_* when llama-cpp-python is
    installed (its libggml-base.so);
  * activation quantization (Q8_0, Q8_1, Q8_K) and dot products: llama.cpp's
    CPU backend (libggml-cpu.so from llama-cpp-python, a native build on an
    x86 machine), i.e. the x86 quantize_row_q8_0/q8_1 and both the generic C
    vec_dot (ggml_vec_dot_*_generic) and the SIMD one the backend dispatches
    to. Without llama-cpp-python only the dequantization files are written.

Files (all little-endian):
  deq_<TYPE>.bin   4 blocks (64 elements for F16/BF16) of raw bytes, then
                   their dequantized values as f32
  act.f32          1024 f32 activation values (the second half holds exact
                   .5 rounding ties)
  act_<Q>.bin      llama.cpp's quantization of act.f32 to Q8_0, Q8_1, Q8_K,
                   F16, BF16
  dot_<TYPE>.bin   one weight row of n = 512 elements (raw bytes), then two
                   f32: llama.cpp's generic C dot and its SIMD dot with
                   act_<vec_dot_type>.bin (first 512 elements); for F32/F16/
                   BF16 both values are the SIMD dot
The types added later (NEW_TYPES: IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0) come
from a second random stream after all of the above, so the older files stay
byte for byte what they were; their dequantization blocks include the edge
values (half subnormal and +-65504 scales; E8M0 bytes 0, 1, 254, 255), and
their dot_<TYPE>.bin holds the SIMD dot twice (their reference kernels
follow llama.cpp's x86 order, not its generic one). NVFP4, Q1_0 and Q2_0
(LOWBIT_TYPES) follow from a third stream, dequantized by ggml. The IQ1/IQ2/
IQ3 lattice types (IQ_TYPES) follow from a fourth stream: dequantized by
gguf-py and checked against ggml's dequantize_row_*, their dots ggml's SIMD
vec_dot (llama.cpp's AVX2 kernels) twice.

Usage: scripts/gen_quant_golden.py [outdir]
"""
import ctypes
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "quant")

WEIGHT_TYPES = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
                "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]
# byte offsets of the fp16 scale fields in each block
HALF_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2],
    "Q6_K": [208],
}
VEC_DOT_TYPE = {
    "F32": "F32", "F16": "F16", "BF16": "BF16", "Q4_0": "Q8_0",
    "Q4_1": "Q8_1", "Q5_0": "Q8_0", "Q5_1": "Q8_1", "Q8_0": "Q8_0",
    "Q2_K": "Q8_K", "Q3_K": "Q8_K", "Q4_K": "Q8_K", "Q5_K": "Q8_K",
    "Q6_K": "Q8_K",
}
GENERIC = {
    "Q4_0": "ggml_vec_dot_q4_0_q8_0_generic",
    "Q4_1": "ggml_vec_dot_q4_1_q8_1_generic",
    "Q5_0": "ggml_vec_dot_q5_0_q8_0_generic",
    "Q5_1": "ggml_vec_dot_q5_1_q8_1_generic",
    "Q8_0": "ggml_vec_dot_q8_0_q8_0_generic",
    "Q2_K": "ggml_vec_dot_q2_K_q8_K_generic",
    "Q3_K": "ggml_vec_dot_q3_K_q8_K_generic",
    "Q4_K": "ggml_vec_dot_q4_K_q8_K_generic",
    "Q5_K": "ggml_vec_dot_q5_K_q8_K_generic",
    "Q6_K": "ggml_vec_dot_q6_K_q8_K_generic",
}
N_DOT = 512
NEW_TYPES = ["IQ4_NL", "IQ4_XS", "MXFP4", "TQ1_0", "TQ2_0"]
HALF_FIELDS.update({"IQ4_NL": [0], "IQ4_XS": [0], "TQ1_0": [52],
                    "TQ2_0": [64], "MXFP4": []})
VEC_DOT_TYPE.update({"IQ4_NL": "Q8_0", "IQ4_XS": "Q8_K", "MXFP4": "Q8_0",
                     "TQ1_0": "Q8_K", "TQ2_0": "Q8_K"})


def sizes(name):
    # gguf-py still lists Q8_1 with f32 d and s (40 bytes); ggml's is 36
    if name == "Q8_1":
        return 32, 36
    return GGML_QUANT_SIZES[T[name]]


def random_blocks(name, nblocks, rng):
    """Random but valid blocks: random bytes, finite fp16 scales (one of them
    a half subnormal, to exercise that path)."""
    if name in ("F16", "BF16", "F32"):
        vals = (rng.standard_normal(nblocks) * 2).astype(np.float32)
        if name == "F32":
            return vals.view(np.uint8)
        if name == "F16":
            vals[3] = np.float32(3e-6)  # half subnormal
            return vals.astype(np.float16).view(np.uint8)
        return quants.quantize(vals, T.BF16).view(np.uint8).reshape(-1)
    bs, ts = sizes(name)
    raw = rng.integers(0, 256, size=(nblocks, ts), dtype=np.uint8)
    for b in range(nblocks):
        for k, off in enumerate(HALF_FIELDS[name]):
            v = np.float16(rng.standard_normal() * 0.02)
            if b == 1 and k == 0:
                v = np.array([0x0203], dtype=np.uint16).view(np.float16)[0]
            raw[b, off:off + 2] = np.array([v], dtype=np.float16).view(np.uint8)
    return raw.reshape(-1)


def new_type_blocks(name, nblocks, rng, edges):
    """random_blocks for NEW_TYPES: MXFP4's E8M0 scale byte near 127 (2^-8
    .. 2^8), and with edges the extreme scales in the first blocks."""
    bs, ts = sizes(name)
    raw = rng.integers(0, 256, size=(nblocks, ts), dtype=np.uint8)
    if name == "MXFP4":
        raw[:, 0] = rng.integers(119, 136, size=nblocks)
        if edges:
            raw[:4, 0] = [0, 1, 254, 255]
        return raw.reshape(-1)
    off = HALF_FIELDS[name][0]
    h = (rng.standard_normal(nblocks) * 0.02).astype(np.float16)
    if edges:
        h[:3] = np.array([0x0001, 0x7bff, 0xfbff], dtype=np.uint16).view(
            np.float16)  # smallest subnormal, 65504, -65504
    raw[:, off:off + 2] = h.view(np.uint8).reshape(nblocks, 2)
    return raw.reshape(-1)


def write_new_types(base, cpu, qact):
    rng = np.random.default_rng(20261206)
    for name in NEW_TYPES:
        raw = new_type_blocks(name, 4, rng, True)
        with np.errstate(over="ignore"):
            deq = quants.dequantize(raw, T[name]).astype(np.float32)
        deq = deq.reshape(-1)
        if base is not None:
            fn = getattr(base, "dequantize_row_" + name.lower())
            ref = np.zeros_like(deq)
            fn(ptr(raw), ptr(ref), ctypes.c_int64(len(deq)))
            assert ref.view(np.uint32).tolist() == deq.view(
                np.uint32).tolist(), name + ": gguf and ggml disagree"
        with open(os.path.join(OUT, "deq_%s.bin" % name), "wb") as f:
            f.write(raw.tobytes())
            f.write(deq.astype("<f4").tobytes())
    if cpu is None:
        return
    for name in NEW_TYPES:
        bs, ts = sizes(name)
        w = new_type_blocks(name, N_DOT // bs, rng, False)
        simd = ggml_dot(cpu_traits(cpu, name).vec_dot, N_DOT, w,
                        qact[VEC_DOT_TYPE[name]])
        with open(os.path.join(OUT, "dot_%s.bin" % name), "wb") as f:
            f.write(w.tobytes())
            f.write(np.array([simd, simd], dtype="<f4").tobytes())
        print("%-6s simd %.9g" % (name, simd))


# Issue 40's second lot, from a third random stream: gguf-py dequantizes
# NVFP4 only, so the goldens of all three come from ggml's own
# dequantize_row_* (llama-cpp-python's libggml-base; gguf-py cross-checks
# NVFP4). Sizes by hand: gguf-py does not list Q2_0. Edges: NVFP4's UE4M3
# bytes 0x00, 0x7f (both 0), 0xff and 0x80; half subnormal and +-65504.
LOWBIT_TYPES = {"NVFP4": (40, 64, 36), "Q1_0": (41, 128, 18),
                "Q2_0": (42, 64, 18)}


def lowbit_blocks(name, nblocks, rng, edges):
    _, bs, ts = LOWBIT_TYPES[name]
    raw = rng.integers(0, 256, size=(nblocks, ts), dtype=np.uint8)
    if name == "NVFP4":
        raw[:, 0:4] = rng.integers(0x28, 0x48, size=(nblocks, 4))
        if edges:
            raw[0, 0:4] = [0x00, 0x7f, 0xff, 0x80]
        return raw.reshape(-1)
    h = (rng.standard_normal(nblocks) * 0.02).astype(np.float16)
    if edges:
        h[:3] = np.array([0x0001, 0x7bff, 0xfbff], dtype=np.uint16).view(
            np.float16)
    raw[:, 0:2] = h.view(np.uint8).reshape(nblocks, 2)
    return raw.reshape(-1)


def write_lowbit_types(base, cpu, qact):
    if base is None:
        return
    rng = np.random.default_rng(20261207)
    for name, (tid, bs, ts) in LOWBIT_TYPES.items():
        raw = lowbit_blocks(name, 4, rng, True)
        deq = np.zeros(4 * bs, dtype=np.float32)
        getattr(base, "dequantize_row_" + name.lower())(
            ptr(raw), ptr(deq), ctypes.c_int64(len(deq)))
        if name == "NVFP4":
            ref = quants.dequantize(raw, T[name]).astype(np.float32)
            assert ref.reshape(-1).view(np.uint32).tolist() == deq.view(
                np.uint32).tolist(), name + ": gguf and ggml disagree"
        with open(os.path.join(OUT, "deq_%s.bin" % name), "wb") as f:
            f.write(raw.tobytes())
            f.write(deq.astype("<f4").tobytes())
    for name, (tid, bs, ts) in LOWBIT_TYPES.items():
        w = lowbit_blocks(name, N_DOT // bs, rng, False)
        cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(TraitsCpu)
        simd = ggml_dot(cpu.ggml_get_type_traits_cpu(tid).contents.vec_dot,
                        N_DOT, w, qact["Q8_0"])
        with open(os.path.join(OUT, "dot_%s.bin" % name), "wb") as f:
            f.write(w.tobytes())
            f.write(np.array([simd, simd], dtype="<f4").tobytes())
        print("%-6s simd %.9g" % (name, simd))


# Issue 40's lattice types: random bytes (every grid index is valid), the
# half scale small and finite; edges: a subnormal and +-65504 halves. IQ1_M
# keeps its half in the top nibbles of its four 16-bit scale words.
IQ_TYPES = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S",
            "IQ1_M"]
IQ1M_SCALES = 48


def iq_blocks(name, nblocks, rng, edges):
    bs, ts = sizes(name)
    raw = rng.integers(0, 256, size=(nblocks, ts), dtype=np.uint8)
    h = (rng.standard_normal(nblocks) * 0.02).astype(np.float16)
    if edges:
        h[:3] = np.array([0x0001, 0x7bff, 0xfbff], dtype=np.uint16).view(
            np.float16)
    hb = h.view(np.uint16)
    for b in range(nblocks):
        if name == "IQ1_M":
            for k in range(4):
                o = IQ1M_SCALES + 2 * k + 1
                raw[b, o] = (raw[b, o] & 0x0f) | (((int(hb[b]) >> 4 * k) & 15)
                                                 << 4)
        else:
            raw[b, 0:2] = np.array([hb[b]], dtype=np.uint16).view(np.uint8)
    return raw.reshape(-1)


def write_iq_types(base, cpu, qact):
    rng = np.random.default_rng(20261208)
    for name in IQ_TYPES:
        raw = iq_blocks(name, 4, rng, True)
        with np.errstate(over="ignore"):
            deq = quants.dequantize(raw, T[name]).astype(np.float32)
        deq = deq.reshape(-1)
        if base is not None:
            fn = getattr(base, "dequantize_row_" + name.lower())
            ref = np.zeros_like(deq)
            fn(ptr(raw), ptr(ref), ctypes.c_int64(len(deq)))
            assert ref.view(np.uint32).tolist() == deq.view(
                np.uint32).tolist(), name + ": gguf and ggml disagree"
        with open(os.path.join(OUT, "deq_%s.bin" % name), "wb") as f:
            f.write(raw.tobytes())
            f.write(deq.astype("<f4").tobytes())
    if cpu is None:
        return
    for name in IQ_TYPES:
        w = iq_blocks(name, N_DOT // 256, rng, False)
        simd = ggml_dot(cpu_traits(cpu, name).vec_dot, N_DOT, w, qact["Q8_K"])
        with open(os.path.join(OUT, "dot_%s.bin" % name), "wb") as f:
            f.write(w.tobytes())
            f.write(np.array([simd, simd], dtype="<f4").tobytes())
        print("%-7s simd %.9g" % (name, simd))


def load_ggml():
    try:
        import llama_cpp
    except ImportError:
        return None, None
    lib = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    base = ctypes.CDLL(os.path.join(lib, "libggml-base.so"))
    cpu = ctypes.CDLL(os.path.join(lib, "libggml-cpu.so"))
    cpu.ggml_cpu_init()
    return base, cpu


class TraitsCpu(ctypes.Structure):
    _fields_ = [("from_float", ctypes.c_void_p), ("vec_dot", ctypes.c_void_p),
                ("vec_dot_type", ctypes.c_int), ("nrows", ctypes.c_int64)]


FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_int64)
VEC_DOT = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(ctypes.c_float),
                           ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def cpu_traits(cpu, name):
    cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(TraitsCpu)
    return cpu.ggml_get_type_traits_cpu(int(T[name])).contents


def ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def ggml_quantize(cpu, name, x):
    bs, ts = sizes(name)
    out = np.zeros(len(x) // bs * ts, dtype=np.uint8)
    FROM_FLOAT(cpu_traits(cpu, name).from_float)(ptr(x), ptr(out), len(x))
    return out


def ggml_dot(fn_addr, n, w, a):
    s = ctypes.c_float(0)
    VEC_DOT(fn_addr)(n, ctypes.byref(s), 0, ptr(w), 0, ptr(a), 0, 1)
    return s.value


def activation(rng):
    i = np.arange(512, dtype=np.float32)
    first = (0.1 + 2 * np.cos(i + 0.25) + 0.3 * rng.standard_normal(512))
    # exact ties: blocks of 32 whose amax is 127 (id = 1), values k + 0.5
    ties = rng.integers(-120, 120, size=512).astype(np.float32) + 0.5
    ties[::32] = 127.0
    ties[16::64] = -127.0
    return np.concatenate([first, ties]).astype(np.float32)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261129)
    base, cpu = load_ggml()

    for name in WEIGHT_TYPES:
        nb = 64 if name in ("F16", "BF16") else 4
        raw = random_blocks(name, nb, rng)
        deq = quants.dequantize(raw, T[name]).astype(np.float32).reshape(-1)
        if base is not None and name not in ("F16", "BF16"):
            fn = getattr(base, "dequantize_row_" + name.lower().replace(
                "_k", "_K"))
            ref = np.zeros_like(deq)
            fn(ptr(raw), ptr(ref), ctypes.c_int64(len(deq)))
            assert ref.view(np.uint32).tolist() == deq.view(
                np.uint32).tolist(), name + ": gguf and ggml disagree"
        with open(os.path.join(OUT, "deq_%s.bin" % name), "wb") as f:
            f.write(raw.tobytes())
            f.write(deq.astype("<f4").tobytes())

    if cpu is None:
        write_new_types(base, cpu, None)
        write_iq_types(base, cpu, None)
        print("llama-cpp-python missing: wrote dequantization goldens only")
        return

    act = activation(rng)
    act.astype("<f4").tofile(os.path.join(OUT, "act.f32"))
    qact = {}
    for q in ("Q8_0", "Q8_1", "Q8_K", "F16", "BF16"):
        qact[q] = ggml_quantize(cpu, q, act)
        qact[q].tofile(os.path.join(OUT, "act_%s.bin" % q))
    qact["F32"] = act.view(np.uint8)

    for name in ["F32"] + WEIGHT_TYPES:
        bs, ts = sizes(name)
        w = random_blocks(name, N_DOT // bs, rng)
        a = qact[VEC_DOT_TYPE[name]]
        simd = ggml_dot(cpu_traits(cpu, name).vec_dot, N_DOT, w, a)
        if name in GENERIC:
            addr = ctypes.cast(getattr(cpu, GENERIC[name]),
                               ctypes.c_void_p).value
            gen = ggml_dot(addr, N_DOT, w, a)
        else:
            gen = simd
        with open(os.path.join(OUT, "dot_%s.bin" % name), "wb") as f:
            f.write(w.tobytes())
            f.write(np.array([gen, simd], dtype="<f4").tobytes())
        print("%-5s generic %.9g simd %.9g" % (name, gen, simd))
    write_new_types(base, cpu, qact)
    write_lowbit_types(base, cpu, qact)
    write_iq_types(base, cpu, qact)


if __name__ == "__main__":
    main()
