"""OpenAI's Responses API (POST /v1/responses, GET and DELETE
/v1/responses/{id}) with the official `openai` client, on the default model
(issue 43). The endpoint runs the chat completions job underneath, so each
answer is checked against the chat completion of the same conversation
(greedy: the same text, the same prompt tokens); streamed answers against
non-streamed ones; tool calls through a round trip; a JSON schema with
jsonschema; previous_response_id against the conversation it continues,
with its prompt prefix a prefix-cache hit; the store's limits; and the
errors, each a 400 (404 for a gone id) naming the field."""

import json
import pathlib

import jsonschema
import openai
import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
WEATHER = {"type": "function", "name": "get_weather",
           "description": "The current weather of a city",
           "parameters": {"type": "object",
                          "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
WEATHER_CHAT = {"type": "function",
                "function": {k: WEATHER[k] for k in
                             ("name", "description", "parameters")}}
PERSON = {"type": "object",
          "properties": {"name": {"type": "string"},
                         "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
STORY = ("Tell me a short story about a cat who learns to fly over the "
         "mountains near the old village by the sea.")


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "2048")


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused",
                         max_retries=0, timeout=300)


def chat(client, messages, **kw):
    return client.chat.completions.create(model="m", messages=messages,
                                          temperature=0, **kw)


def test_text_is_the_chat_completion_of_the_same_conversation(client):
    r = client.responses.create(model="m", instructions="Be brief.",
                                input="Say hello.", max_output_tokens=12,
                                temperature=0)
    c = chat(client, [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "Say hello."}],
             max_tokens=12)
    assert r.id.startswith("resp_") and r.object == "response"
    assert [o.type for o in r.output] == ["message"]
    assert r.output[0].content[0].type == "output_text"
    assert r.output_text == c.choices[0].message.content
    assert r.usage.input_tokens == c.usage.prompt_tokens
    assert r.usage.output_tokens == c.usage.completion_tokens
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    assert r.usage.output_tokens_details.reasoning_tokens == 0
    # 12 tokens cut it: incomplete, as OpenAI reports it
    assert c.choices[0].finish_reason == "length"
    assert r.status == "incomplete"
    assert r.incomplete_details.reason == "max_output_tokens"
    assert r.instructions == "Be brief." and r.max_output_tokens == 12
    assert r.temperature == 0 and r.store is True


def test_input_items_are_the_chat_messages(client):
    items = [
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": [{"type": "input_text", "text": "Hi."}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Bonjour !"}]},
        {"role": "user", "content": "What is bread?"},
    ]
    r = client.responses.create(model="m", input=items,
                                max_output_tokens=10, temperature=0)
    c = chat(client, [
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Bonjour !"},
        {"role": "user", "content": "What is bread?"}], max_tokens=10)
    assert r.output_text == c.choices[0].message.content
    assert r.usage.input_tokens == c.usage.prompt_tokens


def events_of(stream):
    events = list(stream)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    return events


def test_streamed_equals_non_streamed(client):
    kw = dict(model="m", input=STORY, max_output_tokens=24, temperature=0,
              metadata={"run": "stream"})
    whole = client.responses.create(**kw)
    events = events_of(client.responses.create(stream=True, **kw))
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress",
                         "response.output_item.added",
                         "response.content_part.added"]
    assert types[-4:] == ["response.output_text.done",
                          "response.content_part.done",
                          "response.output_item.done", "response.incomplete"]
    deltas = "".join(e.delta for e in events
                     if e.type == "response.output_text.delta")
    final = events[-1].response
    assert deltas == whole.output_text == final.output_text
    assert events[-4].text == deltas
    assert final.output[0].id == events[2].item.id
    assert final.usage.output_tokens == whole.usage.output_tokens
    assert final.metadata == {"run": "stream"}
    assert events[0].response.status == "in_progress"


def test_tool_call_round_trip(client):
    r = client.responses.create(model="m", input="What's the weather in Paris?",
                                tools=[WEATHER], tool_choice="required",
                                temperature=0)
    calls = [o for o in r.output if o.type == "function_call"]
    assert calls and r.status == "completed"
    call = calls[0]
    assert call.name == "get_weather" and call.call_id
    jsonschema.validate(json.loads(call.arguments), WEATHER["parameters"])
    # the same call through chat completions' tool_choice
    c = chat(client, [{"role": "user",
                       "content": "What's the weather in Paris?"}],
             tools=[WEATHER_CHAT], tool_choice="required")
    assert c.choices[0].message.tool_calls[0].function.arguments == \
        call.arguments
    # the result: once after previous_response_id, once with the whole
    # conversation as items; both the same prompt
    out = {"type": "function_call_output", "call_id": call.call_id,
           "output": "sunny, 21 C"}
    follow = client.responses.create(model="m", previous_response_id=r.id,
                                     input=[out], tools=[WEATHER],
                                     max_output_tokens=16, temperature=0)
    items = [{"role": "user", "content": "What's the weather in Paris?"},
             *[o.model_dump(exclude_none=True) for o in r.output], out]
    again = client.responses.create(model="m", input=items, tools=[WEATHER],
                                    max_output_tokens=16, temperature=0)
    assert follow.output_text == again.output_text
    assert follow.usage.input_tokens == again.usage.input_tokens
    assert follow.usage.input_tokens_details.cached_tokens > 0


