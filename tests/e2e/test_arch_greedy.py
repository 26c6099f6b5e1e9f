"""Greedy text of the random-weight Gemma 4 files (scripts/make_arch_gguf.py
gemma4 and gemma4moe, `make arch-models`) and of the vision-language Qwens'
language models on text (qwen2vl, qwen3vl, qwen3vlmoe: M-RoPE) and of
Qwen3-Next (qwen3next: the delta rule token by token) equal to llama.cpp's:
tests/data/greedy/arch_<file>.json (scripts/gen_greedy_golden.py FILE OUT:
llama-cpp-python, flash attention off, no repack), 24 tokens after each of
its 3 prompts (but one near tie), through `nucleus run` with the same
attention. The weights
are random, so the text is noise; a skipped window, shared K/V read from
the wrong layer, a missing per-layer embedding or an M-RoPE pair turned
that llama.cpp leaves (a text row's e position is 0) changes it."""

import json
import pathlib
import subprocess

import pytest

from conftest import NUCLEUS_BIN

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILES = ["gemma4", "gemma4moe", "qwen2vl", "qwen3vl", "qwen3vlmoe", "qwen3next"]
# gemma4moe after "def fibonacci(n):\n" starts at a near tie: ' Distance'
# -5.7924 against ' mushrooms' -5.7930 in nucleus (llama.cpp picks the
# other; the two engines' logits differ by up to 7e-3 on this file,
# docs/FIDELITY.md), so no exact greedy text there.
NEAR_TIE = {("gemma4moe", 1)}


@pytest.mark.parametrize("arch", FILES)
def test_greedy_equals_llama_cpp(arch):
    path = ROOT / "build/arch" / f"{arch}.gguf"
    assert path.is_file(), f"{path} is missing: `make arch-models`"
    golden = json.loads(
        (ROOT / "tests/data/greedy" / f"arch_{arch}.json").read_text())
    n = golden["n_predict"]
    for i, case in enumerate(golden["cases"]):
        if (arch, i) in NEAR_TIE:
            continue
        p = subprocess.run(
            [NUCLEUS_BIN, "run", "-m", str(path), "-p", case["prompt"], "-n",
             str(n), "--temp", "0", "-fa", "off", "-t", "2", "--no-repack"],
            capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        out = p.stdout.decode("utf-8", errors="replace")
        # run prints the prompt, the continuation and a newline
        assert out.startswith(case["prompt"]) and out.endswith("\n"), out
        assert out[len(case["prompt"]):-1] == case["text"], (arch, case)
