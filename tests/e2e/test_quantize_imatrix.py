"""nucleus quantize --imatrix against llama.cpp's quantizer with the same
importance matrix (llama-cpp-python's llama_model_quantize with its imatrix
data and the quantize.imatrix.* keys llama-quantize sets): the same file,
byte for byte. The matrices are written here in llama-imatrix's GGUF form
(per-expert sums and counts, one expert never routed to, one tensor left
out, a token_embd entry of the wrong size that both skip) and its legacy
.dat form; the values llama.cpp is handed are the sums divided by the
counts as llama-quantize divides them. Files: small random Llama-shaped
F16 models with 256-wide rows (16 layers reach the mixes' layer rules) and
an 8-expert MoE. Bad matrices are clear errors that write nothing."""
import ctypes
import os
import struct
import subprocess
import sys

import gguf
import numpy as np
import pytest

import llama_cpp  # requirements-test.txt: a missing oracle fails

from conftest import ROOT, require_binary_and_model  # noqa

NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))


def make_model(tmp_path, moe=False):
    """A random F16 model (made once per module by the fixtures below)."""
    out = tmp_path / ("moe8_f16.gguf" if moe else "llama16_f16.gguf")
    if moe:
        cmd = [sys.executable, str(ROOT / "bench/make_moe_shaped.py"), str(out),
               "--type", "f16", "--layers", "2", "--embd", "256", "--heads",
               "2", "--head-dim", "128", "--kv-heads", "1", "--experts", "8",
               "--used", "2", "--ff-exp", "256"]
    else:
        cmd = [sys.executable, str(ROOT / "bench/make_llama_shaped.py"),
               str(out), "--layers", "16", "--embd", "256", "--ff", "512",
               "--heads", "4", "--kv-heads", "2"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=300)
    return str(out)


def make_imatrix(model, path, seed, legacy=False,
                 leave_out="blk.1.attn_q.weight"):
    """Random sums and counts for the model's matrices (but leave_out),
    written as llama-imatrix writes them; returns what llama-quantize would
    load (the normalised values), the dataset name and the chunk count."""
    rng = np.random.default_rng(seed)
    entries = {}
    for t in gguf.GGUFReader(model).tensors:
        if len(t.shape) < 2 or t.name == leave_out:
            continue  # a tensor without an entry: quantized without one
        ne0 = int(t.shape[0])
        nexp = int(t.shape[2]) if len(t.shape) > 2 else 1
        if t.name == "token_embd.weight":
            ne0 //= 2  # the wrong size: skipped for the token embeddings
        counts = np.full(nexp, 512, np.float32)
        if nexp > 1:
            counts = rng.integers(0, 5, size=nexp).astype(np.float32) * 64
            counts[1] = 0  # an expert never routed to: weights 1
        sums = (rng.gamma(1.0, 1.0, size=(nexp, ne0)) * 512).astype(np.float32)
        entries[t.name] = (sums, counts)
    if legacy:
        b = struct.pack("<i", len(entries))
        data = {}
        for name, (s, c) in entries.items():
            ncall = int(c[0]) // 64
            n = name.encode()
            b += struct.pack("<i", len(n)) + n
            b += struct.pack("<ii", ncall, s.size) + s.tobytes()
            data[name] = (s.reshape(-1) / np.float32(ncall)).astype(np.float32)
        b += struct.pack("<ii", 7, 9) + b"calib.txt"
        path.write_bytes(b)
        return data, "calib.txt", 7
    w = gguf.GGUFWriter(str(path), arch="imatrix")
    w.add_array("imatrix.datasets", ["wiki.train.raw"])
    w.add_uint32("imatrix.chunk_count", 12)
    w.add_uint32("imatrix.chunk_size", 512)
    data = {}
    for name, (s, c) in entries.items():
        w.add_tensor(name + ".in_sum2", s)
        w.add_tensor(name + ".counts", c.reshape(len(c), 1))
        v = np.empty_like(s)
        for j in range(s.shape[0]):
            v[j] = s[j] / np.float32(c[j]) if c[j] > 0 else 1.0
        data[name] = v.reshape(-1).astype(np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return data, "wiki.train.raw", 12


def llama_quantize(src, dst, ftype, data, imatrix_path, dataset, chunks):
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + ftype)
    p.allow_requantize = True
    p.nthread = 2
    arr = (llama_cpp.llama_model_imatrix_data * (len(data) + 1))()
    keep = []
    for i, (name, v) in enumerate(data.items()):
        v = np.ascontiguousarray(v, dtype=np.float32)
        keep.append(v)
        arr[i].name = name.encode()
        arr[i].data = v.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        arr[i].size = v.size
    arr[len(data)].name = None
    p.imatrix = ctypes.cast(arr, type(p.imatrix))
    # the keys llama-quantize's tool sets, in its order
    kvs = (llama_cpp.llama_model_kv_override * 5)()
    items = [("quantize.imatrix.file", str(imatrix_path)),
             ("quantize.imatrix.dataset", dataset),
             ("quantize.imatrix.entries_count", len(data)),
             ("quantize.imatrix.chunks_count", chunks)]
    for i, (key, val) in enumerate(items):
        kvs[i].key = key.encode()
        if isinstance(val, str):
            kvs[i].tag = llama_cpp.LLAMA_KV_OVERRIDE_TYPE_STR
            kvs[i].value.val_str = val.encode()[:127]
        else:
            kvs[i].tag = llama_cpp.LLAMA_KV_OVERRIDE_TYPE_INT
            kvs[i].value.val_i64 = val
    kvs[len(items)].key = b""
    p.kv_overrides = ctypes.cast(kvs, type(p.kv_overrides))
    assert llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(),
                                          ctypes.byref(p)) == 0


