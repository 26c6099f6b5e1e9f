"""Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens)
end to end with the official `anthropic` client on the default model
(SmolLM2: the generic <tool_call> syntax): a message, its usage against
count_tokens and the prefix cache, the stream's events in Anthropic's order
and the stream equal to the non-streamed message, stop sequences, a tool
round trip (tool_use, then tool_result), tool_choice, and bad input refused
in Anthropic's error shape, naming what is wrong."""

import json

import anthropic
import jsonschema
import pytest
import requests

WEATHER = {
    "name": "get_weather",
    "description": "The current weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
}
ADD = {
    "name": "add",
    "description": "Adds two integers.",
    "input_schema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
}
TOOLS = [WEATHER, ADD]
SCHEMAS = {t["name"]: t["input_schema"] for t in TOOLS}
KEY = "messages-key"
USER = [{"role": "user", "content": "Write one sentence about the sea."}]


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "4096", "-t", "2", "--api-key", KEY)


@pytest.fixture(scope="module")
def client(server):
    # the client sends its key as x-api-key
    return anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)


def greedy(**kw):
    # the client of 2026 has no sampling arguments: they go as extra_body
    return {"model": "smollm2", "extra_body": {"temperature": 0, "top_k": 1},
            **kw}


def text_of(msg):
    return "".join(b.text for b in msg.content if b.type == "text")


def test_create_and_usage(client):
    msg = client.messages.create(max_tokens=16, messages=USER,
                                 system="You are terse.", **greedy())
    assert msg.type == "message" and msg.role == "assistant"
    assert msg.id.startswith("msg_") and msg.model == "smollm2"
    assert [b.type for b in msg.content] == ["text"] and text_of(msg)
    assert msg.stop_reason in ("end_turn", "max_tokens")
    assert msg.stop_sequence is None
    assert 0 < msg.usage.output_tokens <= 16
    if msg.stop_reason == "max_tokens":
        assert msg.usage.output_tokens == 16
    # count_tokens counts the prompt the engine ran: the same body again is
    # a prefix cache hit, and cache reads + input are that prompt
    n = client.messages.count_tokens(model="smollm2", messages=USER,
                                     system="You are terse.").input_tokens
    assert msg.usage.input_tokens + msg.usage.cache_read_input_tokens == n
    again = client.messages.create(max_tokens=16, messages=USER,
                                   system="You are terse.", **greedy())
    assert again.usage.cache_read_input_tokens > 0
    assert again.usage.input_tokens + again.usage.cache_read_input_tokens == n
    assert text_of(again) == text_of(msg)
    # a system given as text blocks is the same prompt
    blocks = [{"type": "text", "text": "You are terse."}]
    assert client.messages.count_tokens(
        model="smollm2", messages=USER, system=blocks).input_tokens == n
    # (without it, SmolLM2's template writes its own default system prompt)
    assert client.messages.count_tokens(
        model="smollm2", messages=USER).input_tokens != n


def test_stream_events_in_order_and_equal(client):
    kw = greedy(max_tokens=24, messages=USER)
    whole = client.messages.create(**kw)
    raw = list(client.messages.create(stream=True, **kw))
    types = [e.type for e in raw]
    assert types[0] == "message_start" and types[-2:] == [
        "message_delta", "message_stop"]
    body = [t for t in types[1:-2] if t != "ping"]
    assert body[0] == "content_block_start" and body[-1] == "content_block_stop"
    assert set(body[1:-1]) == {"content_block_delta"}
    assert all(e.index == 0 for e in raw if e.type.startswith("content_block"))
    assert all(e.delta.type == "text_delta" for e in raw
               if e.type == "content_block_delta")
    start = raw[0].message
    assert start.content == [] and start.stop_reason is None
    delta = raw[-2]
    assert delta.delta.stop_reason == whole.stop_reason
    assert delta.usage.output_tokens == whole.usage.output_tokens
    # the client's stream helper folds the same events into the message
    with client.messages.stream(**kw) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(texts) == text_of(final) == text_of(whole)
    assert final.stop_reason == whole.stop_reason
    assert final.usage.output_tokens == whole.usage.output_tokens
    assert (final.usage.input_tokens + final.usage.cache_read_input_tokens ==
            whole.usage.input_tokens + whole.usage.cache_read_input_tokens)


