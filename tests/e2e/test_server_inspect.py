"""The sampler inspector over HTTP: "inspect": {"top_n": N} on both routes,
streamed and not. Each token's record comes from the real sampler: its
drawn id is the token, its raw probabilities equal the step's top logprobs,
and each stage's cut is where its setting puts it. Real binary, real model."""

import json
import math

import pytest
import requests


@pytest.fixture(scope="module")
def server(start_server):
    # a fixed verify row cost: drafts whatever the machine's timings
    return start_server("-c", "1024", "--spec-row-cost", "0.01")


CHAT = {"model": "m", "messages": [{"role": "user", "content": "Name a color."}]}


def post(server, path, body, stream=False):
    base = server.url if path == "/sample" else server.base_url
    return requests.post(base + path, json=body, stream=stream,
                         timeout=120)


def check_record(rec, top_n, settings_stages):
    assert [s for s in rec["stages"]] == settings_stages
    cands = rec["candidates"]
    assert top_n <= len(cands) <= top_n + 1
    ids = [c["id"] for c in cands]
    assert rec["draw"]["id"] in ids
    drawn = cands[ids.index(rec["draw"]["id"])]
    assert drawn["removed_by"] is None and drawn["final_prob"] > 0
    assert 0 <= rec["draw"]["uniform"] < 1
    raws = [c["raw_prob"] for c in cands[:top_n]]
    assert raws == sorted(raws, reverse=True)
    total = 0.0
    for c in cands:
        assert set(c["after"]) == set(rec["stages"])
        if c["removed_by"] is not None:
            assert c["final_prob"] == 0
            assert c["after"][c["removed_by"]] == 0
        total += c["final_prob"]
    assert total <= 1 + 1e-5
    check_cdf(rec)
    return cands


def check_cdf(rec):
    """The draw on the cumulative distribution: u fell in the drawn token's
    interval, by the sums the sampler compared (exact doubles in the JSON),
    and the walk lists the kept candidates, each as wide as its final
    probability, no other holding u."""
    d = rec["draw"]
    cands = {c["id"]: c for c in rec["candidates"]}
    if d["method"] == "greedy":
        assert "cdf_lo" not in d and "walk" not in d
        assert cands[d["id"]]["final_prob"] == 1
        return
    assert d["method"] == "inverse_cdf"
    assert d["order"] in ("token_id", "kept_set", "candidates")
    m = d["mass"]
    assert m > 0 and d["target"] == d["uniform"] * m
    if d["clamped"]:
        assert d["sum_hi"] <= d["target"]
    else:
        assert d["sum_lo"] <= d["target"] < d["sum_hi"]
    assert d["cdf_lo"] == d["sum_lo"] / m and d["cdf_hi"] == d["sum_hi"] / m
    # u against the normalised bounds: the same up to the division's rounding
    assert d["cdf_lo"] <= math.nextafter(d["uniform"], 2)
    assert d["uniform"] < math.nextafter(d["cdf_hi"], 2)
    walk = d["walk"]
    ids = [w["id"] for w in walk]
    assert d["id"] in ids
    kept = [c["id"] for c in rec["candidates"]
            if c["removed_by"] is None and c["final_prob"] > 0]
    assert sorted(ids) == sorted(kept)
    if d["order"] == "token_id":
        assert ids == sorted(ids)
    prev = 0.0
    for w in walk:
        assert prev - 1e-12 <= w["lo"] < w["hi"] <= 1 + 1e-9
        prev = w["hi"]
        assert math.isclose(w["hi"] - w["lo"], cands[w["id"]]["final_prob"],
                            rel_tol=1e-4, abs_tol=1e-9)
        if w["id"] == d["id"]:
            assert (w["lo"], w["hi"]) == (d["cdf_lo"], d["cdf_hi"])
        elif not d["clamped"]:
            assert not (w["lo"] + 1e-12 <= d["uniform"] < w["hi"] - 1e-12)


