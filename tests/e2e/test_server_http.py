"""nucleus serve: routing, limits, validation and the non-generating
endpoints, checked over plain HTTP against the real binary and model."""

import http.client
import json

import pytest
import requests


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "1024", "--max-body-bytes", "65536")


def post(server, path, body, **kw):
    return requests.post(server.url + path, json=body, timeout=60, **kw)


def assert_error(resp, status, param=None):
    assert resp.status_code == status, resp.text
    err = resp.json()["error"]
    assert set(err) >= {"message", "type", "param", "code"}
    assert err["message"]
    if status == 400:
        assert err["type"] == "invalid_request_error"
    if param is not None:
        assert err["param"] == param, err
    return err


def test_health(server):
    r = requests.get(server.url + "/health", timeout=5)
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}


def test_models_lists_the_loaded_model(server):
    r = requests.get(server.base_url + "/models", timeout=5)
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list"
    assert len(body["data"]) == 1
    model = body["data"][0]
    assert model["object"] == "model"
    assert model["id"].endswith(".gguf")


def test_unknown_route_is_404(server):
    assert_error(requests.get(server.url + "/v1/nope", timeout=5), 404)


def test_wrong_method_is_405(server):
    r = requests.get(server.base_url + "/chat/completions", timeout=5)
    assert_error(r, 405)
    assert r.headers["Allow"] == "POST"


def test_malformed_json_is_400(server):
    r = requests.post(server.base_url + "/chat/completions",
                      data=b'{"messages": [', timeout=5,
                      headers={"Content-Type": "application/json"})
    assert_error(r, 400)


def test_body_not_an_object_is_400(server):
    assert_error(post(server, "/v1/completions", [1, 2, 3]), 400)


CHAT = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}


@pytest.mark.parametrize("field,value", [
    ("temperature", -1), ("temperature", 101), ("temperature", "hot"),
    ("top_p", 0), ("top_p", 1.5), ("top_k", -2), ("top_k", 1.5),
    ("min_p", 2), ("typical_p", 0), ("repetition_penalty", 0),
    ("presence_penalty", 2.5), ("frequency_penalty", -3),
    ("n", 0), ("n", 1000), ("max_tokens", -5),
    ("max_completion_tokens", -2), ("top_logprobs", 21), ("logprobs", 3),
    ("stop", 5), ("stop", [""]), ("stop", ["x"] * 17),
    ("logit_bias", {"abc": 1}), ("logit_bias", {"1": 500}),
    ("logit_bias", {"99999999": 1}), ("logit_bias", []),
    ("seed", "x"), ("stream", "yes"), ("min_tokens", -1),
    ("ignore_eos", 1), ("skip_special_tokens", "no"),
    ("stream_options", 3),
])
def test_chat_bad_parameter_is_400_naming_it(server, field, value):
    body = dict(CHAT, **{field: value})
    err = assert_error(post(server, "/v1/chat/completions", body), 400)
    assert err["param"] == field or (
        field == "stream_options" and err["param"] == "stream_options"), err


