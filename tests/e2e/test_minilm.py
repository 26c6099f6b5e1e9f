"""The real all-MiniLM-L6-v2, converted by scripts/convert_hf.py
(scripts/fetch_minilm.sh), embedded by nucleus (`nucleus serve -m` it,
POST /v1/embeddings) and by llama.cpp
(llama-cpp-python, embeddings on, the file's mean pooling) on the texts of
tests/data/embed/texts.jsonl (mixed languages, a word to ~500 tokens;
scripts/gen_embed_texts.py): every text's vector within cosine 0.99999 of
llama.cpp's. nucleus tokenizes itself (its WordPiece, as Hugging Face's);
llama.cpp is given the ids Hugging Face's tokenizer gives (the tokenizers
package), since its own WordPiece differs on some scripts (docs/TEXT.md),
so a tokenization difference fails the comparison too. The first 50 texts in
the fast tier, all 1,000 in the slow one, with flash attention on (nucleus'
default; llama.cpp's too) and off on both sides. Also: the vector of "Hello
world" is sentence-transformers' (its published first values)."""

import json

import numpy as np
import pytest
import requests

from conftest import ROOT, require_binary_and_model

MODEL = ROOT / "models/all-MiniLM-L6-v2.F16.gguf"
TOKENIZER = ROOT / "models/all-MiniLM-L6-v2/tokenizer.json"
TEXTS = ROOT / "tests/data/embed/texts.jsonl"


def texts():
    with open(TEXTS, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module", params=["on", "off"])
def server(request, start_server):
    """nucleus with flash attention on or off (request.param). On, its
    encoder rows take llama.cpp's tiled order (F32 q and accumulators, key
    tiles from the sequence's start), as llama.cpp does for a micro-batch
    of 64 or more rows: before they took the per-row order (q and the
    value accumulator in F16), 0.99996 on the long texts."""
    require_binary_and_model(MODEL)
    srv = start_server("-t", "2", "-fa", request.param, model=str(MODEL))
    srv.flash = request.param == "on"
    return srv


def nucleus_vectors(server, batch, chunk=100):
    out = []
    for i in range(0, len(batch), chunk):
        r = requests.post(server.url + "/v1/embeddings",
                          json={"input": batch[i:i + chunk]}, timeout=600)
        assert r.status_code == 200, r.text[:2000]
        data = r.json()["data"]
        assert [d["index"] for d in data] == list(range(len(data)))
        out += [np.array(d["embedding"], dtype=np.float64) for d in data]
    return out


def llama_vectors(id_lists, flash, max_tokens=4096, max_seqs=64):
    """llama.cpp's pooled vector of each token list, L2-normalised; the
    lists packed into batches of whole sequences (up to max_seqs of them,
    max_tokens tokens), each its own sequence; flash attention on or off."""
    import llama_cpp as L

    L.llama_backend_init()
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(str(MODEL).encode(), mp)
    assert model, "llama.cpp cannot load the converted MiniLM"
    cp = L.llama_context_default_params()
    cp.n_ctx = cp.n_batch = cp.n_ubatch = max_tokens
    cp.n_seq_max = max_seqs
    cp.n_threads = cp.n_threads_batch = 2
    cp.embeddings = True
    cp.flash_attn_type = (L.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash
                          else L.LLAMA_FLASH_ATTN_TYPE_DISABLED)
    ctx = L.llama_init_from_model(model, cp)
    assert ctx
    n_embd = L.llama_model_n_embd(model)
    groups, cur, n = [], [], 0
    for ids in id_lists:
        if cur and (n + len(ids) > max_tokens or len(cur) == max_seqs):
            groups.append(cur)
            cur, n = [], 0
        cur.append(ids)
        n += len(ids)
    groups.append(cur)
    out = []
    for group in groups:
        total = sum(map(len, group))
        batch = L.llama_batch_init(total, 0, 1)
        batch.n_tokens = total
        k = 0
        for s, ids in enumerate(group):
            for i, t in enumerate(ids):
                batch.token[k] = t
                batch.pos[k] = i
                batch.n_seq_id[k] = 1
                batch.seq_id[k][0] = s
                batch.logits[k] = 1
                k += 1
        assert L.llama_encode(ctx, batch) == 0  # an encoder: no decode
        for s in range(len(group)):
            v = np.ctypeslib.as_array(L.llama_get_embeddings_seq(ctx, s), shape=(n_embd,))
            v = v.astype(np.float64)
            out.append(v / np.linalg.norm(v))
        L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return out


def hf_ids(batch):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (requirements-test.txt) is not installed")
    tok = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    tok.no_truncation()
    tok.no_padding()
    return [tok.encode(t).ids for t in batch]


def compare(server, n):
    batch = texts()[:n]
    ours = nucleus_vectors(server, batch)
    theirs = llama_vectors(hf_ids(batch), server.flash)
    assert len(ours) == len(theirs) == n
    cos = [float(a @ b / np.linalg.norm(a)) for a, b in zip(ours, theirs)]
    worst = int(np.argmin(cos))
    print(f"flash {server.flash}, {n} texts: worst cosine {cos[worst]:.9f} (text {worst}), mean {np.mean(cos):.9f}")
    bad = [(i, c) for i, c in enumerate(cos) if c < 0.99999]
    assert not bad, f"texts below cosine 0.99999: {bad[:10]}"


def test_hello_world_is_sentence_transformers_vector(server):
    v = nucleus_vectors(server, ["Hello world"])[0]
    # sentence-transformers' all-MiniLM-L6-v2 encode("Hello world")[:6]
    # (test_convert_hf.py's numpy forward over the checkpoint gives them)
    want = [-0.0344773, 0.0310232, 0.0067350, 0.0261090, -0.0393620, -0.1603028]
    assert np.allclose(v[:6], want, atol=5e-4), v[:6]
    assert abs(np.linalg.norm(v) - 1) < 1e-5


def test_minilm_matches_llama_cpp_50_texts(server):
    compare(server, 50)


@pytest.mark.slow
def test_minilm_matches_llama_cpp_1000_texts(server):
    compare(server, 1000)