def test_chat_inspect_matches_logprobs(server):
    body = dict(CHAT, max_tokens=6, temperature=0.9, top_k=5, top_p=0.9,
                seed=3, logprobs=True, top_logprobs=5,
                inspect={"top_n": 8})
    r = post(server, "/chat/completions", body)
    assert r.status_code == 200, r.text
    ch = r.json()["choices"][0]
    content = ch["logprobs"]["content"]
    # the end token has no logprobs entry (its text is not output) but its
    # step is inspected too
    n_end = 1 if ch["finish_reason"] == "stop" else 0
    assert len(ch["inspect"]) == len(content) + n_end > 0
    for rec, lp in zip(ch["inspect"], content):
        cands = check_record(rec, 8, ["temperature", "top_k", "top_p"])
        # the same step: the drawn token is the reported one, and the raw
        # probabilities are the raw top logprobs
        assert cands[[c["id"] for c in cands].index(rec["draw"]["id"])][
            "text"] == lp["token"]
        for c, alt in zip(cands[:5], lp["top_logprobs"]):
            assert math.isclose(math.log(c["raw_prob"]), alt["logprob"],
                                abs_tol=1e-3)
        # top-k = 5 cuts the 6th to 8th most likely
        assert all(c["removed_by"] == "top_k" for c in cands[5:8])
        assert rec["draw"]["seed"] == 3


def test_completions_stream_inspect(server):
    body = {"model": "m", "prompt": "The sky is", "max_tokens": 5,
            "temperature": 0, "stream": True, "inspect": {"top_n": 3}}
    r = post(server, "/completions", body, stream=True)
    assert r.status_code == 200
    recs = []
    for line in r.iter_lines():
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        for ch in chunk["choices"]:
            recs += ch.get("inspect", [])
    assert len(recs) >= 1
    for k, rec in enumerate(recs):
        cands = check_record(rec, 3, ["temperature"])
        assert rec["draw"]["step"] == k
        # greedy: the most likely token, all others cut by temperature 0
        assert rec["draw"]["id"] == cands[0]["id"]
        assert cands[0]["final_prob"] == 1
        assert all(c["removed_by"] == "temperature" for c in cands[1:])


def stream_records(server, body):
    r = post(server, "/completions", dict(body, stream=True), stream=True)
    assert r.status_code == 200, r.text
    recs = []
    for line in r.iter_lines():
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            for ch in json.loads(line[6:])["choices"]:
                recs += ch.get("inspect", [])
    return recs


def test_inspect_marks_drafts(server):
    """With n-gram drafts each record says what was drafted at its position
    and whether it was kept (draft id == drawn id); without the draft keys
    the records are those of the run without drafts, draw for draw."""
    body = {"model": "m", "prompt": "Monday, Tuesday, Wednesday. Monday, "
            "Tuesday, Wednesday. Monday, Tuesday,", "max_tokens": 24,
            "temperature": 1.0, "seed": 7, "inspect": {"top_n": 3}}
    plain = stream_records(server, body)
    spec = stream_records(server, dict(body, speculative={"type": "ngram"}))
    assert all("draft" not in rec for rec in plain)
    drafts = [rec["draft"] for rec in spec if "draft" in rec]
    assert drafts and any(d["accepted"] for d in drafts)
    for rec in spec:
        d = rec.pop("draft", None)
        if d:
            assert d["accepted"] == (d["id"] == rec["draw"]["id"])
            assert isinstance(d["text"], str)
    assert spec == plain


def test_same_output_with_inspect(server):
    body = dict(CHAT, max_tokens=8, temperature=1.2, seed=11, min_p=0.05)
    a = post(server, "/chat/completions", body).json()
    b = post(server, "/chat/completions",
             dict(body, inspect={"top_n": 64})).json()
    assert a["choices"][0]["message"] == b["choices"][0]["message"]
    assert "inspect" not in a["choices"][0]
    assert len(b["choices"][0]["inspect"]) == b["usage"]["completion_tokens"]


@pytest.mark.parametrize("settings,order", [
    ({"temperature": 1.0}, "token_id"),
    ({"temperature": 1.3, "top_k": 40}, "kept_set"),
    ({"temperature": 0.8, "top_p": 0.9, "min_p": 0.02}, "kept_set"),
    ({"temperature": 1.0, "typical_p": 0.9}, "kept_set"),
    ({"temperature": 0}, None),
])
@pytest.mark.parametrize("stream", [False, True])
def test_draw_on_the_cdf(server, settings, order, stream):
    recs = []
    for seed in (1, 2, 3):
        body = dict(CHAT, max_tokens=5, seed=seed, stream=stream,
                    inspect={"top_n": 12}, **settings)
        r = post(server, "/chat/completions", body, stream=stream)
        assert r.status_code == 200, r.text
        if not stream:
            recs += r.json()["choices"][0]["inspect"]
            continue
        for line in r.iter_lines():
            if line.startswith(b"data: {"):
                for ch in json.loads(line[6:])["choices"]:
                    recs += ch.get("inspect", [])
    assert len(recs) >= 6
    for rec in recs:
        check_cdf(rec)
        if order is None:
            assert rec["draw"]["method"] == "greedy"
        else:
            assert rec["draw"]["order"] == order
    # u lands in different places: not one fixed interval
    if order is not None:
        assert len({r["draw"]["cdf_lo"] for r in recs}) > 1