def test_stop_sequences(client):
    kw = greedy(max_tokens=32, messages=USER)
    text = text_of(client.messages.create(**kw))
    words = [w for w in text.split() if len(w) > 2]
    assert len(words) > 2, text
    stop = words[2]
    msg = client.messages.create(stop_sequences=["\u00a7never", stop], **kw)
    assert msg.stop_reason == "stop_sequence"
    assert msg.stop_sequence == stop
    assert text_of(msg) == text[:text.find(stop)]
    with client.messages.stream(stop_sequences=[stop], **kw) as s:
        final = s.get_final_message()
    assert final.stop_reason == "stop_sequence"
    assert final.stop_sequence == stop
    assert text_of(final) == text_of(msg)


def test_prefill_continues_the_last_assistant_turn(client, server):
    turn = USER + [{"role": "assistant", "content": "The sea is"}]
    msg = client.messages.create(max_tokens=12, messages=turn, **greedy())
    # the same conversation through chat completions, continued
    chat = requests.post(
        server.url + "/v1/chat/completions",
        headers={"Authorization": "Bearer " + KEY},
        json={"model": "m", "messages": turn, "max_tokens": 12,
              "temperature": 0, "top_k": 1, "continue_final_message": True,
              "add_generation_prompt": False}).json()
    assert text_of(msg) == chat["choices"][0]["message"]["content"]
    assert (msg.usage.input_tokens + msg.usage.cache_read_input_tokens ==
            chat["usage"]["prompt_tokens"])
    # text blocks around a tool_result keep their order
    calls = [{"role": "user", "content": "Add 2 and 3."},
             {"role": "assistant", "content": [
                 {"type": "tool_use", "id": "toolu_9", "name": "add",
                  "input": {"a": 2, "b": 3}}]}]
    before = {"type": "text", "text": "Here it is."}
    result = {"type": "tool_result", "tool_use_id": "toolu_9",
              "content": "5"}
    n = [client.messages.count_tokens(
        model="m", tools=TOOLS,
        messages=calls + [{"role": "user", "content": blocks}]).input_tokens
        for blocks in ([result], [before, result])]
    assert n[1] > n[0]
    # a conversation that ends with calls needs their results
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.messages.create(max_tokens=4, messages=calls, tools=TOOLS,
                               model="m")
    assert "tool_result blocks come in a user message" in \
        error_of(exc)["message"]


def tool_uses(msg):
    calls = [b for b in msg.content if b.type == "tool_use"]
    for c in calls:
        assert c.id and c.name in SCHEMAS
        jsonschema.validate(c.input, SCHEMAS[c.name])
    return calls


def test_tool_round_trip(client):
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    msg = client.messages.create(max_tokens=96, messages=ask, tools=TOOLS,
                                 tool_choice={"type": "tool",
                                              "name": "get_weather"},
                                 **greedy())
    assert msg.stop_reason == "tool_use", msg
    calls = tool_uses(msg)
    assert [c.name for c in calls] == ["get_weather"]
    # the stream carries the same call: a tool_use block, its input as
    # input_json_delta
    with client.messages.stream(max_tokens=96, messages=ask, tools=TOOLS,
                                tool_choice={"type": "tool",
                                             "name": "get_weather"},
                                **greedy()) as s:
        streamed = s.get_final_message()
    assert streamed.stop_reason == "tool_use"
    assert [(c.name, c.input) for c in tool_uses(streamed)] == [
        (c.name, c.input) for c in calls]
    # the answer goes back as a tool_result for the call's id
    turn = ask + [
        {"role": "assistant", "content": msg.content},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": calls[0].id,
             "content": json.dumps({"temperature": 21, "unit": "celsius"})},
            {"type": "text", "text": "Answer in one sentence."}]},
    ]
    reply = client.messages.create(max_tokens=32, messages=turn, tools=TOOLS,
                                   tool_choice={"type": "none"}, **greedy())
    assert reply.stop_reason in ("end_turn", "max_tokens")
    assert not tool_uses(reply) and text_of(reply)
    # the tool's result is in the prompt: more tokens than without it
    n_with = client.messages.count_tokens(model="m", messages=turn,
                                          tools=TOOLS).input_tokens
    assert n_with > client.messages.count_tokens(
        model="m", messages=ask, tools=TOOLS).input_tokens
    # any: some call, valid against its schema
    anyc = client.messages.create(max_tokens=96, messages=ask, tools=TOOLS,
                                  tool_choice={"type": "any"}, **greedy())
    assert anyc.stop_reason == "tool_use" and tool_uses(anyc)