@pytest.fixture(scope="module")
def llama16(tmp_path_factory):
    return make_model(tmp_path_factory.mktemp("llama16"))


@pytest.fixture(scope="module")
def moe8(tmp_path_factory):
    return make_model(tmp_path_factory.mktemp("moe8"), moe=True)


def nucleus_quantize(*args):
    return subprocess.run([NUCLEUS_BIN, "quantize", *args],
                          capture_output=True, text=True, timeout=600)


def check_same(tmp_path, model, ftype, legacy=False, seed=5):
    require_binary_and_model()
    imx = tmp_path / ("imatrix.dat" if legacy else "imatrix.gguf")
    data, dataset, chunks = make_imatrix(model, imx, seed, legacy)
    ours, theirs = tmp_path / "ours.gguf", tmp_path / "theirs.gguf"
    r = nucleus_quantize("-t", "2", "--imatrix", str(imx), model, str(ours),
                         ftype)
    assert r.returncode == 0, r.stderr
    llama_quantize(model, theirs, ftype, data, imx, dataset, chunks)
    a, b = ours.read_bytes(), theirs.read_bytes()
    assert len(a) == len(b), (len(a), len(b))
    if a != b:
        first = next(i for i in range(len(a)) if a[i] != b[i])
        pytest.fail(f"{ftype} with an importance matrix differs from "
                    f"llama.cpp's from byte {first} of {len(a)}")
    # the matrix changed the blocks: not the file quantized without one
    plain = tmp_path / "plain.gguf"
    assert nucleus_quantize("-t", "2", model, str(plain), ftype).returncode == 0
    assert plain.read_bytes()[-200000:] != a[-200000:]


@pytest.mark.parametrize("ftype", [
    "Q4_K_M", "Q2_K",
    pytest.param("Q3_K_M", marks=pytest.mark.slow),
    pytest.param("Q3_K_S", marks=pytest.mark.slow),
    pytest.param("Q5_K_M", marks=pytest.mark.slow),
    pytest.param("Q6_K", marks=pytest.mark.slow),
    pytest.param("IQ4_XS", marks=pytest.mark.slow),
    pytest.param("IQ4_NL", marks=pytest.mark.slow),
    pytest.param("Q4_0", marks=pytest.mark.slow),
    pytest.param("Q4_1", marks=pytest.mark.slow),
    pytest.param("Q5_0", marks=pytest.mark.slow),
    pytest.param("Q5_1", marks=pytest.mark.slow),
])
def test_same_as_llama_cpp(tmp_path, llama16, ftype):
    check_same(tmp_path, llama16, ftype)


@pytest.mark.parametrize("ftype", [
    "IQ4_XS", pytest.param("Q3_K_S", marks=pytest.mark.slow)])
def test_experts_take_their_slices(tmp_path, moe8, ftype):
    check_same(tmp_path, moe8, ftype)


def test_legacy_dat_form(tmp_path, llama16):
    check_same(tmp_path, llama16, "Q4_K_S", legacy=True)


def test_bad_matrices_are_clear_errors(tmp_path, llama16):
    require_binary_and_model()
    model = llama16
    out = tmp_path / "out.gguf"
    cases = []
    wrong = tmp_path / "wrong.dat"  # a layer's matrix of the wrong width
    name = b"blk.3.ffn_down.weight"
    wrong.write_bytes(struct.pack("<ii", 1, len(name)) + name +
                      struct.pack("<ii", 1, 100) + b"\0" * 400)
    cases.append((wrong, "has 100 values for 'blk.3.ffn_down.weight', which "
                         "needs 512"))
    nan = tmp_path / "nan.dat"
    nan.write_bytes(struct.pack("<ii", 1, len(name)) + name +
                    struct.pack("<ii", 1, 2) +
                    np.array([1.0, np.nan], np.float32).tobytes())
    cases.append((nan, "not finite"))
    junk = tmp_path / "junk.dat"
    junk.write_bytes(b"\xff\xff\xff\xff")
    cases.append((junk, "neither GGUF nor llama-imatrix's legacy form"))
    cases.append((tmp_path / "missing.dat", "cannot open importance matrix"))
    for path, needle in cases:
        r = nucleus_quantize("--imatrix", str(path), model, str(out), "Q4_K_M")
        assert r.returncode == 1, (path, r.stderr)
        assert needle in r.stderr and str(path) in r.stderr, r.stderr
        assert not out.exists()
    r = nucleus_quantize("--imatrix")
    assert r.returncode == 2 and "--imatrix needs a file" in r.stderr
