#!/usr/bin/env python3
"""Converts a Hugging Face BERT-family checkpoint into a GGUF file laid out as
llama.cpp's converter (convert_hf_to_gguf.py) lays it out, so that nucleus
and llama.cpp both load it.

    scripts/convert_hf.py MODEL_DIR OUT.gguf [--outtype f16|f32|q8_0]

MODEL_DIR holds config.json, model.safetensors (or model-*.safetensors
shards), tokenizer.json (or vocab.txt) and, for sentence-transformers
models, modules.json and the pooling module's config.json.

Supported classes (config.json "architectures"): BertModel, BertForMaskedLM
and BertForSequenceClassification (a cross-encoder: its pooler becomes the
rank head's cls, its classifier cls.output, its labels
classifier.output_labels), as general.architecture "bert".

What is written, as llama.cpp's converter writes it:
- hyperparameters {arch}.context_length, embedding_length,
  feed_forward_length, block_count, attention.head_count,
  attention.layer_norm_epsilon, attention.causal = false, pooling_type (from
  the sentence-transformers pooling module: mean 1, cls 2, last 3; a
  classifier's files rank 4);
- the WordPiece vocabulary as tokenizer.ggml.model "bert" in llama.cpp's
  phantom-space form: a word-initial piece "x" becomes "\u2581x", a
  continuation "##x" becomes "x", control tokens stay as they are; token
  types (control for the special tokens, normal otherwise, unused for
  padding rows up to the embedding's vocab size);
  tokenizer.ggml.token_type_count; the special ids (cls, sep, unk, pad,
  mask, bos = cls, eos = sep) and add_bos/add_eos from the tokenizer's
  post-processor (gguf's SpecialVocab); tokenizer.ggml.normalizer.lowercase
  and strip_accents from the BertNormalizer (or tokenizer_config.json);
- the tensors under llama.cpp's names (gguf's tensor name map): the
  pooler and the masked-LM and next-sentence heads are dropped;
  "--outtype f16" (the default) stores matrices as F16 except the position
  and token-type embeddings, vectors and norms always as F32; "--outtype
  q8_0" stores those matrices as Q8_0 (gguf's quantizer, as llama.cpp's
  converter does; F16 where a row is not a whole number of 32-blocks).

One deliberate difference: a classifier's pooler is kept (as cls, which
llama.cpp's graph applies with tanh before cls.output, as Hugging Face
does); llama.cpp's converter drops it.

The safetensors files are read here (a JSON header, then raw little-endian
arrays); no torch or transformers is needed, only gguf and numpy.
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

import gguf

ARCHS = {
    "BertModel": "bert",
    "BertForMaskedLM": "bert",
    "BertForSequenceClassification": "bert",
}
MODEL_ARCH = {"bert": gguf.MODEL_ARCH.BERT}
POOLING = {"mean": 1, "cls": 2, "last": 3, "rank": 4}
SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}
MAX_HEADER = 100 << 20


def fail(msg):
    sys.exit(f"convert_hf: {msg}")


def read_safetensors(path):
    """Yields (name, float array) for each tensor of one safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > MAX_HEADER:
            fail(f"{path}: header of {n} bytes (at most {MAX_HEADER})")
        header = json.loads(f.read(n))
        base = 8 + n
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = info["dtype"]
            if dtype not in SAFETENSORS_DTYPES:
                fail(f"{path}: tensor {name} has dtype {dtype} (F32, F16, BF16, I64 read)")
            start, end = info["data_offsets"]
            f.seek(base + start)
            raw = f.read(end - start)
            if dtype == "BF16":
                bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
                arr = bits.view(np.float32)
            else:
                arr = np.frombuffer(raw, dtype=SAFETENSORS_DTYPES[dtype])
            yield name, arr.reshape(info["shape"])


def safetensors_files(model_dir):
    one = model_dir / "model.safetensors"
    if one.is_file():
        return [one]
    shards = sorted(model_dir.glob("model-*-of-*.safetensors"))
    if not shards:
        fail(f"{model_dir}: no model.safetensors or model-*-of-*.safetensors")
    return shards


