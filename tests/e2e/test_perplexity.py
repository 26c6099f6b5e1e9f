"""nucleus perplexity against llama.cpp's perplexity of the same text.

The golden (tests/data/perplexity/gpl3_smollm2_q4_1.json) comes from
scripts/gen_perplexity_golden.py: llama-perplexity's method over
llama-cpp-python's logits. nucleus must agree within 0.5%.
"""

import json
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"
GOLDEN = ROOT / "tests/data/perplexity/gpl3_smollm2_q4_1.json"
TEXT = pathlib.Path("/usr/share/common-licenses/GPL-3")


def run(*args, timeout=300):
    return subprocess.run([NUCLEUS_BIN, "perplexity", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not MODEL.exists() or not TEXT.exists(),
                    reason="needs the default model and the GPL-3 text")
def test_perplexity_matches_llama_cpp():
    golden = json.loads(GOLDEN.read_text())
    ref = next(r for r in golden["results"] if r["n_ctx"] == 256)
    p = run("-m", str(MODEL), "-f", str(TEXT), "-c", "256", "--chunks",
            str(ref["chunks"]))
    assert p.returncode == 0, p.stderr
    last = p.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"PPL = ([0-9.]+)", last)
    assert m, f"last line is not 'PPL = <value>': {last!r}"
    ppl = float(m.group(1))
    rel = abs(ppl - ref["ppl"]) / ref["ppl"]
    print(f"nucleus PPL {ppl:.4f}, llama.cpp {ref['ppl']:.4f}, "
          f"relative difference {100 * rel:.3f}%")
    assert rel <= 0.005


def test_perplexity_errors(tmp_path):
    p = run("-c", "256")
    assert p.returncode == 2
    assert "-f TEXT is required" in p.stderr
    p = run("-f", str(tmp_path / "missing.txt"), "-m", str(MODEL))
    assert p.returncode == 1
    assert "cannot read" in p.stderr
    p = run("-f", str(TEXT), "-c", "zero")
    assert p.returncode == 2
    assert "-c zero" in p.stderr
    if MODEL.exists():
        short = tmp_path / "short.txt"
        short.write_text("Only a few words here.")
        p = run("-m", str(MODEL), "-f", str(short), "-c", "256")
        assert p.returncode == 1
        assert "needs at least 512" in p.stderr
