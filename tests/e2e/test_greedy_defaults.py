"""Greedy text at the defaults: `nucleus run` as a user runs it gives
llama.cpp's greedy text at llama.cpp's defaults, token for token (issue
23), for the default model and Gemma 3 270M.

Goldens: tests/data/greedy/smollm2_defaults.json and
gemma3_270m_defaults.json (scripts/gen_greedy_golden.py --defaults:
llama-cpp-python 0.3.36 with flash attention on, n_ctx 4096, n_batch 2048,
n_ubatch 512, no repack), 10 prompts each of 3 to 237 tokens, 32 generated
tokens: under 64 prompt tokens llama.cpp runs the prompt through its
per-row flash path, from 64 on through its tiled one, and every generated
token through the per-row one (batch.h's two orders).

nucleus runs at its defaults but for the matmul order: --no-repack (the
goldens are llama.cpp --no-repack's; on a CPU with AMX both default to the
AMX order, which the goldens do not follow), and FLASH below.

Gemma 3's K-quant matmuls: llama.cpp multiplies a micro-batch of 8 or
more rows (a prompt of 8+ tokens) in its tiled order and fewer (every
generated token, and the last layer's one row with logits) in its AVX2
ggml_vec_dot order; nucleus takes the same order per row (batch.h,
NC_MM_FEW: the avx512 table's gemm_few), so every case must match. Where
llama.cpp's own text depends on its thread count it cannot: once its
cache reaches 512 cells (it pads the cells in use to 256), its one-row
decode splits the keys over its threads (docs/forward.md); the golden is
at 2 threads, and at 1 and 4 its 237-token case parts at the same token
as nucleus does.
"""

import json
import pathlib
import subprocess

import pytest

from conftest import NUCLEUS_BIN, require_binary_and_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDENS = {
    "smollm2": ("models/SmolLM2-135M-Instruct.Q4_1.gguf",
                "tests/data/greedy/smollm2_defaults.json"),
    "gemma3": ("models/gemma-3-270m-q4_k_m.gguf",
               "tests/data/greedy/gemma3_270m_defaults.json"),
}
# nucleus at its own default: -fa auto is on, as llama.cpp's CPU default
# (nothing to pass)
FLASH = ()
# llama.cpp's cache pads the cells in use to this many; from two such
# units its one-row decode splits the keys over its threads
LLAMA_KV_PAD = 256


def load(name):
    return json.loads((ROOT / GOLDENS[name][1]).read_text())


def cases():
    out = []
    for name in GOLDENS:
        gold = load(name)
        for i, c in enumerate(gold["cases"]):
            marks = []
            if len(c["prompt_ids"]) + gold["n_predict"] > LLAMA_KV_PAD:
                marks.append(pytest.mark.xfail(
                    strict=False, reason="llama.cpp's decode over 512+ cache "
                    "cells depends on its thread count"))
            out.append(pytest.param(name, i, marks=marks, id=f"{name}-{i}"))
    return out


@pytest.mark.parametrize("name,i", cases())
def test_run_greedy_equals_llama_cpp_defaults(name, i):
    model = ROOT / GOLDENS[name][0]
    require_binary_and_model(model)
    gold = load(name)
    case = gold["cases"][i]
    n_prompt = len(case["prompt_ids"])
    p = subprocess.run([NUCLEUS_BIN, "run", "-m", str(model), "-p",
                        case["prompt"], "-n", str(gold["n_predict"]),
                        "--no-repack", *FLASH],
                       capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    out = p.stdout.decode()
    prompt = case["prompt"]
    assert out.startswith(prompt) and out.endswith("\n"), out
    got = out[len(prompt):-1]  # run ends its output with a newline
    want = case["text"]
    at = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b),
              min(len(got), len(want)))
    assert got == want, (
        f"{name} prompt {i} ({n_prompt} tokens) parts from llama.cpp at "
        f"character {at}:\nnucleus:   {got!r}\nllama.cpp: {want!r}")
