"""The default model at its full context (issue 23, "Long contexts for real").

SmolLM2-135M's training context is 8,192 positions. `nucleus run` prefills
an 8,000-token prompt (the GPL-3 then the GPL-2 text, tokenized by nucleus,
whose ids must hash to llama.cpp's: the golden records the sha256) and
generates 32 greedy tokens, reaching position 8,031. They must be
llama.cpp's (tests/data/greedy/smollm2_long_8k.json, from
scripts/gen_long_context_golden.py: llama-cpp-python at n_ctx 8192, flash
attention off, no repack), so nucleus runs with -fa off and --no-repack,
the same float orders. Its peak RSS must stay within the model file + the
KV cache of the positions it holds + 64 MiB (tests/e2e/test_memory.py's
bound: the weights are not copied and scratch memory does not grow with
the context). And Gemma 3's sliding-window layers hold one window, not
the whole context (issue 17): test_gemma3_sliding_window_memory.
"""

import hashlib
import json
import os
import re
import subprocess

import pytest
from conftest import DEFAULT_MODEL, NUCLEUS_BIN, ROOT, require_binary_and_model
from test_memory import (KV_ELEM_BYTES, SLACK, hparams, kv_bytes,
                         run_measured)

# long contexts (up to 32k tokens): `make test` runs it, `make check` leaves it out.
pytestmark = pytest.mark.slow

GOLDEN = os.path.join(str(ROOT), "tests", "data", "greedy",
                      "smollm2_long_8k.json")


def prompt_ids(golden):
    parts = []
    for p in golden["sources"]:
        with open(p, encoding="utf-8") as f:
            parts.append(f.read())
    text = "\n".join(parts)
    out = subprocess.run(
        [NUCLEUS_BIN, "tokenize", "-m", DEFAULT_MODEL, "--ids", "--stdin"],
        input=text.encode(), capture_output=True, check=True).stdout
    ids = json.loads(out)
    assert len(ids) >= golden["n_prompt"]
    return ids[:golden["n_prompt"]]


def test_full_context_greedy_and_memory():
    require_binary_and_model()
    with open(GOLDEN) as f:
        golden = json.load(f)
    ids = prompt_ids(golden)
    sha = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()
    assert sha == golden["prompt_sha256"], "nucleus tokenizes the prompt " \
        "differently from llama.cpp"
    n_gen = len(golden["tokens"])
    hp = hparams(DEFAULT_MODEL)
    assert golden["n_prompt"] + n_gen <= hp["n_ctx_train"]
    rc, out, peak = run_measured(
        [NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, "--tokens",
         ",".join(map(str, ids)), "-n", str(n_gen), "--ignore-eos",
         "--logprobs", "1", "-t", "2", "-fa", "off", "--no-repack",
         "-c", str(golden["n_ctx"])])
    assert rc == 0, out[-2000:]
    got = [int(m.group(1)) for m in
           re.finditer(r"^(\d+)\s+'", out, flags=re.MULTILINE)]
    assert got == golden["tokens"], (
        f"greedy continuation differs from llama.cpp's at token "
        f"{next(i for i, (a, b) in enumerate(zip(got + [-1] * n_gen, golden['tokens'])) if a != b)}"
        f": {got} vs {golden['tokens']}")
    m = re.search(r"prompt: (\d+) tokens.*generation: (\d+) tokens", out)
    assert m and int(m.group(1)) == golden["n_prompt"], out[-1000:]
    file_bytes = os.path.getsize(DEFAULT_MODEL)
    used = kv_bytes(hp, golden["n_prompt"] + n_gen)
    bound = file_bytes + used + SLACK
    print(f"peak RSS {peak / 2**20:.1f} MiB: file {file_bytes / 2**20:.1f} + "
          f"KV {used / 2**20:.1f} (of {golden['n_prompt'] + n_gen} positions)"
          f" + 64 = bound {bound / 2**20:.1f} MiB")
    assert peak <= bound, (peak, bound)



GEMMA = os.path.join(str(ROOT), "models", "gemma-3-270m-q4_k_m.gguf")


def gemma_peak(n_prompt):
    ids = [1000 + (i * 7919) % 200000 for i in range(n_prompt)]
    rc, out, peak = run_measured(
        [NUCLEUS_BIN, "run", "-m", GEMMA, "--tokens", ",".join(map(str, ids)),
         "-n", "4", "--ignore-eos", "-t", "2", "-c", "8192"])
    assert rc == 0, out[-2000:]
    return peak


def test_gemma3_sliding_window_memory():
    """Gemma 3 keeps the keys and values of its sliding-window layers (5 of
    every 6) only for the window. From a prompt of 1,024 tokens (two
    windows) to one of 6,144, the peak RSS may grow by the KV of the global
    layers for the 5,120 positions more + 8 MiB, not by the full cache's
    (6x that)."""
    require_binary_and_model(GEMMA)
    hp = hparams(GEMMA)
    n_layer = hp["n_layer"]
    n_global = sum(1 for il in range(n_layer) if (il + 1) % 6 == 0)
    per_layer_pos = hp["n_head_kv"] * (hp["head_dim"] + hp["head_dim_v"]) \
        * KV_ELEM_BYTES
    short, long = 1024, 6144
    grew = gemma_peak(long) - gemma_peak(short)
    allowed = n_global * (long - short) * per_layer_pos + 8 * 2**20
    full = n_layer * (long - short) * per_layer_pos
    print(f"peak RSS grew {grew / 2**20:.1f} MiB from {short} to {long} "
          f"prompt tokens: the global layers' KV {allowed / 2**20 - 8:.1f} "
          f"+ 8 allowed; a full cache would add {full / 2**20:.1f}")
    assert grew <= allowed, (grew, allowed)
