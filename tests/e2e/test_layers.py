"""The layer check (scripts/check_layers.py, `make layers`): the tree as it
is passes, and each kind of violation it exists for is caught, named, in a
copy of the sources with one line added."""

import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

BUILD = ROOT / "build" / "release"


def check(root, *args):
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "check_layers.py"), *args],
        capture_output=True, text=True, timeout=120)


@pytest.fixture()
def tree(tmp_path):
    """A copy of what the check reads (sources and headers); the objects it
    reads stay the build's."""
    if not (BUILD / "src").is_dir():
        pytest.fail("no build/release/src objects: run make first")
    for d in ("src", "include", "tools", "bench", "scripts"):
        shutil.copytree(ROOT / d, tmp_path / d)
    return tmp_path


def test_the_tree_passes():
    r = check(ROOT, str(BUILD))
    assert r.returncode == 0, r.stdout + r.stderr


def test_graph_lists_every_folder():
    r = check(ROOT, "--graph")
    assert r.returncode == 0
    folders = sorted(p.name for p in (ROOT / "src").iterdir() if p.is_dir())
    for f in folders:
        assert f"{f} (uses" in r.stdout, f


VIOLATIONS = [
    # an include that runs up a layer
    ("src/kv/kv_prefix.c", '#include "model/model.h"',
     "kv/ does not depend on model/"),
    # between folders of one level
    ("src/chat/tool_call_parse.c", '#include "grammar/grammar.h"',
     "chat/ does not depend on grammar/"),
    # another folder's internal header
    ("src/engine/request.c", '#include "kv/kv_cache_internal.h"',
     "internal to kv/"),
    # a client reaching past the public header
    ("tools/cli/cmd_run.c", '#include "model/model.h"',
     "clients use the public header"),
]


def test_each_violation_is_named(tree):
    """(One run over one copy: the check reads every object with nm.)"""
    for path, line, _ in VIOLATIONS:
        f = tree / path
        f.write_text(f.read_text() + "\n" + line + "\n")
    (tree / "src" / "loose.c").write_text("int nc_loose;\n")
    (tree / "src" / "audio").mkdir()
    (tree / "src" / "audio" / "whisper.c").write_text("int nc_whisper;\n")
    r = check(tree, str(BUILD))
    assert r.returncode == 1
    out = r.stdout.splitlines()
    for path, _, expect in VIOLATIONS:
        assert any(path in o and expect in o for o in out), (path, r.stdout)
    # a source outside the folders, a folder that does not say what it uses
    assert any("src/loose.c" in o for o in out), r.stdout
    assert any("src/audio/" in o and "DEPENDS" in o for o in out), r.stdout
    # (audio/whisper.c is named too: its folder is not in DEPENDS)
    assert len(out) == len(VIOLATIONS) + 3, r.stdout
