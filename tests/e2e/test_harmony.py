"""gpt-oss's harmony format through the server, with the official openai
client, on the random-weight gpt-oss file (scripts/make_arch_gguf.py gptoss:
the harmony control tokens and the published template; its text is noise,
so these check the structure): a call forced by tool_choice (required or
named) is a commentary message to functions.NAME whose body the grammar
makes match the tool's schema, parsed into tool_calls, streamed as the
non-streamed one; a reply in both channels (forced by a grammar) gives
reasoning_content and content, streamed alike; reasoning_effort and the
conversation's reasoning, call
and result reach the template as it reads them (thinking, arguments as
objects, "Reasoning: ..."); reasoning_effort is refused elsewhere; `nucleus
info` shows the KV bytes of the sliding-window layers; `nucleus chat` shows
the analysis as thinking and the final channel as the answer, no
markers."""

import json
import pathlib
import subprocess

import jsonschema
import openai
import pytest
import requests

from conftest import NUCLEUS_BIN

ROOT = pathlib.Path(__file__).resolve().parents[2]
GPTOSS = ROOT / "build/arch/gptoss.gguf"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 12},
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
            "properties": {"a": {"type": "integer", "maximum": 999},
                           "b": {"type": "integer", "maximum": 999}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [WEATHER, ADD]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def server(start_server):
    assert GPTOSS.is_file(), f"{GPTOSS} is missing: `make arch-models`"
    return start_server("-c", "2048", "-t", "2", model=str(GPTOSS))


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused")


def test_forced_call_parses(client):
    for seed in (1, 2, 3):
        r = client.chat.completions.create(
            model="m", messages=ASK, tools=TOOLS, tool_choice="required",
            temperature=1, seed=seed, max_tokens=200)
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls", choice
        calls = choice.message.tool_calls
        assert len(calls) == 1
        name = calls[0].function.name
        assert name in SCHEMAS
        jsonschema.validate(json.loads(calls[0].function.arguments),
                            SCHEMAS[name])
        assert not choice.message.content


def test_named_call(client):
    r = client.chat.completions.create(
        model="m", messages=ASK, tools=TOOLS, temperature=1, seed=4,
        tool_choice={"type": "function", "function": {"name": "add"}},
        max_tokens=200)
    calls = r.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["add"]
    jsonschema.validate(json.loads(calls[0].function.arguments), SCHEMAS["add"])


def test_streamed_call_equals_whole(client):
    args = dict(model="m", messages=ASK, tools=TOOLS, tool_choice="required",
                temperature=1, seed=5, max_tokens=200)
    whole = client.chat.completions.create(**args).choices[0].message
    name, text, finish = None, "", None
    for chunk in client.chat.completions.create(stream=True, **args):
        delta = chunk.choices[0].delta
        assert not delta.content
        for c in delta.tool_calls or []:
            name = c.function.name or name
            text += c.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert name == whole.tool_calls[0].function.name
    assert json.loads(text) == json.loads(whole.tool_calls[0].function.arguments)


def render(server, **body):
    r = requests.post(server.url + "/apply-template", json=body, timeout=30)
    return r


def test_reasoning_effort_reaches_the_template(server, client):
    for effort in ("low", "medium", "high"):
        r = render(server, messages=ASK, reasoning_effort=effort)
        assert r.status_code == 200, r.text
        assert f"Reasoning: {effort}\n" in r.json()["prompt"]
    # chat_template_kwargs wins over the parameter
    r = render(server, messages=ASK, reasoning_effort="low",
               chat_template_kwargs={"reasoning_effort": "high"})
    assert "Reasoning: high\n" in r.json()["prompt"]
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="m", messages=ASK, max_tokens=4,
                                       reasoning_effort="extreme")
    assert e.value.body["param"] == "reasoning_effort"
    r = client.chat.completions.create(model="m", messages=ASK, max_tokens=4,
                                       reasoning_effort="low")
    assert r.choices[0].finish_reason in ("stop", "length")


