"""Issue 38, the server's rough edges: no OpenAI field that changes the
answer is ignored in silence (§3), tool calls cut by max_tokens leave no
markup in content (§4), a request that cannot fit the KV pool is refused
on arrival, chat_template_kwargs cannot replace the template's own
variables, every request on a kept-alive connection gets the HTTP checks
(§5), max_tokens 0 reads the prompt and finishes `length`, and `nucleus
params -m` reports a model that does not load (§6)."""

import json
import re
import socket
import subprocess
import time

import pytest
import requests

from conftest import DEFAULT_MODEL, NUCLEUS_BIN, ROOT

CHAT = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
        "temperature": 0}
COMPLETION = {"prompt": "Hi", "max_tokens": 2, "temperature": 0}


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "512", "-t", "1")


@pytest.fixture(scope="module")
def strict(start_server):
    return start_server("-c", "512", "-t", "1", "--strict-params")


def post(srv, path, body):
    return requests.post(srv.url + path, json=body, timeout=120)


def error_of(r, status=400):
    assert r.status_code == status, r.text
    return r.json()["error"]


# -------------------------------------------------- §3: request fields


def test_docs_table_is_the_servers():
    table = subprocess.run([NUCLEUS_BIN, "serve", "--request-fields"],
                           capture_output=True, text=True, timeout=60,
                           check=True).stdout
    doc = (ROOT / "docs/SERVER.md").read_text()
    m = re.search(r"<!-- request-fields:begin.*?-->\n(.*?)"
                  r"<!-- request-fields:end -->", doc, re.S)
    assert m, "docs/SERVER.md has no request-fields:begin/end block"
    assert m.group(1) == table, \
        "regenerate the block with `nucleus serve --request-fields`"
    for name in ("audio", "prediction", "speculative", "reasoning_effort",
                 "web_search_options", "store", "metadata", "user"):
        assert f"| `{name}` |" in table, name


@pytest.mark.parametrize("field,value", [
    ("audio", {"voice": "alloy", "format": "wav"}),
    ("reasoning_effort", "low"),
    ("web_search_options", {}),
    ("verbosity", "low"),
    ("functions", [{"name": "f", "parameters": {}}]),
    ("n_predict", 5),
])
def test_output_changing_fields_are_refused_by_name(server, field, value):
    err = error_of(post(server, "/v1/chat/completions",
                        dict(CHAT, **{field: value})))
    assert err["param"] == field and f"'{field}'" in err["message"], err


def test_audio_modality_is_refused_text_is_read(server):
    err = error_of(post(server, "/v1/chat/completions",
                        dict(CHAT, modalities=["text", "audio"])))
    assert err["param"] == "modalities" and "audio" in err["message"]
    r = post(server, "/v1/chat/completions", dict(CHAT, modalities=["text"]))
    assert r.status_code == 200, r.text


def test_harmless_fields_are_ignored(server):
    plain = post(server, "/v1/chat/completions", CHAT).json()
    r = post(server, "/v1/chat/completions",
             dict(CHAT, store=True, metadata={"k": "v"}, user="u1",
                  service_tier="auto", prompt_cache_key="x"))
    assert r.status_code == 200, r.text
    assert (r.json()["choices"][0]["message"]["content"]
            == plain["choices"][0]["message"]["content"])


def test_a_field_of_the_other_route_is_refused(server):
    err = error_of(post(server, "/v1/completions",
                        dict(COMPLETION, messages=[])))
    assert err["param"] == "messages" and "chat" in err["message"]
    err = error_of(post(server, "/v1/chat/completions",
                        dict(CHAT, prompt="x")))
    assert err["param"] == "prompt"


def test_unknown_field_is_ignored_with_a_warning(server):
    r = post(server, "/v1/completions", dict(COMPLETION, frobnicate=3))
    assert r.status_code == 200, r.text
    assert re.search(r"warning: /v1/completions: unknown request field "
                     r"ignored: 'frobnicate'", server.log()), server.log()[-2000:]


def test_unknown_fields_in_one_line_bounded(server):
    body = dict(COMPLETION, **{f"zz{i}": i for i in range(40)})
    assert post(server, "/v1/completions", body).status_code == 200
    line = [ln for ln in server.log().splitlines() if "'zz0'" in ln][-1]
    assert "and 32 more" in line, line


def test_strict_params_refuses_unknown_fields(strict):
    err = error_of(post(strict, "/v1/completions",
                        dict(COMPLETION, frobnicate=3)))
    assert err["param"] == "frobnicate" and "--strict-params" in err["message"]
    assert post(strict, "/v1/completions",
                dict(COMPLETION, user="u")).status_code == 200


def test_strict_params_is_in_help():
    out = subprocess.run([NUCLEUS_BIN, "serve", "--help"], capture_output=True,
                         text=True, timeout=60).stdout
    assert "--strict-params" in out and "--request-fields" in out


