"""scripts/convert_hf.py on the real all-MiniLM-L6-v2 checkpoint
(scripts/fetch_minilm.sh): llama.cpp (llama-cpp-python) loads the file it
writes, tokenizes as the Hugging Face tokenizer does and embeds as the
checkpoint's own weights do (a numpy BERT forward pass written from the
math, on the safetensors' F32 weights); a cross-encoder checkpoint with a
classifier converts to a reranker's layout."""

import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, require_model

HF_DIR = ROOT / "models/all-MiniLM-L6-v2"
CONVERT = ROOT / "scripts/convert_hf.py"

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Ünïcödé àccents, CAPITALS and punctuation!?",
    "日本語のテキストと中文字符",
    "naïve café résumé -- 3.14159 e^x",
]


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=np.float32).reshape(info["shape"])
    return out


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):  # the erf GELU of Hugging Face's BERT
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def bert_mean_embedding(W, cfg, ids):
    """BertModel's last hidden states for one sequence, mean-pooled and
    L2-normalised (sentence-transformers' all-MiniLM-L6-v2 pipeline)."""
    eps = cfg["layer_norm_eps"]
    n_head = cfg["num_attention_heads"]
    T = len(ids)
    x = (W["embeddings.word_embeddings.weight"][ids]
         + W["embeddings.position_embeddings.weight"][:T]
         + W["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def lin(name, h):
            return h @ W[p + name + ".weight"].T + W[p + name + ".bias"]

        q, k, v = (lin(f"attention.self.{n}", x) for n in ("query", "key", "value"))
        hd = q.shape[1] // n_head
        heads = []
        for h in range(n_head):
            s = slice(h * hd, (h + 1) * hd)
            sc = q[:, s] @ k[:, s].T / np.sqrt(hd)
            sc = np.exp(sc - sc.max(-1, keepdims=True))
            heads.append((sc / sc.sum(-1, keepdims=True)) @ v[:, s])
        a = lin("attention.output.dense", np.concatenate(heads, 1))
        x = layer_norm(a + x, W[p + "attention.output.LayerNorm.weight"],
                       W[p + "attention.output.LayerNorm.bias"], eps)
        f = lin("output.dense", gelu(lin("intermediate.dense", x)))
        x = layer_norm(f + x, W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    e = x.mean(0)
    return e / np.linalg.norm(e)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    require_model(HF_DIR / "model.safetensors")
    out = tmp_path_factory.mktemp("convert") / "minilm.f16.gguf"
    subprocess.run([sys.executable, str(CONVERT), str(HF_DIR), str(out)], check=True)
    return out


def test_metadata_as_llama_cpp_lays_it_out(converted):
    import gguf

    r = gguf.GGUFReader(str(converted))
    f = {k: v.contents() for k, v in r.fields.items()
         if k not in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type")}
    assert f["general.architecture"] == "bert"
    assert f["bert.block_count"] == 6 and f["bert.embedding_length"] == 384
    assert f["bert.attention.causal"] is False
    assert f["bert.pooling_type"] == 1  # mean, from 1_Pooling/config.json
    assert f["tokenizer.ggml.model"] == "bert"
    assert f["tokenizer.ggml.token_type_count"] == 2
    assert (f["tokenizer.ggml.bos_token_id"], f["tokenizer.ggml.seperator_token_id"],
            f["tokenizer.ggml.unknown_token_id"], f["tokenizer.ggml.padding_token_id"]) == (101, 102, 100, 0)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    assert tokens[101] == "[CLS]" and tokens[7592] == "\u2581hello" and tokens[2015] == "s"  # "##s"
    types = {t.name: t.tensor_type.name for t in r.tensors}
    assert types["token_embd.weight"] == "F16" and types["blk.0.attn_q.weight"] == "F16"
    assert types["position_embd.weight"] == "F32" and types["token_types.weight"] == "F32"
    assert types["blk.5.layer_output_norm.bias"] == "F32"
    assert not any(n.startswith(("pooler", "cls")) for n in types)


def test_llama_cpp_tokenizes_as_hugging_face(converted):
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers (requirements-test.txt) is not installed")
    from llama_cpp import Llama

    hf = tokenizers.Tokenizer.from_file(str(HF_DIR / "tokenizer.json"))
    hf.no_padding()
    hf.no_truncation()
    m = Llama(str(converted), embedding=True, verbose=False, n_ctx=512)
    for text in TEXTS:
        assert m.tokenize(text.encode(), add_bos=True) == hf.encode(text).ids, text


def test_llama_cpp_embeds_as_the_checkpoint(converted):
    from llama_cpp import Llama

    W = read_safetensors(HF_DIR / "model.safetensors")
    cfg = json.loads((HF_DIR / "config.json").read_text())
    m = Llama(str(converted), embedding=True, verbose=False, n_ctx=512)
    for text in TEXTS:
        ids = m.tokenize(text.encode(), add_bos=True)
        ref = bert_mean_embedding(W, cfg, ids)
        got = np.array(m.embed(text, normalize=True))
        cos = float(ref @ got / np.linalg.norm(got))
        # F16 weights against F32 ones, tanh GELU against erf: close, not equal
        assert cos > 0.999, (text, cos)


def test_q8_0_as_llama_cpp_quantizes(tmp_path):
    """--outtype q8_0: the matrices (the token embedding too) as Q8_0, each
    the bytes gguf's quantizer makes of the checkpoint's F32 array (what
    llama.cpp's converter writes), the position and token-type embeddings,
    vectors and norms F32; nucleus embeds the file as llama.cpp does."""
    import gguf

    from conftest import NUCLEUS_BIN, llama_no_repack, require_binary_and_model

    require_binary_and_model(HF_DIR / "model.safetensors")
    out = tmp_path / "minilm.q8_0.gguf"
    subprocess.run([sys.executable, str(CONVERT), str(HF_DIR), str(out), "--outtype", "q8_0"],
                   check=True)
    r = gguf.GGUFReader(str(out))
    assert r.fields["general.file_type"].contents() == gguf.LlamaFileType.MOSTLY_Q8_0
    W = read_safetensors(HF_DIR / "model.safetensors")
    types = {t.name: t.tensor_type.name for t in r.tensors}
    assert types["position_embd.weight"] == "F32" and types["token_types.weight"] == "F32"
    assert types["blk.5.layer_output_norm.bias"] == "F32" and types["blk.0.attn_q.bias"] == "F32"
    q8 = [t for t in r.tensors if t.tensor_type.name == "Q8_0"]
    assert len(q8) == 1 + 6 * 6  # token_embd, and q, k, v, output, up, down a layer
    by_name = {t.name: t for t in r.tensors}
    for hf_name, name in (("embeddings.word_embeddings.weight", "token_embd.weight"),
                          ("encoder.layer.3.intermediate.dense.weight", "blk.3.ffn_up.weight")):
        want = gguf.quants.quantize(W[hf_name], gguf.GGMLQuantizationType.Q8_0)
        assert bytes(by_name[name].data) == want.tobytes(), name
    ours = json.loads(subprocess.run([NUCLEUS_BIN, "embed", "-m", str(out), "-t", "2", "--", *TEXTS],
                                     check=True, capture_output=True, text=True).stdout)["data"]
    # (without repacking: on an AMX CPU llama.cpp's repacked Q8_0 crashed)
    m = llama_no_repack(out, embedding=True, verbose=False, n_ctx=512, n_threads=2)
    for text, d in zip(TEXTS, ours):
        got = np.array(d["embedding"])
        want = np.array(m.embed(text, normalize=True))
        cos = float(got @ want / np.linalg.norm(got) / np.linalg.norm(want))
        # Q8_0 rounds every matmul's input to 8 bits, so a last-bit
        # difference before one flips its steps: llama.cpp's own vectors
        # with flash attention on and off are 0.9995 apart on "Hello
        # world" (F16: 0.9999998), ours and its 0.9998
        assert cos > 0.999, (text, cos)


def test_classifier_checkpoint_becomes_a_reranker(tmp_path):
    """A BertForSequenceClassification checkpoint (random weights, one
    label): its pooler is cls, its classifier cls.output, its pooling rank,
    its label listed; llama.cpp loads it."""
    import gguf

    require_model(HF_DIR / "tokenizer.json")
    d = tmp_path / "ce"
    d.mkdir()
    n_embd, n_ff, n_layer = 32, 64, 2
    cfg = {"architectures": ["BertForSequenceClassification"], "hidden_size": n_embd,
           "intermediate_size": n_ff, "num_hidden_layers": n_layer, "num_attention_heads": 4,
           "max_position_embeddings": 64, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
           "hidden_act": "gelu", "vocab_size": 30522, "id2label": {"0": "relevance"}}
    (d / "config.json").write_text(json.dumps(cfg))
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (d / name).write_bytes((HF_DIR / name).read_bytes())
    rng = np.random.default_rng(5)
    shapes = {"bert.embeddings.word_embeddings.weight": (30522, n_embd),
              "bert.embeddings.position_embeddings.weight": (64, n_embd),
              "bert.embeddings.token_type_embeddings.weight": (2, n_embd),
              "bert.embeddings.LayerNorm.weight": (n_embd,), "bert.embeddings.LayerNorm.bias": (n_embd,),
              "bert.pooler.dense.weight": (n_embd, n_embd), "bert.pooler.dense.bias": (n_embd,),
              "classifier.weight": (1, n_embd), "classifier.bias": (1,)}
    for i in range(n_layer):
        p = f"bert.encoder.layer.{i}."
        for n in ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense"):
            shapes[p + n + ".weight"] = (n_embd, n_embd)
            shapes[p + n + ".bias"] = (n_embd,)
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + n + ".weight"] = (n_embd,)
            shapes[p + n + ".bias"] = (n_embd,)
        shapes[p + "intermediate.dense.weight"] = (n_ff, n_embd)
        shapes[p + "intermediate.dense.bias"] = (n_ff,)
        shapes[p + "output.dense.weight"] = (n_embd, n_ff)
        shapes[p + "output.dense.bias"] = (n_embd,)
    header, blobs, off = {}, [], 0
    for name, shape in shapes.items():
        b = (rng.standard_normal(shape) * 0.05).astype(np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))

    out = tmp_path / "ce.gguf"
    subprocess.run([sys.executable, str(CONVERT), str(d), str(out), "--outtype", "f32"], check=True)
    r = gguf.GGUFReader(str(out))
    names = {t.name for t in r.tensors}
    # classifier(tanh(pooler(CLS))): the pooler is the rank head's cls
    assert {"cls.weight", "cls.bias", "cls.output.weight", "cls.output.bias"} <= names
    assert not any(n.startswith("pooler") for n in names)
    assert r.fields["bert.pooling_type"].contents() == 4  # rank
    assert r.fields["bert.classifier.output_labels"].contents() == ["relevance"]
    from llama_cpp import Llama

    Llama(str(out), embedding=True, verbose=False, n_ctx=64)  # loads


def test_unsupported_class_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"]}))
    r = subprocess.run([sys.executable, str(CONVERT), str(tmp_path), str(tmp_path / "x.gguf")],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "GPT2LMHeadModel is not supported" in r.stderr
