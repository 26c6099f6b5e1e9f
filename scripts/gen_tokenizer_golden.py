#!/usr/bin/env python3
"""Regenerates the tokenizer goldens in tests/data/tokenizer/ with llama.cpp
(llama-cpp-python, the peer), for every string of corpus.hex:

  <name>.ids   one line per corpus string (<name>.long.ids: per long.hex
               string, words over 4096 bytes): the ids llama_tokenize gives
               (add_special = false), space-separated; when
               llama_detokenize(ids, remove_special = false,
               unparse_special = true) is not the input bytes, " | " and
               the hex of what it returns follows.

Vocabularies: SmolLM2-135M (gpt2 BPE, pre smollm) as is, and the same
vocabulary re-labelled with the pre-tokenizers llama-bpe, qwen2, gpt-2 and
default (vocab-only GGUFs written to a temporary folder; the unit test loads
SmolLM2 with nc_vocab_options.pre_override), plus Gemma 3 270M (SPM) when
models/ has it (scripts/fetch_gemma.sh). `*.special.ids` use
parse_special = true.

usage: python3 scripts/gen_tokenizer_golden.py   (needs llama_cpp)
"""
import ctypes
import hashlib
import os
import sys
import tempfile

import gguf
import llama_cpp
from llama_cpp import Llama

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "tokenizer")
SMOL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")


def relabel(src, dst, pre):
    """A vocab-only copy of src's metadata with tokenizer.ggml.pre = pre."""
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if key == "tokenizer.ggml.pre":
            w.add_string(key, pre)
            continue
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            w.add_array(key, f.contents())
        else:
            w.add_key_value(key, f.contents(), t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def detokenize(m, ids):
    vocab = m._model.vocab
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    cap = 64 + 16 * len(ids)
    while True:
        buf = ctypes.create_string_buffer(cap)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, cap, False,
                                       True)
        if n >= 0:
            return buf.raw[:n]
        cap = -n + 1


def write_golden(model_path, name, corpus, special, header):
    m = Llama(model_path=model_path, vocab_only=True, verbose=False)
    lines = [header]
    for b in corpus:
        ids = m.tokenize(b, add_bos=False, special=special)
        line = " ".join(map(str, ids))
        d = detokenize(m, ids)
        if d != b:
            line += " | " + d.hex()
        lines.append(line)
    path = os.path.join(DATA, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(corpus)} strings", file=sys.stderr)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def main():
    with open(os.path.join(DATA, "corpus.hex")) as f:
        corpus = [bytes.fromhex(line.strip()) for line in f]
    with open(os.path.join(DATA, "long.hex")) as f:
        longs = [bytes.fromhex(line.strip()) for line in f]
    smol_sha = sha256(SMOL)
    hdr = f"# model SmolLM2-135M-Instruct.Q4_1.gguf sha256 {smol_sha}"
    write_golden(SMOL, "smollm.ids", corpus, False, hdr + " pre smollm")
    write_golden(SMOL, "smollm.special.ids", corpus, True,
                 hdr + " pre smollm parse_special")
    write_golden(SMOL, "smollm.long.ids", longs, False, hdr + " pre smollm")
    with tempfile.TemporaryDirectory() as tmp:
        for pre in ["llama-bpe", "qwen2", "gpt-2", "default"]:
            path = os.path.join(tmp, pre + ".gguf")
            relabel(SMOL, path, pre)
            write_golden(path, pre + ".ids", corpus, False, hdr + " pre " + pre)
            if pre == "llama-bpe":
                write_golden(path, pre + ".long.ids", longs, False,
                             hdr + " pre " + pre)
    if os.path.exists(GEMMA):
        hdr = f"# model gemma-3-270m-q4_k_m.gguf sha256 {sha256(GEMMA)}"
        write_golden(GEMMA, "gemma.ids", corpus, False, hdr)
        write_golden(GEMMA, "gemma.special.ids", corpus, True,
                     hdr + " parse_special")
        write_golden(GEMMA, "gemma.long.ids", longs, False, hdr)
    else:
        print("models/ has no Gemma 3: skipped (scripts/fetch_gemma.sh)",
              file=sys.stderr)


if __name__ == "__main__":
    main()
