"""Structured output through nucleus serve: llama.cpp's `grammar` (GBNF),
OpenAI's response_format json_object (also through the official openai
client), vLLM's guided_choice / guided_grammar / structured_outputs, on
both routes; the 400s (grammar line and column, two asks at once, what is
not built yet). One server; max_tokens stays small."""

import json
import re

import openai
import pytest
import requests


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "1024", "-t", "2")


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused",
                         max_retries=0, timeout=120)


def post(server, path, body):
    return requests.post(server.url + path, json=body, timeout=120)


def chat(server, body):
    return post(server, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Describe a person."}],
        **body})


PERSON = ('root ::= "{\\"name\\": \\"" [A-Za-z ]{1,12} "\\", \\"age\\": " '
          '[1-9] [0-9]? "}"\n')
PERSON_RE = re.compile(r'\{"name": "[A-Za-z ]{1,12}", "age": [1-9][0-9]?\}')


TAGS = ["red", "green", "blue", "cyan", "black", "white"]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_unique_items_of_an_enum(server, seed):
    """uniqueItems over an enum: arrays of any length minItems allows,
    never a repeat (it was refused with minItems 2, and made one item at
    most without it)."""
    schema = {"type": "object", "properties": {"tags": {
        "type": "array", "items": {"enum": TAGS}, "uniqueItems": True,
        "minItems": 3}}, "required": ["tags"], "additionalProperties": False}
    r = chat(server, {"max_tokens": 60, "temperature": 1.5, "seed": seed,
                      "response_format": {"type": "json_schema", "json_schema": {
                          "name": "t", "schema": schema}}})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    tags = json.loads(choice["message"]["content"])["tags"]
    assert 3 <= len(tags) <= len(TAGS) and len(set(tags)) == len(tags)
    assert set(tags) <= set(TAGS)


@pytest.mark.parametrize("items", [
    {"type": "string", "maxLength": 2},
    {"type": "integer", "minimum": 0, "maximum": 3},
])
def test_unique_items_of_strings_and_numbers(client, items):
    """uniqueItems over strings and numbers (issue 38): the matcher records
    the array's items and refuses to close a repeat (strings decoded,
    numbers by value), so n=4 samples at temperature 1 through the openai
    client all validate under jsonschema (it was a 400 with minItems 2).
    The integers take 4 values: the fifth item is never begun."""
    import jsonschema
    schema = {"type": "object", "properties": {"xs": {
        "type": "array", "items": items, "uniqueItems": True,
        "minItems": 3, "maxItems": 6}}, "required": ["xs"],
        "additionalProperties": False}
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content":
                              "List a few short codes as JSON."}],
        response_format={"type": "json_schema", "json_schema": {
            "name": "codes", "schema": schema}},
        n=4, temperature=1, seed=11, max_tokens=120)
    assert len(r.choices) == 4
    for choice in r.choices:
        assert choice.finish_reason == "stop", choice
        value = json.loads(choice.message.content)
        jsonschema.validate(value, schema)
        xs = value["xs"]
        assert len({json.dumps(x) for x in xs}) == len(xs)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gbnf_grammar_output_matches_and_stops(server, seed):
    r = chat(server, {"grammar": PERSON, "max_tokens": 40, "temperature": 1,
                      "seed": seed})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert PERSON_RE.fullmatch(choice["message"]["content"]), choice
    assert choice["finish_reason"] == "stop"


def test_grammar_on_completions_route(server):
    r = post(server, "/v1/completions", {
        "prompt": "The answer is", "guided_grammar": PERSON,
        "max_tokens": 40, "temperature": 0})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert PERSON_RE.fullmatch(choice["text"]), choice
    assert choice["finish_reason"] == "stop"


def test_budget_first_is_length_and_a_prefix(server):
    r = chat(server, {"grammar": PERSON, "max_tokens": 3, "temperature": 0})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "length"
    assert '{"name": "'.startswith(choice["message"]["content"][:10]) or \
        choice["message"]["content"].startswith('{"name": "')


@pytest.mark.parametrize("field", ["guided_choice", "structured_outputs"])
def test_choice(server, field):
    choices = ["sunny", "rainy", "snowy and cold"]
    body = ({"guided_choice": choices} if field == "guided_choice"
            else {"structured_outputs": {"choice": choices}})
    for seed in (1, 2):
        r = chat(server, {**body, "max_tokens": 30, "temperature": 1,
                          "seed": seed})
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        assert choice["message"]["content"] in choices
        assert choice["finish_reason"] == "stop"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_json_object_with_openai_client(client, seed):
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content":
                              "Give a JSON object describing a cat."}],
        response_format={"type": "json_object"}, max_tokens=60,
        temperature=1, seed=seed)
    text = r.choices[0].message.content
    assert text.startswith("{")
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(text), dict)
    else:  # the budget ran out first: the JSON is incomplete, no more
        assert r.choices[0].finish_reason == "length"
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)


def test_json_object_streamed_equals_whole(client):
    kw = dict(model="m", messages=[{"role": "user", "content": "JSON?"}],
              response_format={"type": "json_object"}, max_tokens=30,
              temperature=0)
    whole = client.chat.completions.create(**kw).choices[0].message.content
    parts = [c.choices[0].delta.content or "" for c in
             client.chat.completions.create(stream=True, **kw) if c.choices]
    assert "".join(parts) == whole