# ------------------------------------------ §5: chat_template_kwargs


@pytest.mark.parametrize("key", ["messages", "tools", "add_generation_prompt",
                                 "bos_token", "eos_token"])
def test_template_kwargs_cannot_replace_the_templates_variables(server, key):
    err = error_of(post(server, "/v1/chat/completions",
                        dict(CHAT, chat_template_kwargs={key: []})))
    assert err["param"] == "chat_template_kwargs", err
    assert f"'{key}'" in err["message"], err


def test_template_kwargs_other_keys_still_reach_the_template(server):
    r = post(server, "/v1/chat/completions",
             dict(CHAT, chat_template_kwargs={"enable_thinking": False}))
    assert r.status_code == 200, r.text


# ------------------------------------------------------ §6: max_tokens 0


@pytest.mark.parametrize("path,body", [("/v1/completions", COMPLETION),
                                       ("/v1/chat/completions", CHAT)])
def test_max_tokens_zero_reads_the_prompt_and_finishes_length(server, path,
                                                             body):
    for field in ("max_tokens", "max_completion_tokens"):
        b = dict(body, n=2)
        b.pop("max_tokens")
        b[field] = 0
        r = post(server, path, b)
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["usage"]["completion_tokens"] == 0
        assert out["usage"]["prompt_tokens"] > 0
        assert len(out["choices"]) == 2
        for c in out["choices"]:
            assert c["finish_reason"] == "length"
            text = c["text"] if "text" in c else c["message"]["content"]
            assert not text


def test_max_tokens_zero_streams_a_length_finish(server):
    r = requests.post(server.url + "/v1/completions", timeout=60, stream=True,
                      json=dict(COMPLETION, max_tokens=0, stream=True))
    assert r.status_code == 200
    body = r.text
    assert '"finish_reason":"length"' in body.replace(" ", ""), body
    assert body.rstrip().endswith("data: [DONE]")


def test_max_tokens_zero_with_min_tokens_is_refused(server):
    err = error_of(post(server, "/v1/completions",
                        dict(COMPLETION, max_tokens=0, min_tokens=1)))
    assert "min_tokens" in err["message"]


