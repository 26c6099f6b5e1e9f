"""nucleus imatrix: the importance matrix llama.cpp's llama-imatrix computes.
On the default model over Debian's GPL-3 text (3 chunks of 128 tokens) the
matrix equals the golden llama-imatrix wrote (scripts/gen_imatrix_golden.py:
per weight the rows counted, the sum of the squares summed and the first
values; 1e-5 relative, the bits matched when it was made); on a random
mixture of experts every expert's matrix counts the rows routed to it; the
file feeds nucleus quantize --imatrix; bad arguments are clear errors.
--process-output on a random file with its own output.weight (the default
model ties it) equals llama-imatrix's golden too, output.weight included."""
import json
import os
import pathlib
import subprocess
import sys

import gguf
import numpy as np
import pytest

from conftest import DEFAULT_MODEL, ROOT, require_binary_and_model  # noqa

NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
TEXT = "/usr/share/common-licenses/GPL-3"
GOLDEN = ROOT / "tests/data/imatrix/smollm2_gpl3_c128x3.json"
GOLDEN_UNTIED = ROOT / "tests/data/imatrix/untied_gpl3_c64x2.json"


def imatrix(*args):
    return subprocess.run([NUCLEUS_BIN, "imatrix", *args], capture_output=True,
                          text=True, timeout=600)


def read(path):
    r = gguf.GGUFReader(str(path))
    tensors = {t.name: np.array(t.data, dtype=np.float32).reshape(-1)
               for t in r.tensors}
    fields = {k: r.fields[k] for k in r.fields}
    return tensors, fields


def field_value(f):
    return f.parts[f.data[0]]


def test_matches_llama_imatrix(tmp_path):
    require_binary_and_model()
    out = tmp_path / "imatrix.gguf"
    # --no-repack: the golden's matmul order (llama-imatrix on a CPU
    # without AMX, where it repacks nothing), not an AMX machine's default
    r = imatrix("-m", DEFAULT_MODEL, "-f", TEXT, "-o", str(out), "-c", "128",
                "--chunks", "3", "-t", "2", "--no-repack")
    assert r.returncode == 0, r.stderr
    t, f = read(out)
    assert bytes(field_value(f["general.type"])).decode() == "imatrix"
    assert int(field_value(f["imatrix.chunk_count"])[0]) == 3
    assert int(field_value(f["imatrix.chunk_size"])[0]) == 128
    names = check_golden(t, GOLDEN)
    assert "output.weight" not in names  # every blk. matmul, output not


