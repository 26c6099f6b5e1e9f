"""The JSON Schema corpus (tests/data/schemas, the shapes real APIs use:
flat and nested objects, optional fields, arrays of objects, enums,
patterns, formats, $ref/$defs, recursion, anyOf/oneOf): sampled outputs at
temperature 1 through response_format json_schema must parse and validate
with jsonschema; and the official client's beta parse() with a Pydantic
model. One server; every schema once, a few with several seeds."""

import json
import pathlib
from typing import List, Literal, Optional

import jsonschema
import openai
import pydantic
import pytest
import requests

# the whole schema corpus against the oracle: `make test` runs it, `make check` leaves it out.
pytestmark = pytest.mark.slow

SCHEMAS = sorted((pathlib.Path(__file__).resolve().parents[1] / "data" /
                  "schemas").glob("*.json"))


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "2048", "-t", "2")


def ask(server, schema, seed, max_tokens=160):
    r = requests.post(server.url + "/v1/chat/completions", json={
        "messages": [{"role": "user", "content":
                      "Reply with a JSON value for this task."}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "out", "schema": schema, "strict": True}},
        "max_tokens": max_tokens, "temperature": 1, "seed": seed},
        timeout=300)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def test_corpus_is_large_enough():
    assert len(SCHEMAS) >= 100


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.stem)
def test_sampled_output_validates(server, path):
    schema = json.loads(path.read_text())
    seeds = (1, 2, 3) if int(path.stem[:3]) % 20 == 0 else (int(path.stem[:3]),)
    for seed in seeds:
        choice = ask(server, schema, seed)
        text = choice["message"]["content"]
        if choice["finish_reason"] == "length":
            # The budget ran out first: an incomplete JSON, nothing else.
            with pytest.raises(json.JSONDecodeError):
                json.loads(text)
            continue
        assert choice["finish_reason"] == "stop"
        jsonschema.validate(json.loads(text), schema)


class Address(pydantic.BaseModel):
    city: str
    zip_code: str


class Person(pydantic.BaseModel):
    name: str
    age: int
    role: Literal["admin", "user", "guest"]
    nickname: Optional[str]
    addresses: List[Address]


def test_openai_beta_parse_with_pydantic(server):
    client = openai.OpenAI(base_url=server.base_url, api_key="unused",
                           max_retries=0, timeout=300)
    for seed in (1, 2):
        try:
            r = client.beta.chat.completions.parse(
                model="m", messages=[{"role": "user",
                                      "content": "Invent a person as JSON."}],
                response_format=Person, max_tokens=300, temperature=1,
                seed=seed)
        except openai.LengthFinishReasonError:
            # The budget ran out first (the SDK raises rather than return
            # an incomplete JSON): nothing to parse.
            continue
        msg = r.choices[0].message
        if r.choices[0].finish_reason == "stop":
            assert isinstance(msg.parsed, Person)
            assert msg.parsed.role in ("admin", "user", "guest")
