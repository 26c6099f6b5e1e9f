"""The prefix cache through the server: usage.prompt_tokens_details.
cached_tokens on both routes and in the final streamed usage, outputs equal
with and without the cache (greedy and seeded sampling, logprobs too),
cache_salt isolation and its 400s, salting by API key, the Prometheus
counters, and --no-prefix-cache. Real binary, real default model."""

import re
import subprocess

import openai
import pytest
import requests
from conftest import DEFAULT_MODEL, NUCLEUS_BIN, require_binary_and_model

# About 150 tokens: several full 16-token KV blocks.
SYSTEM = ("You are a careful assistant for a small bakery. You answer "
          "questions about bread, pastries, opening hours and prices. The "
          "bakery opens at seven in the morning and closes at six in the "
          "evening, every day except Monday. Sourdough costs four euros, "
          "croissants cost one euro twenty, and the apple tart costs three "
          "euros fifty a slice. Keep every answer short, friendly and exact, "
          "and never invent products that are not on this list. ")


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "1024")


@pytest.fixture(scope="module")
def cold_server(start_server):
    return start_server("-c", "1024", "--no-prefix-cache")


@pytest.fixture(scope="module")
def keyed_server(start_server):
    return start_server("-c", "1024", "--prefix-cache-salt-by-key")


def client_for(srv, key="unused"):
    return openai.OpenAI(base_url=srv.base_url, api_key=key, max_retries=0,
                         timeout=120)


def cached(r):
    details = r.usage.prompt_tokens_details
    assert details is not None
    return details.cached_tokens


def metric(srv, name):
    text = requests.get(srv.url + "/metrics", timeout=30).text
    m = re.search(r"^" + name + r" (\d+)$", text, re.M)
    assert m, name
    return int(m.group(1))


def complete(srv, prompt, **kw):
    kw.setdefault("max_tokens", 6)
    kw.setdefault("temperature", 0)
    return client_for(srv).completions.create(model="m", prompt=prompt,
                                              logprobs=2, **kw)


def test_repeated_prefix_hits_and_outputs_match(server):
    prompt = SYSTEM + "Question: when does the bakery open?"
    first = complete(server, prompt)
    again = complete(server, prompt)
    assert cached(first) == 0
    assert 0 < cached(again) < again.usage.prompt_tokens
    assert cached(again) % 16 == 0
    assert again.choices[0].text == first.choices[0].text
    assert (again.choices[0].logprobs.token_logprobs
            == first.choices[0].logprobs.token_logprobs)
    # Same system prompt, another question: the shared blocks hit.
    other = complete(server, SYSTEM + "Question: what does a croissant cost?")
    assert cached(other) > 0


@pytest.mark.parametrize("sampling", [
    {"temperature": 0},
    {"temperature": 0.9, "top_p": 0.95, "seed": 7},
])
def test_equal_with_and_without_cache(server, cold_server, sampling):
    prompt = SYSTEM + f"Question ({sampling['temperature']}): is it open on Monday?"
    warm1 = complete(server, prompt, max_tokens=10, **sampling)
    warm2 = complete(server, prompt, max_tokens=10, **sampling)
    cold = complete(cold_server, prompt, max_tokens=10, **sampling)
    assert cached(warm2) > 0 and cached(cold) == 0
    for r in (warm1, warm2):
        assert r.choices[0].text == cold.choices[0].text
        assert (r.choices[0].logprobs.token_logprobs
                == cold.choices[0].logprobs.token_logprobs)
        assert (r.choices[0].logprobs.top_logprobs
                == cold.choices[0].logprobs.top_logprobs)


def test_chat_route_and_stream_usage(server, cold_server):
    msgs = [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": "How much is the apple tart?"}]
    c = client_for(server)
    first = c.chat.completions.create(model="m", messages=msgs, max_tokens=8,
                                      temperature=0, logprobs=True,
                                      top_logprobs=2)
    second = c.chat.completions.create(model="m", messages=msgs, max_tokens=8,
                                       temperature=0, logprobs=True,
                                       top_logprobs=2)
    cold = client_for(cold_server).chat.completions.create(
        model="m", messages=msgs, max_tokens=8, temperature=0, logprobs=True,
        top_logprobs=2)
    assert cached(second) > 0 and cached(cold) == 0
    assert second.choices[0].message.content == cold.choices[0].message.content
    assert ([t.logprob for t in second.choices[0].logprobs.content]
            == [t.logprob for t in cold.choices[0].logprobs.content])
    stream = c.chat.completions.create(model="m", messages=msgs, max_tokens=8,
                                       temperature=0, stream=True,
                                       stream_options={"include_usage": True})
    chunks = list(stream)
    usage = [ch.usage for ch in chunks if ch.usage is not None]
    assert len(usage) == 1
    assert usage[0].prompt_tokens_details.cached_tokens > 0
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks
                   if ch.choices)
    assert text == first.choices[0].message.content