def test_streamed_tool_call(client):
    kw = dict(model="m", input="What's the weather in Paris?",
              tools=[WEATHER],
              tool_choice={"type": "function", "name": "get_weather"},
              temperature=0)
    whole = client.responses.create(**kw)
    events = events_of(client.responses.create(stream=True, **kw))
    types = [e.type for e in events]
    assert "response.function_call_arguments.delta" in types
    done = next(e for e in events
                if e.type == "response.function_call_arguments.done")
    final = events[-1].response
    assert events[-1].type == "response.completed"
    assert done.arguments == final.output[0].arguments == \
        whole.output[0].arguments
    assert final.output[0].call_id == events[2].item.call_id
    # the SDK's stream helper accumulates the same response
    with client.responses.stream(**kw) as s:
        helper = s.get_final_response()
    assert helper.output[0].arguments == whole.output[0].arguments


def test_json_schema_and_json_object(client):
    fmt = {"type": "json_schema", "name": "person", "schema": PERSON,
           "strict": True}
    r = client.responses.create(model="m", input="Give me a person as JSON.",
                                text={"format": fmt}, temperature=0)
    jsonschema.validate(json.loads(r.output_text), PERSON)
    assert r.text.format.type == "json_schema"
    r = client.responses.create(model="m", input="Give me a person as JSON.",
                                text={"format": {"type": "json_object"}},
                                temperature=0)
    assert isinstance(json.loads(r.output_text), dict)


def test_previous_response_id_continues_the_conversation(client, server):
    r1 = client.responses.create(model="m", instructions="Be brief.",
                                 input=STORY, max_output_tokens=16,
                                 temperature=0)
    r2 = client.responses.create(model="m", instructions="Be brief.",
                                 previous_response_id=r1.id,
                                 input="And then?", max_output_tokens=8,
                                 temperature=0)
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": STORY},
                {"role": "assistant", "content": r1.output_text},
                {"role": "user", "content": "And then?"}]
    c = chat(client, messages, max_tokens=8)
    assert r2.output_text == c.choices[0].message.content
    assert r2.usage.input_tokens == c.usage.prompt_tokens
    assert r2.previous_response_id == r1.id
    # the first turn's prompt is cached: whole 16-token blocks of it
    assert r2.usage.input_tokens_details.cached_tokens >= 16
    # a third turn continues the second
    r3 = client.responses.create(model="m", instructions="Be brief.",
                                 previous_response_id=r2.id,
                                 input="Thanks.", max_output_tokens=4,
                                 temperature=0)
    assert r3.usage.input_tokens > r2.usage.input_tokens
    assert r3.usage.input_tokens_details.cached_tokens >= \
        r2.usage.input_tokens_details.cached_tokens


def test_retrieve_and_delete(client):
    r = client.responses.create(model="m", input="Hi.", max_output_tokens=4,
                                temperature=0, metadata={"k": "v"})
    got = client.responses.retrieve(r.id)
    assert got.model_dump() == r.model_dump()
    assert got.metadata == {"k": "v"}
    client.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.retrieve(r.id)
    assert r.id in e.value.body["message"]
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(r.id)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="m", previous_response_id=r.id,
                                input="Again.")
    assert e.value.body["param"] == "previous_response_id"
    # store: false keeps nothing
    r = client.responses.create(model="m", input="Hi.", max_output_tokens=4,
                                store=False)
    assert r.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)


def test_store_limits(start_server):
    srv = start_server("-c", "1024", "--responses-max", "2",
                       "--responses-max-bytes", "6000")
    c = openai.OpenAI(base_url=srv.base_url, api_key="unused",
                      max_retries=0, timeout=300)
    ids = [c.responses.create(model="m", input=f"Count to {i}.",
                              max_output_tokens=2).id for i in range(3)]
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(ids[0])  # the least recently used went first
    assert c.responses.retrieve(ids[1]).id == ids[1]
    c.responses.retrieve(ids[1])  # now ids[2] is the least recently used
    c.responses.create(model="m", input="Hi.", max_output_tokens=2)
    assert c.responses.retrieve(ids[1]).id == ids[1]
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(ids[2])
    store = requests.get(srv.url + "/props", timeout=30).json()[
        "responses_store"]
    assert store["max_responses"] == 2 and store["max_bytes"] == 6000
    assert store["responses"] == 2 and 0 < store["bytes"] <= 6000
    # one response larger than the byte limit is not kept
    big = c.responses.create(model="m", input="Hi.", max_output_tokens=2,
                             metadata={f"k{i}": "v" * 500 for i in range(16)})
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(big.id)


