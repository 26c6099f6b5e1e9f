"""One parameter contract (issue #25, part 2): every surface gives the same
answer with the same message, docs/SERVER.md's table is the contract's, and
each surface's defaults are its own, with the model's recommendations
(general.sampling.*) first."""

import os
import pathlib
import re
import subprocess

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
NUCLEUS_BIN = os.environ.get("NUCLEUS_BIN", str(ROOT / "build/release/nucleus"))
MODEL = ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"


def nucleus(*args, stdin=None):
    return subprocess.run([NUCLEUS_BIN, *args], input=stdin,
                          capture_output=True, timeout=300)


def test_docs_table_is_the_contract():
    table = nucleus("params").stdout.decode()
    doc = (ROOT / "docs/SERVER.md").read_text()
    m = re.search(r"<!-- params:begin.*?-->\n(.*?)<!-- params:end -->", doc,
                  re.S)
    assert m, "docs/SERVER.md has no params:begin/params:end block"
    assert m.group(1) == table, \
        "regenerate the block with `nucleus params` (see docs/SERVER.md)"


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "256", "-t", "1")


@pytest.mark.parametrize("field,value,flag", [
    ("temperature", 101, "--temp"), ("top_p", 0, "--top-p"),
    ("top_k", 1.5, "--top-k"), ("repetition_penalty", 101, "--repeat-penalty"),
    ("presence_penalty", -2.5, "--presence-penalty"), ("n", 17,
                                                       "--n-completions"),
    ("min_p", 1.5, "--min-p"), ("typical_p", 0, "--typical")])
def test_every_surface_gives_the_same_answer(server, field, value, flag):
    r = requests.post(server.url + "/v1/completions", timeout=60,
                      json={"prompt": "Hi", "max_tokens": 1, field: value})
    assert r.status_code == 400, r.text
    msg = r.json()["error"]["message"]
    assert r.json()["error"]["param"] == field
    p = nucleus("run", "-m", str(MODEL), "-p", "Hi", "-n", "1", flag,
                str(value))
    assert p.returncode == 2
    assert msg in p.stderr.decode(), (msg, p.stderr)


def test_server_defaults_are_openai_and_shown(server):
    props = requests.get(server.url + "/props", timeout=10).json()
    d = props["default_generation_settings"]
    assert d["temperature"] == 1 and d["top_p"] == 1 and d["top_k"] == 0
    assert d["min_p"] == 0 and d["n"] == 1
    assert props["recommended_by_model"] == []
    assert props["n_ctx"] == 256


def test_chat_takes_llama_cpp_defaults():
    """The first impression: at llama.cpp's CLI defaults the small model
    answers; at temperature 1 without truncation it rambles."""
    p = nucleus("chat", "-m", str(MODEL), "-n", "24", "-t", "1", "--seed", "3",
                stdin=b"What is the capital of Japan?\n")
    assert p.returncode == 0, p.stderr
    assert "Tokyo" in p.stdout.decode(), p.stdout
    out = nucleus("params", "-m", str(MODEL)).stdout.decode()
    line = next(x for x in out.splitlines() if x.strip().startswith("top_k"))
    assert line.split()[1:4] == ["0", "/", "40"], line


@pytest.fixture(scope="module")
def recommending_model(tmp_path_factory):
    """The default model with general.sampling.* keys added."""
    import gguf
    from gguf.scripts.gguf_new_metadata import (MetadataDetails,
                                                copy_with_new_metadata)
    out = tmp_path_factory.mktemp("rec") / "rec.gguf"
    reader = gguf.GGUFReader(str(MODEL), "r")
    arch = reader.fields["general.architecture"]
    arch = bytes(arch.parts[arch.data[0]]).decode()
    writer = gguf.GGUFWriter(str(out), arch=arch, endianess=reader.endianess)
    f32, u32 = gguf.GGUFValueType.FLOAT32, gguf.GGUFValueType.UINT32
    copy_with_new_metadata(reader, writer, {
        "general.sampling.temp": MetadataDetails(f32, 0.3),
        "general.sampling.top_k": MetadataDetails(u32, 7),
        "general.sampling.min_p": MetadataDetails(f32, 5.0),  # out of range
    }, [])
    return out


def test_the_models_recommendation_comes_first(start_server,
                                               recommending_model):
    srv = start_server("-c", "256", "-t", "1", model=str(recommending_model))
    props = requests.get(srv.url + "/props", timeout=10).json()
    d = props["default_generation_settings"]
    assert d["temperature"] == pytest.approx(0.3)
    assert d["top_k"] == 7
    assert d["min_p"] == 0  # an out-of-range value is no recommendation
    assert sorted(props["recommended_by_model"]) == ["temperature", "top_k"]
    out = nucleus("params", "-m", str(recommending_model)).stdout.decode()
    rows = {x.split()[0]: x for x in out.split("In force", 1)[1].splitlines()
            if x.startswith("  ")}
    assert rows["temperature"].split()[1:4] == ["0.3", "/", "0.3"]
    assert "(the model's)" in rows["top_k"]
    assert rows["min_p"].split()[1:4] == ["0", "/", "0.05"]
    # A request's own value still wins.
    r = requests.post(srv.url + "/v1/completions", timeout=60, json={
        "prompt": "Hi", "max_tokens": 4, "temperature": 0})
    g = requests.post(srv.url + "/v1/completions", timeout=60, json={
        "prompt": "Hi", "max_tokens": 4, "temperature": 0})
    assert r.json()["choices"][0]["text"] == g.json()["choices"][0]["text"]