def test_salt_isolates(server):
    # A prompt no unsalted request sent before (its first block differs).
    prompt = "Tenant test. " + SYSTEM + "Question: which day is it closed?"
    a1 = complete(server, prompt, extra_body={"cache_salt": "tenant-a"})
    a2 = complete(server, prompt, extra_body={"cache_salt": "tenant-a"})
    b1 = complete(server, prompt, extra_body={"cache_salt": "tenant-b"})
    plain = complete(server, prompt)
    assert cached(a1) == 0
    assert cached(a2) > 0
    assert cached(b1) == 0
    assert cached(plain) == 0
    assert a2.choices[0].text == b1.choices[0].text == plain.choices[0].text


@pytest.mark.parametrize("salt", ["x" * 257, 12, ["a"], {"s": 1}])
def test_bad_salt_is_400(server, salt):
    r = requests.post(server.base_url + "/completions", timeout=60,
                      json={"prompt": "hi", "max_tokens": 1,
                            "cache_salt": salt})
    assert r.status_code == 400
    assert "cache_salt" in r.text
    ok = requests.post(server.base_url + "/completions", timeout=60,
                       json={"prompt": "hi", "max_tokens": 1,
                             "cache_salt": "y" * 256})
    assert ok.status_code == 200
    # null is "not given", as for every optional field
    null = requests.post(server.base_url + "/completions", timeout=60,
                         json={"prompt": "hi", "max_tokens": 1,
                               "cache_salt": None})
    assert null.status_code == 200


def test_metrics_move(server):
    queried = metric(server, "nucleus_prefix_cache_queried_tokens_total")
    hits = metric(server, "nucleus_prefix_cache_hit_tokens_total")
    prompt = SYSTEM + "Question: metrics?"
    complete(server, prompt)
    r = complete(server, prompt)
    assert metric(server, "nucleus_prefix_cache_queried_tokens_total") >= (
        queried + 2 * r.usage.prompt_tokens)
    assert metric(server, "nucleus_prefix_cache_hit_tokens_total") >= (
        hits + cached(r))
    assert cached(r) > 0
    assert metric(server, "nucleus_prefix_cache_blocks") > 0
    metric(server, "nucleus_prefix_cache_evictions_total")


def test_no_prefix_cache(cold_server):
    prompt = SYSTEM + "Question: no cache?"
    complete(cold_server, prompt)
    r = complete(cold_server, prompt)
    assert cached(r) == 0
    assert metric(cold_server, "nucleus_prefix_cache_hit_tokens_total") == 0
    assert metric(cold_server, "nucleus_prefix_cache_blocks") == 0


def test_salt_by_key(keyed_server):
    prompt = "Keyed. " + SYSTEM + "Question: keyed?"
    def run(key):
        return client_for(keyed_server, key).completions.create(
            model="m", prompt=prompt, max_tokens=4, temperature=0)
    assert cached(run("key-a")) == 0
    assert cached(run("key-a")) > 0
    assert cached(run("key-b")) == 0
    assert cached(run("key-b")) > 0


def chat_stats(*extra):
    require_binary_and_model()
    p = subprocess.run(
        [NUCLEUS_BIN, "chat", "-m", DEFAULT_MODEL, "--stats", "--temp", "0",
         "-n", "8", "-t", "2", "-s", SYSTEM, *extra],
        input=b"When do you open?\nAnd when do you close?\n",
        capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.decode().splitlines()
             if ln.startswith("prompt: ")]
    assert len(lines) == 2, p.stderr
    return lines


def test_chat_keeps_history_kv_between_turns():
    first, second = chat_stats()
    assert "cached" not in first
    m = re.search(r"prompt: (\d+) tokens \((\d+) cached, (\d+) computed\), "
                  r"([0-9.]+) tok/s", second)
    assert m, second
    assert int(m.group(2)) + int(m.group(3)) == int(m.group(1))
    # The whole first turn, its prompt and its reply (all but the partial
    # last block and the reply's last token, never fed), hits.
    first_prompt = int(re.match(r"prompt: (\d+) tokens", first).group(1))
    first_reply = int(re.search(r"generation: (\d+) tokens", first).group(1))
    assert int(m.group(2)) >= (first_prompt + first_reply - 1) // 16 * 16 > 0
    cold_first, cold_second = chat_stats("--no-prefix-cache")
    assert "cached" not in cold_first and "cached" not in cold_second
