"""POST /v1/embeddings and /v1/rerank (issue 44) on a server holding the
chat model and an embedder (--embedding-model), with the official openai
client's embeddings.create; the vectors against llama.cpp's
(llama-cpp-python, embedding=True) on the random-weight EmbeddingGemma file
(gemma-embedding: non-causal, mean pooling, dense projections) of
scripts/make_arch_gguf.py, and the rerank scores of the Qwen3-Reranker file
(qwen3rank) against its golden (tests/data/embed/arch_qwen3rank.txt). The
files: `make arch-models`."""

import base64
import concurrent.futures
import json
import pathlib
import struct
import subprocess

import numpy as np
import openai
import pytest
import requests

from conftest import NUCLEUS_BIN

ROOT = pathlib.Path(__file__).resolve().parents[2]
EMB = ROOT / "build/arch/gemmaemb.gguf"
RANK = ROOT / "build/arch/qwen3rank.gguf"
TEXTS = ["hello world", "The quick brown fox jumps over the lazy dog.",
         "Embeddings map text to vectors.", "日本の首都は東京です。", "42"]
QUERY = "What is the capital of France?"
DOCUMENTS = [
    "Paris is the capital and largest city of France.",
    "The mitochondria is the powerhouse of the cell.",
    "France's capital, Paris, lies on the Seine.",
]


def need(path):
    assert path.is_file(), f"{path} is missing: `make arch-models`"


@pytest.fixture(scope="module")
def server(start_server):
    need(EMB)
    return start_server("-c", "256", "-t", "2", "--embedding-model", str(EMB))


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused")


@pytest.fixture(scope="module")
def llama_vectors():
    import llama_cpp
    llm = llama_cpp.Llama(str(EMB), embedding=True, n_ctx=512, n_batch=512,
                          n_ubatch=512, n_threads=2, verbose=False)
    return [np.array(v) for v in llm.embed(TEXTS)]


def cos(a, b):
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


def test_models_lists_both(server):
    data = requests.get(server.url + "/v1/models", timeout=10).json()["data"]
    ids = [m["id"] for m in data]
    assert ids == ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemmaemb.gguf"]
    assert data[1]["meta"]["pooling"] == "mean"
    assert data[1]["meta"]["n_embd"] == 256
    assert data[0]["meta"]["embedding"] is False