def check_golden(t, path):
    """The matrix t equals the golden at path (scripts/gen_imatrix_golden.py):
    the same weights, rows counted, sums and first values."""
    golden = json.loads(path.read_text())["entries"]
    names = {n[:-len(".in_sum2")] for n in t if n.endswith(".in_sum2")}
    assert names == set(golden)
    for name, g in golden.items():
        sums, counts = t[name + ".in_sum2"], t[name + ".counts"]
        assert [int(c) for c in counts] == g["counts"], name
        assert np.sum(sums.astype(np.float64)) == pytest.approx(g["sum"],
                                                               rel=1e-5), name
        np.testing.assert_allclose(sums[:8], g["first"], rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    return names


def test_process_output_untied(tmp_path):
    """--process-output on a file with its own output.weight: its matrix too,
    as llama-imatrix computes it."""
    require_binary_and_model()
    model = tmp_path / "untied.gguf"
    subprocess.run([sys.executable, str(ROOT / "bench/make_llama_shaped.py"),
                    str(model), "--layers", "2", "--embd", "256", "--ff",
                    "512", "--heads", "4", "--kv-heads", "2", "--untied"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    out = tmp_path / "untied.imatrix.gguf"
    r = imatrix("-m", str(model), "-f", TEXT, "-o", str(out), "-c", "64",
                "--chunks", "2", "-t", "2", "--process-output")
    assert r.returncode == 0, r.stderr
    t, _ = read(out)
    assert "output.weight" in check_golden(t, GOLDEN_UNTIED)


def test_experts_count_their_rows(tmp_path):
    require_binary_and_model()
    model = tmp_path / "moe.gguf"
    subprocess.run([sys.executable, str(ROOT / "bench/make_moe_shaped.py"),
                    str(model), "--type", "f16", "--layers", "2", "--embd",
                    "256", "--heads", "2", "--head-dim", "128", "--kv-heads",
                    "1", "--experts", "8", "--used", "2", "--ff-exp", "256"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    out = tmp_path / "moe.imatrix.gguf"
    r = imatrix("-m", str(model), "-f", TEXT, "-o", str(out), "-c", "64",
                "--chunks", "2", "--process-output")
    assert r.returncode == 0, r.stderr
    t, _ = read(out)
    for layer in range(2):
        for m in ("gate", "up", "down"):
            counts = t[f"blk.{layer}.ffn_{m}_exps.weight.counts"]
            sums = t[f"blk.{layer}.ffn_{m}_exps.weight.in_sum2"]
            assert len(counts) == 8 and sums.size == 8 * (256 if m != "down"
                                                          else 256)
            assert counts.sum() == 2 * 64 * 2  # each row goes to 2 experts
            for e in range(8):  # an expert's sums only where it was routed
                part = sums[e * 256:(e + 1) * 256]
                assert (part.sum() > 0) == (counts[e] > 0)
        assert list(t[f"blk.{layer}.attn_q.weight.counts"]) == [128]
    # the file ties its output to token_embd: as llama-imatrix,
    # --process-output collects only a tensor named output.weight
    assert not any(n.startswith(("output", "token_embd")) for n in t)


def test_feeds_quantize(tmp_path):
    require_binary_and_model()
    imx = tmp_path / "imatrix.gguf"
    assert imatrix("-m", DEFAULT_MODEL, "-f", TEXT, "-o", str(imx), "-c", "64",
                   "--chunks", "2").returncode == 0
    out = tmp_path / "q.gguf"
    r = subprocess.run([NUCLEUS_BIN, "quantize", "--imatrix", str(imx),
                        DEFAULT_MODEL, str(out), "Q4_K_M"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    r = gguf.GGUFReader(str(out))
    assert bytes(field_value(r.fields["quantize.imatrix.file"])).decode() == \
        str(imx)
    assert bytes(field_value(r.fields["quantize.imatrix.dataset"])).decode() \
        == TEXT
    assert int(field_value(r.fields["quantize.imatrix.entries_count"])[0]) \
        == 210
    r = subprocess.run([NUCLEUS_BIN, "run", "-m", str(out), "-n", "4",
                        "--temp", "0", "-p", "The capital of France is"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr


@pytest.mark.parametrize("args, needle", [
    (["-c", "8"], "-c 8: expected an integer in [16,"),
    (["-c", "100000"], "n_ctx 100000 is outside [16, 8192]"),
    (["--chunks", "0"], "--chunks 0: expected a positive integer"),
    ([], "-f TEXT is required"),
])
def test_bad_arguments(tmp_path, args, needle):
    require_binary_and_model()
    full = ["-m", DEFAULT_MODEL, "-o", str(tmp_path / "x.gguf")] + args
    if args:
        full += ["-f", TEXT]
    r = imatrix(*full)
    assert r.returncode != 0
    assert needle in r.stderr, r.stderr
    assert not (tmp_path / "x.gguf").exists()


def test_text_shorter_than_a_chunk(tmp_path):
    require_binary_and_model()
    short = tmp_path / "short.txt"
    short.write_text("A few words only.")
    r = imatrix("-m", DEFAULT_MODEL, "-f", str(short), "-o",
                str(tmp_path / "x.gguf"))
    assert r.returncode == 1
    assert "fewer than one chunk of 512" in r.stderr