@pytest.mark.parametrize("messages", [
    None, [], "hi", [{"content": "no role"}], [{"role": "wizard",
                                                "content": "x"}],
    [{"role": "user", "content": 5}],
    [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
])
def test_chat_bad_messages_is_400(server, messages):
    body = {"max_tokens": 2}
    if messages is not None:
        body["messages"] = messages
    assert_error(post(server, "/v1/chat/completions", body), 400, "messages")


@pytest.mark.parametrize("prompt", [None, 5, "", [], [-1], [10**9],
                                    ["a", "b"], {"x": 1}])
def test_completions_bad_prompt_is_400(server, prompt):
    body = {"max_tokens": 2}
    if prompt is not None:
        body["prompt"] = prompt
    assert_error(post(server, "/v1/completions", body), 400, "prompt")


def test_completions_logprobs_must_be_int(server):
    body = {"prompt": "a", "max_tokens": 1, "logprobs": True}
    assert_error(post(server, "/v1/completions", body), 400, "logprobs")


def test_prompt_longer_than_context_is_400(server):
    body = {"prompt": "hello " * 3000, "max_tokens": 2}
    err = assert_error(post(server, "/v1/completions", body), 400)
    assert err["code"] == "context_length_exceeded"


def test_body_over_limit_is_413_from_content_length(server):
    big = {"prompt": "x" * 70000, "max_tokens": 1}
    assert_error(post(server, "/v1/completions", big), 413)


def test_chunked_body_over_limit_is_413(server):
    def chunks():
        yield b'{"prompt": "'
        for _ in range(40):
            yield b"y" * 4096
        yield b'"}'
    r = requests.post(server.url + "/v1/completions", data=chunks(),
                      timeout=30, headers={"Content-Type": "application/json"})
    assert_error(r, 413)


def test_tokenize_detokenize_round_trip(server):
    r = post(server, "/tokenize", {"content": "Hello world"})
    assert r.status_code == 200, r.text
    tokens = r.json()["tokens"]
    assert tokens and all(isinstance(t, int) for t in tokens)
    r = post(server, "/detokenize", {"tokens": tokens})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == "Hello world"


def test_tokenize_with_pieces(server):
    r = post(server, "/tokenize", {"content": "Hello world",
                                   "with_pieces": True})
    pieces = r.json()["tokens"]
    assert all(set(p) == {"id", "piece"} for p in pieces)
    assert "".join(p["piece"] for p in pieces).replace("\u0120", " ") \
        .endswith("world")


def test_detokenize_bad_ids_is_400(server):
    assert_error(post(server, "/detokenize", {"tokens": [-4]}), 400, "tokens")
    assert_error(post(server, "/detokenize", {"tokens": "x"}), 400, "tokens")


def test_apply_template(server):
    r = post(server, "/apply-template",
             {"messages": [{"role": "user", "content": "What is 2+2?"}]})
    assert r.status_code == 200, r.text
    prompt = r.json()["prompt"]
    assert "What is 2+2?" in prompt


def test_metrics_prometheus_text(server):
    requests.get(server.url + "/health", timeout=5)
    r = requests.get(server.url + "/metrics", timeout=5)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    text = r.text
    for name in ["nucleus_requests_total", "nucleus_prompt_tokens_total",
                 "nucleus_generation_tokens_total", "nucleus_queue_length",
                 "nucleus_kv_blocks_used", "nucleus_kv_blocks_free",
                 "nucleus_time_to_first_token_seconds_bucket",
                 "nucleus_inter_token_latency_seconds_bucket"]:
        assert f"\n{name}" in text, name
    assert 'nucleus_requests_total{status="200"}' in text


def test_slow_headers_time_out_and_server_keeps_serving(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.connect()
    conn.sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    r = requests.get(server.url + "/health", timeout=5)
    assert r.status_code == 200
    conn.close()


@pytest.fixture(scope="module")
def keyed(start_server):
    return start_server("-c", "512", "--api-key", "s3cret-key")


@pytest.mark.parametrize("path,method", [
    ("/v1/models", "GET"), ("/metrics", "GET"), ("/tokenize", "POST"),
    ("/v1/chat/completions", "POST"), ("/v1/completions", "POST"),
    ("/detokenize", "POST"), ("/apply-template", "POST"), ("/nope", "GET")])
def test_api_key_required_except_health(keyed, path, method):
    for headers in [{}, {"Authorization": "Bearer wrong"},
                    {"Authorization": "Bearer s3cret-ke"},
                    {"Authorization": "s3cret-key"}]:
        r = requests.request(method, keyed.url + path, json={}, timeout=5,
                             headers=headers)
        if path == "/nope":
            assert r.status_code in (401, 404)
        else:
            assert_error(r, 401)
            assert r.json()["error"]["type"] == "authentication_error"
    assert requests.get(keyed.url + "/health", timeout=5).status_code == 200


def test_api_key_accepted(keyed):
    ok = {"Authorization": "Bearer s3cret-key"}
    r = requests.get(keyed.base_url + "/models", headers=ok, timeout=5)
    assert r.status_code == 200
    r = requests.post(keyed.url + "/tokenize", json={"content": "hi"},
                      headers={"X-Api-Key": "s3cret-key"}, timeout=5)
    assert r.status_code == 200
    body = json.loads(r.text)
    assert body["tokens"]


@pytest.fixture(scope="module")
def tiny(start_server):
    return start_server("-c", "512", "--parallel", "1", "--max-queue", "1",
                        "--timeout", "1")


def test_full_queue_is_503_with_retry_after(tiny):
    import threading
    results = []

    def one():
        r = requests.post(tiny.url + "/v1/completions", timeout=300, json={
            "prompt": "Count: 1, 2, 3,", "max_tokens": 24, "ignore_eos": True})
        results.append(r)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(r.status_code for r in results)
    assert set(codes) <= {200, 503}, codes
    assert 200 in codes and 503 in codes, codes
    busy = next(r for r in results if r.status_code == 503)
    assert busy.headers["Retry-After"]
    assert busy.json()["error"]["type"] == "server_error"


def test_idle_connection_times_out(tiny):
    import socket
    import time
    s = socket.create_connection(("127.0.0.1", tiny.port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
    s.settimeout(10)
    t0 = time.monotonic()
    data = s.recv(4096)
    took = time.monotonic() - t0
    s.close()
    assert took < 5
    assert data == b"" or data.startswith(b"HTTP/1.1 408")
    assert requests.get(tiny.url + "/health", timeout=5).status_code == 200


def test_stream_waiting_in_queue_outlives_idle_timeout(tiny):
    """--timeout 1: a stream queued behind a longer one waits for its first
    token longer than the idle timeout and must still complete."""
    import threading
    results = {}

    def one(name, max_tokens):
        body = {"prompt": "Count: 1, 2, 3,", "max_tokens": max_tokens,
                "ignore_eos": True, "stream": True}
        with requests.post(tiny.url + "/v1/completions", json=body,
                           stream=True, timeout=300) as r:
            lines = [x for x in r.iter_lines() if x]
        results[name] = (r.status_code, lines[-1] if lines else None)

    a = threading.Thread(target=one, args=("long", 96))
    a.start()
    import time
    time.sleep(0.2)
    b = threading.Thread(target=one, args=("queued", 4))
    b.start()
    a.join()
    b.join()
    assert results["long"] == (200, b"data: [DONE]")
    # --max-queue 1 holds it: it must be served (200), not refused (503).
    assert results["queued"] == (200, b"data: [DONE]"), results


@pytest.mark.parametrize("raw", [
    b"[" * 100000 + b"]" * 100000,
    b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
    b'{"messages": [{"role": "user", "content": "a\\u0000b"}]}',
    b'{"prompt": "x", "max_tokens": 1e400}',
    b'{"prompt": "x", "temperature": NaN}',
    b'{"prompt": "x", "max_tokens": 99999999999999999999999}',
    b'{"prompt": "x", "seed": -1e30}',
    b'{"prompt": "x", "n": 1.5}',
    b"\xff\xfe\x00garbage",
    b"",
    b"null",
    b'{"prompt": "\xff\xfe"}',
])
def test_hostile_bodies_get_4xx(server, raw):
    for path in ["/v1/completions", "/v1/chat/completions", "/tokenize",
                 "/detokenize", "/apply-template"]:
        r = requests.post(server.url + path, data=raw, timeout=30,
                          headers={"Content-Type": "application/json"})
        assert 400 <= r.status_code < 500, (path, r.status_code, r.text)
        assert r.json()["error"]["message"]
    assert requests.get(server.url + "/health", timeout=5).status_code == 200


def _send_junk(port, junk):
    """Sends junk on a fresh connection; returns what the server wrote
    before closing it (b"" when it closed without answering). A reset, a
    failed send or no close within 10 s fails the test."""
    import socket
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(junk)
        s.settimeout(10)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
            if b"\r\n\r\n" in data and data.startswith(b"HTTP/1.1 4"):
                return data  # an error answer; the body may follow


@pytest.mark.parametrize("junk, status", [
    (b"GET / HTTP/9.9\r\n\r\n", 505),
    (b"POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400),
    (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
     b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    (b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\n" + b"X-A: b\r\n" * 5000 + b"\r\n", 431),
])
def test_garbage_http_gets_an_error_status(server, junk, status):
    data = _send_junk(server.port, junk)
    assert data.startswith(b"HTTP/1.1 %d " % status), data[:200]
    assert requests.get(server.url + "/health", timeout=5).status_code == 200


@pytest.mark.parametrize("junk", [b"\x00" * 64 + b"\r\n\r\n",
                                  b"GARBAGE\r\n\r\n"])
def test_unparseable_request_line_gets_one_json_400(tiny, junk):
    """A request line that is not HTTP at all: the gate answers one JSON
    400 and closes, at once."""
    import json
    import time
    import socket
    t0 = time.monotonic()
    data = b""
    with socket.create_connection(("127.0.0.1", tiny.port)) as s:
        s.sendall(junk)
        s.settimeout(10)
        while chunk := s.recv(65536):
            data += chunk
    assert time.monotonic() - t0 < 5
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), data[:200]
    assert b"Content-Type: application/json" in head
    assert head.count(b"HTTP/1.1") == 1
    assert json.loads(body)["error"]["message"]
    assert requests.get(tiny.url + "/health", timeout=5).status_code == 200


def test_no_cors_headers_by_default(server):
    r = requests.get(server.url + "/health", timeout=5,
                     headers={"Origin": "http://evil.example"})
    assert "Access-Control-Allow-Origin" not in r.headers
    r = requests.options(server.url + "/v1/chat/completions", timeout=5)
    assert r.status_code == 405


@pytest.fixture(scope="module")
def cors(start_server):
    return start_server("-c", "512", "--cors-origin", "http://app.example",
                        "--api-key", "k")


def test_cors_preflight_and_headers(cors):
    r = requests.options(cors.url + "/v1/chat/completions", timeout=5,
                         headers={"Origin": "http://app.example",
                                  "Access-Control-Request-Method": "POST",
                                  "Access-Control-Request-Headers":
                                      "authorization, content-type"})
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example"
    assert "POST" in r.headers["Access-Control-Allow-Methods"]
    assert "Authorization" in r.headers["Access-Control-Allow-Headers"]
    r = requests.get(cors.base_url + "/models", timeout=5,
                     headers={"Authorization": "Bearer k"})
    assert r.status_code == 200
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example"
    r = requests.get(cors.base_url + "/models", timeout=5)
    assert r.status_code == 401
    assert r.headers["Access-Control-Allow-Origin"] == "http://app.example"
