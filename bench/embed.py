#!/usr/bin/env python3
"""Embedding throughput: texts per second on 1,000 mixed-language,
mixed-length texts (tests/data/embed/texts.jsonl, each cut to --ctx
tokens), nucleus serve's
POST /v1/embeddings against llama-server --embeddings and llama-cpp-python
(Llama(embedding=True).embed), same model, same texts, same run, at each
thread count. Both servers get the texts in requests of --per-request
texts, sent one after another (each server packs a request's texts into
its batches); llama-cpp-python embeds the list in one call. The first
request of each server is a warm-up, not timed. Also checks that the
three agree (cosine of each text's vector, over the texts llama.cpp
tokenizes as nucleus does: its WordPiece differs on some scripts).

The flags each engine runs with (T: the --threads entry, C: --ctx):
  nucleus serve -m MODEL -t T (its defaults: flash attention's tiled
    order, batches of up to 2,048 tokens)
  llama-server -m MODEL --embeddings -t T -tb T -c 8C -b 8C -ub C -np 8
    (flash attention auto: on for this CPU)
  llama-cpp-python Llama(MODEL, embedding=True, flash_attn=True,
    n_ctx=8C, n_batch=8C, n_ubatch=8C, n_threads=T, n_threads_batch=T)
    (flash attention on, as llama-server's; off it is ~10x slower)

usage: bench/embed.py [--model GGUF] [--threads 1,2] [--per-request 64]
                      [--texts N]
The model: an embedding GGUF (default the random-weight EmbeddingGemma
file build/arch/gemmaemb.gguf of `make arch-models`; pass the real
all-MiniLM-L6-v2 from scripts/convert_hf.py for the README's row).
"""
import argparse
import json
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_server import free_port, start  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_server(url, texts, per):
    """(texts per second, vectors) over requests of per texts."""
    def ask(chunk):
        r = requests.post(url + "/v1/embeddings", timeout=3600,
                          json={"input": chunk, "encoding_format": "float"})
        if not r.ok:
            raise SystemExit(f"{url}: {r.status_code} {r.text[:300]}")
        d = sorted(r.json()["data"], key=lambda x: x["index"])
        return [np.array(x["embedding"]) for x in d]
    ask(texts[:per])  # warm-up
    t0 = time.perf_counter()
    vecs = []
    for i in range(0, len(texts), per):
        vecs += ask(texts[i:i + per])
    return len(texts) / (time.perf_counter() - t0), vecs


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()


def worst_cos(a, b):
    return min(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))
               for x, y in zip(a, b))


def fit(model, texts, limit):
    """The texts, each cut to at most limit tokens of the model's tokenizer
    (then detokenized): every engine takes every text whole."""
    import llama_cpp
    voc = llama_cpp.Llama(model, vocab_only=True, verbose=False)
    out = []
    for t in texts:
        ids = voc.tokenize(t.encode(), add_bos=False, special=False)
        out.append(t if len(ids) <= limit else
                   voc.detokenize(ids[:limit]).decode("utf-8", "replace"))
    return out


def peer_ids(model, texts):
    """llama.cpp's token ids of each text (its WordPiece differs from
    Hugging Face's, which nucleus follows, on some scripts: docs/TEXT.md)."""
    import llama_cpp
    voc = llama_cpp.Llama(model, vocab_only=True, verbose=False)
    return [voc.tokenize(t.encode(), add_bos=True, special=False) for t in texts]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(ROOT / "build/arch/gemmaemb.gguf"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--per-request", type=int, default=64)
    ap.add_argument("--texts", type=int, default=1000)
    ap.add_argument("--ctx", type=int, default=512,
                    help="texts are cut to this many tokens (llama-server's "
                         "-ub must hold a non-causal model's input)")
    ap.add_argument("--nucleus", default=str(ROOT / "build/release/nucleus"))
    ap.add_argument("--peer-dir", default="/opt/peer/llama.cpp")
    a = ap.parse_args()
    texts = [json.loads(l) for l in
             (ROOT / "tests/data/embed/texts.jsonl").read_text().splitlines()]
    texts = fit(a.model, texts[:a.texts], a.ctx - 16)
    ids_peer = peer_ids(a.model, texts)
    bin_dir = pathlib.Path(subprocess.run(
        [str(ROOT / "bench/build_peer.sh"), a.peer_dir], capture_output=True,
        text=True, check=True).stdout.strip().splitlines()[-1])
    import llama_cpp
    print(f"{len(texts)} texts, {a.per_request} per request, model "
          f"{pathlib.Path(a.model).name}; texts per second")
    print("threads  nucleus  llama-server  llama-cpp-python  "
          "vs server  vs python  worst cosine (texts both tokenize alike)")
    for t in [int(x) for x in a.threads.split(",")]:
        port = free_port()
        p, url = start([a.nucleus, "serve", "-m", a.model, "-t", str(t),
                        "--port", str(port)], port)
        try:
            ours, v_ours = run_server(url, texts, a.per_request)
            ids_ours = [requests.post(url + "/tokenize", timeout=60, json={
                "content": t, "add_special": True}).json()["tokens"] for t in texts]
        finally:
            stop(p)
        port = free_port()
        p, url = start([str(bin_dir / "llama-server"), "-m", a.model,
                        "--embeddings", "-t", str(t), "-tb", str(t),
                        "-c", str(a.ctx * 8), "-b", str(a.ctx * 8), "-ub",
                        str(a.ctx), "-np", "8", "--port", str(port)], port)
        try:
            peer, v_peer = run_server(url, texts, a.per_request)
        finally:
            stop(p)
        # (its embed packs texts into one batch: an encoder's must be one
        # micro-batch)
        llm = llama_cpp.Llama(a.model, embedding=True, flash_attn=True,
                              n_ctx=a.ctx * 8, n_batch=a.ctx * 8,
                              n_ubatch=a.ctx * 8,
                              n_threads=t, n_threads_batch=t, verbose=False)
        llm.embed(texts[:8])  # warm-up
        t0 = time.perf_counter()
        v_py = [np.array(v) for v in llm.embed(texts)]
        py = len(texts) / (time.perf_counter() - t0)
        del llm
        same = [i for i in range(len(texts)) if ids_ours[i] == ids_peer[i]]
        cos = min(worst_cos([v_ours[i] for i in same], [v_peer[i] for i in same]),
                  worst_cos([v_ours[i] for i in same], [v_py[i] for i in same]))
        print(f"{t:7d}  {ours:7.1f}  {peer:12.1f}  {py:16.1f}  "
              f"{ours / peer:8.2f}x  {ours / py:8.2f}x  {cos:.6f} "
              f"({len(same)} of {len(texts)})")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
