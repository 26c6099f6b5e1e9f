"""Memory of nucleus on the default model (issue #9, "Memory").

- Peak RSS of `nucleus run` (greedy, a few dozen tokens) is at most the model
  file plus the KV cache `nucleus run` reserves plus 64 MiB.
- It is even at most the model file plus the KV blocks those tokens use plus
  64 MiB: the reserved pool is zero-filled lazily, so only written blocks
  count. A second copy of the weights (another file size of memory) would
  break this bound.
- The weights are held once. With --load-mode mmap they are used straight
  from the mmap'd file: after a request, the file's mapping in `nucleus
  serve` is resident and the process's anonymous memory is a small fraction
  of the file. With read (the default where the file fits) the file is read
  into anonymous memory (2 MiB pages) and not mapped.

Peak RSS is the child's own ru_maxrss (os.wait4), taken by a fresh, small
Python launcher: Linux starts a child's ru_maxrss at the high-water RSS of
the process that forked it (the mm it had before exec), so a child of this
pytest process (openai, jinja2, ... imported: ~180 MiB) would report at
least that much whatever nucleus uses.
"""

import os
import re
import subprocess
import sys
import tempfile

import pytest
import requests
from gguf import GGUFReader

from conftest import DEFAULT_MODEL, NUCLEUS_BIN, require_binary_and_model

MIB = 1 << 20
SLACK = 64 * MIB
N_GEN = 48
PROMPT = "The three primary colors are"
# tools/cli/cmd_run.c: with no -c and no --kv-tokens, `nucleus run` reserves
# one context of min(8192, the model's training context) positions
# (src/engine/engine_params.c caps n_ctx at 8192); the pool is whole blocks of 16
# positions (the engine's default kv_block_tokens); K and V are F16.
RUN_CTX_CAP = 8192
KV_BLOCK_TOKENS = 16
KV_ELEM_BYTES = 2


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is None:
            raise KeyError(f"{key} is missing from the model")
        return default
    value = f.parts[f.data[0]]
    if f.types and f.types[0].name == "STRING":
        return bytes(value).decode()
    return int(value[0])


