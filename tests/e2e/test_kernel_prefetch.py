"""The decode kernels keep their prefetches: every src/kernels/ file that
calls nc_prefetch_lines (avx2_util.h) has prefetch instructions in its
built object (the build beside NUCLEUS_BIN). GCC deleted all of
avx512_nl_gemm.c's once that helper stayed out of line there (a call that
only prefetches has no effect GCC sees), and a mixture's MXFP4 experts then
decoded ~1.5x slower without any test failing (docs/kernels.md, stop 56)."""

import pathlib
import re
import shutil
import subprocess

import pytest
from conftest import NUCLEUS_BIN, ROOT

BUILD = pathlib.Path(NUCLEUS_BIN).resolve().parent


def prefetching_sources():
    return sorted(p for p in (ROOT / "src" / "kernels").glob("*.c")
                  if "nc_prefetch_lines(" in p.read_text())


def test_sources_found():
    names = [p.name for p in prefetching_sources()]
    assert "avx512_nl_gemm.c" in names and "amx_gemv.c" in names, names


@pytest.mark.parametrize("src", prefetching_sources(), ids=lambda p: p.name)
def test_prefetch_kept(src):
    if not shutil.which("objdump"):
        pytest.skip("objdump (binutils) is not installed")
    obj = BUILD / "src" / "kernels" / (src.stem + ".o")
    if not obj.is_file():
        pytest.fail(f"{obj} is not built (make)")
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(obj)],
                         capture_output=True, text=True, check=True,
                         timeout=120).stdout
    assert re.search(r"\sprefetch(t0|t1|t2|nta|w)?\s", out), (
        f"{obj.name}: no prefetch instruction left although {src.name} "
        "calls nc_prefetch_lines")
