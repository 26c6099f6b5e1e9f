"""nucleus quantize against llama.cpp's own quantizer (llama-cpp-python's
llama_model_quantize, allow_requantize, no importance matrix): the same
input and file type give the same file, byte for byte (metadata, tensor
table and every block), so llama.cpp loads ours and computes the same
perplexity on it. The default model (Q4_1, 576-column matrices: the K-quant
mixes fall back to Q5_0/Q5_1/Q8_0 there, ffn_down keeps them) and Gemma 3
270M (Q4_K_M in, 640 columns, 4 query heads per KV head: attn_v Q5_K in
the IQ4 mixes); MXFP4_MOE and Q4_K_M on a small random Qwen3-MoE-shaped
F16 file (bench/make_moe_shaped.py: experts, F16 input). Every file type's
quantizer is exercised (Q4_1 and Q5_1 only from Gemma's mixed input). The
error cases name the value and what is allowed."""
import ctypes
import os
import subprocess
import sys

import pytest

import llama_cpp  # requirements-test.txt: a missing oracle fails

from conftest import (DEFAULT_MODEL, ROOT, llama_no_repack,  # noqa
                      require_binary_and_model)

NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
GEMMA = str(ROOT / "models/gemma-3-270m-q4_k_m.gguf")


def llama_quantize(src, dst, ftype):
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + ftype)
    p.allow_requantize = True
    p.nthread = 2
    assert llama_cpp.llama_model_quantize(src.encode(), dst.encode(),
                                          ctypes.byref(p)) == 0


def nucleus_quantize(*args):
    return subprocess.run([NUCLEUS_BIN, "quantize", *args],
                          capture_output=True, text=True, timeout=600)


def check_same_file(tmp_path, model, ftype):
    require_binary_and_model(model)
    ours, theirs = tmp_path / "ours.gguf", tmp_path / "theirs.gguf"
    r = nucleus_quantize("-t", "2", model, str(ours), ftype)
    assert r.returncode == 0, r.stderr
    llama_quantize(model, str(theirs), ftype)
    a, b = ours.read_bytes(), theirs.read_bytes()
    assert len(a) == len(b)
    if a != b:
        first = next(i for i in range(len(a)) if a[i] != b[i])
        pytest.fail(f"{ftype}: {model} quantized differs from llama.cpp's "
                    f"from byte {first} of {len(a)}")
    return ours


# the file types whose quantizers the default model reaches, and the two
# that check maps its metadata and fallbacks in the short tier
@pytest.mark.parametrize("ftype", [
    "Q4_K_M",
    pytest.param("Q4_0", marks=pytest.mark.slow),
    pytest.param("Q5_0", marks=pytest.mark.slow),
    pytest.param("Q8_0", marks=pytest.mark.slow),
    pytest.param("Q4_K_S", marks=pytest.mark.slow),
    pytest.param("Q5_K_S", marks=pytest.mark.slow),
    pytest.param("Q5_K_M", marks=pytest.mark.slow),
    pytest.param("Q6_K", marks=pytest.mark.slow),
    pytest.param("IQ4_NL", marks=pytest.mark.slow),
    pytest.param("IQ4_XS", marks=pytest.mark.slow),
])
def test_default_model_same_as_llama_cpp(tmp_path, ftype):
    check_same_file(tmp_path, DEFAULT_MODEL, ftype)


@pytest.mark.parametrize("ftype", [
    "Q4_1",
    pytest.param("Q5_1", marks=pytest.mark.slow),
    pytest.param("Q4_K_M", marks=pytest.mark.slow),
    pytest.param("Q6_K", marks=pytest.mark.slow),
    pytest.param("IQ4_NL", marks=pytest.mark.slow),
    pytest.param("IQ4_XS", marks=pytest.mark.slow),
])
def test_gemma3_same_as_llama_cpp(tmp_path, ftype):
    check_same_file(tmp_path, GEMMA, ftype)


