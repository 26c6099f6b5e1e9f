"""Structured output on every architecture that loads, not only the default
model: Gemma 3 270M (real weights, its 262,144-token SentencePiece
vocabulary) and the random-weight files of scripts/make_arch_gguf.py
(`make arch-models`: qwen2, qwen3, phi3, gemma2, gemma3, qwen3moe, mixtral,
gptoss, gemma4, gemma4moe, qwen35; the default model's vocabulary, so
their text is noise: only the grammar keeps it JSON). Sampled at temperature
1 with a schema whose every value
is bounded (booleans, an enum, bounded integers, a short string, a short
array), so that the reply must end by `stop` within the budget and
validate with jsonschema; and two corpus schemas, which may run out of
budget (then the text must be an incomplete JSON, nothing else)."""

import json
import pathlib

import jsonschema
import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARCHS = ["qwen2", "qwen3", "phi3", "gemma2", "gemma3", "qwen3moe", "mixtral",
         "gptoss", "gemma4", "gemma4moe",
         "qwen35", "qwen2vl", "qwen3vl", "qwen3vlmoe", "qwen3next"]
GEMMA = ROOT / "models/gemma-3-270m-q4_k_m.gguf"

BOUNDED = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "color": {"enum": ["red", "green", "blue"]},
        "count": {"type": "integer", "minimum": 0, "maximum": 99},
        "tag": {"type": "string", "pattern": "^[a-z]{0,6}$"},
        "sizes": {"type": "array", "items": {"enum": ["S", "M", "L"]},
                  "maxItems": 3},
    },
    "required": ["ok", "color", "count", "tag", "sizes"],
    "additionalProperties": False,
}
CORPUS = sorted((ROOT / "tests/data/schemas").glob("*.json"))[:2]


def model_files():
    files = [("gemma-3-270m", GEMMA)]
    files += [(a, ROOT / "build/arch" / f"{a}.gguf") for a in ARCHS]
    return files


def ask(server, schema, seed, max_tokens):
    r = requests.post(server.url + "/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "Reply in JSON."}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "out", "schema": schema, "strict": True}},
        "max_tokens": max_tokens, "temperature": 1, "seed": seed},
        timeout=600)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


@pytest.mark.parametrize("name,path", model_files(),
                         ids=[n for n, _ in model_files()])
def test_schema_outputs_validate_on_every_arch(start_server, name, path):
    assert path.is_file(), (
        f"{path} is missing: `make model arch-models` makes it")
    server = start_server("-c", "1024", "-t", "2", model=str(path))
    for seed in (1, 2):
        choice = ask(server, BOUNDED, seed, 200)
        text = choice["message"]["content"]
        assert choice["finish_reason"] == "stop", (name, seed, text)
        jsonschema.validate(json.loads(text), BOUNDED)
    for schema_path in CORPUS:
        schema = json.loads(schema_path.read_text())
        choice = ask(server, schema, 3, 96)
        text = choice["message"]["content"]
        if choice["finish_reason"] == "length":
            with pytest.raises(json.JSONDecodeError):
                json.loads(text)
            continue
        assert choice["finish_reason"] == "stop", (name, text)
        jsonschema.validate(json.loads(text), schema)
