"""Validate once per boundary (the house issue, part 3): the model options
come from one library table, so `nucleus run` and `nucleus serve` take the
same flags, answer with the same message and show the library's defaults;
the engine options likewise (one table: -c/--ctx-size/--ctx, --parallel,
--kv-tokens, ...); the structured parameters (stop strings, logit bias,
stop token ids, the cache salt, n with beam search) have one check each,
and the server reads top_logprobs and inspect.top_n through the contract,
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
    ("logit_bias", {"-1": 1}, "--logit-bias", "-1=1"),
    ("stop_token_ids", [99999], "--stop-token-id", "99999"),
    ("stop_token_ids", [-1], "--stop-token-id", "-1"),
    ("logprobs", 21, "--logprobs", "21"),
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


def test_chat_top_logprobs_is_the_contracts(server):
    r = requests.post(server.url + "/v1/chat/completions", timeout=60, json={
        "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1,
        "logprobs": True, "top_logprobs": 21})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"] == \
        "'top_logprobs' must be an integer in [0, 20], got 21"
    p = nucleus("run", "-m", str(MODEL), "-p", "Hi", "--logprobs", "21")
    assert r.json()["error"]["message"] in p.stderr.decode(), p.stderr


def test_beam_n_alike(server):
    r = requests.post(server.url + "/v1/completions", timeout=60, json={
        "prompt": "Hi", "max_tokens": 1, "temperature": 0,
        "use_beam_search": True, "best_of": 2, "n": 3})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "best_of"
    msg = r.json()["error"]["message"]
    assert msg == ("'n' (3) must not exceed beam_width (2): beam search "
                   "returns the best n of its beams")
    p = nucleus("run", "-m", str(MODEL), "-p", "Hi", "-n", "1", "-t", "1",
                "--beam-width", "2", "--n-completions", "3")
    assert p.returncode != 0 and msg in p.stderr.decode(), p.stderr
    # best_of past the contract's beam_width range: its message
    r = requests.post(server.url + "/v1/completions", timeout=60, json={
        "prompt": "Hi", "max_tokens": 1, "temperature": 0,
        "use_beam_search": True, "best_of": 17})
    assert r.status_code == 400, r.text
    msg = r.json()["error"]["message"]
    assert msg == "'beam_width' must be an integer in [1, 16], got 17"
    p = nucleus("run", "-m", str(MODEL), "-p", "Hi", "--beam-width", "17")
    assert p.returncode == 2 and msg in p.stderr.decode(), p.stderr


def test_cache_salt_and_inspect_messages(server):
    r = requests.post(server.url + "/v1/completions", timeout=60, json={
        "prompt": "Hi", "max_tokens": 1, "cache_salt": "s" * 257})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"] == \
        "cache_salt: 257 bytes; at most 256 are allowed"
    r = requests.post(server.url + "/v1/completions", timeout=60, json={
        "prompt": "Hi", "max_tokens": 1, "inspect": {"top_n": 65}})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "inspect.top_n"
    assert r.json()["error"]["message"] == \
        "'inspect_top_n' must be an integer in [0, 64], got 65"


@pytest.mark.parametrize("cmd", ["run", "serve", "chat"])
def test_help_shows_the_engine_defaults(cmd):
    p = nucleus(cmd, "--help")
    out = p.stdout.decode() + p.stderr.decode()
    ctx = help_line(out, "-c, --ctx-size N")
    assert "(--ctx too)" in ctx and \
        "default 0 (the model's, at most 8192)" in ctx, ctx
    assert "at most 4096" not in out
    assert "default 64" in help_line(out, "-np, --parallel N")
    assert "default 512" in help_line(out, "--batch-tokens N")
    assert "default 256" in help_line(out, "--max-queue N")
    for flag in ("--kv-tokens", "--kv-block-tokens", "--no-prefix-cache",
                 "--swa-full"):
        assert flag in out, (cmd, flag)


@pytest.mark.parametrize("args", [("-c", "-1"), ("--ctx", "abc"),
                                  ("--ctx-size", "1.5"),
                                  ("--parallel", "0"),
                                  ("--batch-tokens", "70000"),
                                  ("--kv-tokens", "-2"),
                                  ("--max-queue", "0")])
def test_run_and_serve_refuse_a_bad_engine_option_alike(args):
    run = nucleus("run", "-m", str(MODEL), "-p", "Hi", *args)
    serve = nucleus("serve", "-m", str(MODEL), *args)
    assert run.returncode == 2 and serve.returncode != 0
    msg = run.stderr.decode().strip().removeprefix("error: ")
    assert msg.startswith(args[0] + ": '"), msg
    assert msg in serve.stderr.decode(), (msg, serve.stderr)


def test_run_and_serve_refuse_a_context_past_training_alike():
    # SmolLM2-135M's training context is 8192
    run = nucleus("run", "-m", str(MODEL), "-p", "Hi", "-t", "1", "-c",
                  "9000")
    serve = nucleus("serve", "-m", str(MODEL), "-t", "1", "--port", "0",
                    "-c", "9000")
    msg = ("'n_ctx' must be an integer in [0, 8192] (the model's training "
           "context), got 9000")
    assert run.returncode != 0 and msg in run.stderr.decode(), run.stderr
    assert serve.returncode != 0 and msg in serve.stderr.decode(), \
        serve.stderr


def test_serve_context_default_is_the_engines(start_server):
    srv = start_server("-t", "1")
    props = requests.get(srv.url + "/props", timeout=10).json()
    assert props["n_ctx"] == 8192, props


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