@pytest.mark.parametrize("bad", [{"top_n": 0}, {"top_n": 65}, {"top_n": "3"},
                                 {}, {"top_n": 3, "x": 1}, 5, [3]])
def test_inspect_bounds(server, bad):
    r = post(server, "/chat/completions", dict(CHAT, max_tokens=1,
                                                   inspect=bad))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"].startswith("inspect")


def request_record(server, **settings):
    body = dict(CHAT, max_tokens=1, seed=5, inspect={"top_n": 16}, **settings)
    r = post(server, "/chat/completions", body)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["inspect"][0]


def what_if(server, rec, **settings):
    body = {"candidates": [{"id": c["id"], "logit": c["logit"]}
                           for c in rec["candidates"]], **settings}
    r = post(server, "/sample", body)
    assert r.status_code == 200, r.text
    return r.json()


def test_sample_replays_the_step(server):
    settings = dict(temperature=0.8, top_k=6, top_p=0.9)
    rec = request_record(server, **settings)
    out = what_if(server, rec, seed=5, n_draws=1, **settings)
    assert out["stages"] == rec["stages"]
    by_id = {c["id"]: c for c in out["candidates"]}
    kept = [c["id"] for c in rec["candidates"] if c["removed_by"] is None]
    assert out["kept"] == kept
    for c in rec["candidates"]:
        o = by_id[c["id"]]
        assert o["removed_by"] == c["removed_by"]
        assert math.isclose(o["final_prob"], c["final_prob"], rel_tol=1e-4,
                            abs_tol=1e-7)
    # the same generator key (seed, step 0) and the same kept set: the same
    # draw as the request's, on the same interval of the same walk
    assert out["histogram"] == [{"id": rec["draw"]["id"], "count": 1}]
    check_cdf(out)
    assert out["draw"]["uniform"] == rec["draw"]["uniform"]
    assert out["draw"]["order"] == rec["draw"]["order"] == "kept_set"
    assert [w["id"] for w in out["draw"]["walk"]] == [
        w["id"] for w in rec["draw"]["walk"]]
    assert math.isclose(out["draw"]["cdf_lo"], rec["draw"]["cdf_lo"],
                        rel_tol=1e-4, abs_tol=1e-7)
    # untruncated, the row is walked as the candidates were sent
    plain = what_if(server, rec, seed=5, temperature=1.0)
    check_cdf(plain)
    assert plain["draw"]["order"] == "candidates"
    assert [w["id"] for w in plain["draw"]["walk"]] == [
        c["id"] for c in rec["candidates"]]


def test_sample_temperature_changes_the_set(server):
    rec = request_record(server, temperature=1.0, top_p=0.8)
    cold = what_if(server, rec, temperature=0.3, top_p=0.8)
    hot = what_if(server, rec, temperature=3.0, top_p=0.8)
    assert len(cold["kept"]) < len(hot["kept"])
    h = what_if(server, rec, temperature=3.0, top_p=0.8, n_draws=200, seed=1)
    assert sum(b["count"] for b in h["histogram"]) == 200
    assert {b["id"] for b in h["histogram"]} <= set(h["kept"])
    # seeded: the same histogram again
    assert what_if(server, rec, temperature=3.0, top_p=0.8, n_draws=200,
                   seed=1)["histogram"] == h["histogram"]


@pytest.mark.parametrize("body", [
    {},
    {"candidates": []},
    {"candidates": [{"id": 1}]},
    {"candidates": [{"id": 1, "logit": 0}, {"id": 1, "logit": 1}]},
    {"candidates": [{"id": -1, "logit": 0}]},
    {"candidates": [{"id": 1, "logit": 0}], "n_draws": 1001},
    {"candidates": [{"id": 1, "logit": 0}], "temperature": 101},
    {"candidates": [{"id": 1, "logit": 0}], "presence_penalty": 1},
    {"candidates": [{"id": i, "logit": 0} for i in range(65)]},
])
def test_sample_refuses(server, body):
    r = post(server, "/sample", body)
    assert r.status_code == 400, r.text
