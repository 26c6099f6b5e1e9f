"""Speculative decoding through the real binary and the default model: the
CLI's --spec gives the text of a plain run and prints the acceptance; the
server's --spec default, a request's "speculative" and OpenAI's
"prediction" (chat and completions, streamed or not, with n > 1 and
logprobs) give the plain run's text, tokens and logprobs, report
usage.completion_tokens_details.accepted/rejected_prediction_tokens, and
count drafts per drafter on /metrics; bad fields are 400s naming them."""

import concurrent.futures
import pathlib
import re
import subprocess

import openai
import pytest
import requests
from conftest import DEFAULT_MODEL, NUCLEUS_BIN, require_binary_and_model

# A fixed verify row cost: the draft lengths, and so the drafted and kept
# counts asserted here, do not follow the machine's timings (the default
# measures the cost; the texts are the same either way).
ROW_COST = ("--spec-row-cost", "0.01")

REPETITIVE = ("Monday, Tuesday, Wednesday, Thursday, Friday. Monday, Tuesday, "
              "Wednesday, Thursday, Friday. Monday, Tuesday,")


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "1024", *ROW_COST)


@pytest.fixture(scope="module")
def ngram_server(start_server):
    return start_server("-c", "1024", "--spec", "ngram", "--draft-max", "6",
                        *ROW_COST)


def run_cli(*args):
    require_binary_and_model()
    return subprocess.run([NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, *args,
                           *ROW_COST],
                          capture_output=True, text=True, timeout=300)


