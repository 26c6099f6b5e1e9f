"""The CLI's main jobs on the real default model: `nucleus run` and
`nucleus chat`, their finish lines and their errors."""

import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
MODEL = str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf")


def nucleus(*args, stdin=None, timeout=300):
    return subprocess.run([NUCLEUS_BIN, *args], input=stdin,
                          capture_output=True, timeout=timeout)


def test_run_streams_greedy_and_reports_length():
    p = nucleus("run", "-m", MODEL, "-p", "The capital of France is", "-n",
                "12", "--temp", "0", "-t", "2")
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert out.startswith("The capital of France is")
    assert len(out) > len("The capital of France is") + 5
    err = p.stderr.decode()
    assert "finish: length" in err
    assert "generation: 12 tokens" in err
    assert "tok/s" in err
    # Greedy is deterministic.
    p2 = nucleus("run", "-m", MODEL, "-p", "The capital of France is", "-n",
                 "12", "--temp", "0", "-t", "1")
    assert p2.stdout == p.stdout


def test_run_default_model_and_token_prompt():
    # No -m: the default model.
    p = nucleus("run", "--tokens", "504,3458,314", "-n", "4", "--temp", "0")
    assert p.returncode == 0, p.stderr
    assert "finish: length" in p.stderr.decode()


def test_run_stop_string():
    base = nucleus("run", "-m", MODEL, "-p", "1, 2, 3, 4, 5,", "-n", "16",
                   "--temp", "0").stdout.decode()
    cont = base[len("1, 2, 3, 4, 5,"):]
    stop = cont[4:7]
    p = nucleus("run", "-m", MODEL, "-p", "1, 2, 3, 4, 5,", "-n", "16",
                "--temp", "0", "--stop", stop)
    assert p.returncode == 0
    err = p.stderr.decode()
    assert "finish: stop" in err and stop in err
    out = p.stdout.decode().rstrip("\n")
    assert out == "1, 2, 3, 4, 5," + cont[:cont.index(stop)]


def test_run_seeded_sampling_reproduces():
    args = ("run", "-m", MODEL, "-p", "Once upon a time", "-n", "10",
            "--temp", "0.9", "--top-k", "40", "--top-p", "0.95", "--seed",
            "42")
    a, b = nucleus(*args), nucleus(*args)
    assert a.returncode == 0 and a.stdout == b.stdout
    assert "seed 42" in a.stderr.decode()


def test_run_logprobs_and_n_completions():
    p = nucleus("run", "-m", MODEL, "-p", "Hello", "-n", "3", "--temp", "0",
                "--logprobs", "2")
    assert p.returncode == 0
    assert "logprob" in p.stdout.decode()
    p = nucleus("run", "-m", MODEL, "-p", "Hello", "-n", "3", "--temp",
                "0.8", "--seed", "1", "--n-completions", "2")
    assert p.returncode == 0
    out = p.stdout.decode()
    assert "--- completion 0" in out and "--- completion 1" in out


@pytest.mark.parametrize("args,needle", [
    (("--bogus",), "unknown"),
    (("-n", "abc", "-p", "x"), "-n"),
    (("--temp", "nan", "-p", "x"), "--temp"),
    (("--top-p", "7", "-p", "x"), "top_p"),
    (("-m", "/nonexistent.gguf", "-p", "x"), "nonexistent"),
])
def test_run_bad_flags(args, needle):
    p = nucleus("run", *args)
    assert p.returncode != 0
    assert needle in p.stderr.decode()


def test_run_prompt_longer_than_context():
    p = nucleus("run", "-m", MODEL, "-c", "16", "-p", "word " * 100)
    assert p.returncode != 0
    assert "context" in p.stderr.decode()


def test_chat_session_with_reset():
    p = nucleus("chat", "-m", MODEL, "--temp", "0", "-n", "16", "-s",
                "You are terse.",
                stdin=b"What is 2+2?\n/reset\nName a color.\n/exit\n")
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert len(out.strip()) > 0
    assert "history cleared" in p.stderr.decode()


def test_load_modes_give_the_same_text():
    """--load-mode read (the file read into 2 MiB pages) and mmap (the file
    mapped) run the same bytes: the same greedy text; `nucleus bench` says
    which it used; anything else is refused."""
    outs = {}
    for mode in ("read", "mmap", "auto"):
        p = nucleus("run", "-m", MODEL, "-p", "The capital of France is",
                    "-n", "12", "--temp", "0", "-t", "1", "--load-mode", mode)
        assert p.returncode == 0, p.stderr
        outs[mode] = p.stdout
    assert outs["read"] == outs["mmap"] == outs["auto"]
    for mode in ("read", "mmap"):
        p = nucleus("bench", "-m", MODEL, "-t", "1", "-p", "1", "-g", "0",
                    "-r", "1", "--load-mode", mode)
        assert p.returncode == 0, p.stderr
        m = re.search(r"^weights: (\w+), ([0-9.]+) MiB in 2 MiB pages$",
                      p.stdout.decode(), re.M)
        assert m and m.group(1) == mode, p.stdout
        if mode == "mmap":
            assert float(m.group(2)) == 0.0
    p = nucleus("run", "-m", MODEL, "-p", "x", "-n", "1", "--load-mode",
                "mlock")
    assert p.returncode != 0
    assert ("--load-mode: 'load_mode' must be auto, read or mmap, got "
            "'mlock'") in p.stderr.decode()