def test_cli_max_tokens_zero():
    p = subprocess.run([NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, "-p", "Hi",
                        "-n", "0"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "finish: length" in p.stdout + p.stderr
    assert "generation: 0 tokens" in p.stdout + p.stderr


# ------------------------------------- §5: a request that cannot fit


@pytest.fixture(scope="module")
def small_pool(start_server):
    """64 KV blocks of 16 tokens."""
    return start_server("-c", "1024", "--kv-tokens", "1024",
                        "--kv-block-tokens", "16", "-t", "1")


def test_issue_request_is_refused_on_arrival(start_server):
    """n 16 x 1100 tokens on a 16,384-token pool: a 400 at once (it ran 77 s
    before), streamed too, before any chunk."""
    srv = start_server("-c", "2048", "-t", "1")
    body = {"prompt": "Once upon a time", "n": 16, "max_tokens": 1100,
            "ignore_eos": True}
    for stream in (False, True):
        t0 = time.monotonic()
        r = requests.post(srv.url + "/v1/completions", timeout=30,
                          json=dict(body, stream=stream))
        assert time.monotonic() - t0 < 5
        err = error_of(r)
        assert "KV cache" in err["message"] and "16 completions" in err[
            "message"], err
        assert err["code"] == "context_length_exceeded"


PROMPT_32 = [1000] * 32  # two full blocks, shared by the completions


def test_a_request_that_fills_the_pool_exactly_finishes(small_pool):
    # 2 + 2 x (ceil((32 + 497 - 1) / 16) - 2) = 64 blocks: the whole pool
    r = post(small_pool, "/v1/completions",
             {"prompt": PROMPT_32, "n": 2, "max_tokens": 497,
              "ignore_eos": True, "temperature": 0})
    assert r.status_code == 200, r.text
    for c in r.json()["choices"]:
        assert c["finish_reason"] == "length"
    assert r.json()["usage"]["completion_tokens"] == 2 * 497


def test_one_token_more_is_refused(small_pool):
    # 2 + 2 x (ceil(529 / 16) - 2) = 66 blocks > 64
    err = error_of(post(small_pool, "/v1/completions",
                        {"prompt": PROMPT_32, "n": 2, "max_tokens": 498,
                         "ignore_eos": True}))
    assert "66 blocks" in err["message"] and "holds 64" in err["message"], err


def test_a_request_that_may_end_early_is_admitted(small_pool):
    """Without max_tokens and with end tokens live, a completion can end
    anywhere: it is not refused for the context it might fill."""
    r = post(small_pool, "/v1/completions",
             {"prompt": "The capital of France is", "n": 4,
              "temperature": 0, "stop": ["."]})
    assert r.status_code == 200, r.text


# ---------------------------------------------------- §6: nucleus params


def test_params_with_a_missing_model_prints_the_load_error_only(tmp_path):
    p = subprocess.run([NUCLEUS_BIN, "params", "-m", str(tmp_path / "nope")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "cannot open" in p.stderr and "nope" in p.stderr
    assert "| parameter |" not in p.stdout, p.stdout[:200]


# ------------------------------------ §4: tool calls cut by max_tokens

def city_tool(name, what):
    return {"type": "function", "function": {
        "name": name, "description": f"The {what} in a city.",
        "parameters": {"type": "object",
                       "properties": {"city": {"type": "string"}},
                       "required": ["city"], "additionalProperties": False}}}


FORCED = {"messages": [{"role": "user", "content":
                        "What is the weather in Paris, Rome and Oslo?"}],
          "tools": [city_tool("get_weather", "current weather"),
                    city_tool("get_forecast", "forecast")],
          "tool_choice": "required", "parallel_tool_calls": True,
          "temperature": 0}
MARKUP = ("<tool_call", "</tool_call", "{\"name\"")


def check_cut_message(m, finish):
    assert finish == "length"
    assert not any(k in (m.get("content") or "") for k in MARKUP), m
    for call in m.get("tool_calls") or []:
        args = json.loads(call["function"]["arguments"])
        assert isinstance(args, dict) and call["function"]["name"]


def streamed_message(srv, body):
    r = requests.post(srv.url + "/v1/chat/completions", timeout=120,
                      stream=True, json=dict(body, stream=True))
    assert r.status_code == 200, r.text
    content, calls, finish = "", {}, None
    for line in r.iter_lines():
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        ch = json.loads(line[6:])["choices"][0]
        d = ch.get("delta") or {}
        content += d.get("content") or ""
        for c in d.get("tool_calls") or []:
            calls.setdefault(c["index"], c)
        finish = ch.get("finish_reason") or finish
    return {"content": content,
            "tool_calls": [calls[k] for k in sorted(calls)]}, finish


def test_forced_parallel_calls_cut_by_max_tokens(server):
    whole = post(server, "/v1/chat/completions",
                 dict(FORCED, max_tokens=120)).json()
    n_tokens = whole["usage"]["completion_tokens"]
    n_calls = len(whole["choices"][0]["message"]["tool_calls"])
    assert n_calls >= 2 and n_tokens > 8, whole  # parallel calls
    seen_partial = False
    for cut in range(1, n_tokens, 6):
        r = post(server, "/v1/chat/completions", dict(FORCED, max_tokens=cut))
        assert r.status_code == 200, r.text
        ch = r.json()["choices"][0]
        check_cut_message(ch["message"], ch["finish_reason"])
        got = len(ch["message"].get("tool_calls") or [])
        assert got <= n_calls
        seen_partial |= 0 < got < n_calls
        m, finish = streamed_message(server, dict(FORCED, max_tokens=cut))
        check_cut_message(m, finish)
        assert len(m["tool_calls"]) == got, (cut, m, ch)
    assert seen_partial


# ------------- §5: every request on a kept-alive connection is checked

FIRST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
POST_HEAD = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             b"Content-Type: application/json\r\n")
SMUGGLED = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
LATER = {
    "two_content_lengths": POST_HEAD + b"Content-Length: 2\r\n"
    b"Content-Length: 45\r\n\r\n{}" + SMUGGLED,
    "length_and_chunked": POST_HEAD + b"Content-Length: 45\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "xchunked_and_length": POST_HEAD + b"Content-Length: 2\r\n"
    b"Transfer-Encoding: xchunked\r\n\r\n{}",
    "two_hosts": b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Host: example.com\r\n\r\n",
    "many_small_headers": b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    + b"a:\r\n" * 7000 + b"\r\n",
    # libmicrohttpd joined a folded line into the field before: it passed
    "folded_header": b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"X-A: 1\r\n 2\r\n\r\n",
    # chunk framing after the first chunk was libmicrohttpd's (HTML)
    "bad_later_chunk_size": POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    b"2\r\n{}\r\nzz\r\n0\r\n\r\n" + SMUGGLED,
    "chunk_without_crlf": POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    b"1\r\n{XX1\r\n}\r\n0\r\n\r\n" + SMUGGLED,
    "overlong_chunk_size": POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    b"1\r\n{\r\n" + b"0" * 17 + b"1\r\n}\r\n0\r\n\r\n" + SMUGGLED,
    "folded_trailer": POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    b"2\r\n{}\r\n0\r\nX-T: 1\r\n 2\r\n\r\n" + SMUGGLED,
}


def exchange(port, data, wait=5):
    from test_server_guard import raw_exchange
    return raw_exchange(port, data, wait)


def responses(raw):
    from test_server_guard import parse_responses
    return parse_responses(raw)


@pytest.mark.parametrize("case", sorted(LATER))
def test_later_requests_get_the_same_checks(server, case):
    """After a good request on the same connection, a bad head is one JSON
    error and the connection ends: nothing smuggled behind it is served."""
    for data in (LATER[case], FIRST + LATER[case]):
        out = responses(exchange(server.port, data))
        statuses = [s for s, _, _ in out]
        first = 1 if data.startswith(FIRST) else 0
        assert statuses[:first] == [200] * first, (case, statuses)
        assert len(out) == first + 1, (case, statuses, out[-1][2][:300])
        status, headers, body = out[-1]
        assert 400 <= status < 600, (case, status)
        assert headers["content-type"].startswith("application/json"), \
            (case, headers, body[:200])
        assert json.loads(body)["error"]["message"]
    assert requests.get(server.url + "/health", timeout=5).status_code == 200


def test_keep_alive_still_serves_good_requests(server):
    out = responses(exchange(server.port, FIRST * 3))
    assert [s for s, _, _ in out] == [200, 200, 200]


def test_large_answers_pass_the_relay_whole(server):
    """Answers far larger than the relay's buffer (the web page's
    highlight.js, ~800 KiB) arrive whole, twice on one kept-alive
    connection, also to a client that reads slowly."""
    get = b"GET /lib/highlight.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", server.port))
    s.settimeout(20)
    s.sendall(get + get + FIRST)
    raw, t0 = b"", time.monotonic()
    while raw.count(b"HTTP/1.1 ") < 3 or not raw.endswith(b'"ok"}'):
        time.sleep(0.01 if len(raw) < 300000 else 0)  # slowly at first
        b = s.recv(16384)
        if not b:
            break
        raw += b
        assert time.monotonic() - t0 < 60
    s.close()
    out = responses(raw)
    assert [st for st, _, _ in out] == [200, 200, 200]
    assert len(out[0][2]) > 200000
    assert out[0][2] == out[1][2]
    assert len(out[0][2]) == int(out[0][1]["content-length"])


def chunked(body, sizes):
    """body as chunks of the given sizes (the rest in one), well framed."""
    out, i = b"", 0
    for n in sizes + [len(body)]:
        part = body[i:i + n]
        if part:
            out += b"%x;ext=1\r\n" % len(part) + part + b"\r\n"
        i += len(part)
    return out + b"0\r\nX-Trailer: t\r\n\r\n"


def test_well_framed_chunks_on_a_kept_alive_connection(server):
    """Chunked bodies in many chunks (extensions, a trailer), one after
    another and after a plain request, are all served."""
    body = json.dumps({"content": "hello world, chunk by chunk"}).encode()
    post = (b"POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    data = (FIRST + post + chunked(body, [1, 2, 3, 5, 8]) + post
            + chunked(body, [30]) + FIRST)
    out = responses(exchange(server.port, data))
    assert [s for s, _, _ in out] == [200, 200, 200, 200], out
    assert json.loads(out[1][2]) == json.loads(out[2][2])
    assert json.loads(out[1][2])["tokens"]


def test_a_body_cut_by_bad_framing_is_never_handled(server):
    """A whole JSON body in the first chunk, then a malformed chunk: the
    request is refused, never run (no completion is generated)."""
    body = json.dumps({"prompt": "hi", "max_tokens": 1}).encode()
    before = requests.get(server.url + "/metrics", timeout=10).text
    data = (POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
            + b"%x\r\n" % len(body) + body + b"\r\nqq\r\n")
    for first, d in ((0, data), (1, FIRST + data)):
        out = responses(exchange(server.port, d))
        assert [s for s, _, _ in out] == [200] * first + [400], out
        assert "chunk" in json.loads(out[-1][2])["error"]["message"]
    after = requests.get(server.url + "/metrics", timeout=10).text

    def admitted(text):
        return [line for line in text.splitlines()
                if line.startswith("nucleus_prompt_tokens_total")]
    assert admitted(before) == admitted(after) != []


# ------------------------- §6: an option whose value is another option


@pytest.mark.parametrize("args,flag", [
    (["run", "-m", "--temp", "0.5", "-p", "hi"], "-m"),
    (["run", "-p", "hi", "-c", "--temp", "0.5"], "-c"),
    (["run", "-p", "--seed", "3"], "-p"),
    (["serve", "--port", "--host", "127.0.0.1"], "--port"),
])
def test_an_option_without_its_value_is_named(args, flag):
    """The option that looked ahead and found another option is the one
    named, not the word left over after it."""
    p = subprocess.run([NUCLEUS_BIN, *args], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    first = p.stderr.strip().splitlines()[0]
    assert f"{flag} needs a value" in first, first
