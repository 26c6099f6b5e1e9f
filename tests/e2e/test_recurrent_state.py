"""A hybrid model's recurrent state through the CLI and the server, on the
random qwen35 file of scripts/make_arch_gguf.py (`make arch-models`: 8
layers, 6 of them gated DeltaNet with a 4-wide convolution over 512
channels and 4 value heads of 64x64 state, 2 attention layers of 2 KV heads
of 128): `nucleus info` gives the state per sequence beside the K/V per
position, /props both, /metrics the state slots and the prefix cache's
snapshots; a chat's second turn is a prefix hit (cached_tokens) with the
text of the same request on a server with --no-prefix-cache."""

import pathlib
import re
import subprocess

import requests
from conftest import NUCLEUS_BIN, require_binary_and_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
QWEN35 = ROOT / "build/arch/qwen35.gguf"
# 6 layers x (3 x 512 convolution inputs + 4 x 64 x 64), floats
STATE = 6 * (3 * 512 + 4 * 64 * 64) * 4
KV = 2 * 2 * 128 * 2 * 2  # 2 layers, K and V, 2 heads of 128, F16


def test_info_reports_state():
    require_binary_and_model(str(QWEN35))
    r = subprocess.run([NUCLEUS_BIN, "info", str(QWEN35)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-3] == (
        f"KV cache (qwen35): {KV} bytes per position; recurrent state (6 of "
        f"8 layers): {STATE} bytes per sequence, whatever its length")


def metric(text, name):
    m = re.search(rf"^{name} (\d+)$", text, re.M)
    assert m, f"{name} missing from /metrics"
    return int(m.group(1))


def chat(url, messages):
    r = requests.post(url + "/v1/chat/completions", json={
        "messages": messages, "max_tokens": 24, "temperature": 0,
        "ignore_eos": True}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def test_props_metrics_and_a_second_turn(start_server):
    srv = start_server("-c", "1024", "-t", "1", model=str(QWEN35))
    cold = start_server("-c", "1024", "-t", "1", "--no-prefix-cache",
                        model=str(QWEN35))
    props = requests.get(srv.url + "/props", timeout=10).json()
    assert props["state_bytes_per_sequence"] == STATE
    assert props["kv_bytes_per_position"] == KV
    turn = [{"role": "user", "content": "Tell me about the river stone "
             "bread window garden copper lantern violet harbor meadow "
             "thunder pencil orchard silver candle marble forest engine."}]
    first = chat(srv.url, turn)
    turn += [{"role": "assistant",
              "content": first["choices"][0]["message"]["content"]},
             {"role": "user", "content": "And the glacier tunnel?"}]
    second = chat(srv.url, turn)
    details = second["usage"].get("prompt_tokens_details") or {}
    assert details.get("cached_tokens", 0) >= 48
    assert (second["choices"][0]["message"]["content"] ==
            chat(cold.url, turn)["choices"][0]["message"]["content"])
    text = requests.get(srv.url + "/metrics", timeout=10).text
    assert metric(text, "nucleus_state_bytes") >= STATE
    held = metric(text, "nucleus_state_snapshots")
    assert held >= 1
    snap_bytes = metric(text, "nucleus_state_snapshot_bytes")
    assert snap_bytes >= held * STATE and snap_bytes % STATE == 0
    cold_text = requests.get(cold.url + "/metrics", timeout=10).text
    assert metric(cold_text, "nucleus_state_snapshots") == 0
