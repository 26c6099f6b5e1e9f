#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/fuzz_request.c, fuzz/corpus/request/: the
request bodies the server's e2e tests send (tests/e2e/test_server_*.py,
test_speculative.py, test_messages_api.py, test_responses_api.py,
test_vision_requests.py and test_embeddings.py run with
NUCLEUS_RECORD_BODIES, see conftest.py),
those of at most 16 KiB, one
file per distinct body named seed_<SHA-1 prefix>. Existing seeds are kept;
files the fuzzer added (other names) are left alone.

usage: scripts/gen_request_seeds.py   (needs build/release/nucleus and the
default model, as make e2e)"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "fuzz/corpus/request"
TESTS = ["test_server_http.py", "test_server_openai.py",
         "test_server_stream.py", "test_speculative.py",
         "test_messages_api.py", "test_responses_api.py",
         "test_vision_requests.py", "test_embeddings.py"]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NUCLEUS_RECORD_BODIES": tmp}
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p",
                        "no:cacheprovider",
                        *[str(ROOT / "tests/e2e" / t) for t in TESTS]],
                       env=env, check=False, cwd=ROOT)
        n = 0
        for p in sorted(pathlib.Path(tmp).iterdir()):
            if p.stat().st_size <= 16384:
                shutil.copyfile(p, OUT / ("seed_" + p.name))
                n += 1
    print(f"{OUT}: {n} seeds from the e2e requests")


if __name__ == "__main__":
    main()
