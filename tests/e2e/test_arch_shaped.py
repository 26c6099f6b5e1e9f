"""bench/make_arch_shaped.py's files: scripts/make_arch_gguf.py's
architectures at other widths (build()'s overrides). The real shapes are a
few hundred MB (scripts/make_bench_models.sh makes them for bench/speed.py);
here each shape's overrides are checked against what build() takes, and a
small gpt-oss at other widths is written and run."""

import re
import subprocess
import sys

import pytest

from conftest import NUCLEUS_BIN, ROOT, require_binary_and_model

sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))
import make_arch_gguf  # noqa: E402
import make_arch_shaped  # noqa: E402


def test_every_shape_names_an_arch_and_keys_it_takes():
    for name, (arch, overrides) in make_arch_shaped.SHAPES.items():
        assert arch in make_arch_gguf.ARCHS, name
        unknown = (set(overrides) - set(make_arch_gguf.ARCHS[arch])
                   - set(make_arch_gguf.WIDTH_KEYS))
        assert not unknown, (name, unknown)


def test_build_refuses_an_unknown_override(tmp_path):
    with pytest.raises(SystemExit, match="n_heads"):
        make_arch_gguf.build("gptoss", str(tmp_path / "x.gguf"),
                             overrides={"n_heads": 8})


def test_overridden_widths_reach_the_file_and_run(tmp_path):
    """gpt-oss 192 wide, 6 heads of 64 over 3 KV heads (q 384 wide: not
    n_embd), window 8: nucleus reads those widths (its KV line: 2 layers of
    3 KV heads of 64, K and V in F16, half of them windowed; a sink per
    head) and runs it."""
    require_binary_and_model()
    out = tmp_path / "gptoss-small.gguf"
    make_arch_gguf.build("gptoss", str(out), overrides=dict(
        n_layer=2, n_embd=192, n_head=6, n_head_kv=3, window=8))
    info = subprocess.run([NUCLEUS_BIN, "info", out], capture_output=True,
                          text=True, timeout=120, check=True).stdout
    assert re.search(r"gpt-oss\.embedding_length +UINT32 +192$", info, re.M)
    assert re.search(r"blk\.1\.attn_sinks\.weight +F32 +\[6\]", info)
    assert "KV cache (gpt-oss): 1536 bytes per position, 768 of them on " \
        "sliding-window layers, kept for the last 8 positions only" in info
    p = subprocess.run([NUCLEUS_BIN, "run", "-m", out, "-n", "4", "--temp",
                        "0", "-p", "Hello"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
