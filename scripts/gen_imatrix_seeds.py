#!/usr/bin/env python3
"""Writes the importance-matrix fuzz seeds (fuzz/corpus/imatrix/): small
files in llama-imatrix's two forms, valid and broken, that
test_quantize_file loads (each valid one loads, each broken one is refused
with a message). Regenerate: python3 scripts/gen_imatrix_seeds.py"""
import pathlib
import struct

import numpy as np
import gguf

OUT = pathlib.Path(__file__).resolve().parents[1] / "fuzz/corpus/imatrix"


def legacy(entries, tail=True):
    b = struct.pack("<i", len(entries))
    for name, ncall, vals in entries:
        n = name.encode()
        b += struct.pack("<i", len(n)) + n + struct.pack("<ii", ncall, len(vals))
        b += np.asarray(vals, np.float32).tobytes()
    if tail:
        b += struct.pack("<i", 3) + struct.pack("<i", 5) + b"calib"
    return b


def gguf_file(path, tensors, meta=True):
    w = gguf.GGUFWriter(str(path), arch="imatrix")
    if meta:
        w.add_array("imatrix.datasets", ["calib.txt"])
        w.add_uint32("imatrix.chunk_count", 4)
        w.add_uint32("imatrix.chunk_size", 512)
    for name, arr in tensors:
        w.add_tensor(name, np.asarray(arr, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "valid_legacy.dat").write_bytes(legacy([
        ("blk.0.attn_q.weight", 2, [2.0, 4.0, 6.0, 8.0]),
        ("blk.0.ffn_down.weight", 0, [1.5, 2.5]),
        ("blk.0.attn_q.weight", 1, [1.0, 1.0, 1.0, 1.0]),  # later one wins
    ]))
    (OUT / "valid_legacy_no_tail.dat").write_bytes(
        legacy([("output.weight", 4, [4.0] * 8)], tail=False))
    (OUT / "bad_legacy_cut.dat").write_bytes(
        legacy([("blk.0.attn_q.weight", 2, [2.0] * 16)])[:40])
    (OUT / "bad_legacy_nan.dat").write_bytes(
        legacy([("blk.0.attn_q.weight", 1, [1.0, float("nan")])]))
    (OUT / "bad_legacy_count.dat").write_bytes(struct.pack("<i", -3))
    gguf_file(OUT / "valid.gguf", [
        ("blk.0.attn_q.weight.in_sum2", [[8.0, 16.0], [3.0, 6.0]]),
        ("blk.0.attn_q.weight.counts", [[4.0], [0.0]]),
    ])
    gguf_file(OUT / "bad_no_metadata.gguf", [
        ("a.weight.in_sum2", [1.0, 2.0]), ("a.weight.counts", [1.0])],
        meta=False)
    gguf_file(OUT / "bad_sums_without_counts.gguf", [
        ("a.weight.in_sum2", [1.0, 2.0])])
    gguf_file(OUT / "bad_uneven.gguf", [
        ("a.weight.in_sum2", [1.0, 2.0, 3.0]), ("a.weight.counts", [1.0, 1.0])])


if __name__ == "__main__":
    main()