def load_json(path, default=None):
    if not path.is_file():
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def pooling_type(model_dir, is_classifier):
    """The sentence-transformers pooling module's mode (or rank for a
    classifier), as llama.cpp's _try_set_pooling_type reads it; None: none
    named."""
    if is_classifier:
        return POOLING["rank"]
    modules = load_json(model_dir / "modules.json", [])
    path = next((m["path"] for m in modules if m["type"].endswith("Pooling")), None)
    if path is None:
        return None
    cfg = load_json(model_dir / path / "config.json", {})
    if cfg.get("pooling_mode_mean_tokens"):
        return POOLING["mean"]
    if cfg.get("pooling_mode_cls_token"):
        return POOLING["cls"]
    if cfg.get("pooling_mode_lasttoken"):
        return POOLING["last"]
    mode = cfg.get("pooling_mode")
    if mode in ("mean", "cls"):
        return POOLING[mode]
    if mode == "lasttoken":
        return POOLING["last"]
    fail(f"{model_dir / path / 'config.json'}: pooling mode not supported (mean, cls, lasttoken)")


def wordpiece_vocab(model_dir):
    """(tokens by id, the ids of special tokens, normalizer options)."""
    tok = load_json(model_dir / "tokenizer.json")
    cfg = load_json(model_dir / "tokenizer_config.json", {})
    lowercase = cfg.get("do_lower_case", True)
    strip_accents = cfg.get("strip_accents")
    special = set()
    if tok is not None:
        model = tok.get("model", {})
        if model.get("type") != "WordPiece":
            fail(f"tokenizer.json: model type {model.get('type')!r} (WordPiece converted)")
        vocab = model["vocab"]
        norm = tok.get("normalizer") or {}
        if norm.get("type") == "BertNormalizer":
            lowercase = norm.get("lowercase", True)
            strip_accents = norm.get("strip_accents")
        for added in tok.get("added_tokens", []):
            vocab.setdefault(added["content"], added["id"])
            if added.get("special"):
                special.add(added["id"])
    else:
        path = model_dir / "vocab.txt"
        if not path.is_file():
            fail(f"{model_dir}: neither tokenizer.json nor vocab.txt")
        with open(path, encoding="utf-8") as f:
            vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
        for key in ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
            name = cfg.get(key, "[" + key.split("_")[0].upper() + "]")
            if name in vocab:
                special.add(vocab[name])
    n = max(vocab.values()) + 1
    tokens = [None] * n
    for text, i in vocab.items():
        tokens[i] = text
    if strip_accents is None:
        strip_accents = lowercase
    return tokens, special, bool(lowercase), bool(strip_accents)


def phantom(text, is_control):
    """llama.cpp's phantom-space form of a WordPiece vocabulary entry."""
    if is_control:
        return text
    if text.startswith("##"):
        return text[2:]
    return "\u2581" + text


def write_vocab(w, model_dir, n_vocab_embd, type_vocab_size):
    tokens, special, lowercase, strip_accents = wordpiece_vocab(model_dir)
    n = max(len(tokens), n_vocab_embd)
    texts, types = [], []
    for i in range(n):
        t = tokens[i] if i < len(tokens) else None
        if t is None:
            texts.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        elif i in special:
            texts.append(t)
            types.append(gguf.TokenType.CONTROL)
        else:
            texts.append(phantom(t, False))
            types.append(gguf.TokenType.NORMAL)
    seen = {}
    for i, t in enumerate(texts):
        if t in seen:
            fail(f"vocabulary: token {i} ({t!r}) repeats token {seen[t]} in phantom-space form")
        seen[t] = i
    w.add_token_type_count(type_vocab_size)
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(texts)
    w.add_token_types(types)
    w.add_bool("tokenizer.ggml.normalizer.lowercase", lowercase)
    w.add_bool("tokenizer.ggml.normalizer.strip_accents", strip_accents)
    gguf.SpecialVocab(model_dir, n_vocab=len(texts)).add_to_gguf(w)


def tensor_name(name, name_map, arch, is_classifier):
    """The GGUF name of a checkpoint tensor, or None when it is dropped."""
    for prefix in ("bert.", "model."):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name.endswith(".gamma"):
        name = name[: -len(".gamma")] + ".weight"
    if name.endswith(".beta"):
        name = name[: -len(".beta")] + ".bias"
    if is_classifier and name.startswith("pooler.dense."):
        # BertForSequenceClassification scores classifier(tanh(pooler(CLS))):
        # the pooler is the rank head's cls (then tanh), as a RoBERTa
        # classifier's dense layer. llama.cpp's converter drops it, and its
        # scores then miss that layer.
        return "cls." + name.split(".")[-1]
    if name in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
        return None
    if name.startswith(("cls.predictions", "cls.seq_relationship")):
        return None
    if is_classifier and name in ("classifier.weight", "classifier.bias"):
        name = "classifier.out_proj." + name.split(".")[-1]
    new = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
    if new is None:
        fail(f"tensor {name}: no GGUF name for it in gguf's {arch} map")
    return new


