"""Validate once per boundary (the house issue, part 3): the model options
come from one library table, so `nucleus run` and `nucleus serve` take the
same flags, answer with the same message and show the library's defaults;
the structured parameters (stop strings, logit bias) have one check each,
so the CLI and the server refuse a bad one with the same message."""

import os
import pathlib
import subprocess

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"


def nucleus(*args):
    return subprocess.run([NUCLEUS_BIN, *args], capture_output=True,
                          timeout=300)


def help_line(text, flag):
    lines = text.splitlines()
    i = next(i for i, x in enumerate(lines) if x.strip().startswith(flag))
    # the line and its wrapped continuation
    return " ".join(x.strip() for x in lines[i:i + 2])


@pytest.mark.parametrize("cmd", ["run", "serve", "chat", "perplexity"])
def test_help_shows_the_library_defaults(cmd):
    p = nucleus(cmd, "--help")
    out = p.stdout.decode() + p.stderr.decode()
    fa = help_line(out, "-fa, --flash-attn WHEN")
    assert "default auto (on)" in fa, fa
    assert "off for now" not in out
    assert "default f16" in help_line(out, "-ctk, --cache-type-k")
    for flag in ("--rope-freq-base", "--rope-scale", "--rope-scaling",
                 "--yarn-orig-ctx", "--load-mode", "-t, --threads"):
        assert flag in out, (cmd, flag)
    if cmd != "perplexity":
        assert "--reference-kernels" in out


@pytest.mark.parametrize("args", [("-fa", "maybe"), ("-ctv", "q9"),
                                  ("--rope-scaling", "ntk"),
                                  ("--rope-freq-base", "-1"),
                                  ("--yarn-orig-ctx", "1.5")])
def test_run_and_serve_refuse_a_bad_option_alike(args):
    run = nucleus("run", "-m", str(MODEL), "-p", "Hi", *args)
    serve = nucleus("serve", "-m", str(MODEL), *args)
    assert run.returncode == 2 and serve.returncode != 0
    msg = run.stderr.decode().strip().removeprefix("error: ")
    assert msg.startswith(args[0] + ": '"), msg
    assert msg in serve.stderr.decode(), (msg, serve.stderr)


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "256", "-t", "1")


def first_logprobs(srv):
    r = requests.post(srv.url + "/v1/completions", timeout=120, json={
        "prompt": "The capital of France is", "max_tokens": 3,
        "temperature": 0, "logprobs": 1})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["logprobs"]["token_logprobs"]


def test_serve_takes_the_rope_overrides(server, start_server):
    base = first_logprobs(server)
    moved = start_server("-c", "256", "-t", "1", "--rope-freq-base", "500")
    assert first_logprobs(moved) != base
    # the file's own scaling type, given explicitly, changes nothing
    same = start_server("-c", "256", "-t", "1", "--rope-scaling", "none")
    assert first_logprobs(same) == pytest.approx(base, abs=1e-4)


def test_serve_takes_reference_kernels(start_server):
    srv = start_server("-c", "256", "-t", "1", "--reference-kernels", "-fa",
                       "off")
    assert "kernels ref, flash attention off" in srv.log()
    props = requests.get(srv.url + "/props", timeout=10).json()
    assert props["kernels"] == "ref", props


@pytest.mark.parametrize("field,value,flag,arg", [
    ("stop", [""], "--stop", ""),
    ("stop", ["x" * 513], "--stop", "x" * 513),
    ("logit_bias", {"5": 500}, "--logit-bias", "5=500"),
    ("logit_bias", {"5": -101}, "--logit-bias", "5=-101"),
    ("logit_bias", {"99999": 1}, "--logit-bias", "99999=1"),
])
def test_cli_and_server_refuse_alike(server, field, value, flag, arg):
    r = requests.post(server.url + "/v1/completions", timeout=60,
                      json={"prompt": "Hi", "max_tokens": 1, field: value})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == field
    msg = r.json()["error"]["message"]
    p = nucleus("run", "-m", str(MODEL), "-p", "Hi", "-n", "1", "-t", "1",
                flag, arg)
    assert p.returncode != 0
    assert msg in p.stderr.decode(), (msg, p.stderr)


def test_too_many_stop_strings_alike(server):
    r = requests.post(server.url + "/v1/completions", timeout=60, json={
        "prompt": "Hi", "max_tokens": 1,
        "stop": [f"s{i}" for i in range(17)]})
    assert r.status_code == 400, r.text
    msg = r.json()["error"]["message"]
    assert msg == "stop: at most 16 stop strings are allowed"
    args = [a for i in range(17) for a in ("--stop", f"s{i}")]
    p = nucleus("run", "-m", str(MODEL), "-p", "Hi", "-n", "1", *args)
    assert p.returncode == 2 and msg in p.stderr.decode(), p.stderr