def test_conversation_reaches_the_template(server):
    messages = ASK + [
        {"role": "assistant", "content": None,
         "reasoning_content": "The user wants the weather.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {
             "name": "get_weather",
             "arguments": json.dumps({"city": "Paris", "unit": "celsius"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "21 and clear"},
    ]
    r = render(server, messages=messages, tools=TOOLS)
    assert r.status_code == 200, r.text
    prompt = r.json()["prompt"]
    assert ("<|start|>assistant<|channel|>analysis<|message|>The user wants "
            "the weather.<|end|>") in prompt
    assert ('<|start|>assistant to=functions.get_weather<|channel|>commentary '
            'json<|message|>{"city": "Paris", "unit": "celsius"}<|call|>'
            ) in prompt
    assert prompt.endswith("<|start|>assistant")


def test_reply_fields(client):
    # noise from random weights, but always a well-formed message
    r = client.chat.completions.create(model="m", messages=ASK, max_tokens=24,
                                       temperature=1, seed=7)
    m = r.choices[0].message
    assert isinstance(m.content, str)
    assert not m.tool_calls


def test_reasoning_effort_refused_for_other_templates(start_server):
    srv = start_server("-c", "512", "-t", "1")
    r = requests.post(srv.url + "/v1/chat/completions", json={
        "messages": ASK, "max_tokens": 2, "reasoning_effort": "low"},
        timeout=30)
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "reasoning_effort"


# A reply in both channels, forced by a grammar (the random model would
# rarely open one): the analysis becomes reasoning_content, the final
# channel the content, whole and streamed alike.
TWO_CHANNELS = ('root ::= "<|channel|>analysis<|message|>" [a-z ]{1,20} '
                '"<|end|><|start|>assistant<|channel|>final<|message|>" '
                '[a-z ]{1,20}')


def test_reasoning_content(client):
    args = dict(model="m", messages=ASK, temperature=1, seed=11,
                max_tokens=120, extra_body={"grammar": TWO_CHANNELS})
    m = client.chat.completions.create(**args).choices[0].message
    reasoning = m.model_extra["reasoning_content"]
    assert reasoning and set(reasoning) <= set("abcdefghijklmnopqrstuvwxyz ")
    assert m.content and set(m.content) <= set("abcdefghijklmnopqrstuvwxyz ")
    r_text, c_text = "", ""
    for chunk in client.chat.completions.create(stream=True, **args):
        d = chunk.choices[0].delta
        r_text += (d.model_extra or {}).get("reasoning_content") or ""
        c_text += d.content or ""
    assert (r_text, c_text) == (reasoning, m.content)


def test_info_shows_the_windows():
    # 4 layers, K and V of 2 heads of 64 in F16: 2048 bytes per position,
    # half of them on the 2 sliding-window layers (window 16)
    out = subprocess.run([NUCLEUS_BIN, "info", str(GPTOSS)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.splitlines()[-3] == (
        "KV cache (gpt-oss): 2048 bytes per position, 1024 of them on "
        "sliding-window layers, kept for the last 16 positions only: 1024 "
        "per position past the window")
    assert "gpt-oss" in out.splitlines()[-1].split(": ", 1)[1].split(", ")


def test_chat_shows_channels_without_markers():
    # `nucleus chat` reads the reply's channels (not a terminal: plain
    # text): the analysis, a blank line, then the final channel's answer;
    # no marker shown; --hide-thinking leaves the answers alone
    def chat(*flags):
        p = subprocess.run(
            [NUCLEUS_BIN, "chat", "-m", str(GPTOSS), "--grammar", TWO_CHANNELS,
             "--temp", "1", "--seed", "3", "-n", "80", "-t", "2", *flags],
            input="hello\nagain\n", capture_output=True, text=True,
            timeout=120)
        assert p.returncode == 0, p.stderr
        return p.stdout
    letters = set("abcdefghijklmnopqrstuvwxyz \n")
    shown = chat()
    assert set(shown) <= letters, shown
    turns = shown.strip("\n").split("\n\n")
    assert len(turns) == 3, shown  # think, answer + think, answer
    hidden = chat("--hide-thinking")
    assert set(hidden) <= letters, hidden
    answers = hidden.split()
    assert answers and all(a in shown for a in answers)
    assert len(hidden.strip().splitlines()) == 2, hidden
