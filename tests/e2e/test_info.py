"""`nucleus info`: the real model's header and tensor table, and clean
failures (exit code 1, a message with the byte offset) on broken files."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
BIN = os.environ.get("NUCLEUS_BIN", os.path.join(ROOT, "build", "release", "nucleus"))

from conftest import require_model  # noqa: E402


@pytest.fixture(autouse=True)
def _model():
    require_model(MODEL)


def info(*args):
    return subprocess.run([BIN, "info", *args], capture_output=True, text=True,
                          timeout=60)


def test_info_real_model():
    r = info(MODEL)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "gguf: version 3, alignment 32" in out
    assert "metadata: 33 key-value pairs" in out
    assert re.search(r'^\s+general\.architecture\s+STRING\s+"llama"$', out, re.M)
    assert re.search(r"^\s+llama\.embedding_length\s+UINT32\s+576$", out, re.M)
    assert re.search(r'^\s+tokenizer\.ggml\.tokens\s+ARRAY\[STRING\]\s+\[49152 x STRING\] '
                     r'"<\|endoftext\|>", "<\|im_start\|>"', out, re.M)
    assert "tensors: 272 " in out
    assert re.search(r"^\s+0\s+token_embd\.weight\s+Q8_0\s+\[576, 49152\]\s+0\s+30081024$",
                     out, re.M)
    assert re.search(r"^\s+271\s+output_norm\.weight\s+F32\s+\[576\]\s+\d+\s+2304$", out, re.M)
    assert len(re.findall(r"^\s+\d+\s+\S+\s+(F32|Q4_1|Q8_0)\s+\[", out, re.M)) == 272
    # the KV cache per position: 30 layers, K and V of 3 heads of 64, F16
    assert out.splitlines()[-3] == "KV cache (llama): 23040 bytes per position"
    # the last line: the architectures of src/model/archs/list.h
    assert out.splitlines()[-1] == ("supported architectures: llama, qwen2, "
                                    "qwen3, phi3, qwen3moe, gemma2, gemma3, "
                                    "gpt-oss, gemma4, qwen35, "
                                    "gemma-embedding, qwen35moe, bert, "
                                    "nomic-bert, qwen2vl, qwen3vl, "
                                    "qwen3vlmoe, qwen3next")
    # before it, the tensor types with a kernel, in ggml's id order
    assert out.splitlines()[-2] == (
        "supported tensor types: F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
        "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, "
        "IQ4_NL, IQ3_S, IQ2_S, IQ4_XS, IQ1_M, BF16, TQ1_0, TQ2_0, MXFP4, "
        "NVFP4, Q1_0, Q2_0")


@pytest.mark.parametrize("keep", [20, 1_000_000, 1_785_700, 98_000_000])
def test_info_truncated_model(tmp_path, keep):
    cut = tmp_path / "cut.gguf"
    with open(MODEL, "rb") as src, open(cut, "wb") as dst:
        dst.write(src.read(keep))
    r = info(str(cut))
    assert r.returncode == 1
    assert r.stdout == ""
    assert "offset" in r.stderr
    assert str(cut) in r.stderr


def test_info_not_gguf(tmp_path):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    r = info(str(p))
    assert r.returncode == 1
    assert "bad magic at offset 0" in r.stderr


def test_info_missing_file_and_usage(tmp_path):
    r = info(str(tmp_path / "absent.gguf"))
    assert r.returncode == 1
    assert "cannot open" in r.stderr
    assert info("--bogus").returncode == 2
    assert info("a.gguf", "b.gguf").returncode == 2
    r = info("--help")
    assert r.returncode == 0 and "usage: nucleus info" in r.stdout


@pytest.mark.parametrize("name, line", [
    # 8 layers, 5 keep K/V (3 read layers 3 and 4): sliding 0, 1, 3 of 2
    # heads of 64, full 2, 4 of 2 heads of 128, K and V in F16
    ("gemma4", "KV cache (gemma4): 3584 bytes per position, 1536 of them on "
               "sliding-window layers, kept for the last 16 positions only: "
               "2048 per position past the window; 5 of 8 layers keep K/V, 3 "
               "read another layer's"),
    # 6 layers, sliding ones of 4 heads of 64, full ones of 1 of 128
    ("gemma4moe", "KV cache (gemma4): 5120 bytes per position, 4096 of them "
                  "on sliding-window layers, kept for the last 16 positions "
                  "only: 1024 per position past the window"),
])
def test_info_gemma4_kv(name, line):
    path = os.path.join(ROOT, "build", "arch", name + ".gguf")
    assert os.path.isfile(path), f"{path} is missing: `make arch-models`"
    r = info(path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-3] == line
