"""Shared fixtures for end-to-end tests that drive the real nucleus binary.

Servers: the `start_server` fixture (module scope) starts `nucleus serve` on a
free loopback port with the given extra arguments, waits for GET /health and
stops every server it started when the module ends:

    @pytest.fixture(scope="module")
    def server(start_server):
        return start_server("-c", "1024")

    def test_x(server):
        requests.get(server.url + "/health")
"""

import collections
import os
import pathlib
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
DEFAULT_MODEL = os.environ.get(
    "NUCLEUS_MODEL", str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))


def _record_request_bodies(directory):
    """NUCLEUS_RECORD_BODIES=DIR: every request body a test POSTs (through
    requests or the openai and anthropic clients' httpx) is also written to DIR, one file
    per distinct body, named by its SHA-1: the fuzz seeds of
    fuzz/corpus/request (scripts/gen_request_seeds.py)."""
    import hashlib

    os.makedirs(directory, exist_ok=True)

    def keep(method, body):
        if method != "POST" or not body:
            return
        if isinstance(body, str):
            body = body.encode("utf-8", "surrogatepass")
        if not isinstance(body, bytes):
            return
        name = hashlib.sha1(body).hexdigest()[:16]
        with open(os.path.join(directory, name), "wb") as f:
            f.write(body)

    send = requests.Session.send

    def requests_send(self, request, **kwargs):
        keep(request.method, request.body)
        return send(self, request, **kwargs)

    requests.Session.send = requests_send
    # the openai and anthropic clients' transport: httpx, or its successor
    # httpx2 in the newer clients
    import importlib
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue

        def client_send(self, request, _send=module.Client.send, **kwargs):
            keep(request.method, request.read())
            return _send(self, request, **kwargs)

        module.Client.send = client_send


if os.environ.get("NUCLEUS_RECORD_BODIES"):
    _record_request_bodies(os.environ["NUCLEUS_RECORD_BODIES"])


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NucleusServer:
    """One `nucleus serve` process on a free loopback port."""

    def __init__(self, *args, model=None, env=None, ready_timeout=180):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = self.url + "/v1"
        self.args = [NUCLEUS_BIN, "serve", "-m", model or DEFAULT_MODEL,
                     "--host", "127.0.0.1", "--port", str(self.port), *args]
        self.log_file = tempfile.NamedTemporaryFile(
            prefix="nucleus-serve-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            self.args, stdout=self.log_file, stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})})
        self._wait_ready(ready_timeout)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"nucleus serve exited with {self.proc.returncode}:\n"
                    + self.log())
            try:
                if requests.get(self.url + "/health", timeout=1).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop(signal.SIGKILL)
        raise RuntimeError("nucleus serve did not become ready:\n" + self.log())

    def log(self):
        with open(self.log_file.name, "r", errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Sends sig and returns the exit status (kills after timeout)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def without_model():
    """True when the caller opted out of the model requirement
    (NUCLEUS_TESTS_WITHOUT_MODEL=1, as for the unit tests)."""
    return os.environ.get("NUCLEUS_TESTS_WITHOUT_MODEL") == "1"


def require_model(path=None):
    """A test that needs a model file: missing, it fails, or skips under
    NUCLEUS_TESTS_WITHOUT_MODEL=1 (`make e2e` fetches the models first)."""
    path = str(path or DEFAULT_MODEL)
    if not os.path.exists(path):
        msg = f"model {path} is missing (make model)"
        if without_model():
            pytest.skip(msg + " and NUCLEUS_TESTS_WITHOUT_MODEL=1")
        pytest.fail(msg + "; set NUCLEUS_TESTS_WITHOUT_MODEL=1 to skip")


@pytest.fixture
def model_required():
    """Marks a test as needing the default model (require_model)."""
    require_model()


def require_binary_and_model(model=None):
    if not os.access(NUCLEUS_BIN, os.X_OK):
        pytest.fail(f"{NUCLEUS_BIN} is not built (make)")
    require_model(model)


def llama_no_repack(path, **kw):
    """llama_cpp.Llama(path, **kw) loaded as llama.cpp --no-repack
    (use_extra_bufts false: weights kept in the file's layout), which the
    high-level class does not expose. On a CPU with AMX llama.cpp repacks
    Q4_0/Q4_1/Q8_0 and K-quant weights for its tile unit by default, and
    llama-cpp-python 0.3.36's repacked path crashed (SIGSEGV in decode)
    embedding a BERT Q8_0 file."""
    import llama_cpp
    import llama_cpp.llama as high

    lib = high.llama_cpp
    default = lib.llama_model_default_params

    def no_repack():
        mp = default()
        mp.use_extra_bufts = False
        return mp

    lib.llama_model_default_params = no_repack
    try:
        return llama_cpp.Llama(str(path), **kw)
    finally:
        lib.llama_model_default_params = default


@pytest.fixture(scope="module")
def start_server():
    started = []

    def start(*args, **kwargs):
        require_binary_and_model(kwargs.get("model"))
        srv = NucleusServer(*args, **kwargs)
        started.append(srv)
        return srv

    yield start
    failed = []
    for srv in started:
        if srv.stop() != 0:
            failed.append(f"{' '.join(srv.args)} exited with "
                          f"{srv.proc.returncode}:\n{srv.log()[-4000:]}")
    if failed:
        pytest.fail("a server did not shut down cleanly (exit 0 on "
                    "SIGTERM):\n" + "\n".join(failed))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: long contexts, soaks, several replicas or a "
        "corpus sweep: left out of `make check`, run by `make test`")


# Wall time per test file (setup, call and teardown of its tests: a module's
# server start counts in its first test), printed after pytest's summary so
# that the slow files are visible.
_FILE_SECONDS = collections.defaultdict(float)


def pytest_runtest_logreport(report):
    _FILE_SECONDS[report.nodeid.split("::")[0]] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _FILE_SECONDS:
        return
    terminalreporter.write_line("time per test file, slowest first:")
    for name, secs in sorted(_FILE_SECONDS.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"  {secs:7.1f} s  {name}")
