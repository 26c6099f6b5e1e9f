"""nucleus quantize to the IQ1/IQ2/IQ3 lattice types against llama.cpp's
quantizer (llama-cpp-python's llama_model_quantize handed the same
importance matrix and keys): the same file, byte for byte, for every IQ
file type (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS,
IQ3_S, IQ3_M),
which between them write every lattice type (IQ2_S and IQ3_S as the
mixes' bumps). The input is a small random Llama-shaped F16 model with
8 layers (the mixes' first-eighth rules reach one layer) and 1,024 tokens,
whose rows include
all-zero 32-blocks, a zero superblock and a zero row (the quantizers' skip
paths, and IQ3_S's shifted grid bytes after a zero block). llama.cpp refuses
the very-low-bit types without a matrix, and a matrix without an entry for
a tensor that becomes one; so do we, naming the tensor."""
import pathlib
import subprocess
import sys

import gguf
import numpy as np
import pytest

from conftest import ROOT, require_binary_and_model  # noqa

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import test_quantize  # noqa: E402
from test_quantize_imatrix import (NUCLEUS_BIN, llama_quantize,  # noqa: E402
                                   make_imatrix)


@pytest.fixture(scope="module")
def llama8(tmp_path_factory):
    out = tmp_path_factory.mktemp("iq") / "llama8_f16.gguf"
    subprocess.run([sys.executable, str(ROOT / "bench/make_llama_shaped.py"),
                    str(out), "--layers", "8", "--embd", "256", "--ff", "256",
                    "--heads", "4", "--kv-heads", "2", "--vocab", "1024"],
                   check=True,
                   stdout=subprocess.DEVNULL, timeout=300)
    r = gguf.GGUFReader(str(out), "r+")
    for t in r.tensors:
        if len(t.shape) < 2:
            continue
        rows = t.data.reshape(-1, int(t.shape[0]))
        rows[0, 32:64] = 0       # a zero 32-block
        rows[1, 0:256] = 0       # a zero superblock
        rows[2, 16:32] = 0       # a zero 16-block
        rows[3, :] = 0           # a zero row
        rows[4, 40:48] = 1e-9    # below the blocks' thresholds
    r.data.flush()
    return str(out)


def nucleus_quantize(*args):
    return subprocess.run([NUCLEUS_BIN, "quantize", *args],
                          capture_output=True, text=True, timeout=600)


def check_same(tmp_path, model, ftype, with_imatrix=True):
    require_binary_and_model()
    ours, theirs = tmp_path / "ours.gguf", tmp_path / "theirs.gguf"
    if with_imatrix:
        imx = tmp_path / "imatrix.gguf"
        data, dataset, chunks = make_imatrix(model, imx, 11, leave_out=None)
        r = nucleus_quantize("-t", "2", "--imatrix", str(imx), model,
                             str(ours), ftype)
        assert r.returncode == 0, r.stderr
        llama_quantize(model, theirs, ftype, data, imx, dataset, chunks)
    else:
        r = nucleus_quantize("-t", "2", model, str(ours), ftype)
        assert r.returncode == 0, r.stderr
        test_quantize.llama_quantize(model, str(theirs), ftype)
    a, b = ours.read_bytes(), theirs.read_bytes()
    assert len(a) == len(b), (len(a), len(b))
    if a != b:
        first = next(i for i in range(len(a)) if a[i] != b[i])
        pytest.fail(f"{ftype} differs from llama.cpp's from byte {first} "
                    f"of {len(a)}")
    return a


@pytest.mark.parametrize("ftype", [
    "IQ2_XS", "IQ3_XXS", "IQ2_M",
    pytest.param("IQ2_XXS", marks=pytest.mark.slow),
    pytest.param("IQ2_S", marks=pytest.mark.slow),
    pytest.param("IQ3_XS", marks=pytest.mark.slow),
    pytest.param("IQ3_M", marks=pytest.mark.slow),
    pytest.param("IQ1_S", marks=pytest.mark.slow),
    pytest.param("IQ1_M", marks=pytest.mark.slow),
])
def test_same_as_llama_cpp(tmp_path, llama8, ftype):
    check_same(tmp_path, llama8, ftype)


def test_iq3_s_without_a_matrix(tmp_path, llama8):
    """IQ3_S needs no matrix: its own weights x^2, the zero-block quirk."""
    a = check_same(tmp_path, llama8, "IQ3_S", with_imatrix=False)
    types = {t.tensor_type.name for t in gguf.GGUFReader(
        str(tmp_path / "ours.gguf")).tensors}
    assert "IQ3_S" in types, types


def test_very_low_bit_types_need_a_matrix(tmp_path, llama8):
    require_binary_and_model()
    out = tmp_path / "out.gguf"
    for ftype, becomes in [("IQ2_XS", "IQ2_XS"), ("IQ3_XXS", "IQ2_S")]:
        r = nucleus_quantize(llama8, str(out), ftype)
        assert r.returncode != 0
        assert f"becomes {becomes}, which needs an importance matrix" \
            in r.stderr, r.stderr
        assert "blk.0." in r.stderr, r.stderr
        assert not out.exists()
    imx = tmp_path / "imatrix.gguf"
    make_imatrix(llama8, imx, 3, leave_out="blk.5.ffn_up.weight")
    r = nucleus_quantize("--imatrix", str(imx), llama8, str(out), "IQ2_XXS")
    assert r.returncode != 0
    assert "no entry for 'blk.5.ffn_up.weight', which becomes IQ2_XXS" \
        in r.stderr, r.stderr
    assert not out.exists()