def test_cli_spec_same_text_and_acceptance():
    plain = run_cli("-p", REPETITIVE, "-n", "40")
    spec = run_cli("-p", REPETITIVE, "-n", "40", "--spec", "ngram")
    assert plain.returncode == 0 and spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout
    m = re.search(r"drafts: (\d+) of (\d+) accepted", spec.stderr)
    assert m and 0 < int(m.group(1)) <= int(m.group(2)), spec.stderr
    assert "drafts:" not in plain.stderr
    pred = run_cli("-p", REPETITIVE, "-n", "40", "--prediction",
                   plain.stdout[len(REPETITIVE):])
    assert pred.returncode == 0 and pred.stdout == plain.stdout
    assert re.search(r"drafts: \d+ of \d+ accepted", pred.stderr)
    bad = run_cli("-p", "hi", "--spec", "ngram", "--draft-max", "0")
    assert bad.returncode != 0
    assert "speculative.draft_max: 0 must be in [1, 64]" in bad.stderr
    bad = run_cli("-p", "hi", "--spec", "eagle")
    assert bad.returncode != 0 and "not a drafter" in bad.stderr
    bad = run_cli("-p", "hi", "--spec", "draft")
    assert bad.returncode != 0 and "no draft model" in bad.stderr
    bad = subprocess.run([NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, "-p", "hi",
                          "--spec-row-cost", "5"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0
    assert "'spec_row_cost' must be a number in [0, 4], got '5'" in bad.stderr


def test_cli_draft_model():
    plain = run_cli("-p", REPETITIVE, "-n", "24")
    spec = run_cli("-p", REPETITIVE, "-n", "24", "--model-draft",
                   DEFAULT_MODEL, "--draft-max", "4")
    assert spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout
    m = re.search(r"drafts: (\d+) of (\d+) accepted", spec.stderr)
    assert m and int(m.group(1)) > 0, spec.stderr
    gemma = str(pathlib.Path(DEFAULT_MODEL).parent /
                "gemma-3-270m-q4_k_m.gguf")
    bad = run_cli("-p", "hi", "--model-draft", gemma)
    assert bad.returncode != 0
    assert "draft model: token 0 is" in bad.stderr
    assert "the vocabularies differ" in bad.stderr
    # --draft-strict: the plain run's draw, sampled too (seeded)
    sampled = ("-p", REPETITIVE, "-n", "24", "--temp", "1", "--seed", "5")
    plain = run_cli(*sampled)
    strict = run_cli(*sampled, "--model-draft", DEFAULT_MODEL,
                     "--draft-strict")
    assert strict.returncode == 0, strict.stderr
    assert strict.stdout == plain.stdout
    assert re.search(r"drafts: \d+ of \d+ accepted", strict.stderr)
    bad = run_cli("-p", "hi", "--spec", "ngram", "--draft-strict")
    assert bad.returncode != 0 and "only with a draft model" in bad.stderr


def post(srv, route, body):
    return requests.post(srv.url + route, json=body, timeout=300)


def completion(srv, **kw):
    body = {"prompt": REPETITIVE, "max_tokens": 40, "temperature": 0,
            "logprobs": 2, **kw}
    r = post(srv, "/v1/completions", body)
    assert r.status_code == 200, r.text
    return r.json()


def same_choices(a, b):
    assert len(a["choices"]) == len(b["choices"])
    for x, y in zip(a["choices"], b["choices"]):
        assert x["text"] == y["text"]
        assert x["finish_reason"] == y["finish_reason"]
        assert x["logprobs"] == y["logprobs"]


def details(resp):
    d = resp["usage"]["completion_tokens_details"]
    return d["accepted_prediction_tokens"], d["rejected_prediction_tokens"]


def test_request_speculative_and_default(server, ngram_server):
    plain = completion(server)
    assert "completion_tokens_details" not in plain["usage"]
    spec = completion(server, speculative={"type": "ngram", "n_max": 4})
    same_choices(plain, spec)
    accepted, rejected = details(spec)
    assert accepted > 0 and rejected >= 0
    # the server's --spec ngram default, and a request that turns it off
    dflt = completion(ngram_server)
    same_choices(plain, dflt)
    assert details(dflt)[0] > 0
    off = completion(ngram_server, speculative=False)
    same_choices(plain, off)
    assert "completion_tokens_details" not in off["usage"]
    # sampled with a seed, n = 3: the same draws
    kw = {"temperature": 1.0, "top_p": 0.95, "seed": 11, "n": 3}
    same_choices(completion(server, **kw), completion(ngram_server, **kw))


def test_prediction_chat_and_stream(server):
    client = openai.OpenAI(base_url=server.base_url, api_key="x",
                           max_retries=0, timeout=300)
    msgs = [{"role": "user", "content": "Repeat exactly: " + REPETITIVE}]
    plain = client.chat.completions.create(model="m", messages=msgs,
                                           max_tokens=40, temperature=0,
                                           logprobs=True, top_logprobs=2)
    text = plain.choices[0].message.content
    pred = client.chat.completions.create(
        model="m", messages=msgs, max_tokens=40, temperature=0, logprobs=True,
        top_logprobs=2, prediction={"type": "content", "content": text})
    assert pred.choices[0].message.content == text
    assert pred.choices[0].logprobs == plain.choices[0].logprobs
    d = pred.usage.completion_tokens_details
    assert d.accepted_prediction_tokens > 0
    assert d.rejected_prediction_tokens >= 0
    # streamed, the prediction as text parts: the same text, never revised
    stream = client.chat.completions.create(
        model="m", messages=msgs, max_tokens=40, temperature=0, stream=True,
        stream_options={"include_usage": True},
        prediction={"type": "content",
                    "content": [{"type": "text", "text": text[:20]},
                                {"type": "text", "text": text[20:]}]})
    pieces, usage = [], None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            if c.delta.content:
                pieces.append(c.delta.content)
    assert "".join(pieces) == text
    assert usage.completion_tokens_details.accepted_prediction_tokens > 0
    # a wrong prediction: the same text, drafts rejected
    wrong = client.chat.completions.create(
        model="m", messages=msgs, max_tokens=40, temperature=0,
        prediction={"type": "content", "content": "Zebra quartz " * 10})
    assert wrong.choices[0].message.content == text
    assert wrong.usage.completion_tokens_details.rejected_prediction_tokens > 0


def test_server_draft_model(start_server, server):
    drafting = start_server("-c", "1024", "--model-draft", DEFAULT_MODEL,
                            "--draft-max", "4", *ROW_COST)
    plain = completion(server, max_tokens=16)
    spec = completion(drafting, max_tokens=16)
    same_choices(plain, spec)
    assert details(spec)[0] > 0
    for strict in (False, True):
        r = completion(drafting, max_tokens=16, temperature=1.0, seed=4,
                       logprobs=None,
                       speculative={"type": "draft", "strict": strict})
        assert r["usage"]["completion_tokens"] == 16
        accepted, rejected = details(r)
        assert accepted + rejected > 0
    r = post(server, "/v1/completions",
             {"prompt": "hi", "max_tokens": 2,
              "speculative": {"type": "draft"}})
    assert r.status_code == 400 and "no draft model" in r.text


def test_beam_search_drafts(server, ngram_server):
    """Beams draft by n-gram (per request, or the server's default) and
    rank the texts the search without drafts ranks."""
    beam = dict(use_beam_search=True, best_of=2, n=2, logprobs=None,
                max_tokens=24)
    plain = completion(server, **beam)
    spec = completion(server, speculative={"type": "ngram"}, **beam)
    default = completion(ngram_server, **beam)
    for r in (spec, default):
        assert [c["text"] for c in r["choices"]] == \
            [c["text"] for c in plain["choices"]]
        assert sum(details(r)) > 0


def test_server_draft_model_batched(start_server):
    """Requests drafting at once share the draft model's forward calls, and
    each gets the text and logprobs it gets alone (seeded, T = 1)."""
    drafting = start_server("-c", "1024", "--model-draft", DEFAULT_MODEL,
                            "--draft-max", "4", *ROW_COST)
    kws = [dict(temperature=1.0, seed=s, max_tokens=24) for s in (1, 2, 3)]
    kws.append(dict(max_tokens=24))
    alone = [completion(drafting, **kw) for kw in kws]
    forwards_alone = draft_forwards(drafting)
    with concurrent.futures.ThreadPoolExecutor(len(kws)) as pool:
        together = list(pool.map(lambda kw: completion(drafting, **kw), kws))
    for a, b in zip(alone, together):
        same_choices(a, b)
    forwards_together = draft_forwards(drafting) - forwards_alone
    assert 0 < forwards_together <= forwards_alone


def draft_forwards(srv):
    text = requests.get(srv.url + "/metrics", timeout=30).text
    m = re.search(r"^nucleus_spec_draft_forward_calls_total (\d+)$", text,
                  re.M)
    assert m, text
    return int(m.group(1))


def test_metrics_count_drafts(server):
    completion(server, speculative={"type": "ngram"})
    text = requests.get(server.url + "/metrics", timeout=30).text
    m = re.search(r'^nucleus_spec_drafted_tokens_total\{drafter="ngram"\} '
                  r'(\d+)$', text, re.M)
    a = re.search(r'^nucleus_spec_accepted_tokens_total\{drafter="ngram"\} '
                  r'(\d+)$', text, re.M)
    assert m and a and int(m.group(1)) >= int(a.group(1)) > 0
    assert re.search(r'^nucleus_spec_accepted_per_step_count \d+$', text, re.M)


@pytest.mark.parametrize("body,param,message", [
    ({"speculative": True}, "speculative", "must be false or an object"),
    ({"speculative": {"type": "eagle"}}, "speculative",
     "'speculative.type' must be"),
    ({"speculative": {"n_max": 99}}, "speculative",
     "speculative.draft_max: 99 must be in [1, 64]"),
    ({"speculative": {"depth": 2}}, "speculative",
     "'speculative.depth' is not a field"),
    ({"prediction": "text"}, "prediction", "'prediction' must be"),
    ({"prediction": {"type": "content", "content": "x"},
      "speculative": False}, "prediction", "drafts by itself"),
    ({"speculative": {"type": "draft"},
      "use_beam_search": True, "best_of": 2, "n": 1}, "speculative",
     "beams draft by 'ngram' or 'prediction'"),
])
def test_bad_fields_are_400s(server, body, param, message):
    r = post(server, "/v1/completions",
             {"prompt": "hi", "max_tokens": 2, **body})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param
    assert message in err["message"]
