"""Tool calling end to end with the official openai client on the default
model (SmolLM2: the generic <tool_call> syntax; tools described in the system
message): an agent loop of three rounds (required, then auto), forced and
named calls whose arguments validate against their schemas, streamed
tool_calls deltas that concatenate to the non-streamed call, and bad input
refused with the parameter named."""

import json

import jsonschema
import openai
import pytest
import requests

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Adds two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [WEATHER, ADD]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "4096", "-t", "2")


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused")


def check_call(call, name=None):
    assert call.type == "function"
    assert call.id
    assert call.function.name in SCHEMAS
    if name:
        assert call.function.name == name
    args = json.loads(call.function.arguments)
    jsonschema.validate(args, SCHEMAS[call.function.name])
    return args


def fake_result(call):
    args = json.loads(call.function.arguments)
    if call.function.name == "add":
        return str(args["a"] + args["b"])
    return json.dumps({"city": args["city"], "temperature": 21,
                       "unit": args["unit"]})


def streamed(client, **kw):
    """The streamed reply, folded: content, calls by index, finish."""
    content, calls, finish = "", {}, None
    for chunk in client.chat.completions.create(stream=True, **kw):
        if not chunk.choices:
            continue
        ch = chunk.choices[0]
        if ch.delta.content:
            content += ch.delta.content
        for d in ch.delta.tool_calls or []:
            c = calls.setdefault(d.index, {"id": None, "name": "", "args": ""})
            if d.id:
                assert c["id"] is None, "the id comes once"
                c["id"] = d.id
            if d.function and d.function.name:
                c["name"] += d.function.name
            if d.function and d.function.arguments:
                c["args"] += d.function.arguments
        if ch.finish_reason:
            finish = ch.finish_reason
    return content, [calls[i] for i in sorted(calls)], finish


@pytest.mark.parametrize("stream", [False, True])
def test_agent_loop(client, stream):
    messages = [{"role": "user", "content":
                 "What is the weather in Paris, and what is 17 + 25?"}]
    rounds = 0
    for choice in ("required", "auto", "auto"):
        kw = dict(model="m", messages=messages, tools=TOOLS,
                  tool_choice=choice, max_tokens=80, temperature=0)
        if stream:
            content, calls, finish = streamed(client, **kw)
            if calls:
                assert finish == "tool_calls"
                for c in calls:
                    assert c["id"] and c["name"] in SCHEMAS
                    jsonschema.validate(json.loads(c["args"]),
                                        SCHEMAS[c["name"]])
                msg = {"role": "assistant", "content": content or None,
                       "tool_calls": [{"id": c["id"], "type": "function",
                                       "function": {"name": c["name"],
                                                    "arguments": c["args"]}}
                                      for c in calls]}
                results = [(c["id"], fake_result(openai.types.chat.
                            ChatCompletionMessageToolCall(
                                id=c["id"], type="function",
                                function={"name": c["name"],
                                          "arguments": c["args"]})))
                           for c in calls]
            else:
                assert choice != "required"
                messages.append({"role": "assistant", "content": content})
                break
        else:
            r = client.chat.completions.create(**kw)
            m = r.choices[0].message
            if m.tool_calls:
                assert r.choices[0].finish_reason == "tool_calls"
                for c in m.tool_calls:
                    check_call(c)
                msg = m.model_dump(exclude_none=True)
                results = [(c.id, fake_result(c)) for c in m.tool_calls]
            else:
                assert choice != "required", "required must call"
                messages.append({"role": "assistant", "content": m.content})
                break
        messages.append(msg)
        for call_id, result in results:
            messages.append({"role": "tool", "tool_call_id": call_id,
                             "content": result})
        rounds += 1
    assert rounds >= 1


@pytest.mark.parametrize("name", ["add", "get_weather"])
def test_named_function_is_called(client, name):
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Go ahead."}],
        tools=TOOLS, tool_choice={"type": "function", "function": {"name": name}},
        max_tokens=80, temperature=1.0, seed=5)
    calls = r.choices[0].message.tool_calls
    assert calls and len(calls) >= 1
    for c in calls:
        check_call(c, name)
    assert r.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_required_calls_validate_at_temperature_1(client, seed):
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Add 2 and 40."}],
        tools=TOOLS, tool_choice="required", max_tokens=100, temperature=1.0,
        seed=seed)
    calls = r.choices[0].message.tool_calls
    assert calls, r.choices[0].message
    for c in calls:
        check_call(c)


def test_parallel_tool_calls_false_gives_one_call(client):
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
        max_tokens=100, temperature=0)
    assert len(r.choices[0].message.tool_calls) == 1


def test_stream_equals_non_stream(client):
    kw = dict(model="m", messages=[{"role": "user", "content": "17 + 25?"}],
              tools=TOOLS, tool_choice="required", max_tokens=80,
              temperature=0)
    r = client.chat.completions.create(**kw)
    content, calls, finish = streamed(client, **kw)
    want = r.choices[0].message.tool_calls
    assert [(c["name"], c["args"]) for c in calls] == \
        [(c.function.name, c.function.arguments) for c in want]
    assert finish == r.choices[0].finish_reason == "tool_calls"
    assert (content or None) == r.choices[0].message.content


def test_tool_choice_none_is_plain_text(client):
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Hi"}], tools=TOOLS,
        tool_choice="none", max_tokens=8, temperature=0)
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].finish_reason in ("stop", "length")


@pytest.mark.parametrize("body,param", [
    ({"tools": "notalist"}, "tools"),
    ({"tools": [{"type": "function", "function": {}}]}, "tools"),
    ({"tools": [{"type": "function", "function": {"name": "a b"}}]}, "tools"),
    ({"tools": [{"type": "function", "function": {"name": "f",
                                                  "parameters": []}}]},
     "tools"),
    ({"tools": [WEATHER, WEATHER]}, "tools"),
    ({"tools": TOOLS, "tool_choice": {"type": "function",
                                      "function": {"name": "nope"}}},
     "tool_choice"),
    ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"tools": TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"tools": TOOLS, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "content": "5"}]}, "messages"),
    ({"tools": TOOLS, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "x", "type": "function",
                                              "function": {"name": "add"}}]}]},
     "messages"),
])
def test_bad_tools_are_400(server, body, param):
    b = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
         "max_tokens": 2}
    b.update(body)
    r = requests.post(server.url + "/v1/chat/completions", json=b)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


def test_tools_on_completions_route_are_400(server):
    r = requests.post(server.url + "/v1/completions",
                      json={"prompt": "x", "tools": TOOLS, "max_tokens": 2})
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "tools"