BAD = [
    ({"frequency_penalty": 1}, "frequency_penalty"),
    ({"tools": [{"type": "web_search"}]}, "tools"),
    ({"tool_choice": {"type": "function", "name": "nope"},
      "tools": [WEATHER]}, "tool_choice"),
    ({"input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": "http://x/y.png"}]}]},
     "input[0]"),
    ({"input": [{"type": "function_call_output", "call_id": "call_nope",
                 "output": "x"}]}, "input[0]"),
    ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0]"),
    ({"input": 5}, "input"),
    ({"reasoning": {"effort": "low"}}, "reasoning.effort"),
    ({"reasoning": {"summary": "auto"}}, "reasoning.summary"),
    ({"max_output_tokens": -5}, "max_output_tokens"),
    ({"max_output_tokens": 5000}, "input"),
    ({"temperature": -1}, "temperature"),
    ({"text": {"format": {"type": "yaml"}}}, "text.format"),
    ({"text": {"verbosity": "low"}}, "text"),
    ({"text": {"format": {"type": "json_schema", "name": "x",
                          "schema": {"type": "object", "properties": 5}}}},
     "text.format"),
    ({"truncation": "auto"}, "truncation"),
    ({"background": True}, "background"),
    ({"include": ["reasoning.encrypted_content"]}, "include"),
    ({"metadata": {str(i): "v" for i in range(17)}}, "metadata"),
    ({"previous_response_id": "resp_gone"}, "previous_response_id"),
]


@pytest.mark.parametrize("body,param", BAD, ids=[p for _, p in BAD])
def test_errors_name_the_field(server, body, param):
    r = requests.post(server.url + "/v1/responses",
                      json={"model": "m", "input": "Hi.", **body}, timeout=60)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param, err
    assert err["type"] == "invalid_request_error"


def test_get_with_query_and_unknown_id(server):
    r = requests.get(server.url + "/v1/responses/resp_x?stream=true",
                     timeout=30)
    assert r.status_code == 400
    r = requests.get(server.url + "/v1/responses/resp_x", timeout=30)
    assert r.status_code == 404
    assert r.json()["error"]["message"] == \
        "Response with id 'resp_x' not found."


# ---------------------------------------------- reasoning (a thinking template)

CITY = {"type": "object",
        "properties": {"city": {"type": "string", "maxLength": 12}},
        "required": ["city"], "additionalProperties": False}


@pytest.fixture(scope="module")
def thinking(start_server):
    """The default model given Qwen3's template: a schema constrains only
    the answer, so the thinking before it is free text that the budget
    (max_reasoning_tokens, nucleus's) closes."""
    srv = start_server("-c", "1024", "--chat-template",
                       str(ROOT / "tests/data/templates/qwen3.jinja"))
    return openai.OpenAI(base_url=srv.base_url, api_key="unused",
                         max_retries=0, timeout=300)


def test_reasoning_item(thinking):
    kw = dict(model="m", input="What is the capital of France?",
              temperature=0, max_output_tokens=80,
              text={"format": {"type": "json_schema", "name": "city",
                               "schema": CITY}},
              extra_body={"max_reasoning_tokens": 12})
    r = thinking.responses.create(**kw)
    assert [o.type for o in r.output] == ["reasoning", "message"]
    reasoning = r.output[0].content[0].text
    assert reasoning and "<think>" not in r.output_text
    jsonschema.validate(json.loads(r.output_text), CITY)
    # the chat completion of the same request: the same split
    c = thinking.chat.completions.create(
        model="m", messages=[{"role": "user",
                              "content": "What is the capital of France?"}],
        temperature=0, max_tokens=80,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "city", "schema": CITY}},
        extra_body={"max_reasoning_tokens": 12})
    assert c.choices[0].message.model_extra["reasoning_content"] == reasoning
    assert r.usage.output_tokens_details.reasoning_tokens == \
        c.usage.completion_tokens_details.reasoning_tokens > 0
    # streamed: the reasoning item's deltas, then the message's
    events = events_of(thinking.responses.create(stream=True, **kw))
    joined = "".join(e.delta for e in events
                     if e.type == "response.reasoning_text.delta")
    assert joined == reasoning
    final = events[-1].response
    assert events[-1].type == "response.completed"
    assert final.output[0].id == r.output[0].id.replace(r.id[5:],
                                                        final.id[5:])
    assert final.output_text == r.output_text
    # a follow-up carries the reasoning to the template (Qwen3 drops it
    # before the last user turn: the prompt is the chat one without it)
    follow = thinking.responses.create(
        model="m", previous_response_id=r.id, input="And of Italy?",
        max_output_tokens=4, temperature=0)
    assert follow.usage.input_tokens_details.cached_tokens > 0
    # reasoning.effort is chat's reasoning_effort: Qwen3's switch
    r = thinking.responses.create(model="m", input="Hi.", max_output_tokens=2,
                                  reasoning={"effort": "high"})
    assert r.reasoning.effort == "high"
