"""`echo` on /v1/completions (issue 38): the prompt's text before the
completion and, with `logprobs`, the prompt's tokens with their own
logprobs, as OpenAI's legacy API did (the scoring use: `max_tokens: 0`).
It was refused with a 400 before."""

import json

import pytest
import requests


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "2048", "-t", "2")


PROMPT = "The capital of France is"


def complete(server, **body):
    r = requests.post(server.url + "/v1/completions",
                      json={"prompt": PROMPT, **body}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def test_echo_puts_the_prompt_before_the_text(server):
    plain = complete(server, max_tokens=6, temperature=0)
    echoed = complete(server, max_tokens=6, temperature=0, echo=True)
    text = plain["choices"][0]["text"]
    assert echoed["choices"][0]["text"] == PROMPT + text
    assert echoed["choices"][0]["logprobs"] is None
    assert echoed["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"]
    assert echoed["usage"]["completion_tokens"] == \
        plain["usage"]["completion_tokens"]


def test_echo_of_token_ids_is_their_text(server):
    ids = requests.post(server.url + "/tokenize", json={"content": PROMPT},
                        timeout=30).json()["tokens"]
    out = complete(server, prompt=ids, max_tokens=0, echo=True)
    assert out["choices"][0]["text"] == PROMPT
    assert out["choices"][0]["finish_reason"] == "length"


def test_prompt_logprobs_are_the_ones_generation_reports(server):
    """A prompt token's echoed logprob is bit for bit the logprob a
    completion reports when it samples that token after the same tokens:
    score the greedy completion of PROMPT by echoing prompt + completion."""
    gen = complete(server, max_tokens=8, temperature=0, logprobs=3)
    glp = gen["choices"][0]["logprobs"]
    text = PROMPT + gen["choices"][0]["text"]
    scored = complete(server, prompt=text, max_tokens=0, echo=True,
                      logprobs=3)
    choice = scored["choices"][0]
    assert choice["text"] == text
    lp = choice["logprobs"]
    n = scored["usage"]["prompt_tokens"]
    k = len(glp["tokens"])
    assert len(lp["tokens"]) == n and n > k
    # the first token has no context
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    assert all(isinstance(x, float) and x <= 0
               for x in lp["token_logprobs"][1:])
    # the tokens and offsets index the echoed text
    assert "".join(lp["tokens"]) == text
    assert lp["text_offset"] == [len("".join(lp["tokens"][:i]))
                                 for i in range(n)]
    assert lp["tokens"][n - k:] == glp["tokens"]
    assert lp["token_logprobs"][n - k:] == glp["token_logprobs"]
    assert lp["top_logprobs"][n - k:] == glp["top_logprobs"]
    for i in range(1, n):  # each entry: its token and the 3 best
        top = lp["top_logprobs"][i]
        assert lp["tokens"][i] in top and 3 <= len(top) <= 4
        assert max(top.values()) >= lp["token_logprobs"][i]


def test_echo_with_logprobs_then_the_completion(server):
    out = complete(server, max_tokens=4, temperature=0, echo=True,
                   logprobs=1)
    lp = out["choices"][0]["logprobs"]
    n = out["usage"]["prompt_tokens"]
    assert len(lp["tokens"]) == n + out["usage"]["completion_tokens"]
    assert "".join(lp["tokens"]) == out["choices"][0]["text"]
    assert lp["text_offset"] == sorted(lp["text_offset"])
    assert lp["text_offset"][n] == len(PROMPT)


def test_every_choice_is_echoed(server):
    out = complete(server, max_tokens=4, temperature=1, seed=5, n=2,
                   echo=True)
    assert len(out["choices"]) == 2
    for c in out["choices"]:
        assert c["text"].startswith(PROMPT)


def test_streamed_echo_comes_first(server):
    r = requests.post(server.url + "/v1/completions", json={
        "prompt": PROMPT, "max_tokens": 4, "temperature": 0, "echo": True,
        "logprobs": 1, "stream": True}, stream=True, timeout=120)
    assert r.status_code == 200
    chunks = [json.loads(line[6:]) for line in r.iter_lines()
              if line.startswith(b"data: {")]
    first = chunks[0]["choices"][0]
    assert first["text"] == PROMPT
    assert first["logprobs"]["token_logprobs"][0] is None
    whole = complete(server, max_tokens=4, temperature=0, echo=True,
                     logprobs=1)["choices"][0]
    assert "".join(c["choices"][0]["text"] for c in chunks
                   if c["choices"]) == whole["text"]
    streamed = [t for c in chunks if c["choices"] and c["choices"][0][
        "logprobs"] for t in c["choices"][0]["logprobs"]["token_logprobs"]]
    assert streamed == whole["logprobs"]["token_logprobs"]


def test_chat_echo_is_refused_by_name(server):
    r = requests.post(server.url + "/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "hi"}], "echo": True},
        timeout=30)
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "echo"
    assert "/v1/completions" in r.json()["error"]["message"]
