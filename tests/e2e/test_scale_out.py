"""Several nucleus replicas behind sglang-router (pip: sglang-router), on
loopback: the router finds each replica's model and limits
(/server_info, /model_info), cache_aware routing finds the replicas' prefix
caches (summed usage.prompt_tokens_details.cached_tokens at least twice
round_robin's on the same load), greedy answers are those of a single
server, a replica SIGKILLed mid-load costs no client a hang (non-streaming
requests fail over through the router's retries; a stream already under
way ends in a clean error) and rejoins once restarted, and a replica
draining on SIGTERM gets no new work.

Replicas run with one thread each and a small KV pool (--kv-tokens), so a
replica holds the prefixes of about two conversations: cache_aware keeps
each conversation on one replica, round_robin spreads every conversation
over all three, which then evict each other's prefixes."""

import concurrent.futures as cf
import copy
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import openai
import pytest
import requests

from conftest import NucleusServer, free_port, require_binary_and_model

# three replicas behind a router: `make test` runs it, `make check` leaves it out.
pytestmark = pytest.mark.slow

REPLICA_ARGS = ("-t", "1", "-c", "1024", "--kv-tokens", "1024",
                "--drain-timeout", "20")
CONVERSATIONS = 6
TURNS = 8
TOPICS = ["astronomy", "gardening", "railways", "cooking", "sailing",
          "chess"]


def router_command():
    return [sys.executable, "-m", "sglang_router.launch_router"]


