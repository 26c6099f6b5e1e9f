"""`nucleus tokenize` end to end: ids identical to the committed llama.cpp
goldens (tests/data/tokenizer/smollm.special.ids), --ids / --no-bos /
--stdin, and errors."""

import pathlib
import subprocess

from conftest import DEFAULT_MODEL, NUCLEUS_BIN, ROOT, require_model

DATA = ROOT / "tests/data/tokenizer"


def run(*args, stdin=None):
    return subprocess.run([NUCLEUS_BIN, "tokenize", *args], input=stdin,
                          capture_output=True, timeout=120)


def golden(n):
    corpus = [bytes.fromhex(l.strip())
              for l in (DATA / "corpus.hex").read_text().splitlines()]
    lines = (DATA / "smollm.special.ids").read_text().split("\n")[1:]
    out = []
    for text, line in zip(corpus, lines):
        ids = [int(x) for x in line.split("|")[0].split()]
        out.append((text, ids))
    return out[:n]


def parse_ids(stdout):
    s = stdout.decode().strip()
    assert s.startswith("[") and s.endswith("]"), s
    return [int(x) for x in s[1:-1].split(",") if x.strip()]


def test_ids_match_llama_cpp_goldens():
    # --stdin feeds the exact bytes (invalid UTF-8, NUL, newlines included);
    # SmolLM2 adds no BOS, and tokenize parses special tokens by default.
    for text, want in golden(60):
        r = run("-m", DEFAULT_MODEL, "--ids", "--stdin", stdin=text)
        assert r.returncode == 0, r.stderr
        assert parse_ids(r.stdout) == want, text


def test_argument_text_and_pieces():
    r = run("-m", DEFAULT_MODEL, "Hello world")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert lines == [" 19556 -> 'Hello'", "   905 -> ' world'"]


def test_special_tokens_and_no_parse_special():
    r = run("-m", DEFAULT_MODEL, "--ids", "<|im_start|>user")
    assert parse_ids(r.stdout) == [1, 4093]
    r = run("-m", DEFAULT_MODEL, "--ids", "--no-parse-special",
            "<|im_start|>user")
    assert 1 not in parse_ids(r.stdout)


def test_bos_when_the_model_asks(tmp_path):
    """A model whose GGUF asks for BOS (tokenizer.ggml.add_bos_token) gets
    it first, and --no-bos leaves it out. SmolLM2 does not ask: a copy with
    the flag flipped in place does (the loader reads it from the file; Gemma
    3, whose file asks, is an architecture the loader does not run)."""
    import shutil

    import gguf

    require_model()
    path = tmp_path / "asks-bos.gguf"
    shutil.copyfile(DEFAULT_MODEL, path)
    reader = gguf.GGUFReader(str(path), "r+")
    field = reader.fields["tokenizer.ggml.add_bos_token"]
    assert not field.parts[field.data[0]][0]
    field.parts[field.data[0]][0] = True
    bos_field = reader.fields["tokenizer.ggml.bos_token_id"]
    bos = int(bos_field.parts[bos_field.data[0]][0])
    del reader  # flushes the memory map
    r = run("-m", str(path), "--ids", "hi")
    assert r.returncode == 0, r.stderr
    ids = parse_ids(r.stdout)
    assert ids[0] == bos and len(ids) >= 2
    r = run("-m", str(path), "--ids", "--no-bos", "hi")
    assert parse_ids(r.stdout) == ids[1:]
    r = run("-m", DEFAULT_MODEL, "--ids", "hi")  # the original does not ask
    assert parse_ids(r.stdout) == ids[1:]


def test_errors():
    assert run("-m", DEFAULT_MODEL).returncode == 2  # no text
    assert run("-m", DEFAULT_MODEL, "--stdin", "x").returncode == 2
    assert run("--bogus", "x").returncode == 2
    r = run("-m", "/nonexistent.gguf", "x")
    assert r.returncode == 1 and r.stderr
