"""README.md shows what runs: every code block marked

    <!-- transcript kernels=TABLE -->

is a real session. Its first line is `$ nucleus ...` (the command, run from
the repository root with NUCLEUS_BIN for `nucleus`); lines starting with
`> ` are what the user typed (fed to standard input, in order); every other
line is output, standard output and standard error interleaved as a
terminal shows them. Generation is greedy, so the text is deterministic for
a kernel table: each output line must be printed, in order, by one of the
two streams, and nothing else may be. In lines that report speeds (`tok/s`)
the speeds, the time to the first token and the seed (random when --seed is
not given) are replaced by N on both sides before comparing. Where this
CPU's default kernel table is not the TABLE the block was recorded with
(the amx table on AMX CPUs, or NUCLEUS_KERNELS set), the command runs with
NUCLEUS_KERNELS=TABLE; a block is skipped, with a message saying so, only
where the CPU lacks that table.
"""

import os
import re
import shlex
import subprocess

import pytest

from conftest import DEFAULT_MODEL, NUCLEUS_BIN, ROOT, require_model

MARK = re.compile(r"^<!-- transcript kernels=(\w+) -->$")


def transcripts():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        assert lines[i + 1] == "```", f"README.md:{i + 2}: no block after mark"
        end = lines.index("```", i + 2)
        block = lines[i + 2:end]
        assert block and block[0].startswith("$ nucleus "), (
            f"README.md:{i + 3}: a transcript starts with '$ nucleus '")
        out.append(pytest.param(m.group(1), block, id=f"README.md:{i + 1}"))
    return out


def normalize(line):
    if "tok/s" not in line:
        return line
    line = re.sub(r"[0-9.]+ tok/s", "N tok/s", line)
    line = re.sub(r"after [0-9.]+ ms", "after N ms", line)
    return re.sub(r"seed [0-9]+", "seed N", line)


def table_in_use(env=None):
    """The kernel table `nucleus bench` reports (NUCLEUS_KERNELS naming a
    table the CPU lacks falls back to the default)."""
    out = subprocess.run(
        [NUCLEUS_BIN, "bench", "-m", DEFAULT_MODEL, "-p", "1", "-g", "0",
         "-r", "1"], capture_output=True, text=True, timeout=120,
        check=True, env=env).stdout
    m = re.search(r"^kernels: (\S+)$", out, re.M)
    assert m, out
    return m.group(1)


def test_readme_has_transcripts():
    assert len(transcripts()) >= 2


@pytest.mark.parametrize("kernels, block", transcripts())
def test_transcript(kernels, block):
    require_model()
    env = dict(os.environ)
    table = table_in_use(env)
    if table != kernels:
        env["NUCLEUS_KERNELS"] = kernels
        if table_in_use(env) != kernels:
            pytest.skip(f"recorded with the {kernels} kernel table, which "
                        f"this CPU lacks (it runs {table})")
    argv = shlex.split(block[0][2:])
    assert argv[0] == "nucleus"
    stdin = "".join(line[2:] + "\n" for line in block[1:]
                    if line.startswith("> "))
    want = [normalize(line) for line in block[1:] if not line.startswith("> ")]
    p = subprocess.run([NUCLEUS_BIN, *argv[1:]], input=stdin, cwd=ROOT,
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    out = [normalize(line) for line in p.stdout.splitlines()]
    err = [normalize(line) for line in p.stderr.splitlines()]
    # Each expected line is the next line of stdout or of stderr.
    i = j = 0
    for k, line in enumerate(want):
        if i < len(out) and out[i] == line:
            i += 1
        elif j < len(err) and err[j] == line:
            j += 1
        else:
            pytest.fail(f"transcript line {k + 2}: {line!r}\nnext stdout "
                        f"line: {out[i] if i < len(out) else None!r}\nnext "
                        f"stderr line: {err[j] if j < len(err) else None!r}"
                        f"\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    assert i == len(out) and j == len(err), (
        "output the transcript does not show:\n"
        + "\n".join(out[i:] + err[j:]))


def test_shell_examples_pass_newlines_as_newlines():
    """A `\\n` inside double quotes reaches the program as a backslash and
    an n: the examples write newlines as $'...\\n...'."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        for line in block.splitlines():
            for quoted in re.findall(r'"((?:[^"\\]|\\.)*)"', line):
                assert "\\n" not in quoted, line
