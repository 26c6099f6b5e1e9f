"""nucleus perplexity against llama.cpp's perplexity of the same text.

Each kernel table adds in the float order of one llama.cpp build, so each
run is compared with the golden of that build, to 1e-4 (the two builds
differ by 0.15%; a scoring window one token off moves it by more than
1e-4), and the scored-token count must be the golden's:
- amx (the default on AMX CPUs): llama.cpp's AMX build, weight repacking on
  (tests/data/perplexity/gpl3_smollm2_q4_1_amx.json);
- avx512, avx2 (--no-repack, and the default on other CPUs): llama.cpp
  --no-repack (gpl3_smollm2_q4_1.json, scripts/gen_perplexity_golden.py:
  llama-perplexity's method over llama-cpp-python's logits).
The plain-C ref table (NUCLEUS_KERNELS=ref) follows neither: skipped, and
the skip says so.
"""

import json
import os
import pathlib
import re
import subprocess

import pytest

from conftest import require_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"
DATA = ROOT / "tests/data/perplexity"
GOLDEN = {"amx": DATA / "gpl3_smollm2_q4_1_amx.json",
          "avx512": DATA / "gpl3_smollm2_q4_1.json",
          "avx2": DATA / "gpl3_smollm2_q4_1.json"}
TEXT = pathlib.Path("/usr/share/common-licenses/GPL-3")


def run(*args, timeout=300):
    return subprocess.run([NUCLEUS_BIN, "perplexity", *args],
                          capture_output=True, text=True, timeout=timeout)


def kernel_table(*args):
    """The table `nucleus bench` reports for these options."""
    out = subprocess.run(
        [NUCLEUS_BIN, "bench", "-m", str(MODEL), "-p", "1", "-g", "0", "-r",
         "1", *args], capture_output=True, text=True, timeout=120,
        check=True).stdout
    m = re.search(r"^kernels: (\S+)$", out, re.M)
    assert m, "nucleus bench printed no kernels line:\n" + out
    return m.group(1)


# Flash attention on, as both engines' defaults (scripts/gen_perplexity_golden.py
# --fa); the amx table's order has no such golden yet.
GOLDEN_FA = {"avx512": DATA / "gpl3_smollm2_q4_1_fa.json",
             "avx2": DATA / "gpl3_smollm2_q4_1_fa.json"}


@pytest.mark.parametrize("options,fa", [((), "off"), (("--no-repack",), "off"),
                                        ((), "auto")],
                         ids=["fa-off", "no-repack-fa-off", "defaults"])
def test_perplexity_matches_llama_cpp(options, fa):
    require_model(MODEL)
    assert TEXT.exists(), f"{TEXT} is missing (Debian's base-files has it)"
    table = kernel_table(*options)
    goldens = GOLDEN if fa == "off" else GOLDEN_FA
    if table not in goldens:
        pytest.skip(f"kernel table {table} (NUCLEUS_KERNELS) follows no "
                    "llama.cpp build's float order with flash attention "
                    + fa)
    golden = json.loads(goldens[table].read_text())
    ref = next(r for r in golden["results"] if r["n_ctx"] == 256)
    # the goldens' attention: llama-perplexity with flash attention off, or
    # both at their defaults (on)
    p = run("-m", str(MODEL), "-f", str(TEXT), "-c", "256", "--chunks",
            str(ref["chunks"]), "-fa", fa, *options)
    assert p.returncode == 0, p.stderr
    head = re.search(r"^perplexity: (\d+) tokens, (\d+) chunks of (\d+)",
                     p.stderr, re.M)
    assert head, p.stderr
    assert (int(head.group(1)), int(head.group(2)), int(head.group(3))) == (
        golden["n_tokens"], ref["chunks"], 256)
    scored = re.search(r"\((\d+) tokens scored\)", p.stdout)
    assert scored, p.stdout
    assert int(scored.group(1)) == ref["scored"]
    last = p.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"PPL = ([0-9.]+)", last)
    assert m, f"last line is not 'PPL = <value>': {last!r}"
    ppl = float(m.group(1))
    print(f"kernels {table}: nucleus PPL {ppl:.4f}, llama.cpp "
          f"{ref['ppl']:.4f} ({goldens[table].name})")
    assert abs(ppl - ref["ppl"]) <= 1e-4 * ref["ppl"], (table, ppl, ref)


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