def stored(new_name, arr, outtype):
    """The tensor as written: (array, its GGML type where the array holds
    quantized bytes, else None)."""
    t = store_type(new_name, arr, outtype)
    if t is np.float16 and outtype == "q8_0":
        q8 = gguf.GGMLQuantizationType.Q8_0
        try:
            return gguf.quants.quantize(arr.astype(np.float32), q8), q8
        except gguf.QuantError:
            pass  # llama.cpp's converter falls back to F16 too
    return np.ascontiguousarray(arr.astype(t)), None


FILE_TYPES = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
              "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}


def store_type(new_name, arr, outtype):
    if arr.ndim <= 1 or new_name.endswith("_norm.weight") or outtype == "f32":
        return np.float32
    if not new_name.endswith(".weight"):
        return np.float32
    if new_name.split(".")[0] in ("position_embd", "token_types"):
        return np.float32
    return np.float16


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--outtype", choices=("f16", "f32", "q8_0"), default="f16")
    args = ap.parse_args()

    hp = load_json(args.model_dir / "config.json")
    if hp is None:
        fail(f"{args.model_dir}: no config.json")
    classes = hp.get("architectures") or ["BertModel"]
    cls_name = classes[0]
    if cls_name not in ARCHS:
        fail(f"config.json: class {cls_name} is not supported ({', '.join(ARCHS)})")
    arch = ARCHS[cls_name]
    labels = hp.get("id2label")
    if labels and len(labels) == 2 and labels.get("0") == "LABEL_0":
        labels = None  # the placeholder labels AutoConfig adds
    is_classifier = cls_name == "BertForSequenceClassification"

    n_layer = hp.get("num_hidden_layers", hp.get("n_layer"))
    n_embd = hp.get("hidden_size", hp.get("n_embd"))
    n_head = hp.get("num_attention_heads", hp.get("n_head"))
    n_ff = hp.get("intermediate_size", hp.get("n_inner"))
    n_ctx = hp.get("max_position_embeddings", hp.get("n_positions"))
    eps = hp.get("layer_norm_eps", hp.get("layer_norm_epsilon", 1e-12))
    if hp.get("position_embedding_type", "absolute") != "absolute":
        fail(f"config.json: position_embedding_type {hp['position_embedding_type']} (absolute supported)")
    act = hp.get("hidden_act", hp.get("activation_function", "gelu"))
    if act != "gelu":
        fail(f"config.json: hidden_act {act} (gelu supported)")

    w = gguf.GGUFWriter(str(args.out), arch)
    w.add_name(args.model_dir.resolve().name)
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_block_count(n_layer)
    w.add_head_count(n_head)
    w.add_layer_norm_eps(eps)
    w.add_causal_attention(False)
    w.add_file_type(FILE_TYPES[args.outtype])
    pool = pooling_type(args.model_dir, is_classifier)
    if pool is not None:
        w.add_pooling_type(gguf.PoolingType(pool))
    if labels:
        w.add_classifier_output_labels([v for _, v in sorted(labels.items(), key=lambda kv: int(kv[0]))])

    name_map = gguf.get_tensor_name_map(MODEL_ARCH[arch], n_layer)
    tensors = []
    n_vocab = 0
    for path in safetensors_files(args.model_dir):
        for name, arr in read_safetensors(path):
            new = tensor_name(name, name_map, arch, is_classifier)
            if new is None:
                continue
            if arr.dtype.kind != "f":
                fail(f"tensor {name}: dtype {arr.dtype} where weights are floats")
            if new == "token_embd.weight":
                n_vocab = arr.shape[0]
            tensors.append((new, arr))
    type_vocab = hp.get("type_vocab_size", 1)
    write_vocab(w, args.model_dir, n_vocab, type_vocab)
    for new, arr in tensors:
        data, raw_dtype = stored(new, arr, args.outtype)
        w.add_tensor(new, data, raw_dtype=raw_dtype)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"convert_hf: {args.out} ({arch}, {len(tensors)} tensors, {args.outtype})", file=sys.stderr)


if __name__ == "__main__":
    main()
