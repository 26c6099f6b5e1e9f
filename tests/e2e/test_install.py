"""libnucleus installed like a library: `make install PREFIX=tmp` installs the
header, both libraries, the binary and nucleus.pc; examples/generate.c built
with `pkg-config --cflags --libs nucleus` runs against libnucleus.so and
prints what `nucleus run` prints; the .so exports only nucleus_* symbols;
the version is one (header, binary, nucleus.pc, library)."""

import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = os.environ.get(
    "NUCLEUS_MODEL", str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
PROMPT = "The three primary colors are"
N = "24"


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("prefix")
    p = subprocess.run(["make", "-s", "-C", str(ROOT), "install",
                        f"PREFIX={prefix}"], capture_output=True, timeout=900)
    assert p.returncode == 0, p.stderr.decode()
    return prefix


def test_install_layout(prefix):
    for rel in ("include/nucleus.h", "lib/libnucleus.a", "lib/libnucleus.so",
                "lib/pkgconfig/nucleus.pc", "bin/nucleus"):
        assert (prefix / rel).is_file(), rel


def test_shared_library_exports_only_the_api(prefix):
    p = subprocess.run(["nm", "-D", "--defined-only",
                        str(prefix / "lib/libnucleus.so")],
                       capture_output=True, check=True)
    names = [line.split()[-1] for line in p.stdout.decode().splitlines()
             if line.strip()]
    assert "nucleus_model_load" in names
    assert [n for n in names if not n.startswith("nucleus_")] == []


def test_example_matches_nucleus_run(prefix, tmp_path):
    env = {**os.environ, "PKG_CONFIG_PATH": str(prefix / "lib/pkgconfig")}
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "nucleus"],
                           env=env, capture_output=True, check=True)
    exe = tmp_path / "generate"
    subprocess.run(["cc", "-std=c17", "-Wall", "-Wextra", "-Werror",
                    str(ROOT / "examples/generate.c"), *flags.stdout
                    .decode().split(), "-o", str(exe)], check=True)
    ldd = subprocess.run(["ldd", str(exe)], env={
        **env, "LD_LIBRARY_PATH": str(prefix / "lib")},
        capture_output=True, check=True).stdout.decode()
    assert str(prefix / "lib/libnucleus.so") in ldd
    got = subprocess.run([str(exe), MODEL, PROMPT, N], env={
        **env, "LD_LIBRARY_PATH": str(prefix / "lib")}, capture_output=True,
        timeout=300)
    assert got.returncode == 0, got.stderr.decode()
    want = subprocess.run([str(prefix / "bin/nucleus"), "run", "-m", MODEL,
                           "-p", PROMPT, "-n", N, "--temp", "0"],
                          capture_output=True, timeout=300)
    assert want.returncode == 0, want.stderr.decode()
    out = got.stdout.decode()
    text, finish = out.rstrip("\n").rsplit("\n", 1)
    assert finish == "finish: length"
    assert "finish: length" in want.stderr.decode()
    assert text + "\n" == want.stdout.decode()


def test_one_version_everywhere(prefix, tmp_path):
    """NUCLEUS_VERSION of the header is what nucleus --version prints, what
    nucleus.pc says and what nucleus_version() of the installed library
    returns."""
    header = (prefix / "include/nucleus.h").read_text()
    m = re.search(r'#define NUCLEUS_VERSION "(\d+\.\d+\.\d+)"', header)
    assert m, "no NUCLEUS_VERSION in the installed header"
    version = m.group(1)
    out = subprocess.run([str(prefix / "bin/nucleus"), "--version"],
                         capture_output=True, text=True, check=True).stdout
    assert out == f"nucleus {version}\n"
    env = {**os.environ, "PKG_CONFIG_PATH": str(prefix / "lib/pkgconfig")}
    pc = subprocess.run(["pkg-config", "--modversion", "nucleus"], env=env,
                        capture_output=True, text=True, check=True).stdout
    assert pc.strip() == version
    src = tmp_path / "v.c"
    src.write_text('#include <nucleus.h>\n#include <stdio.h>\n#include '
                   '<string.h>\nint main(void) {\n  puts(nucleus_version());\n'
                   '  return strcmp(nucleus_version(), NUCLEUS_VERSION);\n}\n')
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "nucleus"],
                           env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    subprocess.run(["cc", "-std=c17", str(src), *flags, "-o",
                    str(tmp_path / "v")], check=True)
    run = subprocess.run([str(tmp_path / "v")], env={
        **env, "LD_LIBRARY_PATH": str(prefix / "lib")}, capture_output=True,
        text=True)
    assert run.returncode == 0 and run.stdout == version + "\n"