def error_of(exc):
    body = exc.value.response.json()
    assert body["type"] == "error" and set(body) == {"type", "error"}
    return body["error"]


@pytest.mark.parametrize("extra,needle", [
    ({"frequency_penalty": 1}, "'frequency_penalty' is not a field"),
    ({"tool_choice": {"type": "any"}}, "'tool_choice' needs 'tools'"),
    ({"stop_sequences": "no"}, "'stop_sequences' must be a list"),
    ({"top_k": -5}, "top_k"),
    ({"metadata": {"user": "x"}}, "metadata.user: unknown field"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
     "tool type 'web_search_20250305' is not supported"),
])
def test_bad_fields(client, extra, needle):
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.messages.create(max_tokens=4, messages=USER, model="m",
                               extra_body=extra)
    assert exc.value.status_code == 400
    err = error_of(exc)
    assert err["type"] == "invalid_request_error"
    assert needle in err["message"]


def test_tool_result_for_unknown_id(client):
    turn = [
        {"role": "user", "content": "Add 2 and 3."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "add",
             "input": {"a": 2, "b": 3}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_2",
             "content": "5"}]},
    ]
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.messages.create(max_tokens=4, messages=turn, tools=TOOLS,
                               model="m")
    msg = error_of(exc)["message"]
    assert "messages[2].content[0]" in msg and "'toolu_2'" in msg
    turn[2]["content"][0]["tool_use_id"] = "toolu_1"
    n = client.messages.count_tokens(model="m", messages=turn, tools=TOOLS)
    assert n.input_tokens > 0


def test_errors_in_anthropic_shape(server):
    url = server.url + "/v1/messages"
    hdr = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    r = requests.post(url, headers=hdr,
                      json={"model": "m", "messages": USER})
    assert r.status_code == 400
    assert "'max_tokens' is required" in r.json()["error"]["message"]
    r = requests.post(url, headers={**hdr, "x-api-key": "wrong"},
                      json={"model": "m", "max_tokens": 4, "messages": USER})
    assert r.status_code == 401
    assert r.json()["error"]["type"] == "authentication_error"
    assert r.json()["type"] == "error"
    r = requests.post(url, headers=hdr, data="{",
                      )
    assert r.status_code in (400, 415)
    assert r.json()["type"] == "error"
    r = requests.get(url, headers=hdr)
    assert r.status_code == 405 and r.json()["type"] == "error"
    r = requests.post(url + "/batches", headers=hdr, json={})
    assert r.status_code == 404
    assert r.json()["error"]["type"] == "not_found_error"
    # the same key as a bearer token is accepted too
    r = requests.post(url, headers={"Authorization": "Bearer " + KEY},
                      json={"model": "m", "max_tokens": 2, "messages": USER})
    assert r.status_code == 200 and r.json()["type"] == "message"
    # and OpenAI's routes keep OpenAI's shape
    r = requests.post(server.url + "/v1/chat/completions",
                      headers={"x-api-key": "wrong"}, json={})
    assert r.status_code == 401 and "type" not in r.json()


def test_structured_output(client):
    import pydantic

    class City(pydantic.BaseModel):
        name: str
        population: int

    ask = [{"role": "user", "content": "Describe Paris as JSON."}]
    parsed = client.messages.parse(max_tokens=64, messages=ask,
                                   output_format=City, **greedy())
    assert parsed.stop_reason == "end_turn"
    assert isinstance(parsed.parsed_output, City)
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.messages.create(
            max_tokens=8, messages=ask, model="m",
            extra_body={"output_config": {"format": {"type": "json_schema"}}})
    assert "output_config.format must be" in error_of(exc)["message"]


# Qwen3.5's template opens the thinking block in the generation prompt
# (unless enable_thinking is false); SmolLM2 never closes it, so its whole
# reply is thinking.
@pytest.fixture(scope="module")
def thinker(start_server):
    import pathlib
    template = (pathlib.Path(__file__).resolve().parents[1] /
                "data/templates/qwen3.5.jinja")
    srv = start_server("-c", "1024", "-t", "2", "--chat-template",
                       str(template))
    return anthropic.Anthropic(base_url=srv.url, api_key="k", max_retries=0)