class Router:
    """sglang-router in front of the given worker URLs."""

    def __init__(self, workers, policy):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_file = tempfile.NamedTemporaryFile(
            prefix="sglang-router-", suffix=".log", delete=False)
        # The settings scripts/cluster.sh uses: checks every second, a
        # circuit breaker that half-opens after 5 s.
        self.proc = subprocess.Popen(
            router_command() + [
                "--host", "127.0.0.1", "--port", str(self.port),
                "--policy", policy, "--worker-urls", *workers,
                "--prometheus-host", "127.0.0.1",
                "--prometheus-port", str(free_port()),
                "--health-check-interval-secs", "1",
                "--health-failure-threshold", "2",
                "--health-success-threshold", "1",
                "--health-check-timeout-secs", "2",
                "--cb-timeout-duration-secs", "5",
                "--retry-max-retries", "5",
                "--worker-startup-timeout-secs", "60",
                "--worker-startup-check-interval", "1",
                "--log-level", "warn"],
            stdout=self.log_file, stderr=subprocess.STDOUT)
        self.wait_workers(len(workers))

    def workers(self):
        return requests.get(self.url + "/workers", timeout=5).json()["workers"]

    def wait_workers(self, n, healthy_url=None, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("sglang-router exited:\n" + self.log())
            try:
                ws = self.workers()
                ok = [w for w in ws if w["is_healthy"]]
                if len(ok) >= n and (healthy_url is None or any(
                        w["url"] == healthy_url for w in ok)):
                    return ws
            except (requests.RequestException, ValueError, KeyError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"router did not list {n} healthy workers:\n"
                           + self.log())

    def log(self):
        with open(self.log_file.name, errors="replace") as f:
            return f.read()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def cluster():
    """Starts replicas and routers; stops what it started at the end."""
    require_binary_and_model()
    try:
        import sglang_router  # noqa: F401
    except ImportError:
        pytest.fail("sglang-router is not installed "
                    "(pip install -r requirements-test.txt)")
    started = {"servers": [], "routers": []}

    class Cluster:
        def replicas(self, n, *extra):
            with cf.ThreadPoolExecutor(n) as ex:
                servers = list(ex.map(
                    lambda _: NucleusServer(*REPLICA_ARGS, *extra), range(n)))
            started["servers"].extend(servers)
            return servers

        def restart(self, srv):
            """srv again, with the same arguments (its port included)."""
            again = copy.copy(srv)
            again.log_file = tempfile.NamedTemporaryFile(
                prefix="nucleus-serve-", suffix=".log", delete=False)
            again.proc = subprocess.Popen(srv.args, stdout=again.log_file,
                                          stderr=subprocess.STDOUT)
            again._wait_ready(120)
            started["servers"].append(again)
            return again

        def router(self, servers, policy):
            r = Router([s.url for s in servers], policy)
            started["routers"].append(r)
            return r

    yield Cluster()
    for r in started["routers"]:
        r.stop()
    for s in started["servers"]:
        if s.proc.poll() is None:
            s.stop(timeout=30)


def system_prompt(c):
    topic = TOPICS[c]
    rules = " ".join(
        f"Rule {i} of the {topic} desk: answer questions about {topic} "
        f"briefly, name one fact about {topic} you are sure of, and never "
        f"change the subject away from {topic} number {i}." for i in range(6))
    return f"You are assistant {c}, the {topic} expert. {rules}"


def run_conversations(base_url):
    """6 conversations of 8 turns, each turn carrying the whole history;
    the 6 run side by side. Returns {(c, t): (text, cached_tokens)}."""
    client = openai.OpenAI(base_url=base_url, api_key="none", timeout=120,
                           max_retries=0)

    def conversation(c):
        messages = [{"role": "system", "content": system_prompt(c)}]
        out = {}
        for t in range(TURNS):
            messages.append({"role": "user",
                             "content": f"Question {t}: tell me about "
                                        f"{TOPICS[c]}, part {t}."})
            r = client.chat.completions.create(
                model="nucleus", messages=messages, max_tokens=4,
                temperature=0)
            text = r.choices[0].message.content
            details = r.usage.prompt_tokens_details
            assert details is not None and details.cached_tokens is not None, (
                "usage.prompt_tokens_details.cached_tokens is missing")
            out[(c, t)] = (text, details.cached_tokens)
            messages.append({"role": "assistant", "content": text})
        return out

    results = {}
    with cf.ThreadPoolExecutor(CONVERSATIONS) as ex:
        for part in ex.map(conversation, range(CONVERSATIONS)):
            results.update(part)
    return results


def test_router_reads_model_and_limits(cluster):
    servers = cluster.replicas(2)
    router = cluster.router(servers, "round_robin")
    info = requests.get(servers[0].url + "/server_info", timeout=5).json()
    model = info["served_model_name"]
    assert model == os.path.basename(servers[0].args[3])
    assert info["context_length"] == 1024
    assert info["max_total_tokens"] == 1024
    assert info["page_size"] == 16 and info["dp_size"] == 1
    assert requests.get(servers[0].url + "/get_server_info",
                        timeout=5).json()["model"] == model
    minfo = requests.get(servers[0].url + "/model_info", timeout=5).json()
    assert minfo["model_type"] == "llama" and minfo["is_generation"] is True
    assert minfo["architectures"] == ["LlamaForCausalLM"]
    load = requests.get(servers[0].url + "/get_load", timeout=5).json()
    assert load == [{"dp_rank": 0, "num_reqs": 0, "num_waiting_reqs": 0,
                     "num_tokens": 0}]
    # The router took the model id and type from them.
    for w in router.workers():
        assert w["model_id"] == model
        assert w["metadata"]["model_type"] == "llama"
    models = requests.get(router.url + "/v1/models", timeout=5).json()
    assert [m["id"] for m in models["data"]] == [model]


def test_cache_aware_finds_prefix_caches_and_answers_match(cluster):
    single = cluster.replicas(1)[0]
    reference = run_conversations(single.base_url)
    single.stop()
    totals = {}
    for policy in ("cache_aware", "round_robin"):
        servers = cluster.replicas(3)
        router = cluster.router(servers, policy)
        got = run_conversations(router.url + "/v1")
        assert len(got) == CONVERSATIONS * TURNS
        mismatched = [k for k in reference if got[k][0] != reference[k][0]]
        assert not mismatched, (
            f"{policy}: greedy answers differ from a single server's at "
            f"{mismatched[:5]}: {[(got[k][0], reference[k][0]) for k in mismatched[:3]]}")
        totals[policy] = sum(v[1] for v in got.values())
        router.stop()
        for s in servers:
            assert s.stop() == 0
    print(f"cached_tokens: cache_aware {totals['cache_aware']}, "
          f"round_robin {totals['round_robin']}")
    assert totals["cache_aware"] > 0
    # (on the replica that served its previous turn a turn reuses that
    # turn's prompt and reply: docs/forward.md, "Row orders")
    assert totals["cache_aware"] >= 1.5 * totals["round_robin"], totals


def chat_body(i, stream):
    return {"model": "nucleus", "stream": stream, "max_tokens": 24,
            "temperature": 0, "ignore_eos": True,
            "messages": [{"role": "user",
                          "content": f"Tell me a long story, number {i}."}]}


def one_request(url, i, stream):
    """'complete', 'error' (a clean failure: a status or a cut stream,
    raised at once) or 'hang' (the client's bounded timeout ran out)."""
    try:
        r = requests.post(url + "/v1/chat/completions",
                          json=chat_body(i, stream), timeout=(5, 60),
                          stream=stream)
        if r.status_code != 200:
            return "error"
        if not stream:
            c = r.json()["choices"][0]
            return "complete" if c["finish_reason"] == "length" else "error"
        finished = done = False
        for line in r.iter_lines():
            if line.startswith(b"data: [DONE]"):
                done = True
            elif b'"finish_reason":"length"' in line:
                finished = True
            elif b'"error"' in line:
                return "error"
        return "complete" if finished and done else "error"
    except requests.Timeout:
        return "hang"
    except requests.RequestException:
        return "error"


def served_lines_in(log):
    return len(re.findall(r"^nucleus: \S+ (?:sync|stream) ", log, re.M))


def served_lines(server):
    return served_lines_in(server.log())


def test_killed_replica_fails_over_and_rejoins(cluster):
    servers = cluster.replicas(3)
    router = cluster.router(servers, "round_robin")
    victim = servers[1]
    n = 18
    with cf.ThreadPoolExecutor(n) as ex:
        futs = {ex.submit(one_request, router.url, i, i % 2 == 1): i % 2 == 1
                for i in range(n)}
        # Kill the replica once it is generating.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = requests.get(victim.url + "/metrics", timeout=5).text
            if re.search(r"^nucleus_generation_tokens_total [1-9]", m, re.M):
                break
            time.sleep(0.05)
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        outcomes = [(futs[f], f.result()) for f in futs]
    counts = {k: sum(1 for _, o in outcomes if o == k)
              for k in ("complete", "error", "hang")}
    print(f"kill test: {counts} of {n}")
    assert counts["hang"] == 0, outcomes
    assert counts["complete"] + counts["error"] == n
    # Nothing had been sent back for a non-streaming request: the router
    # retried every one the dead replica held on another replica.
    assert all(o == "complete" for stream, o in outcomes if not stream), \
        outcomes
    # Restarted on its port, it rejoins and is given work again.
    again = cluster.restart(victim)
    router.wait_workers(3, healthy_url=again.url, timeout=60)
    deadline = time.monotonic() + 60
    while served_lines(again) == 0 and time.monotonic() < deadline:
        assert one_request(router.url, 99, False) == "complete"
    assert served_lines(again) > 0, "the restarted replica got no work"


def test_draining_replica_gets_no_new_work(cluster):
    servers = cluster.replicas(3)
    router = cluster.router(servers, "round_robin")
    victim = servers[0]
    session = requests.Session()
    assert session.get(victim.url + "/health", timeout=5).json() == {
        "status": "ok"}
    with cf.ThreadPoolExecutor(12) as ex:
        first = [ex.submit(one_request, router.url, i, False)
                 for i in range(3)]
        deadline = time.monotonic() + 30
        while not requests.get(victim.url + "/get_load",
                               timeout=5).json()[0]["num_reqs"]:
            assert time.monotonic() < deadline, "no request reached it"
            time.sleep(0.02)
        victim.proc.send_signal(signal.SIGTERM)
        # Its /health says so on a connection it had open, as soon as the
        # signal has been taken (delivery is asynchronous: allow 5 s).
        deadline = time.monotonic() + 5
        while True:
            r = session.get(victim.url + "/health", timeout=5)
            if r.status_code != 200 or time.monotonic() > deadline:
                break
            assert r.json() == {"status": "ok"}
            time.sleep(0.01)
        assert r.status_code == 503 and r.json() == {"status": "draining"}
        later = [ex.submit(one_request, router.url, 10 + i, i % 2 == 1)
                 for i in range(9)]
        assert [f.result() for f in first + later] == ["complete"] * 12
    assert victim.proc.wait(timeout=30) == 0
    log = victim.log()
    drained = re.search(r"draining (\d+) in flight", log)
    assert drained, log
    # It finished what it held and was given nothing after SIGTERM: the
    # requests it logged after the drain began are those it held then.
    held = int(drained.group(1))
    assert held >= 1
    assert served_lines_in(log[drained.end():]) == held, log


def gauge(text, name):
    m = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    assert m, f"{name} missing from /metrics"
    return float(m.group(1))


def test_llmd_metric_names(cluster):
    srv = cluster.replicas(1, "--metrics-names", "llm-d")[0]
    body = {"model": "x", "max_tokens": 2, "temperature": 0,
            "messages": [{"role": "system", "content": system_prompt(0)},
                         {"role": "user", "content": "Hello."}]}
    for _ in range(2):
        r = requests.post(srv.url + "/v1/chat/completions", json=body,
                          timeout=120)
        assert r.status_code == 200
    assert r.json()["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
    text = requests.get(srv.url + "/metrics", timeout=5).text
    assert gauge(text, "vllm:num_requests_waiting") == 0
    assert gauge(text, "vllm:num_requests_running") == 0
    usage = gauge(text, "vllm:kv_cache_usage_perc")
    assert usage == gauge(text, "nucleus_kv_cache_usage_ratio")
    assert 0 <= usage <= 1
    hits = gauge(text, "vllm:prefix_cache_hits_total")
    queries = gauge(text, "vllm:prefix_cache_queries_total")
    assert 0 < hits <= queries
    assert gauge(text, "nucleus_prefix_cache_hit_rate") == \
        pytest.approx(hits / queries)
    assert gauge(text, "vllm:gpu_prefix_cache_hit_rate") == \
        pytest.approx(hits / queries)
    model = os.path.basename(srv.args[3])
    assert (f'vllm:cache_config_info{{model_name="{model}",block_size="16",'
            f'num_gpu_blocks="64"}} 1') in text
    # The default names carry no vllm: series; an unknown set is refused.
    plain = cluster.replicas(1)[0]
    assert "vllm:" not in requests.get(plain.url + "/metrics", timeout=5).text
    bad = subprocess.run([srv.args[0], "serve", "--metrics-names", "vllm"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "--metrics-names" in bad.stderr