def hparams(path):
    r = GGUFReader(path)
    arch = field(r, "general.architecture")
    n_embd = field(r, f"{arch}.embedding_length")
    n_head = field(r, f"{arch}.attention.head_count")
    head_dim = field(r, f"{arch}.attention.key_length", n_embd // n_head)
    return {
        "n_layer": field(r, f"{arch}.block_count"),
        "n_head_kv": field(r, f"{arch}.attention.head_count_kv", n_head),
        "head_dim": head_dim,
        "head_dim_v": field(r, f"{arch}.attention.value_length", head_dim),
        "n_ctx_train": field(r, f"{arch}.context_length"),
    }


def kv_bytes(hp, positions):
    blocks = -(-positions // KV_BLOCK_TOKENS)
    per_pos = hp["n_layer"] * hp["n_head_kv"] * (hp["head_dim"] +
                                                 hp["head_dim_v"])
    return blocks * KV_BLOCK_TOKENS * per_pos * KV_ELEM_BYTES


# Runs argv[2:], writes its ru_maxrss (KiB) to the file argv[1], exits with
# its status. Small (a bare interpreter, ~10 MiB), so it cannot mask
# nucleus's own peak.
LAUNCHER = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(p.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(args):
    """Runs args; returns (exit code, output, peak RSS in bytes)."""
    with tempfile.TemporaryFile() as out, \
            tempfile.NamedTemporaryFile("r") as rss:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", LAUNCHER, rss.name, *args],
            stdout=out, stderr=subprocess.STDOUT)
        try:
            proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        out.seek(0)
        text = out.read().decode(errors="replace")
        peak_kib = int(rss.read() or 0)
    return proc.returncode, text, peak_kib * 1024  # Linux: KiB


@pytest.fixture(scope="module")
def run_result():
    require_binary_and_model()
    rc, out, peak = run_measured(
        [NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, "-p", PROMPT, "-n",
         str(N_GEN), "--ignore-eos", "-t", "2"])
    assert rc == 0, out
    m = re.search(r"prompt: (\d+) tokens.*generation: (\d+) tokens", out)
    assert m, f"no prompt/generation summary in:\n{out[-2000:]}"
    return {"peak": peak, "n_prompt": int(m.group(1)),
            "n_gen": int(m.group(2)), "out": out}


def report(r, file_size, kv):
    return (f"peak RSS {r['peak'] / MIB:.1f} MiB; model file "
            f"{file_size / MIB:.1f} MiB + KV {kv / MIB:.1f} MiB + 64 MiB = "
            f"{(file_size + kv + SLACK) / MIB:.1f} MiB")


def test_peak_rss_within_file_plus_reserved_kv(run_result):
    hp = hparams(DEFAULT_MODEL)
    ctx = min(RUN_CTX_CAP, hp["n_ctx_train"])
    kv = kv_bytes(hp, ctx)
    size = os.path.getsize(DEFAULT_MODEL)
    print(f"reserved KV: {ctx} positions; " + report(run_result, size, kv))
    assert run_result["peak"] <= size + kv + SLACK, report(run_result, size,
                                                           kv)


def test_peak_rss_within_file_plus_used_kv(run_result):
    hp = hparams(DEFAULT_MODEL)
    used = run_result["n_prompt"] + run_result["n_gen"]
    assert run_result["n_gen"] == N_GEN, run_result["out"][-2000:]
    kv = kv_bytes(hp, used)
    size = os.path.getsize(DEFAULT_MODEL)
    print(f"used KV: {used} positions; " + report(run_result, size, kv))
    assert run_result["peak"] <= size + kv + SLACK, (
        report(run_result, size, kv) + " (is the KV pool touched whole, or "
        "are the weights copied?)")


def smaps(pid):
    """[(path, {field: kB})] for each mapping of the process."""
    maps, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", head[0]):
                cur = {}
                maps.append((head[5] if len(head) > 5 else "", cur))
            elif len(head) >= 2 and head[0].endswith(":") and \
                    head[1].isdigit():
                cur[head[0][:-1]] = int(head[1])
    return maps


@pytest.fixture(scope="module", params=["mmap", "read"])
def server(request, start_server):
    return request.param, start_server("-t", "1", "--load-mode",
                                       request.param)


def test_weights_held_once(server):
    """--load-mode mmap: the weights are used from the file's mapping, with
    no copy in anonymous memory. read (the default where the file fits):
    the file is read into anonymous memory once and not mapped."""
    mode, srv = server
    if not os.path.exists(f"/proc/{srv.proc.pid}/smaps"):
        pytest.skip("no /proc/PID/smaps on this system")
    r = requests.post(srv.base_url + "/completions", timeout=120, json={
        "prompt": PROMPT, "max_tokens": 16, "temperature": 0})
    assert r.ok, r.text
    model = os.path.realpath(DEFAULT_MODEL)
    maps = smaps(srv.proc.pid)
    mapped = [m for path, m in maps if path == model]
    size = os.path.getsize(model)
    mapped_rss = sum(m.get("Rss", 0) for m in mapped) * 1024
    anon = sum(m.get("Anonymous", 0) for _, m in maps) * 1024
    huge = sum(m.get("AnonHugePages", 0) for _, m in maps) * 1024
    print(f"{mode}: model mapping resident: {mapped_rss / MIB:.1f} of "
          f"{size / MIB:.1f} MiB; anonymous memory {anon / MIB:.1f} MiB "
          f"({huge / MIB:.1f} MiB on 2 MiB pages)")
    if mode == "mmap":
        assert mapped, f"{model} is not mapped by nucleus serve"
        # The forward pass read the weights through the mapping ...
        assert mapped_rss >= 0.9 * size
        # ... and holds no copy of them.
        assert anon < size / 2, f"anonymous memory {anon / MIB:.1f} MiB"
    else:
        assert not mapped, f"{model} is mapped as well as read"
        # one copy of the weights, and the KV, buffers and heap beyond it
        assert size <= anon <= size + 2 * MIB + SLACK, (
            f"anonymous memory {anon / MIB:.1f} MiB")
