#!/usr/bin/env python3
"""Writes tests/data/imatrix/smollm2_gpl3_c128x3.json: what llama.cpp's
llama-imatrix computes on the default model over the GPL-3 text (Debian's
/usr/share/common-licenses/GPL-3), 3 chunks of 128 tokens: per weight the
rows counted, the sum of its in_sum2 and its first 8 values; and
tests/data/imatrix/untied_gpl3_c64x2.json: the same with --process-output
on a random 2-layer Llama-shaped F16 file with its own output.weight
(bench/make_llama_shaped.py --untied, seeded: the same file everywhere), 2
chunks of 64. test_imatrix.py holds `nucleus imatrix` to them. Needs
llama-imatrix (bench/build_peer.sh).

    python3 scripts/gen_imatrix_golden.py [--peer-bin DIR]
"""
import argparse
import json
import pathlib
import subprocess
import tempfile

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = "/usr/share/common-licenses/GPL-3"
OUT = ROOT / "tests/data/imatrix/smollm2_gpl3_c128x3.json"
OUT_UNTIED = ROOT / "tests/data/imatrix/untied_gpl3_c64x2.json"
# bench/make_llama_shaped.py's arguments for the untied file
UNTIED_ARGS = ["--layers", "2", "--embd", "256", "--ff", "512", "--heads",
               "4", "--kv-heads", "2", "--untied"]


def summarize(path):
    r = gguf.GGUFReader(str(path))
    d = {t.name: np.array(t.data, dtype=np.float32).reshape(-1)
         for t in r.tensors}
    out = {}
    for name, v in d.items():
        if not name.endswith(".in_sum2"):
            continue
        w = name[:-len(".in_sum2")]
        out[w] = {"counts": [int(c) for c in d[w + ".counts"]],
                  "sum": float(np.sum(v.astype(np.float64))),
                  "first": [float(x) for x in v[:8]]}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer-bin", default="/opt/peer/llama.cpp/build/bin")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "imatrix.gguf"
        subprocess.run([f"{a.peer_bin}/llama-imatrix", "-m", str(MODEL), "-f",
                        TEXT, "-o", str(out), "-c", "128", "-b", "128",
                        "--chunks", "3", "-t", "2"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        OUT.write_text(json.dumps({"model": MODEL.name, "text": TEXT,
                                   "n_ctx": 128, "chunks": 3,
                                   "entries": summarize(out)}, indent=None,
                                  sort_keys=True) + "\n")
        model = pathlib.Path(tmp) / "untied.gguf"
        subprocess.run(["python3", str(ROOT / "bench/make_llama_shaped.py"),
                        str(model), *UNTIED_ARGS], check=True,
                       stdout=subprocess.DEVNULL)
        out = pathlib.Path(tmp) / "untied.imatrix.gguf"
        subprocess.run([f"{a.peer_bin}/llama-imatrix", "-m", str(model), "-f",
                        TEXT, "-o", str(out), "-c", "64", "-b", "64",
                        "--chunks", "2", "-t", "2", "--process-output"],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        OUT_UNTIED.write_text(json.dumps(
            {"model": "make_llama_shaped.py " + " ".join(UNTIED_ARGS),
             "text": TEXT, "n_ctx": 64, "chunks": 2,
             "entries": summarize(out)}, indent=None, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