def test_models_retrieve_each_and_404(client):
    """GET /v1/models/{id} (client.models.retrieve) gives each model's own
    entry; an unknown id is OpenAI's 404 (model_not_found)."""
    emb = client.models.retrieve("gemmaemb.gguf")
    assert emb.id == "gemmaemb.gguf" and emb.meta["pooling"] == "mean"
    main = client.models.retrieve("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert main.id == "SmolLM2-135M-Instruct.Q4_1.gguf" and main.meta["embedding"] is False
    with pytest.raises(openai.NotFoundError) as err:
        client.models.retrieve("no-such-model")
    body = err.value.body
    assert body["code"] == "model_not_found" and body["param"] == "model"
    assert "'no-such-model'" in body["message"]


def test_models_retrieve_escaped_ids(start_server, tmp_path):
    """OpenAI's SDK %-escapes the id in GET /v1/models/{id}: an id with a
    space, '?', '#', '%' and a non-ASCII letter is found (a '?' is the id's
    own, not a query string), and "org/name" (sent as org%2Fname) is
    OpenAI's 404 for that id, not a missing route."""
    need(EMB)
    name = "emb what?#100% é.gguf"
    (tmp_path / name).symlink_to(EMB)
    srv = start_server("-c", "256", "--embedding-model", str(tmp_path / name))
    c = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused")
    got = c.models.retrieve(name)
    assert got.id == name and got.meta["pooling"] == "mean"
    with pytest.raises(openai.NotFoundError) as err:
        c.models.retrieve("org/no-such-model")
    body = err.value.body
    assert body["code"] == "model_not_found"
    assert "'org/no-such-model'" in body["message"]


def test_openai_client_matches_llama_cpp(client, llama_vectors):
    # the client asks for base64 and decodes it
    r = client.embeddings.create(model="gemmaemb.gguf", input=TEXTS)
    assert r.model == "gemmaemb.gguf"
    assert [d.index for d in r.data] == list(range(len(TEXTS)))
    for d, ref in zip(r.data, llama_vectors):
        v = np.array(d.embedding)
        assert v.shape == (256,)
        assert abs(np.linalg.norm(v) - 1.0) < 1e-5
        assert cos(v, ref) >= 0.99999
    assert r.usage.prompt_tokens == r.usage.total_tokens > len(TEXTS)


def test_float_and_base64_are_the_same_bits(server):
    body = {"input": TEXTS[:2], "model": "gemmaemb.gguf"}
    fl = requests.post(server.url + "/v1/embeddings", timeout=60,
                       json={**body, "encoding_format": "float"}).json()
    b64 = requests.post(server.url + "/v1/embeddings", timeout=60,
                        json={**body, "encoding_format": "base64"}).json()
    for f, b in zip(fl["data"], b64["data"]):
        raw = base64.b64decode(b["embedding"])
        assert list(struct.unpack(f"<{len(raw) // 4}f", raw)) == \
            [np.float32(x) for x in f["embedding"]]


def test_input_shapes(server):
    url = server.url + "/v1/embeddings"
    one = requests.post(url, json={"input": "hello world"}, timeout=60).json()
    assert len(one["data"]) == 1
    toks = requests.post(server.url + "/tokenize",
                         json={"content": "hello world"}, timeout=10).json()
    # the main model's tokenizer is the same vocabulary here: ids as input
    ids = [t if isinstance(t, int) else t["id"] for t in toks["tokens"]]
    by_ids = requests.post(url, json={"input": ids}, timeout=60).json()
    lists = requests.post(url, json={"input": [ids, ids[:1]]}, timeout=60)
    assert lists.status_code == 200, lists.text
    assert len(lists.json()["data"]) == 2
    assert by_ids["usage"]["prompt_tokens"] == len(ids)
    assert one["usage"]["prompt_tokens"] >= len(ids)


def test_dimensions(client):
    r = client.embeddings.create(model="gemmaemb.gguf", input=TEXTS[:2],
                                 dimensions=64)
    for d in r.data:
        assert len(d.embedding) == 64
        assert abs(np.linalg.norm(d.embedding) - 1.0) < 1e-5


def test_refusals(server, client):
    url = server.url + "/v1/embeddings"
    long_text = "word " * 3000
    r = requests.post(url, json={"input": ["short", long_text]}, timeout=60)
    assert r.status_code == 400
    assert "input 1" in r.json()["error"]["message"]
    r = requests.post(url, json={"input": ["short", long_text],
                                 "truncate": True}, timeout=120)
    assert r.status_code == 200, r.text
    for bad, field in [({"input": []}, "input"),
                       ({"input": [1.5]}, "input"),
                       ({"input": "x", "encoding_format": "hex"},
                        "encoding_format"),
                       ({"input": "x", "dimensions": 999}, "dimensions"),
                       ({"input": "x", "pooling": "mean"}, "pooling")]:
        r = requests.post(url, json=bad, timeout=60)
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["param"] == field, (bad, r.text)
    # the chat model is not an embedding model
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="SmolLM2-135M-Instruct.Q4_1.gguf",
                                 input="x")
    assert "not an embedding model" in str(e.value)


def test_chat_runs_on_the_main_model(server, client):
    r = client.chat.completions.create(
        model="SmolLM2-135M-Instruct.Q4_1.gguf", max_tokens=4,
        messages=[{"role": "user", "content": "Hi"}])
    assert r.choices[0].message.content is not None
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="gemmaemb.gguf", max_tokens=4,
            messages=[{"role": "user", "content": "Hi"}])
    assert "is an embedding model" in str(e.value)


def test_concurrent_requests_same_bits(server):
    url = server.url + "/v1/embeddings"

    def ask(i):
        return requests.post(url, json={"input": TEXTS[i % len(TEXTS)]},
                             timeout=120).json()["data"][0]["embedding"]

    alone = [ask(i) for i in range(len(TEXTS))]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        together = list(pool.map(ask, range(24)))
    for i, v in enumerate(together):
        assert v == alone[i % len(TEXTS)]


