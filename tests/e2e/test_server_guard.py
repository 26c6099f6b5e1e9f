"""A browser must not be a way in, slow clients cannot lock others out, and
every error has one shape (issue #16, items 5-7). The cross-origin checks
run a real headless Chromium (Debian's chromium + chromium-driver) loading
a page from another origin."""

import concurrent.futures
import http.server
import json
import re
import shutil
import socket
import threading
import time

import pytest
import requests

from conftest import free_port


def metric(server, name):
    text = requests.get(server.url + "/metrics", timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def responses_with_status(server, status):
    text = requests.get(server.url + "/metrics", timeout=10).text
    m = re.search(r'nucleus_requests_total\{status="%d"\} (\S+)' % status,
                  text)
    return float(m.group(1)) if m else 0.0


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "512", "-t", "1")


def test_post_needs_json_content_type(server):
    body = json.dumps({"prompt": "Hi", "max_tokens": 2})
    for ct in [None, "text/plain", "application/x-www-form-urlencoded",
               "multipart/form-data; boundary=x", "application/jsonx"]:
        headers = {"Content-Type": ct} if ct else {}
        s = requests.Session()
        req = requests.Request("POST", server.url + "/v1/completions",
                               data=body, headers=headers).prepare()
        if ct is None:
            req.headers.pop("Content-Type", None)
        r = s.send(req, timeout=30)
        assert r.status_code == 415, (ct, r.text)
        assert "application/json" in r.json()["error"]["message"]
    for ct in ["application/json", "Application/JSON; charset=utf-8"]:
        r = requests.post(server.url + "/v1/completions", data=body,
                          headers={"Content-Type": ct}, timeout=30)
        assert r.status_code == 200, (ct, r.text)


def test_host_header_is_checked(server, start_server):
    body = {"prompt": "Hi", "max_tokens": 1}
    for host in ["evil.example", "evil.example:%d" % server.port,
                 "127.0.0.1.evil.example", "localhost.evil.example"]:
        r = requests.post(server.url + "/v1/completions", json=body,
                          headers={"Host": host}, timeout=30)
        assert r.status_code == 403, (host, r.text)
        r = requests.get(server.url + "/v1/models", headers={"Host": host},
                         timeout=30)
        assert r.status_code == 403
    for host in ["127.0.0.1:%d" % server.port, "localhost:%d" % server.port,
                 "LOCALHOST", "[::1]:%d" % server.port, "10.1.2.3"]:
        r = requests.post(server.url + "/v1/completions", json=body,
                          headers={"Host": host}, timeout=30)
        assert r.status_code == 200, (host, r.text)
    named = start_server("-c", "256", "--allowed-host", "box.internal")
    r = requests.post(named.url + "/v1/completions", json=body,
                      headers={"Host": "box.internal:8080"}, timeout=30)
    assert r.status_code == 200, r.text
    r = requests.post(named.url + "/v1/completions", json=body,
                      headers={"Host": "other.internal"}, timeout=30)
    assert r.status_code == 403


def browser():
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    assert chromium and driver, \
        "headless Chromium is required (scripts/setup.sh installs it)"
    from selenium import webdriver
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage"]:
        opts.add_argument(a)
    return webdriver.Chrome(options=opts,
                            service=webdriver.ChromeService(driver))


class PageServer:
    """Serves pages from another origin (another port) on loopback."""

    def __init__(self, pages):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                page = pages.get(self.path.split("?")[0])
                self.send_response(200 if page else 404)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write((page or "").encode())

            def log_message(self, *a):
                pass

        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port),
                                                     Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.origin = f"http://localhost:{self.port}"

    def close(self):
        self.httpd.shutdown()