@pytest.mark.parametrize("ftype", ["MXFP4_MOE", "Q4_K_M"])
def test_moe_f16_same_as_llama_cpp(tmp_path, ftype):
    f16 = tmp_path / "moe_f16.gguf"
    subprocess.run([sys.executable, str(ROOT / "bench/make_moe_shaped.py"),
                    str(f16), "--type", "f16", "--layers", "2", "--embd",
                    "256", "--heads", "2", "--head-dim", "128", "--kv-heads",
                    "1", "--experts", "4", "--used", "2", "--ff-exp", "256"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    check_same_file(tmp_path, str(f16), ftype)


def llama_shaped_f16(tmp_path, kv_heads, layers):
    f16 = tmp_path / f"llama_f16_kv{kv_heads}.gguf"
    subprocess.run([sys.executable, str(ROOT / "bench/make_llama_shaped.py"),
                    str(f16), "--layers", str(layers), "--embd", "256",
                    "--ff", "512", "--heads", "4", "--kv-heads",
                    str(kv_heads)],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    return str(f16)


# the 2- and 3-bit K-quant mixes on rows that are whole 256-blocks (the
# default model's 576 and Gemma's 640 fall back to Q4_0): 16 layers reach
# every rule of the layer counts (n/16, n/8, attn_v's first two)
@pytest.mark.parametrize("ftype, kv_heads, layers", [
    ("Q3_K_M", 2, 16),
    ("Q2_K", 1, 4),
    pytest.param("Q2_K", 2, 16, marks=pytest.mark.slow),
    pytest.param("Q3_K_S", 2, 16, marks=pytest.mark.slow),
    pytest.param("Q3_K_L", 2, 16, marks=pytest.mark.slow),
    pytest.param("Q3_K_M", 1, 4, marks=pytest.mark.slow),
])
def test_low_bit_k_mixes_same_as_llama_cpp(tmp_path, ftype, kv_heads,
                                           layers):
    check_same_file(tmp_path, llama_shaped_f16(tmp_path, kv_heads, layers),
                    ftype)


@pytest.mark.slow
def test_70b_shape_gets_more_attn_v_bits(tmp_path):
    """llama.cpp's one size-class rule: a Llama of 80 layers with grouped
    KV heads (its LLM_TYPE_70B) takes Q5_K for attn_v where the mix says
    Q3_K or Q4_K."""
    f16 = tmp_path / "llama80_f16.gguf"
    subprocess.run([sys.executable, str(ROOT / "bench/make_llama_shaped.py"),
                    str(f16), "--layers", "80", "--embd", "256", "--ff",
                    "256", "--heads", "4", "--kv-heads", "2"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    out = check_same_file(tmp_path, str(f16), "Q3_K_M")
    import gguf
    types = {t.tensor_type.name for t in gguf.GGUFReader(str(out)).tensors
             if "attn_v" in t.name}
    assert types == {"Q5_K"}


@pytest.mark.slow
@pytest.mark.parametrize("ftype", ["Q2_K", "Q3_K_S", "Q3_K_L"])
def test_low_bit_k_mixes_with_8_experts(tmp_path, ftype):
    f16 = tmp_path / "moe8_f16.gguf"
    subprocess.run([sys.executable, str(ROOT / "bench/make_moe_shaped.py"),
                    str(f16), "--type", "f16", "--layers", "2", "--embd",
                    "256", "--heads", "2", "--head-dim", "128", "--kv-heads",
                    "1", "--experts", "8", "--used", "2", "--ff-exp", "256"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    check_same_file(tmp_path, str(f16), ftype)


def test_q3_k_m_runs_in_nucleus_and_llama_cpp(tmp_path):
    """A Q3_K_M file (Q3_K, Q4_K, Q5_K and Q6_K matrices) generates the same
    greedy continuation in both engines."""
    out = check_same_file(tmp_path, llama_shaped_f16(tmp_path, 2, 4),
                          "Q3_K_M")
    prompt = "The capital of France is"
    r = subprocess.run([NUCLEUS_BIN, "run", "-m", str(out), "-n", "8",
                        "--temp", "0", "--ignore-eos", "-p", prompt],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # (without repacking: on an AMX CPU llama.cpp's repacked path crashed)
    llm = llama_no_repack(out, n_ctx=128, verbose=False)
    text = llm(prompt, max_tokens=8, temperature=0.0)["choices"][0]["text"]
    assert text and text in r.stdout


def test_output_runs_in_nucleus_and_llama_cpp(tmp_path):
    """The file generates in both: the same greedy continuation."""
    out = check_same_file(tmp_path, DEFAULT_MODEL, "Q4_K_M")
    r = subprocess.run([NUCLEUS_BIN, "run", "-m", str(out), "-n", "8",
                        "--temp", "0", "-p", "The capital of France is"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # (without repacking: on an AMX CPU llama.cpp's repacked path crashed)
    llm = llama_no_repack(out, n_ctx=128, verbose=False)
    text = llm("The capital of France is", max_tokens=8,
               temperature=0.0)["choices"][0]["text"]
    assert text.strip()
    assert text.strip() in r.stdout


@pytest.mark.parametrize("args, needle", [
    (["IN", "OUT", "Q7_K"], "unknown quantization type 'Q7_K' (allowed: "
                            "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K_S, "
                            "Q3_K_M (Q3_K), Q3_K_L, Q4_K_S, Q4_K_M (Q4_K), "
                            "Q5_K_S, Q5_K_M (Q5_K), Q6_K, IQ1_S, IQ1_M, "
                            "IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS, "
                            "IQ3_S, IQ3_M, IQ4_NL, IQ4_XS, MXFP4_MOE)"),
    (["-t", "0", "IN", "OUT", "Q4_0"], "-t needs a number in [1, 256]"),
    (["IN", "OUT"], "usage: nucleus quantize"),
    (["/nonexistent.gguf", "OUT", "Q4_0"], "/nonexistent.gguf"),
])
def test_errors(tmp_path, args, needle):
    require_binary_and_model()
    args = [str(tmp_path / "o.gguf") if a == "OUT" else
            DEFAULT_MODEL if a == "IN" else a for a in args]
    r = nucleus_quantize(*args)
    assert r.returncode != 0
    assert needle in r.stderr
    assert not (tmp_path / "o.gguf").exists()