def golden_scores():
    lines = (ROOT / "tests/data/embed/arch_qwen3rank.txt").read_text()
    return [float(l.split()[1]) for l in lines.splitlines()
            if l.startswith("vector ")]


@pytest.fixture(scope="module")
def rank_server(start_server):
    need(RANK)
    return start_server("-c", "256", "-t", "2", "--embedding-model", str(RANK))


@pytest.mark.parametrize("path", ["/v1/rerank", "/rerank"])
def test_rerank(rank_server, path):
    r = requests.post(rank_server.url + path, timeout=120, json={
        "query": QUERY, "documents": DOCUMENTS})
    assert r.status_code == 200, r.text
    out = r.json()
    want = golden_scores()
    scores = [x["relevance_score"] for x in out["results"]]
    assert scores == sorted(scores, reverse=True)
    assert sorted(x["index"] for x in out["results"]) == [0, 1, 2]
    for x in out["results"]:
        assert abs(x["relevance_score"] - want[x["index"]]) < 2e-3
        assert x["document"]["text"] == DOCUMENTS[x["index"]]
    assert out["usage"]["prompt_tokens"] > 3 * 60
    r = requests.post(rank_server.url + path, timeout=120, json={
        "query": QUERY, "documents": [{"text": d} for d in DOCUMENTS],
        "top_n": 1, "return_documents": False}).json()
    assert len(r["results"]) == 1 and "document" not in r["results"][0]
    assert r["results"][0]["index"] == out["results"][0]["index"]


def test_rerank_refusals(rank_server, server):
    for body, field in [({"documents": DOCUMENTS}, "query"),
                        ({"query": QUERY, "documents": []}, "documents"),
                        ({"query": QUERY, "documents": [3]}, "documents"),
                        ({"query": QUERY, "documents": DOCUMENTS,
                          "top_n": 0}, "top_n")]:
        r = requests.post(rank_server.url + "/v1/rerank", json=body,
                          timeout=60)
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"]["param"] == field
    # an embedder without a rank head is not a reranker
    r = requests.post(server.url + "/v1/rerank", timeout=60,
                      json={"query": QUERY, "documents": DOCUMENTS})
    assert r.status_code == 400
    assert "not a reranker" in r.json()["error"]["message"]


def test_cli_embed_and_rerank(llama_vectors):
    out = subprocess.run([NUCLEUS_BIN, "embed", "-m", str(EMB), "-t", "2",
                          *TEXTS[:2]], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)["data"]
    for d, ref in zip(data, llama_vectors):
        assert cos(np.array(d["embedding"]), ref) >= 0.99999
    # after "--" a text that starts with "-" is text, not an option
    out = subprocess.run([NUCLEUS_BIN, "embed", "-m", str(EMB), "-t", "2",
                          "--", "-not an option", "--"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["data"]) == 2
    need(RANK)
    out = subprocess.run([NUCLEUS_BIN, "rerank", "-m", str(RANK), "-t", "2",
                          "-q", QUERY, *DOCUMENTS], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)["results"]
    want = golden_scores()
    assert [r["index"] for r in res] == sorted(range(3),
                                               key=lambda i: -want[i])


def test_embedding_model_as_the_main_model(start_server, llama_vectors):
    """A server whose only model is an embedding model serves the
    embeddings itself and refuses generation."""
    need(EMB)
    srv = start_server("-c", "256", "-t", "2", model=str(EMB))
    r = requests.post(srv.url + "/v1/embeddings", timeout=60,
                      json={"input": TEXTS[:2]})
    assert r.status_code == 200, r.text
    assert r.json()["model"] == "gemmaemb.gguf"
    for d, ref in zip(r.json()["data"], llama_vectors):
        assert cos(np.array(d["embedding"]), ref) >= 0.99999
    models = requests.get(srv.url + "/v1/models", timeout=10).json()["data"]
    assert [m["meta"]["embedding"] for m in models] == [True]
    r = requests.post(srv.url + "/v1/chat/completions", timeout=60, json={
        "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
    assert r.status_code == 400
    assert "is an embedding model" in r.json()["error"]["message"]