@pytest.mark.parametrize("body,param,words", [
    ({"grammar": 'root ::= "a"\nx ::= [b'}, "grammar", "line 2 column"),
    ({"grammar": "root ::= undefined_rule"}, "grammar", "undefined rule"),
    ({"grammar": "root ::= root \"a\" | \"a\""}, "grammar", "left recursion"),
    ({"grammar": "root ::= \"a\" root"}, "grammar", "empty language"),
    ({"grammar": 5}, "grammar", "string"),
    ({"guided_choice": []}, "guided_choice", "list"),
    ({"grammar": "root ::= \"a\"", "guided_choice": ["a"]}, "guided_choice",
     "give one"),
    ({"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "array", "uniqueItems": True,
                                "minItems": 2}}}},
     "response_format", "'uniqueItems'"),
    ({"guided_json": {"type": "object", "properties": {"a": {"if": {}}}}},
     "guided_json", "'if' is not supported (it changes what validates and "
     "the grammar cannot enforce it) (at #/properties/a)"),
    ({"json_schema": {"type": "string", "format": "iri"}},
     "json_schema", "format 'iri'"),
    ({"json_schema": {"$ref": "http://x/y"}}, "json_schema", "$ref"),
    # a keyword of the wrong JSON type (a list of patterns is the allOf
    # merge's own form, never a user's)
    ({"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"a": {
            "type": "string", "pattern": ["^a", "b$"]}}}}}},
     "response_format",
     "'pattern' must be a string, not a list (at #/properties/a)"),
    ({"json_schema": {"type": "object", "required": "a"}}, "json_schema",
     "'required' must be a list of strings, not a string (at #)"),
    ({"json_schema": {"items": {"type": "string", "minLength": -2}}},
     "json_schema",
     "'minLength' must be an integer of at least 0, not -2 (at #/items)"),
    ({"guided_regex": "[a-z]+"}, "guided_regex", "not supported"),
    ({"structured_outputs": {"whitespace": 1}}, "structured_outputs",
     "not supported"),
    ({"grammar": "root ::= \"a\"", "use_beam_search": True, "n": 1,
      "best_of": 2, "temperature": 0}, None, "grammars"),
])
def test_bad_structured_requests_are_400(server, body, param, words):
    r = chat(server, {"max_tokens": 2, **body})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    if param:
        assert err["param"] == param
    assert words in err["message"], err


def test_cli_grammar_flags(tmp_path):
    import subprocess
    from conftest import DEFAULT_MODEL, NUCLEUS_BIN, require_binary_and_model
    require_binary_and_model()
    gfile = tmp_path / "yn.gbnf"
    gfile.write_text('root ::= ("yes" | "no") "."\n')
    for flag, value in (("--grammar", gfile.read_text()),
                        ("--grammar-file", str(gfile))):
        r = subprocess.run([NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, "-t", "2",
                            "-p", "Is the sky blue?", flag, value],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("Is the sky blue?")
        assert r.stdout[len("Is the sky blue?"):].strip() in ("yes.", "no.")
        assert "finish: stop" in r.stdout + r.stderr
    bad = subprocess.run([NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, "-p", "x",
                          "--grammar", "root ::= x"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0
    assert "line 1 column 10" in bad.stderr


PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "role": {"enum": ["admin", "user", "guest"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12},
                 "maxItems": 3},
        "address": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 20},
            "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["city", "zip"], "additionalProperties": False},
    },
    "required": ["name", "age", "role", "address"],
    "additionalProperties": False,
}


def test_cli_json_schema_flags(tmp_path):
    """nucleus run|chat --json-schema / --json-schema-file: the greedy output
    parses and validates; bad schemas and a second grammar flag are errors
    that name the keyword or the flags."""
    import subprocess
    import jsonschema
    from conftest import DEFAULT_MODEL, NUCLEUS_BIN, require_binary_and_model
    require_binary_and_model()
    sfile = tmp_path / "person.json"
    sfile.write_text(json.dumps(PERSON_SCHEMA))
    prompt = "A person as JSON:"
    for flag, value in (("--json-schema", json.dumps(PERSON_SCHEMA)),
                        ("--json-schema-file", str(sfile))):
        r = subprocess.run([NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, "-t", "2",
                            "--temp", "0", "-n", "200", "-p", prompt,
                            flag, value],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(prompt)
        assert "finish: stop" in r.stdout + r.stderr
        out = r.stdout[len(prompt):].strip()
        jsonschema.validate(json.loads(out), PERSON_SCHEMA)
    # chat: one turn from stdin, the reply alone on stdout.
    r = subprocess.run([NUCLEUS_BIN, "chat", "-m", DEFAULT_MODEL, "-t", "2",
                        "--temp", "0", "-n", "200", "--json-schema-file",
                        str(sfile)], input="Invent a person.\n",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    jsonschema.validate(json.loads(r.stdout.strip()), PERSON_SCHEMA)

    def fails(*args):
        r = subprocess.run([NUCLEUS_BIN, "run", "-m", DEFAULT_MODEL, "-p", "x",
                            *args], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode != 0
        return r.stderr
    # The same words as the server's 400.
    assert ("--json-schema: 'uniqueItems' with minItems 2 is not supported"
            in fails("--json-schema",
                     '{"type":"array","uniqueItems":true,"minItems":2}'))
    assert "--json-schema: not JSON" in fails("--json-schema", '{"type":')
    assert "format 'iri'" in fails(
        "--json-schema", '{"type":"string","format":"iri"}')
    assert "exclude each other" in fails(
        "--json-schema", "{}", "--grammar", 'root ::= "a"')
    assert "exclude each other" in fails(
        "--grammar", 'root ::= "a"', "--json-schema-file", str(sfile))
    assert "cannot open" in fails("--json-schema-file",
                                  str(tmp_path / "missing.json"))
    # bench times free decoding: it refuses the grammar flags, not ignores.
    r = subprocess.run([NUCLEUS_BIN, "bench", "-m", DEFAULT_MODEL,
                        "--json-schema", "{}"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "for run and chat" in r.stderr, r.stderr