ATTACK = """<!doctype html><title>wait</title><script>
const u = "%(url)s/v1/completions";
const body = JSON.stringify({prompt: "Hi", max_tokens: 5});
const out = {};
(async () => {
  try { await fetch(u, {method: "POST", mode: "no-cors", body: body,
                        headers: {"Content-Type": "text/plain"}});
        out.simple = "sent"; } catch (e) { out.simple = "blocked"; }
  try { const r = await fetch(u, {method: "POST", body: body,
          headers: {"Content-Type": "application/json",
                    "X-Stainless-Lang": "js"}});
        out.json = r.status; } catch (e) { out.json = "blocked"; }
  document.title = "done " + JSON.stringify(out);
})();
</script>"""

FORM = """<!doctype html><title>form</title><body>
<form id="f" method="POST" action="%(url)s/v1/completions" enctype="text/plain">
<input name='{"prompt": "Hi", "max_tokens": 5, "x": "' value='"}'></form>
<script>document.getElementById("f").submit();</script></body>"""


def wait_title(d, prefix, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if d.title.startswith(prefix):
            return d.title
        time.sleep(0.1)
    raise AssertionError("page did not finish: " + d.title)


def test_cross_origin_page_cannot_start_a_generation(server):
    pages = PageServer({"/attack": ATTACK % {"url": server.url},
                        "/form": FORM % {"url": server.url}})
    d = browser()
    try:
        before = metric(server, "nucleus_prompt_tokens_total")
        refused = responses_with_status(server, 415)
        d.get(pages.origin + "/attack")
        title = wait_title(d, "done ")
        out = json.loads(title[5:])
        # The simple request reached the server and was refused; the JSON one
        # needed a preflight, which no --cors-origin allows.
        assert out["json"] == "blocked", out
        d.get(pages.origin + "/form")
        deadline = time.monotonic() + 15
        while (responses_with_status(server, 415) < refused + 2 and
               time.monotonic() < deadline):
            time.sleep(0.1)
        assert responses_with_status(server, 415) >= refused + 2
        assert metric(server, "nucleus_prompt_tokens_total") == before
    finally:
        d.quit()
        pages.close()


def test_cors_origin_admits_only_the_named_origin(start_server):
    srv = start_server("-c", "256", "-t", "1", "--cors-origin",
                       "http://localhost:1")
    pages = PageServer({"/attack": ATTACK % {"url": srv.url}})
    d = browser()
    try:
        before = metric(srv, "nucleus_prompt_tokens_total")
        d.get(pages.origin + "/attack")
        out = json.loads(wait_title(d, "done ")[5:])
        assert out["json"] == "blocked", out
        assert metric(srv, "nucleus_prompt_tokens_total") == before
    finally:
        d.quit()
        pages.close()


def test_cors_preflight_admits_the_openai_sdk_headers(start_server):
    port = free_port()
    origin = f"http://localhost:{port}"
    srv = start_server("-c", "256", "-t", "1", "--cors-origin", origin)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write((ATTACK % {"url": srv.url}).encode())

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    d = browser()
    try:
        d.get(origin + "/")
        out = json.loads(wait_title(d, "done ")[5:])
        assert out["json"] == 200, out
    finally:
        d.quit()
        httpd.shutdown()


def trickle(port, n, stop):
    """n sockets sending one header byte every 0.3 s until stop is set."""
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    line = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200

    def feed():
        i = 0
        while not stop.is_set() and i < len(line):
            for s in socks:
                try:
                    s.send(line[i:i + 1])
                except OSError:
                    pass
            i += 1
            time.sleep(0.3)

    threading.Thread(target=feed, daemon=True).start()
    return socks


def health_ok(server, timeout=2):
    try:
        return requests.get(server.url + "/health", timeout=timeout).ok
    except requests.RequestException:
        return False


def test_slow_clients_cannot_lock_everyone_out(start_server):
    srv = start_server("-c", "256", "--max-connections", "10",
                       "--read-timeout", "2", "--timeout", "30")
    stop = threading.Event()
    socks = trickle(srv.port, 10, stop)
    try:
        time.sleep(1.0)
        assert not health_ok(srv, timeout=1)  # all 10 slots are held
        t0 = time.monotonic()
        while not health_ok(srv) and time.monotonic() - t0 < 10:
            time.sleep(0.2)
        took = time.monotonic() - t0
        assert took < 5, f"still locked out after {took:.1f} s"
        # the tricklers were cut off
        for s in socks:
            s.settimeout(2)
            try:
                got = s.recv(100)
                assert got == b"" or got.startswith(b"HTTP/1.1 408 "), got
            except ConnectionResetError:
                pass
    finally:
        stop.set()
        for s in socks:
            s.close()


def test_per_ip_connection_cap(start_server):
    srv = start_server("-c", "256", "--max-connections-per-ip", "3")
    held = [socket.create_connection(("127.0.0.1", srv.port))
            for _ in range(3)]
    try:
        time.sleep(0.3)
        assert not health_ok(srv, timeout=1)
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 5
    while not health_ok(srv) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert health_ok(srv)


def raw_exchange(port, data, wait=3):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(wait)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        pass
    s.close()
    return out


def parse_responses(raw):
    """The HTTP responses in raw: a list of (status, headers, body)."""
    out = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        assert sep, raw
        lines = head.split(b"\r\n")
        m = re.match(rb"HTTP/1\.[01] (\d{3}) ", lines[0])
        assert m, lines[0]
        headers = {}
        for h in lines[1:]:
            k, _, v = h.partition(b":")
            headers[k.strip().lower().decode()] = v.strip().decode()
        n = int(headers.get("content-length", len(rest)))
        out.append((int(m.group(1)), headers, rest[:n]))
        raw = rest[n:]
    return out


MALFORMED = {
    "content_length_abc":
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: abc\r\n\r\n{}",
    "two_content_lengths":
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 2\r\n"
        b"Content-Length: 3\r\n\r\n{}",
    "bad_chunk_size":
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b"\r\nzz\r\n{}\r\n0\r\n\r\n",
    "http_version":
        b"GET /health HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n",
    "garbage_request_line": b"\x01\x02 garbage\r\n\r\n",
    "no_version": b"GET /health\r\n\r\n",
    "huge_header":
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: "
        + b"a" * 100000 + b"\r\n\r\n",
    "space_in_header_name":
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: x\r\n\r\n",
    "folded_header":
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: 1\r\n 2\r\n\r\n",
    "smuggling":
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 2\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "unknown_transfer_encoding":
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n"
        b"\r\n{}",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_http_gets_one_json_error(server, case):
    raw = raw_exchange(server.port, MALFORMED[case])
    if raw == b"":
        pytest.fail(f"{case}: the connection was closed without an answer")
    resps = parse_responses(raw)
    assert len(resps) == 1, (case, raw[:400])
    status, headers, body = resps[0]
    assert 400 <= status < 600, (case, status)
    assert headers.get("content-type", "").startswith("application/json"), \
        (case, raw[:400])
    err = json.loads(body)["error"]
    assert err["message"] and err["type"]
    assert health_ok(server)


def test_log_lines_are_whole_and_errors_say_it_once(start_server):
    srv = start_server("-c", "256", "-t", "1", "--max-queue", "1",
                       "--parallel", "1")
    body = {"prompt": "Once upon a time", "max_tokens": 40, "ignore_eos": True}

    def one(_):
        return requests.post(srv.url + "/v1/completions", json=body,
                             timeout=120)

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        rs = list(ex.map(one, range(8)))
    busy = [r for r in rs if r.status_code == 503]
    assert busy, [r.status_code for r in rs]
    for r in busy:
        msg = r.json()["error"]["message"]
        assert not re.search(r"(\b\w+: )\1", msg), msg
    for c in MALFORMED.values():
        raw_exchange(srv.port, c, wait=1)
    for line in srv.log().splitlines():
        assert line.startswith("nucleus"), repr(line)
        # libmicrohttpd's TCP options on the relay's Unix socket pair
        assert "TCP_NODELAY" not in line and "Failed to push" not in line, \
            line