def test_thinking_blocks(thinker):
    kw = greedy(max_tokens=12, messages=USER)
    for thinking in (None, {"type": "adaptive"}):
        extra = {"thinking": thinking} if thinking else {}
        msg = thinker.messages.create(**kw, **extra)
        assert [b.type for b in msg.content] == ["thinking"], msg.content
        assert msg.content[0].thinking and msg.stop_reason == "max_tokens"
    raw = list(thinker.messages.create(stream=True, **kw))
    types = [e.type for e in raw if e.type != "ping"]
    assert types[:2] == ["message_start", "content_block_start"]
    assert raw[[e.type for e in raw].index("content_block_start")] \
        .content_block.type == "thinking"
    deltas = [e.delta for e in raw if e.type == "content_block_delta"]
    assert {d.type for d in deltas[:-1]} == {"thinking_delta"}
    assert deltas[-1].type == "signature_delta"
    assert "".join(d.thinking for d in deltas[:-1]) == \
        msg.content[0].thinking
    with thinker.messages.stream(**kw) as s:
        final = s.get_final_message()
    assert final.content[0].type == "thinking"
    assert final.content[0].thinking == msg.content[0].thinking
    # disabled: the template closes the block in the prompt: all answer
    off = thinker.messages.create(thinking={"type": "disabled"}, **kw)
    assert [b.type for b in off.content] == ["text"]
    on_n = thinker.messages.count_tokens(model="m", messages=USER)
    off_n = thinker.messages.count_tokens(model="m", messages=USER,
                                          thinking={"type": "disabled"})
    assert off_n.input_tokens > on_n.input_tokens
    assert (off.usage.input_tokens + off.usage.cache_read_input_tokens ==
            off_n.input_tokens)


def test_thinking_budget(thinker):
    kw = greedy(max_tokens=20, messages=USER)
    think = {"type": "enabled", "budget_tokens": 6}
    msg = thinker.messages.create(thinking=think, **kw)
    # SmolLM2 never closes the block: the engine does, at the budget, and
    # the rest is the answer
    assert [b.type for b in msg.content] == ["thinking", "text"], msg.content
    assert msg.stop_reason == "max_tokens"
    with thinker.messages.stream(thinking=think, **kw) as s:
        final = s.get_final_message()
    assert [(b.type, getattr(b, "thinking", None) or b.text)
            for b in final.content] == [
        (b.type, getattr(b, "thinking", None) or b.text) for b in msg.content]
    # the same engine as chat's max_reasoning_tokens
    base = thinker.base_url
    chat = requests.post(
        f"{base}/v1/chat/completions",
        json={"model": "m", "messages": USER, "max_tokens": 20,
              "temperature": 0, "top_k": 1, "max_reasoning_tokens": 6,
              "chat_template_kwargs": {"enable_thinking": True}}).json()
    m = chat["choices"][0]["message"]
    # (6 tokens of thinking and the end marker's: test_reasoning.py counts
    # them exactly)
    assert chat["usage"]["completion_tokens_details"]["reasoning_tokens"] > 6
    assert m["reasoning_content"] == msg.content[0].thinking
    assert m["content"] == msg.content[1].text


def test_thinking_refused(thinker):
    for thinking, needle in [
            ({"type": "enabled", "budget_tokens": 64},
             "must be less than max_tokens (32)"),
            ({"type": "adaptive", "display": "omitted"}, "thinking.display"),
            ({"type": "sometimes"}, "thinking.type must be")]:
        with pytest.raises(anthropic.BadRequestError) as exc:
            thinker.messages.create(max_tokens=32, messages=USER, model="m",
                                    thinking=thinking)
        assert needle in error_of(exc)["message"]


def test_structured_answer_after_thinking(thinker):
    # the schema constrains the answer after the thinking (the shared
    # reasoning path); count_tokens is the prompt the engine ran
    schema = {"type": "object", "properties": {"a": {"type": "integer"}},
              "required": ["a"], "additionalProperties": False}
    oc = {"format": {"type": "json_schema", "schema": schema}}
    think = {"type": "enabled", "budget_tokens": 4}
    msg = thinker.messages.create(max_tokens=40, thinking=think,
                                  output_config=oc, **greedy(messages=USER))
    assert [b.type for b in msg.content] == ["thinking", "text"]
    assert msg.stop_reason == "end_turn"
    jsonschema.validate(json.loads(msg.content[1].text), schema)
    n = thinker.messages.count_tokens(model="m", messages=USER,
                                      thinking=think, output_config=oc)
    assert (msg.usage.input_tokens + msg.usage.cache_read_input_tokens ==
            n.input_tokens)
