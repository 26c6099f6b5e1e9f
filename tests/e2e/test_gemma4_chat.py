"""Chat on the random-weight Gemma 4 file (scripts/make_arch_gguf.py gemma4,
`make arch-models`) with Gemma 4's published template
(tests/data/templates/gemma4.jinja, given with --chat-template): the server
renders the conversation through it (system turn, tool declarations,
thinking, the call and its result as the template writes them), reads the
template's call syntax as the "gemma4" format, and answers a chat with
tools in OpenAI's structure; tool_choice required or named is forced by a
grammar of Gemma 4's call syntax whose arguments match each tool's
schema; a file without a template renders with the built-in Gemma 4 one. The weights are random: the structure is
checked, not the text."""

import json
import pathlib
import subprocess

import jsonschema
import openai
import pytest
import requests

from conftest import NUCLEUS_BIN

ROOT = pathlib.Path(__file__).resolve().parents[2]
GEMMA4 = ROOT / "build/arch/gemma4.gguf"
TEMPLATE = ROOT / "tests/data/templates/gemma4.jinja"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ASK = [{"role": "system", "content": "Be brief."},
       {"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def server(start_server):
    assert GEMMA4.is_file(), f"{GEMMA4} is missing: `make arch-models`"
    return start_server("-c", "1024", "-t", "2", "--chat-template",
                        str(TEMPLATE), model=str(GEMMA4))


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused")


def test_template_renders_tools_and_thinking(server):
    call = {"role": "assistant", "content": "",
            "reasoning_content": "Call the tool.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "21 C"}
    r = requests.post(server.url + "/apply-template", timeout=30, json={
        "messages": ASK + [call, result], "tools": [WEATHER],
        "add_generation_prompt": True,
        "chat_template_kwargs": {"enable_thinking": True}})
    assert r.status_code == 200, r.text
    p = r.json()["prompt"]
    # (the file's BOS is the default model's vocabulary's <|im_start|>)
    assert p.startswith("<|im_start|><|turn>system\n<|think|>\nBe brief."
                        "<|tool>declaration:get_weather{")
    assert "<|turn>user\nWhat is the weather in Paris?<turn|>\n" in p
    assert ("<|turn>model\n<|channel>thought\nCall the tool.\n<channel|>"
            # the arguments' JSON text read as an object, key by key
            "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
            "<|tool_response>response:get_weather{value:<|\"|>21 C<|\"|>}"
            "<tool_response|>") in p


def test_chat_with_tools_answers_in_structure(client):
    r = client.chat.completions.create(model="m", messages=ASK, tools=[WEATHER],
                                       max_tokens=8, temperature=0)
    choice = r.choices[0]
    assert choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length", "tool_calls")
    assert r.usage.completion_tokens <= 8
    assert choice.message.content is not None or choice.message.tool_calls


ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Adds two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer", "maximum": 999},
                           "b": {"type": "number"},
                           "tags": {"type": "array", "maxItems": 2,
                                    "items": {"enum": ["x", "y z"]}}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
}
SHORT_CITY = {**WEATHER, "function": {**WEATHER["function"], "parameters": {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12},
                   "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"], "additionalProperties": False}}}
TOOLS = [SHORT_CITY, ADD]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def check_calls(message, n_max):
    assert not message.content
    assert 1 <= len(message.tool_calls) <= n_max
    for call in message.tool_calls:
        name = call.function.name
        assert name in SCHEMAS
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[name])


def test_forced_call_in_gemma4_syntax(client):
    # the grammar writes <|tool_call>call:NAME{key:value}<tool_call|>, whose
    # arguments (strings between <|"|> marks) read back as valid JSON
    for seed in (1, 2, 3):
        r = client.chat.completions.create(
            model="m", messages=ASK, tools=TOOLS, tool_choice="required",
            temperature=1, seed=seed, max_tokens=300)
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls", choice
        check_calls(choice.message, 2)


def test_named_call_single(client):
    r = client.chat.completions.create(
        model="m", messages=ASK, tools=TOOLS, temperature=1, seed=4,
        tool_choice={"type": "function", "function": {"name": "add"}},
        max_tokens=300)
    calls = r.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["add"]
    check_calls(r.choices[0].message, 1)


def test_parallel_off_one_call(client):
    for seed in (5, 6):
        r = client.chat.completions.create(
            model="m", messages=ASK, tools=TOOLS, tool_choice="required",
            parallel_tool_calls=False, temperature=1, seed=seed,
            max_tokens=300)
        check_calls(r.choices[0].message, 1)


def test_streamed_call_equals_whole(client):
    args = dict(model="m", messages=ASK, tools=TOOLS, tool_choice="required",
                temperature=1, seed=7, max_tokens=300)
    whole = client.chat.completions.create(**args).choices[0].message
    calls, finish = {}, None
    for chunk in client.chat.completions.create(stream=True, **args):
        delta = chunk.choices[0].delta
        assert not delta.content
        for c in delta.tool_calls or []:
            entry = calls.setdefault(c.index, {"name": None, "args": ""})
            entry["name"] = c.function.name or entry["name"]
            entry["args"] += c.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert [calls[i]["name"] for i in sorted(calls)] == \
        [c.function.name for c in whole.tool_calls]
    assert [json.loads(calls[i]["args"]) for i in sorted(calls)] == \
        [json.loads(c.function.arguments) for c in whole.tool_calls]


def test_schema_outside_gemma4_syntax_refused(client):
    # patterns are JSON escapes: refused for this syntax, naming the tool
    tool = {"type": "function", "function": {
        "name": "lookup", "parameters": {
            "type": "object",
            "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}}}}
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="m", messages=ASK, tools=[tool],
                                       tool_choice="required", max_tokens=8)
    assert e.value.body["param"] == "tools"
    assert "'lookup'" in e.value.body["message"]
    assert "'pattern'" in e.value.body["message"]


def test_builtin_template_for_files_without_one(tmp_path):
    # the file with its template key renamed (same length): the gemma4
    # arch's built-in template renders the goldens' conversation as the
    # model's own template does (the random file's BOS is <|im_start|>)
    data = GEMMA4.read_bytes()
    assert data.count(b"tokenizer.chat_template") == 1
    bare = tmp_path / "gemma4_bare.gguf"
    bare.write_bytes(data.replace(b"tokenizer.chat_template",
                                  b"tokenizer.chat_templatx"))
    del data
    golden = json.loads((ROOT / "tests/data/templates/gemma4.golden.json")
                        .read_text())
    convs = {c["name"]: c for c in json.loads(
        (ROOT / "tests/data/templates/conversations.json").read_text())}
    name = "gemma4_reasoning_tool_round_trip"
    want = next(c["expected"] for c in golden["cases"]
                if c["conversation"] == name and c["add_generation_prompt"])
    conv = convs[name]
    body = tmp_path / "conv.json"
    body.write_text(json.dumps({
        "messages": conv["messages"], "tools": conv["tools"],
        "chat_template_kwargs": conv["kwargs"]}))
    p = subprocess.run([NUCLEUS_BIN, "template", "-m", str(bare), str(body)],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert "built-in 'gemma4' template" in p.stderr.decode()
    assert want.startswith(golden["bos_token"])
    assert p.stdout.decode() == "<|im_start|>" + want[len(golden["bos_token"]):]
