"""`nucleus run --mmproj FILE --image FILE -p TEXT` formats the prompt as
llama-mtmd-cli does (the file's chat template, one user turn: the images,
then the text) and gives its greedy text: on the random gemma3 pair of
`make arch-models` (build/arch/gemma3.gguf + gemma3-mmproj.gguf) with two
images, tests/data/vision/gemma3_greedy.txt (scripts/gen_vision_goldens.py:
llama-mtmd-cli, flash attention off). The images are PNGs of
gen_vision_goldens' pixels(); swapping them changes the text. Bad
invocations are refused with a message. The random Gemma 4 pair
(build/arch/gemma4.gguf + gemma4v-mmproj.gguf, images at their own aspect
ratio) gives tests/data/vision/gemma4v_greedy_jinja.txt, llama-mtmd-cli's
greedy text with --jinja (the file's template, which adds a system
message; without --jinja llama-mtmd-cli renders its legacy chatml, no
system message: test_engine_gemma4v_images checks that prompt)."""

import pathlib
import subprocess
import sys

import pytest
from PIL import Image

from conftest import NUCLEUS_BIN

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from gen_vision_goldens import GEMMA4V_IMAGES, IMAGES, pixels  # noqa: E402

LM = ROOT / "build/arch/gemma3.gguf"
MMPROJ = ROOT / "build/arch/gemma3-mmproj.gguf"


@pytest.fixture(scope="module")
def pngs(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    out = {}
    for name, (w, h) in IMAGES.items():
        out[name] = d / f"{name}.png"
        Image.fromarray(pixels(w, h)).save(out[name])
    return out


def run(*images, extra=()):
    for f in (LM, MMPROJ):
        assert f.is_file(), f"{f} is missing: `make arch-models`"
    args = [NUCLEUS_BIN, "run", "-m", str(LM), "--mmproj", str(MMPROJ),
            "-p", "Describe the two images.", "-n", "16", "--flash-attn",
            "off", *extra]
    for img in images:
        args += ["--image", str(img)]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_greedy_equals_llama_mtmd_cli(pngs):
    p = run(pngs["wide"], pngs["tall"])
    assert p.returncode == 0, p.stderr
    golden = (ROOT / "tests/data/vision/gemma3_greedy.txt").read_text()
    assert p.stdout == golden + "\n"
    swapped = run(pngs["tall"], pngs["wide"])
    assert swapped.returncode == 0, swapped.stderr
    assert swapped.stdout != p.stdout


def test_refusals(pngs, tmp_path):
    p = subprocess.run([NUCLEUS_BIN, "run", "-m", str(LM), "--image",
                        str(pngs["wide"]), "-p", "x"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2
    assert "--image needs --mmproj" in p.stderr
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    p = run(bad)
    assert p.returncode == 1
    assert f"--image {bad}:" in p.stderr
    p = run(pngs["wide"], extra=["--mmproj", str(LM)])
    assert p.returncode == 1
    assert "expected 'clip'" in p.stderr


def test_gemma4v_greedy_equals_llama_mtmd_cli(tmp_path):
    lm = ROOT / "build/arch/gemma4.gguf"
    mm = ROOT / "build/arch/gemma4v-mmproj.gguf"
    for f in (lm, mm):
        assert f.is_file(), f"{f} is missing: `make arch-models`"
    pngs = {}
    for name in ("wide", "tall"):
        pngs[name] = tmp_path / f"{name}.png"
        Image.fromarray(pixels(*GEMMA4V_IMAGES[name])).save(pngs[name])

    def gemma4v_run(*images):
        args = [NUCLEUS_BIN, "run", "-m", str(lm), "--mmproj", str(mm), "-p",
                "Describe the two images.", "-n", "16", "--flash-attn", "off"]
        for img in images:
            args += ["--image", str(img)]
        return subprocess.run(args, capture_output=True, text=True,
                              timeout=120)

    p = gemma4v_run(pngs["wide"], pngs["tall"])
    assert p.returncode == 0, p.stderr
    golden = (ROOT / "tests/data/vision/gemma4v_greedy_jinja.txt").read_text()
    assert p.stdout == golden + "\n"
    swapped = gemma4v_run(pngs["tall"], pngs["wide"])
    assert swapped.returncode == 0, swapped.stderr
    assert swapped.stdout != p.stdout
